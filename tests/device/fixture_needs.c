/*
 * fixture_needs.c - device images that need otm_fixture_stub, which the
 * loader cannot find. Built twice: FX_USES_STUB=0 takes no symbol from it
 * (as clang 19's device image of a shared library takes none from that
 * library), FX_USES_STUB=1 calls its function.
 */
int fx_stub(void);
int fx_needs(void);

int fx_needs(void)
{
#if FX_USES_STUB
    return fx_stub();
#else
    return 42;
#endif
}
