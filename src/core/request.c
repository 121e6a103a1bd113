/*
 * request.c - the MPI requests of an event: one per slot (otm/event.h),
 * posted on the event's (communicator, tag), tested without blocking,
 * cancelled or detached when the event fails. Nothing here changes an
 * event's state: callers decide what a result means.
 */
#include "internal.h"

void otm__slots_init(otm_event *ev)
{
    for (int s = 0; s < OTM_SLOTS; s++)
        ev->req[s] = MPI_REQUEST_NULL;
}

int otm__slot_active(const otm_event *ev, int s)
{
    return ev->req[s] != MPI_REQUEST_NULL;
}

int otm__slot_is_recv(const otm_event *ev, int s)
{
    return (ev->recv_mask >> s) & 1u;
}

static MPI_Comm event_comm(const otm_node *node, const otm_event *ev)
{
    return node->comms[ev->comm];
}

static otm_status isend(otm_event *ev, int s, const void *buf, uint64_t len,
                        int dest, int tag, MPI_Comm comm)
{
    int rc = MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, comm, &ev->req[s]);
    ev->recv_mask &= (uint16_t)~(1u << s);
    if (rc != MPI_SUCCESS) {
        ev->req[s] = MPI_REQUEST_NULL;
        return OTM_ERR_MPI;
    }
    return OTM_OK;
}

otm_status otm__post_send(otm_node *node, otm_event *ev, int s,
                          const void *buf, uint64_t len, int dest)
{
    return isend(ev, s, buf, len, dest, ev->tag, event_comm(node, ev));
}

otm_status otm__post_notify(otm_node *node, otm_event *ev, int s,
                            const void *buf, uint64_t len, int dest)
{
    return isend(ev, s, buf, len, dest, OTM_TAG_CONTROL, node->control);
}

otm_status otm__post_recv(otm_node *node, otm_event *ev, int s, void *buf,
                          uint64_t len, int src)
{
    int rc = MPI_Irecv(buf, (int)len, MPI_BYTE, src, ev->tag,
                       event_comm(node, ev), &ev->req[s]);
    if (rc != MPI_SUCCESS) {
        ev->req[s] = MPI_REQUEST_NULL;
        return OTM_ERR_MPI;
    }
    ev->recv_mask |= (uint16_t)(1u << s);
    return OTM_OK;
}

/* Tests slot s; on completion of a receive, *count gets the bytes. A failed
 * call that left the request live must not be mistaken for completion:
 * MPI frees a request that completed (even with an error). */
otm__test_result otm__slot_test(otm_event *ev, int s, int *count)
{
    MPI_Status st;
    int flag = 0;
    int rc = MPI_Test(&ev->req[s], &flag, &st);
    if (rc != MPI_SUCCESS)
        return ev->req[s] == MPI_REQUEST_NULL ? OTM__T_ERROR : OTM__T_FAILED;
    if (!flag)
        return OTM__T_PENDING;
    ev->req[s] = MPI_REQUEST_NULL;
    if (count && MPI_Get_count(&st, MPI_BYTE, count) != MPI_SUCCESS)
        return OTM__T_ERROR;
    return OTM__T_DONE;
}

int otm__any_active(const otm_event *ev)
{
    for (int s = 0; s < OTM_SLOTS; s++)
        if (otm__slot_active(ev, s))
            return 1;
    return 0;
}

void otm__slots_abandon(otm_event *ev)
{
    for (int s = 0; s < OTM_SLOTS; s++) {
        if (!otm__slot_active(ev, s))
            continue;
        if (otm__slot_is_recv(ev, s))
            MPI_Cancel(&ev->req[s]);
        if (MPI_Request_free(&ev->req[s]) == MPI_SUCCESS && !otm__slot_is_recv(ev, s))
            ev->abandoned = 1;
        ev->req[s] = MPI_REQUEST_NULL;
    }
}

void otm__slots_cancel(otm_event *ev)
{
    for (int s = 0; s < OTM_SLOTS; s++) {
        if (otm__slot_active(ev, s) && otm__slot_is_recv(ev, s) &&
            MPI_Cancel(&ev->req[s]) == MPI_SUCCESS)
            ev->cancel_mask |= (uint16_t)(1u << s);
    }
}

/* A receive that could not be cancelled when the event started failing
 * is cancelled again here; a send is detached only when `late`. */
int otm__slot_settle(otm_event *ev, int s, int late)
{
    if (!otm__slot_active(ev, s))
        return 0;
    if (otm__slot_is_recv(ev, s) && !((ev->cancel_mask >> s) & 1u) &&
        MPI_Cancel(&ev->req[s]) == MPI_SUCCESS)
        ev->cancel_mask |= (uint16_t)(1u << s);
    otm__test_result r = otm__slot_test(ev, s, NULL);
    if (r == OTM__T_DONE || r == OTM__T_ERROR) {
        ev->req[s] = MPI_REQUEST_NULL;
        return 1;
    }
    if (late && !otm__slot_is_recv(ev, s) &&
        MPI_Request_free(&ev->req[s]) == MPI_SUCCESS) {
        ev->req[s] = MPI_REQUEST_NULL;
        ev->abandoned = 1;
        return 1;
    }
    return 0;
}
