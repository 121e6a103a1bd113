/*
 * mpi_events.c - events across queues driven from one host thread.
 *
 * An event recorded on queue A after a submit, waited for on queue B
 * before a retrieve: B must see A's data, whatever order the thread then
 * synchronizes the queues in. Each scenario runs under a watchdog: a call
 * that does not return within MT_WATCHDOG seconds (default 20) is reported
 * as a hang and the program exits with status 1 (mpiexec then ends the
 * workers; run_mpi.sh reports the missing clean shutdown).
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS
#define SZ (4 << 20)

typedef enum { SYNC_EVENT_FIRST, SYNC_A_FIRST, SYNC_B_ONLY, SYNC_B_FIRST } order;

static const char *const order_name[] = {
    "sync_event(ev), then synchronize(B), then synchronize(A)",
    "synchronize(A), then synchronize(B)",
    "synchronize(B) only (A is never synchronized by the program before B)",
    "synchronize(B), then synchronize(A)",
};

/* submit on A, record on A, wait on B, retrieve on B; then the order. */
static void scenario(int dA, int dB, order o, uint32_t seed)
{
    uint8_t *in = malloc(SZ), *out = malloc(SZ);
    void *buf = __tgt_rtl_data_alloc(dA, SZ, NULL, TARGET_ALLOC_DEFAULT);
    void *dst = dB == dA ? buf : __tgt_rtl_data_alloc(dB, SZ, NULL, TARGET_ALLOC_DEFAULT);
    __tgt_async_info A = {0}, B = {0};
    void *ev = NULL;
    mt_fill(in, SZ, seed);
    memset(out, 0, SZ);
    int ok = __tgt_rtl_create_event(dA, &ev) == OK &&
             __tgt_rtl_data_submit_async(dA, buf, in, SZ, &A) == OK &&
             __tgt_rtl_record_event(dA, ev, &A) == OK && __tgt_rtl_wait_event(dB, ev, &B) == OK;
    if (dB != dA)
        ok = ok && __tgt_rtl_data_exchange_async(dA, buf, dB, dst, SZ, &B) == OK;
    ok = ok && __tgt_rtl_data_retrieve_async(dB, out, dst, SZ, &B) == OK;
    char what[300];
    snprintf(what, sizeof what, "device %d -> %d: submit on A, record_event on A, wait_event "
             "on B, %sretrieve on B; %s", dA, dB, dB != dA ? "exchange and " : "",
             order_name[o]);
    mt_phase(what);
    switch (o) {
    case SYNC_EVENT_FIRST:
        ok = ok && __tgt_rtl_sync_event(dA, ev) == OK && __tgt_rtl_synchronize(dB, &B) == OK &&
             __tgt_rtl_synchronize(dA, &A) == OK;
        break;
    case SYNC_A_FIRST:
        ok = ok && __tgt_rtl_synchronize(dA, &A) == OK && __tgt_rtl_synchronize(dB, &B) == OK;
        break;
    case SYNC_B_ONLY:
        ok = ok && __tgt_rtl_synchronize(dB, &B) == OK;
        break;
    case SYNC_B_FIRST:
        ok = ok && __tgt_rtl_synchronize(dB, &B) == OK && __tgt_rtl_synchronize(dA, &A) == OK;
        break;
    }
    mt_phase("after the scenario");
    size_t bad = mt_verify(out, SZ, seed);
    CHECK(ok && bad == (size_t)-1, "%s: B saw A's data", what);
    if (o == SYNC_B_ONLY)
        __tgt_rtl_synchronize(dA, &A);
    __tgt_rtl_destroy_event(dA, ev);
    __tgt_rtl_data_delete(dA, buf);
    if (dst != buf)
        __tgt_rtl_data_delete(dB, dst);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    mt_start(argv[0], 0);
    mt_watchdog_start((int)mt_env_size("MT_WATCHDOG", 20));
    int d1 = mt.ndev >= 2 ? 1 : 0;
    /* The orders that progress A before B waits on it. */
    scenario(0, 0, SYNC_EVENT_FIRST, 1);
    scenario(0, 0, SYNC_A_FIRST, 2);
    scenario(0, d1, SYNC_EVENT_FIRST, 3);
    scenario(0, d1, SYNC_A_FIRST, 4);
    /* B synchronized while A has not been progressed by anyone. */
    scenario(0, 0, SYNC_B_FIRST, 5);
    scenario(0, d1, SYNC_B_ONLY, 6);
    mt_phase("shutdown");
    return mt_finish();
}
