/*
 * otm/config.h - the core's tunables and the limits it accepts, without MPI.
 *
 * The core reads nothing from the environment: its caller fills an
 * otm_config (the plugin from otm/settings.h, the tests by hand) and
 * otm_node_init checks it with otm_config_check. This header needs no MPI
 * header, so the settings and MPI-free tests can use it.
 *
 * The limits below are the one statement of each range: otm_config_check
 * enforces them, the settings parse against them and print them in their
 * error messages and in docs/settings.md's table. They are integer constant
 * expressions, so tables and static assertions can use them.
 */
#ifndef OTM_CONFIG_H
#define OTM_CONFIG_H

#include <limits.h>
#include <stdint.h>

#include "otm/status.h"

/* ncomms: event communicators; each costs a duplicated communicator. */
#define OTM_NCOMMS_MIN 1
#define OTM_NCOMMS_MAX 64
/* frag_size: bytes per fragment; MPI counts are int. */
#define OTM_FRAG_SIZE_MIN 1
#define OTM_FRAG_SIZE_MAX INT_MAX
/* inline_max: largest payload carried in the notification itself. */
#define OTM_INLINE_MAX_MIN 0
#define OTM_INLINE_MAX_MAX (1u << 20)
/* tag_space: tags per communicator (the core clamps it to MPI_TAG_UB). */
#define OTM_TAG_SPACE_MIN 1
#define OTM_TAG_SPACE_MAX INT_MAX
/* window: fragments of one event in flight at once; an event holds
 * OTM_WINDOW_MAX fragment slots (otm/event.h). */
#define OTM_WINDOW_MIN 1
#define OTM_WINDOW_MAX 4

typedef struct otm_config {
    int ncomms;             /* event communicators, OTM_NCOMMS_MIN..MAX */
    uint64_t frag_size;     /* bytes per fragment, OTM_FRAG_SIZE_MIN..MAX */
    uint32_t inline_max;    /* largest inline payload, ..OTM_INLINE_MAX_MAX */
    int tag_space;          /* tags per communicator, OTM_TAG_SPACE_MIN..MAX */
    int window;             /* fragments in flight, OTM_WINDOW_MIN..MAX */
    uint64_t timeout_ns;    /* no progress for this long fails; 0 = never.
                             * Any value: the core compares elapsed times */
    uint64_t kernel_timeout_ns; /* EXECUTE waiting for its kernel; 0 = never */
} otm_config;

/* Levels of the node's log hook and of OMPTARGET_MPI_LOG_LEVEL. */
typedef enum otm_log_level {
    OTM_LOG_ERROR = 0,
    OTM_LOG_WARN = 1,
    OTM_LOG_INFO = 2,
    OTM_LOG_DEBUG = 3
} otm_log_level;

/* The defaults documented in the README. */
otm_config otm_config_default(void);
/* OTM_OK when every field is within its limits above; else OTM_ERR_INVALID,
 * naming nothing: callers name the variable. */
otm_status otm_config_check(const otm_config *cfg);

#endif
