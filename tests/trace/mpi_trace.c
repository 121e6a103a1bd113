/*
 * mpi_trace.c - a known set of operations on 2 devices, for the trace and
 * counter checks (check_trace.py).
 *
 * Every call that becomes an event prints one line
 *     # op KIND DEVICE BYTES STATUS [PEER]
 * with the status its return code implies (OFFLOAD_SUCCESS: FINISHED, else
 * FAILED), so that the checker compares the trace and the counters with
 * what the program did, not with what the plugin says it did. It runs with
 * the pool off, so every alloc and delete reaches its device.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS

static void op(const char *kind, int dev, long long bytes, int rc, int peer)
{
    if (peer >= 0)
        printf("# op %s %d %lld %s %d\n", kind, dev, bytes,
               rc == OK ? "FINISHED" : "FAILED", peer);
    else
        printf("# op %s %d %lld %s\n", kind, dev, bytes,
               rc == OK ? "FINISHED" : "FAILED");
}

static void *alloc(int d, int64_t size)
{
    void *p = __tgt_rtl_data_alloc(d, size, NULL, TARGET_ALLOC_DEFAULT);
    op("ALLOC", d, size, p ? OK : OFFLOAD_FAIL, -1);
    CHECK(p != NULL, "device %d: data_alloc(%lld)", d, (long long)size);
    return p;
}

/* Two buffers, two submits (inline and fragmented), one kernel, one good
 * retrieve and one outside every allocation (FAILED on both sides). */
static void on_device(int d, void *bufs[2])
{
    int64_t a[125], b[1024], out[125];
    for (int i = 0; i < 125; i++)
        a[i] = i;
    for (int i = 0; i < 1024; i++)
        b[i] = 1000 + i;
    bufs[0] = alloc(d, sizeof a);
    bufs[1] = alloc(d, sizeof b);
    int rc = __tgt_rtl_data_submit(d, bufs[0], a, sizeof a);
    op("SUBMIT", d, sizeof a, rc, -1);
    rc = __tgt_rtl_data_submit(d, bufs[1], b, sizeof b);
    op("SUBMIT", d, sizeof b, rc, -1);
    void *args[2] = {bufs[0], bufs[1]};
    rc = __tgt_rtl_run_target_region(d, mt.fx[d][MT_FX_ADD], args, NULL, 2);
    op("EXECUTE", d, 0, rc, -1);
    CHECK(rc == OK, "device %d: run_target_region(fx_add)", d);
    rc = __tgt_rtl_data_retrieve(d, out, bufs[0], sizeof out);
    op("RETRIEVE", d, sizeof out, rc, -1);
    CHECK(rc == OK && out[0] == 1000 && out[1] == 1, "device %d: retrieve after the "
          "kernel: %lld %lld", d, (long long)out[0], (long long)out[1]);
    /* Past the end of the smaller buffer: the worker refuses it. */
    rc = __tgt_rtl_data_retrieve(d, out, (char *)bufs[0] + sizeof a, 64);
    op("RETRIEVE", d, 64, rc, -1);
    CHECK(rc != OK, "device %d: retrieve outside every allocation fails", d);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    mt_start("mpi_trace", 1);
    if (mt.ndev != 2) {
        printf("not ok - mpi_trace needs 2 devices, has %d\n", mt.ndev);
        return 1;
    }
    void *bufs[2][2];
    for (int d = 0; d < 2; d++)
        op("LOAD", d, 0, OK, -1);   /* mt_start's load_binary, checked there */
    for (int d = 0; d < 2; d++)
        on_device(d, bufs[d]);
    int rc = __tgt_rtl_data_exchange(0, bufs[0][1], 1, bufs[1][1], 4096);
    op("EXCHANGE", 0, 4096, rc, 1);
    CHECK(rc == OK, "data_exchange device 0 -> device 1, 4096 bytes");
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < 2; i++) {
            rc = __tgt_rtl_data_delete(d, bufs[d][i]);
            op("DELETE", d, 0, rc, -1);
            CHECK(rc == OK, "device %d: data_delete", d);
        }
    }
    /* unregister_lib sends each device its EXIT. */
    for (int d = 0; d < 2; d++)
        op("EXIT", d, 0, OK, -1);
    return mt_finish();
}
