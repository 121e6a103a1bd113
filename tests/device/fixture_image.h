/*
 * fixture_image.h - the functions of the fixture shared library that stands
 * in for a device image in test_image. Like kernels, they take every
 * argument as a pointer-sized value.
 */
#ifndef FIXTURE_IMAGE_H
#define FIXTURE_IMAGE_H

#include <stdint.h>

/* Written by the test through otd_image_symbol, read by fx_global_sum. */
extern int fx_global[16];

/* 0 arguments: fx_global[0] += 1. */
void fx_tick(void);

/* 2 arguments: *a += *b. */
void fx_add(void *a, void *b);

/* 1 argument: *out = the sum of fx_global. */
void fx_global_sum(void *out);

/* 20 arguments: *out = sum of i * v_i for i = 1..19, each v_i an intptr_t
 * passed as a pointer. The weights make a swapped argument visible. */
void fx_sum20(void *out, void *v1, void *v2, void *v3, void *v4, void *v5,
              void *v6, void *v7, void *v8, void *v9, void *v10, void *v11,
              void *v12, void *v13, void *v14, void *v15, void *v16,
              void *v17, void *v18, void *v19);

/* 40 arguments, the same for i = 1..39: more than otd_kernel_call describes
 * on its stack, so this takes its allocating path. */
void fx_sum40(void *out, void *v1, void *v2, void *v3, void *v4, void *v5,
              void *v6, void *v7, void *v8, void *v9, void *v10, void *v11,
              void *v12, void *v13, void *v14, void *v15, void *v16,
              void *v17, void *v18, void *v19, void *v20, void *v21,
              void *v22, void *v23, void *v24, void *v25, void *v26,
              void *v27, void *v28, void *v29, void *v30, void *v31,
              void *v32, void *v33, void *v34, void *v35, void *v36,
              void *v37, void *v38, void *v39);

/* 1 argument: *out = getpid(). The kernel runs in the caller's process;
 * and through getpid the fixture links libc, whose symbols must not pass
 * for the image's own. */
void fx_getpid(void *out);

/* Which build of the fixture this is: FX_WHICH (1 normal, 2 NODELETE). */
int fx_which(void);

#endif
