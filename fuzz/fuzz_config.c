/*
 * fuzz_config.c - libFuzzer harness for otm_settings_load.
 *
 * The input is an environment: lines of NAME=VALUE (the first '=' splits;
 * a line without one is ignored, as the environment has no such entry).
 * The getter answers otm_settings_load's look-ups from those lines; a NAME
 * may be spelled in full (OMPTARGET_MPI_WINDOW, OMPCLUSTER_...) or without
 * the OMPTARGET_MPI_ prefix (WINDOW), so that short inputs reach the
 * parsers instead of being spent on spelling the prefix. fuzz/config.dict
 * lists the names.
 *
 * Promises checked (otm/settings.h): OTM_OK or OTM_ERR_INVALID only; on
 * OTM_ERR_INVALID a non-empty, terminated message and the settings left at
 * their defaults; on OTM_OK a configuration the core accepts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otm/settings.h"

#define MAX_VARS 64
#define PREFIX "OMPTARGET_MPI_"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct env {
    const char *name[MAX_VARS];
    const char *value[MAX_VARS];
    int n;
} env;

/* Like getenv: the first entry of that name wins. */
static const char *get(void *ctx, const char *name)
{
    const env *e = ctx;
    size_t plen = strlen(PREFIX);
    for (int i = 0; i < e->n; i++) {
        if (!strcmp(e->name[i], name))
            return e->value[i];
        if (!strncmp(name, PREFIX, plen) && !strcmp(e->name[i], name + plen))
            return e->value[i];
    }
    return NULL;
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "fuzz_config: %s (message: \"%s\")\n", what, err ? err : "");
    abort();
}

/* Field by field: the struct has padding, which memcmp would compare. */
static int at_defaults(const otm_settings *s)
{
    otm_settings d = otm_settings_default();
    return s->core.ncomms == d.core.ncomms && s->core.frag_size == d.core.frag_size &&
           s->core.inline_max == d.core.inline_max &&
           s->core.tag_space == d.core.tag_space && s->core.window == d.core.window &&
           s->core.timeout_ns == d.core.timeout_ns &&
           s->core.kernel_timeout_ns == d.core.kernel_timeout_ns &&
           s->handlers == d.handlers && s->idle == d.idle && s->spin_ns == d.spin_ns &&
           s->sleep_max_ns == d.sleep_max_ns && s->log_level == d.log_level &&
           s->pool == d.pool && s->pool_max == d.pool_max && s->info == d.info &&
           s->trace_len == d.trace_len && !strcmp(s->trace, d.trace);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* One NUL-terminated copy, cut in place into names and values, each in
     * its own exactly-sized heap block so ASan sees reads past a value. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    env e = {.n = 0};
    char *held[2 * MAX_VARS];
    int nheld = 0;
    for (char *line = text, *next; line && e.n < MAX_VARS; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        e.name[e.n] = held[nheld++] = strdup(line);
        e.value[e.n] = held[nheld++] = strdup(eq + 1);
        e.n++;
    }

    otm_settings s;
    memset(&s, 0xa5, sizeof s);
    char err[200];
    memset(err, 0x55, sizeof err);
    otm_status st = otm_settings_load(&s, get, &e, err, sizeof err);
    if (st == OTM_OK) {
        if (otm_config_check(&s.core) != OTM_OK)
            die("accepted settings the core refuses", NULL);
        if (!memchr(s.trace, '\0', sizeof s.trace) || strlen(s.trace) != s.trace_len)
            die("trace path not terminated or not of its recorded length", NULL);
    } else if (st == OTM_ERR_INVALID) {
        if (!memchr(err, '\0', sizeof err))
            die("error message not terminated", NULL);
        if (!err[0])
            die("OTM_ERR_INVALID without a message", err);
        if (!at_defaults(&s))
            die("settings not left at the defaults after an error", err);
    } else {
        die(otm_status_name(st), err);
    }

    for (int i = 0; i < nheld; i++)
        free(held[i]);
    free(text);
    return 0;
}
