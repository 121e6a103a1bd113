/*
 * fixture_unresolved.c - a shared library that is a well-formed ELF image
 * but that the loader refuses under RTLD_NOW: it needs a function no library
 * defines.
 */
int otm_fixture_missing(void);
int fx_unresolved(void);

int fx_unresolved(void)
{
    return otm_fixture_missing();
}
