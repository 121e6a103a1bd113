/*
 * sim/pages.c - unified shared memory in the simulated world (sim/pages.h):
 * rank 0's page server over the world's host memory, and the workers'
 * pagers serving SIM_K_USM regions with the page protocol's calls.
 */
#include "pages.h"

#include <string.h>

#include "otm/event.h"
#include "otm/wire.h"

#define PAGER_TAG OTM_PAGE_TAG_FIRST    /* one call in flight per worker */

static int outside(uint64_t addr, uint64_t len)
{
    return addr < SIM_HOST_BASE || len > SIM_HOST_SIZE ||
           addr - SIM_HOST_BASE > SIM_HOST_SIZE - len;
}

static otm_status host_read(void *ctx, uint64_t addr, void *dst, uint64_t len)
{
    sim_pages *p = ctx;
    if (outside(addr, len))
        return OTM_ERR_BAD_POINTER;
    memcpy(dst, p->host + (addr - SIM_HOST_BASE), len);
    return OTM_OK;
}

static otm_status host_write(void *ctx, uint64_t addr, const void *src, uint64_t len)
{
    sim_pages *p = ctx;
    if (outside(addr, len))
        return OTM_ERR_BAD_POINTER;
    memcpy(p->host + (addr - SIM_HOST_BASE), src, len);
    return OTM_OK;
}

static otm_status host_ranges(void *ctx, uint64_t *dst, uint64_t cap, uint64_t *count)
{
    (void)ctx;
    *count = 1;
    if (cap < 1)
        return OTM_ERR_BAD_SIZE;
    dst[0] = SIM_HOST_BASE;
    dst[1] = SIM_HOST_BASE + SIM_HOST_SIZE;
    return OTM_OK;
}

int sim_pages_serve(sim_pages *p, otm_node *host)
{
    const otm_page_host_ops ops = {host_read, host_write, host_ranges, p};
    return otm_page_serve(host, &p->server, &ops);
}

int sim_pages_server_ready(const sim_pages *p, const otm_node *host, const sim_net *net)
{
    if (p->server.state == 0)
        return sim_net_arrived(net, 0, OTM_PAGE_TAG_ASK, host->pages);
    return sim_net_request_done(net, 0, p->server.req);
}

static uint64_t literal(const otm_event *ev, unsigned i)
{
    uint64_t v;
    memcpy(&v, ev->msg + OTM_WIRE_NOTIFY_SIZE + 8 * i, 8);
    return v;
}

/* The SIM_K_USM region at the head of the worker's kernels that no
 * handler took yet, or NULL. */
static const otm_event *usm_region(const otm_node *worker)
{
    const otm_event *ev = worker->kern_head;
    if (!ev || ev->claimed || ev->p.execute.kernel != sim_kernel_addr(SIM_K_USM) ||
        ev->msg_len < OTM_WIRE_NOTIFY_SIZE + 16)
        return NULL;
    return ev;
}

int sim_pages_holding(const sim_pages *p, const otm_node *worker, int rank)
{
    const otm_event *ev = usm_region(worker);
    const sim_pager *g = &p->pager[rank];
    return ev && !(g->state == 3 && g->event == ev->id);
}

int sim_pages_pager_ready(const sim_pages *p, const otm_node *worker, int rank,
                          const sim_net *net)
{
    const sim_pager *g = &p->pager[rank];
    if (g->state == 1 || g->state == 2)
        return sim_net_request_done(net, rank, g->call.send) &&
               sim_net_request_done(net, rank, g->call.recv);
    return sim_pages_holding(p, worker, rank);
}

/* Starts the region's READ, or ends it at once when its bytes are not
 * the host's (as a region touching such memory faults). */
static void start_read(sim_pager *g, otm_node *worker, const otm_event *ev,
                       sim_device *dev)
{
    g->event = ev->id;
    g->addr = literal(ev, 0);
    g->len = literal(ev, 1);
    g->state = 3;
    dev->usm_status = OTM_ERR_BAD_POINTER;
    if (g->len > SIM_USM_MAX || outside(g->addr, g->len))
        return;
    dev->usm_status = otm_page_call_start(worker, &g->call, OTM_PAGE_READ, PAGER_TAG,
                                          g->addr, g->len, g->ask, 0, g->reply,
                                          sizeof g->reply);
    if (dev->usm_status == OTM_OK)
        g->state = 1;
}

/* The region's work on its bytes (each += 1), then their write-back: one
 * record. */
static void start_write(sim_pager *g, otm_node *worker, sim_device *dev)
{
    uint8_t *rec = g->ask + OTM_PAGE_ASK_HEAD;
    memcpy(rec, &g->addr, 8);
    memcpy(rec + 8, &g->len, 8);
    for (uint64_t i = 0; i < g->len; i++)
        rec[OTM_PAGE_RECORD_HEAD + i] = (uint8_t)(g->reply[OTM_PAGE_REPLY_HEAD + i] + 1);
    uint64_t payload = OTM_PAGE_RECORD_HEAD + g->len;
    dev->usm_status = otm_page_call_start(worker, &g->call, OTM_PAGE_WRITE, PAGER_TAG,
                                          0, payload, g->ask, payload, g->reply,
                                          sizeof g->reply);
    g->state = dev->usm_status == OTM_OK ? 2 : 3;
}

int sim_pages_step(sim_pages *p, otm_node *worker, int rank, sim_device *dev)
{
    sim_pager *g = &p->pager[rank];
    if (g->state == 0 || g->state == 3) {
        const otm_event *ev = usm_region(worker);
        if (!ev || (g->state == 3 && g->event == ev->id))
            return 0;
        start_read(g, worker, ev, dev);
        return 1;
    }
    otm_status st;
    uint64_t value;
    MPI_Request send = g->call.send, recv = g->call.recv;
    if (!otm_page_call_test(worker, &g->call, &st, &value))
        return g->call.send != send || g->call.recv != recv;    /* one ended */
    /* A READ's value is the bytes read, a WRITE's the bytes written:
     * short of the region's, the call failed. */
    if (st == OTM_OK && value != g->len)
        st = OTM_ERR_BAD_MESSAGE;
    if (st == OTM_OK && g->state == 1) {
        start_write(g, worker, dev);
        return 1;
    }
    dev->usm_status = st;
    g->state = 3;
    return 1;
}

void sim_pages_end_server(sim_pages *p, otm_node *host)
{
    otm_page_server_fini(host, &p->server);
}

void sim_pages_end_pager(sim_pages *p, otm_node *worker, int rank)
{
    sim_pager *g = &p->pager[rank];
    if (g->state == 1 || g->state == 2)
        otm_page_call_cancel(worker, &g->call);
    g->state = 0;
}
