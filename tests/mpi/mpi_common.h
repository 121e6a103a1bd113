/*
 * mpi_common.h - what the `mpi` tests share: start-up as an MPI job through
 * the plugin ABI, the fixture device image, checks that print what they
 * checked, and capture of the plugin's stderr.
 *
 * Every rank runs the same main: mt_start() calls number_of_devices and
 * register_lib; a worker never returns from register_lib (it serves, then
 * _exits), rank 0 returns with the number of devices and runs the tests.
 * mt_finish() calls unregister_lib (the exit protocol, MPI_Finalize) and
 * returns the program's exit status.
 */
#ifndef MT_MPI_COMMON_H
#define MT_MPI_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "abi.h"

#define MT_MAX_DEV 16

/* Indices of the entries of the fixture image (fixture_image.c). */
enum {
    MT_FX_TICK,         /* ()            fx_global[0] += 1 */
    MT_FX_ADD,          /* (a, b)        *a += *b (int64) */
    MT_FX_GLOBAL_SUM,   /* (out)         *out = sum of fx_global (int64) */
    MT_FX_SUM20,        /* (out, v1..v19) *out = sum i * v_i */
    MT_FX_SUM40,        /* (out, v1..v39) */
    MT_FX_GETPID,       /* (out)         *out = getpid() */
    MT_FX_WHICH,        /* ()            returns 1; callable with no effect */
    MT_FX_GLOBAL,       /* int fx_global[16], 64 bytes */
    MT_FX_COUNT
};

typedef struct mt_env {
    int ndev;                           /* devices of rank 0 */
    __tgt_bin_desc desc;
    __tgt_device_image images[2];       /* two copies of the fixture */
    __tgt_target_table *table[MT_MAX_DEV];      /* image 0, per device */
    void *fx[MT_MAX_DEV][MT_FX_COUNT];          /* device addresses */
    size_t image_size;
    int32_t register_rc;                /* what register_lib returned */
} mt_env;

extern mt_env mt;

/* Start-up on every rank; returns on rank 0 only, with mt filled in (also
 * the tables of image 0 on every device when load is non-zero). Exits with
 * status 1 when there is no device. */
void mt_start(const char *name, int load);
/* Shuts the job down (rank 0): returns the exit status of main. */
int mt_finish(void);

/* ---- checks ---- */
/* Records one check; prints "ok N - what" or "not ok N - what". Returns
 * cond so that callers can skip dependent checks. */
int mt_check(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define CHECK(cond, ...) mt_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* Counts a check without printing it when it passes (bulk loops). */
int mt_check_quiet(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define CHECKQ(cond, ...) mt_check_quiet(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
void mt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mt_failures(void);

/* ---- data ---- */
/* A pattern that differs per byte, per seed: fills and verifies. */
void mt_fill(void *buf, size_t size, uint32_t seed);
/* Index of the first byte that differs from the pattern, or (size_t)-1. */
size_t mt_verify(const void *buf, size_t size, uint32_t seed);
double mt_now(void);

/* ---- stderr capture ----
 * mt_capture_begin() redirects fd 2 into a temporary file; mt_capture_end()
 * restores it, copies what was captured to the real stderr (so the log shows
 * it) and returns it (static buffer, NUL-terminated). */
void mt_capture_begin(void);
const char *mt_capture_end(void);

/* A valid synchronous round trip on device d (alloc, submit, retrieve,
 * delete): 1 when the data came back. */
int mt_roundtrip(int d, size_t size, uint32_t seed);

/* ---- watchdog ----
 * A thread that ends the program (status 1, "not ok - HANG: ...") when the
 * phase named by the latest mt_phase() call lasts longer than `seconds`, so
 * that a hang in the plugin shows as a precise failure instead of the
 * driver's timeout. mpiexec then ends the workers. */
void mt_watchdog_start(int seconds);
void mt_phase(const char *what);

/* Environment variable as an integer with K/M/G suffix, or def. */
long long mt_env_size(const char *name, long long def);
/* Whether the plugin's pool is on: OMPTARGET_MPI_POOL unset or not one of
 * the plugin's false words (0, off, false, no). */
int mt_pool_on(void);
/* OMPTARGET_MPI_POOL_MAX, or the plugin's default (16 MiB). */
long long mt_pool_max(void);
/* MT_TIME_SCALE (default 1): how much slower than native the job runs
 * (memcheck); watchdogs and host pauses are multiplied by it. */
int mt_time_scale(void);

#endif
