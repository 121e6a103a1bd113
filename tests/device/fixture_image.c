/*
 * fixture_image.c - a shared library that stands in for a device image.
 * Built three times: as otm_fixture_image (FX_WHICH 1); linked -z nodelete so
 * the loader never unmaps it, as otm_fixture_nodelete (FX_WHICH 2); and with
 * a table of offload entries of its own, as clang's images have, as
 * otm_fixture_image2 (FX_WHICH 3).
 */
#include "fixture_image.h"

#include <unistd.h>

#ifndef FX_WHICH
#define FX_WHICH 1
#endif

/* `v` is an intptr_t carried in a pointer, as kernels receive scalars. */
#define V(v) ((int64_t)(intptr_t)(v))

int fx_global[16];

void fx_tick(void)
{
    fx_global[0] += 1;
}

void fx_add(void *a, void *b)
{
    *(int64_t *)a += *(const int64_t *)b;
}

void fx_global_sum(void *out)
{
    int64_t sum = 0;
    int i;

    for (i = 0; i < 16; i++)
        sum += fx_global[i];
    *(int64_t *)out = sum;
}

void fx_sum20(void *out, void *v1, void *v2, void *v3, void *v4, void *v5,
              void *v6, void *v7, void *v8, void *v9, void *v10, void *v11,
              void *v12, void *v13, void *v14, void *v15, void *v16,
              void *v17, void *v18, void *v19)
{
    *(int64_t *)out = 1 * V(v1) + 2 * V(v2) + 3 * V(v3) + 4 * V(v4) +
                      5 * V(v5) + 6 * V(v6) + 7 * V(v7) + 8 * V(v8) +
                      9 * V(v9) + 10 * V(v10) + 11 * V(v11) + 12 * V(v12) +
                      13 * V(v13) + 14 * V(v14) + 15 * V(v15) +
                      16 * V(v16) + 17 * V(v17) + 18 * V(v18) + 19 * V(v19);
}

void fx_sum40(void *out, void *v1, void *v2, void *v3, void *v4, void *v5,
              void *v6, void *v7, void *v8, void *v9, void *v10, void *v11,
              void *v12, void *v13, void *v14, void *v15, void *v16,
              void *v17, void *v18, void *v19, void *v20, void *v21,
              void *v22, void *v23, void *v24, void *v25, void *v26,
              void *v27, void *v28, void *v29, void *v30, void *v31,
              void *v32, void *v33, void *v34, void *v35, void *v36,
              void *v37, void *v38, void *v39)
{
    int64_t first;

    fx_sum20(&first, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13,
             v14, v15, v16, v17, v18, v19);
    *(int64_t *)out = first + 20 * V(v20) + 21 * V(v21) + 22 * V(v22) +
                      23 * V(v23) + 24 * V(v24) + 25 * V(v25) + 26 * V(v26) +
                      27 * V(v27) + 28 * V(v28) + 29 * V(v29) + 30 * V(v30) +
                      31 * V(v31) + 32 * V(v32) + 33 * V(v33) + 34 * V(v34) +
                      35 * V(v35) + 36 * V(v36) + 37 * V(v37) + 38 * V(v38) +
                      39 * V(v39);
}

void fx_getpid(void *out)
{
    *(int64_t *)out = getpid();
}

int fx_which(void)
{
    return FX_WHICH;
}

#if FX_WHICH == 3
/* The table of entries clang puts in a device image (the layout of
 * libomptarget's __tgt_offload_entry), in the order of the host entries
 * of tests/mpi: this fixture is loaded from its bytes alone. */
struct fx_entry {
    void *addr;
    const char *name;
    uint64_t size;
    int32_t flags, reserved;
};

__attribute__((section("omp_offloading_entries"), used))
static const struct fx_entry fx_entries[] = {
    {(void *)fx_tick, "fx_tick", 0, 0, 0},
    {(void *)fx_add, "fx_add", 0, 0, 0},
    {(void *)fx_global_sum, "fx_global_sum", 0, 0, 0},
    {(void *)fx_sum20, "fx_sum20", 0, 0, 0},
    {(void *)fx_sum40, "fx_sum40", 0, 0, 0},
    {(void *)fx_getpid, "fx_getpid", 0, 0, 0},
    {(void *)fx_which, "fx_which", 0, 0, 0},
    {fx_global, "fx_global", sizeof fx_global, 0, 0},
};
#endif
