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
 * default, range and meaning: docs/settings.md's table is checked against it.
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

typedef enum otm_usm_mode {
    OTM_USM_AUTO = 0,       /* for programs that require unified shared memory */
    OTM_USM_ON,             /* for every region */
    OTM_USM_OFF             /* never: such programs are refused */
} otm_usm_mode;

typedef enum otm_cpu_devices {
    OTM_CPU_FIRST = 0,      /* each rank's CPU, then its proxied devices */
    OTM_CPU_LAST,           /* each rank's proxied devices, then its CPU */
    OTM_CPU_OFF             /* the proxied devices alone */
} otm_cpu_devices;

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
    int stderr_to_stdout;   /* rank 0's stderr is its stdout (0/1) */
    int host_code;          /* rank 0's code at its addresses here (0/1) */
    int info;               /* print the device map at start and the
                             * per-device counters at exit (0/1) */
    size_t trace_len;       /* length of `trace`; 0: no trace */
    char trace[1024];       /* OMPTARGET_MPI_TRACE: path prefix of the
                             * per-rank trace files, NUL-terminated */
    otm_usm_mode usm;       /* OMPTARGET_MPI_USM */
    otm_cpu_devices cpu_devices;    /* OMPTARGET_MPI_CPU_DEVICES */
    size_t remote_plugins_len;  /* length of `remote_plugins` */
    char remote_plugins[256];   /* OMPTARGET_MPI_REMOTE_PLUGINS: auto, none
                                 * or a list of plugin names */
    size_t map_len;         /* length of `map`; 0: no map file */
    char map[1024];         /* OMPTARGET_MPI_MAP: the job's map file,
                             * NUL-terminated */
} otm_settings;

/* Whose value of a setting counts. Each rank reads its own environment,
 * and a launcher may give ranks different ones (mpiexec's per-rank -env, a
 * node's shell start-up file). */
typedef enum otm_setting_scope {
    OTM_SCOPE_JOB = 0,      /* every rank's: they must agree, or the job is
                             * refused at start-up (otm_settings_judge) */
    OTM_SCOPE_RANK,         /* each rank's own, for itself */
    OTM_SCOPE_HOST          /* rank 0's alone (it travels in the
                             * protocol, or only the host uses it) */
} otm_setting_scope;

/* One row of the table of variables. Its accepted values are text made
 * from the parser's limits: otm_setting_range. */
