/* oracle.c - the world's own record of the host's event tags (oracle.h). */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otm/wire.h"

typedef struct record {
    int comm, tag;          /* comm: index into the node's event communicators */
    uint64_t holder;        /* id of the live host event holding it, 0 none */
    uint64_t last;          /* id of the last event that held it */
    int stale;              /* something of `last` can still arrive */
} record;

struct sim_oracle {
    record *recs;
    size_t n, cap;
    uint64_t sent;          /* messages the net had carried at the last check */
};

sim_oracle *sim_oracle_new(void)
{
    return calloc(1, sizeof(sim_oracle));
}

void sim_oracle_free(sim_oracle *o)
{
    if (o)
        free(o->recs);
    free(o);
}

void sim_oracle_reset(sim_oracle *o)
{
    o->n = 0;
    o->sent = 0;
}

static record *find(sim_oracle *o, int comm, int tag)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->recs[i].comm == comm && o->recs[i].tag == tag)
            return &o->recs[i];
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        record *p = realloc(o->recs, cap * sizeof *p);
        if (!p)
            abort();                /* the harness's own memory */
        o->recs = p;
        o->cap = cap;
    }
    o->recs[o->n] = (record){.comm = comm, .tag = tag};
    return &o->recs[o->n++];
}

static int holds_tag(const otm_event *ev)
{
    return ev->side == OTM_ORIGIN && !otm_event_ended(ev) && ev->tag >= OTM_TAG_FIRST;
}

static const otm_event *host_holder(const otm_node *host, const record *r)
{
    for (const otm_event *ev = host->all; ev; ev = ev->all_next)
        if (ev->id == r->holder && holds_tag(ev) && ev->comm == r->comm &&
            ev->tag == r->tag)
            return ev;
    return NULL;
}

/* ---- can anything of the last holder still arrive? ---------------------------- */

typedef struct probe {
    int comm_handle, control_handle, comm, tag;
    uint64_t last;          /* the event whose leftovers are looked for */
    uint64_t sent;          /* the host's messages from this id on are newer */
    int found;
} probe;

static int names(const void *data, size_t len, const probe *p)
{
    otm_notify n;
    return data && otm_wire_get_notify(data, len, &n) != OTM_ERR_BAD_MESSAGE &&
           n.routable && (int)n.comm == p->comm && (int)n.tag == p->tag &&
           n.id == p->last;
}

/* A message on the tag, or the notification of the last holder. Within
 * the step in which that event ended, only the host moved, and a new
 * holder may have sent on the tag already: the host's messages sent since
 * the last check are the new holder's. */
static void on_pending(void *ctx, uint64_t id, int src, int dst, int comm, int tag,
                       const void *data, size_t len)
{
    probe *p = ctx;
    (void)dst;
    if (comm == p->comm_handle && tag == p->tag && (src != 0 || id < p->sent))
        p->found = 1;
    else if (comm == p->control_handle && names(data, len, p))
        p->found = 1;
}

/* The worker's half of it, if it has not replied yet, will still send on
 * the tag; so will a notification of it that the gate holds. */
static int worker_will_talk(const otm_node *w, const record *r)
{
    probe p = {.comm = r->comm, .tag = r->tag, .last = r->last};
    if (w->gate_buf && names(w->gate_buf, (size_t)w->gate_len, &p))
        return 1;
    for (const otm_event *ev = w->all; ev; ev = ev->all_next)
        if (ev->side == OTM_DEST && ev->rank == 0 && ev->comm == r->comm &&
            ev->tag == r->tag && !otm_event_ended(ev) && !ev->replied)
            return 1;
    return 0;
}

static int still_talking(const otm_node *host, otm_node *const *workers, int nworkers,
                         const sim_net *net, const record *r, uint64_t sent)
{
    probe p = {.comm_handle = (int)host->comms[r->comm],
               .control_handle = (int)host->control, .comm = r->comm, .tag = r->tag,
               .last = r->last, .sent = sent};
    sim_net_each_pending(net, on_pending, &p);
    for (int k = 1; k <= nworkers && !p.found; k++)
        p.found = workers[k] && worker_will_talk(workers[k], r);
    return p.found;
}

/* ---- the check ------------------------------------------------------------------ */

int sim_oracle_check(sim_oracle *o, otm_node *host, otm_node *const *workers,
                     int nworkers, const sim_net *net, char *why, size_t len)
{
    /* Ends first: an event that ended this step left its tag. */
    for (size_t i = 0; i < o->n; i++) {
        record *r = &o->recs[i];
        if (!r->holder || host_holder(host, r))
            continue;
        r->holder = 0;
        r->stale |= still_talking(host, workers, nworkers, net, r, o->sent);
    }
    for (const otm_event *ev = host->all; ev; ev = ev->all_next) {
        if (!holds_tag(ev))
            continue;
        record *r = find(o, ev->comm, ev->tag);
        if (r->holder == ev->id)
            continue;
        int stale = r->stale;
        uint64_t last = r->last;
        r->holder = r->last = ev->id;
        r->stale = 0;               /* said once */
        if (stale) {
            snprintf(why, len, "host event %llu took tag %d of communicator %d, which "
                     "had to be retired: event %llu left messages that may still "
                     "arrive on it", (unsigned long long)ev->id, ev->tag, ev->comm,
                     (unsigned long long)last);
            return -1;
        }
    }
    o->sent = sim_net_sent(net);
    return 0;
}
