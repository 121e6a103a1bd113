/*
 * fixture_stub.c - a library the needs fixtures link but the loader cannot
 * find (built without an rpath, outside the search path): the host library
 * clang 19 names in its own device image (src/device/needs.h).
 */
int fx_stub(void);

int fx_stub(void)
{
    return 7;
}
