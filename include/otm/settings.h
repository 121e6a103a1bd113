/*
 * otm/settings.h - every environment variable of the plugin, parsed and
 * validated in this one place.
 *
 * Each variable is named OMPTARGET_MPI_<NAME>; the seed project's
 * OMPCLUSTER_<NAME> spellings are accepted as aliases where one existed (the
 * OMPTARGET_MPI_ name wins when both are set). A bad value is an error that
 * names the variable, the value and the accepted range; the settings are
 * then left at their defaults and the caller refuses to start (no silent
 * fallback). The table otm_settings_table() lists every variable with its
 * default, range and meaning: the README's table is checked against it.
 *
 * No MPI header is needed (the core's part is otm/config.h), so the
 * settings are one library whichever MPI the plugin is built for, and
 * MPI-free programs can link them alone. The ranges of the fields are
 * those of the table (and, for `core`, otm/config.h's limits).
 */
#ifndef OTM_SETTINGS_H
#define OTM_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "otm/config.h"
#include "otm/status.h"

typedef enum otm_idle_policy {
    OTM_IDLE_SPIN = 0,      /* never sleep: lowest latency, a core per thread */
    OTM_IDLE_YIELD,         /* spin, then sched_yield */
    OTM_IDLE_SLEEP,         /* spin, then yield, then sleep with back-off */
} otm_idle_policy;

typedef struct otm_settings {
    otm_config core;        /* ncomms, frag_size, inline_max, window,
                             * tag_space, timeout_ns, kernel_timeout_ns */
    int handlers;           /* kernel handler threads per worker */
    otm_idle_policy idle;
    uint64_t spin_ns;       /* busy-poll this long before yielding */
    uint64_t sleep_max_ns;  /* longest nap */
    uint64_t slice_ns;      /* scheduling slice of a waiting thread, 0:
                             * the kernel's default */
    int log_level;          /* a value of otm_log_level (otm/node.h):
                             * 0 error, 1 warn, 2 info, 3 debug */
    int pool;               /* reuse device allocations (0/1) */
    uint64_t pool_max;      /* largest allocation the pool keeps, bytes */
    int forward_output;     /* regions' stdout/stderr go to the host (0/1) */
    int info;               /* print the device map at start and the
                             * per-device counters at exit (0/1) */
    size_t trace_len;       /* length of `trace`; 0: no trace */
    char trace[1024];       /* OMPTARGET_MPI_TRACE: path prefix of the
                             * per-rank trace files, NUL-terminated */
    size_t map_len;         /* length of `map`; 0: no map file */
    char map[1024];         /* OMPTARGET_MPI_MAP: the job's map file,
                             * NUL-terminated */
} otm_settings;

/* One row of the table of variables. Its accepted values are text made
 * from the parser's limits: otm_setting_range. */
typedef struct otm_setting_doc {
    const char *name;       /* "OMPTARGET_MPI_FRAGMENT_SIZE" */
    const char *alias;      /* "OMPCLUSTER_FRAGMENT_SIZE" or NULL */
    const char *def;        /* default, as text */
    const char *meaning;    /* one sentence */
} otm_setting_doc;

/* Room for the longest range text with its NUL (the unit test checks). */
#define OTM_SETTING_RANGE_LEN 160

/* The defaults. */
otm_settings otm_settings_default(void);

/* Reads every variable through `get` (NULL: the process environment, via
 * getenv; tests pass their own, which gets `ctx`). On error returns
 * OTM_ERR_INVALID, writes one line into err ("OMPTARGET_MPI_WINDOW=9:
 * expected an integer in 1..4", the range as otm_setting_range writes it)
 * and leaves *s at the defaults. Sizes accept a K/M/G suffix (powers of
 * 1024); durations accept ns/us/ms/s suffixes (no suffix: milliseconds);
 * booleans accept 0/1/true/false/yes/no/on/off; a path is any text
 * without control characters ("off" = none). Leading and trailing spaces
 * are ignored; anything else trailing is an error. */
otm_status otm_settings_load(otm_settings *s,
                             const char *(*get)(void *ctx, const char *name),
                             void *ctx, char *err, size_t errlen);

/* The table of every variable, terminated by a row with name == NULL. */
const otm_setting_doc *otm_settings_table(void);

/* Writes the values row `d` accepts, as the README's Range column shows them
 * and an error message ends ("an integer in 1..64"). The numbers are the
 * parser's own limits, so the text cannot disagree with what is accepted.
 * `d` must be a row of otm_settings_table() other than its end; anything
 * else gives "". Like snprintf: returns the text's length, writes at most
 * len - 1 characters and a NUL (nothing when len is 0). */
size_t otm_setting_range(const otm_setting_doc *d, char *buf, size_t len);

#endif