typedef struct otm_setting_doc {
    const char *name;       /* "OMPTARGET_MPI_FRAGMENT_SIZE" */
    const char *alias;      /* "OMPCLUSTER_FRAGMENT_SIZE" or NULL */
    const char *def;        /* default, as text */
    const char *meaning;    /* one sentence */
    otm_setting_scope scope;
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
/* The README's words for a scope ("must agree", "per rank", "rank 0's"). */
const char *otm_setting_scope_text(otm_setting_scope scope);

/* ---- the ranks agree -------------------------------------------------------
 * What each rank of a job tells every other at start-up, before anything
 * depends on the settings: whether its own loaded, with the error line
 * when not, and every value. Plain bytes of a fixed size, so that the
 * cards travel as MPI_BYTE between the ranks of one build; a card of
 * another build, or none, is told apart by its magic. */
#define OTM_SETTINGS_CARD_MAGIC 0x534d544fu     /* "OTMS" */
#define OTM_SETTINGS_CARD_VALUES 32             /* at least one per variable */
#define OTM_SETTINGS_CARD_ERROR 256
typedef struct otm_settings_card {
    uint32_t magic;
    uint32_t valid;                             /* 1: its settings loaded */
    uint64_t value[OTM_SETTINGS_CARD_VALUES];   /* by table row */
    char error[OTM_SETTINGS_CARD_ERROR];        /* its error line, or "" */
} otm_settings_card;

/* This rank's card: the values of *s and, when `error` is not NULL (its
 * settings did not load), that line (cut to fit) and no value. */
void otm_settings_card_make(otm_settings_card *card, const otm_settings *s,
                            const char *error);

/* Judges the cards of ranks 0..n-1 (n >= 1). OTM_OK when every card is
 * valid and the settings of scope OTM_SCOPE_JOB have one value. Else
 * OTM_ERR_INVALID and one line in msg naming what, where and with which
 * values, in this order: cards that are not cards ("rank 2 sent no
 * settings"), then the error lines of ranks whose settings did not load,
 * each with its ranks ("OMPTARGET_MPI_WINDOW=9: expected an integer in
 * 1..4 (ranks 1..2)", "(every rank)"), else the settings that differ
 * ("OMPTARGET_MPI_NUM_COMMS must be the same on every rank: 4 on rank 0, 8
 * on ranks 1..2"); several are separated by "; ". Like snprintf, msg is
 * cut to len and NUL-terminated (nothing when len is 0). */
otm_status otm_settings_judge(const otm_settings_card *cards, int n, char *msg,
                              size_t len);

/* ---- test hooks -------------------------------------------------------------
 * Variables only tests set (docs/testing.md), read here too, since this
 * file is the one reader of the plugin's environment. They are not
 * settings: no OMPTARGET_MPI_ name, no row in docs/settings.md's table,
 * not compared between ranks, and a bad value never stops the plugin: the
 * hook that uses the text judges it, says so and turns itself off. */
typedef struct otm_test_hooks {
    const char *kill_at;    /* OTM_TEST_KILL_AT: the kind of event at which
                             * a device rank kills itself, or NULL */
    const char *kill_rank;  /* OTM_TEST_KILL_RANK: that rank, or NULL (1) */
    const char *fail_alloc; /* OTM_TEST_FAIL_ALLOC: the plugin's allocation
                             * that fails, or NULL */
    const char *fail_alloc_rank; /* OTM_TEST_FAIL_ALLOC_RANK: on that rank,
                                  * or NULL (every rank) */
    const char *plugin_dir; /* OTM_TEST_PLUGIN_DIR: where a worker opens the
                             * plugins it proxies (a test's plugin), instead
                             * of its libomptarget's directory, or NULL */
} otm_test_hooks;

/* Reads the test hooks through `get` (NULL: the process environment, as
 * otm_settings_load). Each field is the text as `get` returned it (valid
 * as long as that is), or NULL when unset. Allocates nothing, so the
 * allocation hook can read itself before the process's first allocation. */
void otm_test_hooks_load(otm_test_hooks *t,
                         const char *(*get)(void *ctx, const char *name), void *ctx);

/* ---- the launcher's marks ---------------------------------------------------
 * Variables a launcher sets in each rank (Hydra's PMI, PMIx, Open MPI's,
 * omptarget-mpirun's OMPTARGET_MPI_LAUNCHER): not settings either, but
 * read here with them. Both read through `get` (NULL: the environment)
 * and allocate nothing. */

/* 1 when a launcher started this process (one of PMI_RANK, PMI_SIZE,
 * PMI_FD, PMIX_RANK, OMPI_COMM_WORLD_SIZE, MPI_LOCALNRANKS,
 * OMPTARGET_MPI_LAUNCHER is set), else 0. */
int otm_settings_launched(const char *(*get)(void *ctx, const char *name), void *ctx);
/* The rank the launcher gave this process, known before MPI is (the first
 * of PMI_RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK that is a count in
 * 0..2^31), or -1. */
long otm_settings_launcher_rank(const char *(*get)(void *ctx, const char *name),
                                void *ctx);

/* Writes the values row `d` accepts, as the README's Range column shows them
 * and an error message ends ("an integer in 1..64"). The numbers are the
 * parser's own limits, so the text cannot disagree with what is accepted.
 * `d` must be a row of otm_settings_table() other than its end; anything
 * else gives "". Like snprintf: returns the text's length, writes at most
 * len - 1 characters and a NUL (nothing when len is 0). */
size_t otm_setting_range(const otm_setting_doc *d, char *buf, size_t len);

#endif
