/*
 * sim/pages.h - unified shared memory in the simulated world: rank 0's
 * page server over the world's stand-in for the host's memory, and each
 * worker's pager, which serves the SIM_K_USM regions (sim/device.h) the
 * way the plugin's worker serves a region that touches host memory
 * (src/plugin/usm.c): it asks rank 0 for the region's bytes (a READ of the
 * page protocol, otm/page.h), changes them, writes them back (a WRITE),
 * and only then lets the handler end the region. So the region's reply
 * reaches the host after its write-back was applied, which is what makes
 * the device's writes visible to the host at the region's end.
 *
 * The world (sim_config.pages) owns one sim_pages and makes its two sides
 * actors: sim_pages_serve is rank 0's page thread, sim_pages_step a
 * worker's pager; the explorer interleaves them with everything else.
 * Nothing here blocks, and nothing reaches another rank but by MPI.
 */
#ifndef SIM_PAGES_H
#define SIM_PAGES_H

#include <stdint.h>

#include "device.h"
#include "net.h"
#include "otm/page.h"
#include "world.h"

/* The host memory served: [SIM_HOST_BASE, SIM_HOST_BASE + SIM_HOST_SIZE),
 * one range. A SIM_K_USM region touches at most SIM_USM_MAX bytes. */
#define SIM_HOST_BASE 0x40000u
#define SIM_HOST_SIZE 512u
#define SIM_USM_MAX 256u

/* One worker's pager: at most one call in flight, for the region it
 * serves. */
typedef struct sim_pager {
    int state;              /* 0 idle, 1 reading, 2 writing, 3 done */
    uint64_t event;         /* id of the region served (state > 0) */
    uint64_t addr, len;     /* its bytes */
    otm_page_call call;
    uint8_t ask[OTM_PAGE_ASK_HEAD + OTM_PAGE_RECORD_HEAD + SIM_USM_MAX];
    uint8_t reply[OTM_PAGE_REPLY_HEAD + SIM_USM_MAX];
} sim_pager;

typedef struct sim_pages {
    uint8_t host[SIM_HOST_SIZE];    /* rank 0's memory, as served */
    otm_page_server server;
    sim_pager pager[SIM_MAX_WORKERS + 1];   /* by rank; [0] unused */
} sim_pages;

/* One step of rank 0's page server (host = rank 0's node); 1 when it
 * moved. */
int sim_pages_serve(sim_pages *p, otm_node *host);

/* 1 when the server's step would move: an ask arrived, or the request it
 * waits on completed. The scheduler offers it only then, so that a server
 * with nothing to do adds no choice to every move of rank 0 (which is
 * what keeps the smallest cases' schedules countable). */
int sim_pages_server_ready(const sim_pages *p, const otm_node *host, const sim_net *net);

/* 1 while worker `rank`'s pager holds the region at the head of its
 * kernels (node->kern_head): its handler must not take it yet. */
int sim_pages_holding(const sim_pages *p, const otm_node *worker, int rank);

/* 1 when worker `rank`'s pager's step would move: a region waits for it,
 * or both requests of its call completed. */
int sim_pages_pager_ready(const sim_pages *p, const otm_node *worker, int rank,
                          const sim_net *net);

/* One step of worker `rank`'s pager; 1 when it moved. The region's
 * result goes to dev->usm_status, which the region returns when it runs:
 * OTM_OK once its bytes were written back, else the status of the call
 * that failed. */
int sim_pages_step(sim_pages *p, otm_node *worker, int rank, sim_device *dev);

/* Give up what is in flight at the end of the world: the server's
 * request (its buffers freed), a pager's call. Each is called as its
 * rank. */
void sim_pages_end_server(sim_pages *p, otm_node *host);
void sim_pages_end_pager(sim_pages *p, otm_node *worker, int rank);

#endif
