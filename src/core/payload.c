/*
 * payload.c - the fragments of a payload: planned once, then kept in
 * flight up to the event's window. The order of fragments relies on MPI's
 * non-overtaking rule on one (source, destination, communicator), so both
 * sides post them in increasing order.
 */
#include "internal.h"

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Keeps up to `window` fragments in flight with `peer`, sending from or
 * receiving into `base` (or the scratch sink when discarding). Returns 1 if
 * anything moved; *st is set on failure. Complete when moved == count. */
int otm__pump(otm_node *node, otm_event *ev, int sending, uint8_t *base,
              int peer, otm_status *st)
{
    int moved = 0;
    for (int i = 0; i < ev->window && ev->moved < ev->plan.count; i++) {
        int s = OTM_SLOT_FRAG0 + i;
        if (otm__slot_active(ev, s)) {
            otm__test_result r = otm__slot_test(ev, s, NULL);
            if (r == OTM__T_PENDING)
                continue;
            if (r == OTM__T_FAILED || (r == OTM__T_ERROR && !ev->discard)) {
                *st = OTM_ERR_MPI;
                return 1;
            }
            ev->moved++;
            moved = 1;
        }
        if (ev->posted < ev->plan.count) {
            uint64_t off = otm_frag_offset(&ev->plan, ev->posted);
            uint64_t len = (uint64_t)otm_frag_length(&ev->plan, ev->posted);
            otm_status rc;
            if (sending)
                rc = otm__post_send(node, ev, s, base + off, len, peer);
            else if (ev->discard)
                rc = otm__post_recv(node, ev, s, node->sink,
                                    min_u64(len, OTM_SCRATCH_MAX), peer);
            else
                rc = otm__post_recv(node, ev, s, base + off, len, peer);
            if (rc) {
                *st = rc;
                return 1;
            }
            ev->posted++;
            moved = 1;
        }
    }
    return moved;
}

/* Plans a payload of `total` bytes in fragments of `frag`. */
void otm__plan_payload(otm_node *node, otm_event *ev, uint64_t total,
                       uint64_t frag)
{
    ev->plan = otm_frag_make(total, frag);
    ev->posted = ev->moved = 0;
    /* Receives into the shared sink must not overlap in time. */
    ev->window = ev->discard ? 1 : (uint8_t)node->cfg.window;
}
