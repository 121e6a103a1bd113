/*
 * internal.h - helpers shared by the core's translation units. Not part of
 * any public contract; everything here assumes the caller holds the
 * invariants stated in otm/event.h and otm/node.h.
 */
#ifndef OTM_INTERNAL_H
#define OTM_INTERNAL_H

#include "otm/event.h"
#include "otm/node.h"
#include "otm/wire.h"

/* Largest EXECUTE argument count a worker accepts. */
#define OTM_MAX_ARGS 4096u
/* Sink for a payload a rank must receive but not keep. */
#define OTM_SCRATCH_MAX 65536u
/* Largest device image a worker accepts over the wire. */
#define OTM_IMAGE_MAX (1ull << 30)

/* Allocates a zeroed event, links it into node->all and gives it an id.
 * Returns NULL when memory is short. */
otm_event *otm_event_new(otm_node *node, otm_kind kind, otm_side side);

/* Unlinks and frees an ended event with no request outstanding. */
void otm_event_free(otm_node *node, otm_event *ev);

/* Starts failing `ev` with `st`: cancels its receives, detaches its sends,
 * and lets progress finish the cancellation. Returns 1 (it moved). */
int otm_event_fail(otm_node *node, otm_event *ev, otm_status st);

/* Releases every MPI request of an event without waiting (teardown only). */
void otm_event_abandon(otm_node *node, otm_event *ev);

/* Sets up the destination half from a decoded notification; takes
 * ownership of `msg`. The event then validates itself when progressed. */
void otm_event_init_dest(otm_node *node, otm_event *ev, const otm_notify *n,
                         uint8_t *msg, uint32_t len, int src);

/* Tells the trace hook, if there is one, that `ev` reached `point`. */
static inline void otm_trace_at(otm_node *node, otm_event *ev, otm_trace_point point)
{
    if (node->hooks.trace)
        node->hooks.trace(node->hooks.ctx, ev, (int)point);
}

/* Worker: 1 when a live event already talks on (comm, tag, rank). */
int otm_node_key_live(otm_node *node, int comm, int tag, int rank);

/* Worker: records the image of load `id` and its entries (kernels go to
 * the kernel table, globals to the registry); on failure nothing stays. */
otm_status otm_node_add_image(otm_node *node, uint64_t id, const otm_entry *e,
                              uint64_t count);
/* Worker: forgets the image of load `id` and the entries no other loaded
 * image lists. OTM_ERR_NO_IMAGE when there is no such load. */
otm_status otm_node_drop_image(otm_node *node, uint64_t id);
otm_loaded_image *otm_node_image(otm_node *node, uint64_t id);
int otm_node_has_kernel(const otm_node *node, uint64_t kernel);
/* Worker: 1 when no kernel event is queued or running. */
int otm_node_kernels_idle(otm_node *node);

/* Worker: 1 when the EXIT event `ev` is the only thing left to run. */
int otm_node_drained(otm_node *node, const otm_event *ev);


/* ---- event.c: machinery shared by the two halves ---- */

int otm_slot_active(const otm_event *ev, int s);
int otm_any_active(const otm_event *ev);
/* Isend/Irecv on the event's (communicator, tag); notifications go on the
 * control communicator. Errors leave the slot empty. */
otm_status otm_post_send(otm_node *node, otm_event *ev, int s,
                         const void *buf, uint64_t len, int dest);
otm_status otm_post_notify(otm_node *node, otm_event *ev, int s,
                           const void *buf, uint64_t len, int dest);
otm_status otm_post_recv(otm_node *node, otm_event *ev, int s, void *buf,
                         uint64_t len, int src);
/* 1: slot free, 0: pending, -1: failed (the event is now failing). */
int otm_await_slot(otm_node *node, otm_event *ev, int s, int *count);
void otm_set_state(otm_event *ev, otm_state st);
/* Ends an event whose requests are all complete; `clean` says both sides
 * consumed every message on the tag. Returns 1. */
int otm_finish(otm_node *node, otm_event *ev, otm_status st, int clean);
void otm_plan_payload(otm_node *node, otm_event *ev, uint64_t total,
                      uint64_t frag);
int otm_pump(otm_node *node, otm_event *ev, int sending, uint8_t *base,
             int peer, otm_status *st);

/* One resume point of each half (origin.c, dest.c). Return 1 if moved. */
int otm_origin_step(otm_node *node, otm_event *ev);
int otm_dest_step(otm_node *node, otm_event *ev);

/* Bytes of payload a notification of this origin event carries inline. */
uint32_t otm_origin_inline_len(const otm_node *node, const otm_op *op);
/* Fills the origin event from `op`; builds the notification buffer. */
otm_status otm_origin_init(otm_node *node, otm_event *ev, const otm_op *op);

#endif
