/*
 * test_hooks.c - the test hook that kills a device rank in the middle of
 * an operation (docs/testing.md), for the fault tests on real MPI. Its
 * variables are read by src/settings (otm_test_hooks_load), as every other
 * variable of the plugin; the allocation hook is alloc.c's.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../shell/trace.h"
#include "plugin.h"

/* The test hook OTM_TEST_KILL_AT=KIND (docs/testing.md): the device rank
 * OTM_TEST_KILL_RANK (default 1) kills itself with SIGKILL the moment the
 * first event of that kind (ALLOC ... PING, as the counters name them)
 * reaches its gate, as a rank killed in the middle of that operation: the
 * fault tests on real MPI use it. The trace, if any, still hears every
 * event. */
static void hook_kill(void *ctx, otm_event *ev, int point)
{
    otp_plugin *p = ctx;
    if (point == OTM_TRACE_BEGIN && ev->side == OTM_DEST && ev->kind == p->test_kill_kind)
        raise(SIGKILL);
    if (p->trace)
        ots_trace_record(p->trace, ev, point);
}

void otp_test_kill_start(otp_plugin *p)
{
    otm_test_hooks hooks;
    otm_test_hooks_load(&hooks, NULL, NULL);
    const char *kind = hooks.kill_at, *rank = hooks.kill_rank;
    if (!kind || atoi(rank ? rank : "1") != p->node.rank)
        return;
    for (int k = 1; k < OTM_KIND_END; k++)
        if (!strcmp(kind, otm_kind_name(k)))
            p->test_kill_kind = k;
    if (!p->test_kill_kind) {
        otp_plugin_log(OTM_LOG_ERROR, "test hook: OTM_TEST_KILL_AT=%s: not a kind of "
                       "event; the hook is off", kind);
        return;
    }
    otp_plugin_log(OTM_LOG_WARN, "test hook: rank %d dies of SIGKILL at its first %s",
                   p->node.rank, kind);
    p->node.hooks.trace = hook_kill;
}
