/*
 * otm/config.h - the core's tunables, without MPI.
 *
 * The core reads nothing from the environment: its caller fills an
 * otm_config (the plugin from otm/settings.h, the tests by hand) and
 * otm_node_init checks it with otm_config_check. This header needs no MPI
 * header, so the settings and MPI-free tests can use it.
 */
#ifndef OTM_CONFIG_H
#define OTM_CONFIG_H

#include <stdint.h>

#include "otm/status.h"

/* Fragments of one event in flight at once, at most. */
#define OTM_WINDOW_MAX 4

typedef struct otm_config {
    int ncomms;             /* event communicators, 1..64 */
    uint64_t frag_size;     /* bytes per fragment, 1..INT_MAX */
    uint32_t inline_max;    /* largest payload carried inline, <= 1 MiB */
    int tag_space;          /* tags per communicator, >= 1 (clamped to UB) */
    int window;             /* fragments in flight per event, 1..4 */
    uint64_t timeout_ns;    /* no progress for this long fails; 0 = never */
    uint64_t kernel_timeout_ns; /* EXECUTE waiting for its kernel; 0 = never */
} otm_config;

/* The defaults documented in the README. */
otm_config otm_config_default(void);
/* OTM_ERR_INVALID naming nothing: callers name the variable. */
otm_status otm_config_check(const otm_config *cfg);

#endif
