/*
 * sim/oracle.h - an independent record of the host's event tags, checked by
 * the world after every step.
 *
 * The core hands a tag out again only when both sides provably consumed
 * every message of the event that held it; otherwise it retires the tag for
 * good (otm/tags.h). The oracle does not read the tag allocator: it watches
 * the host's events and the net. When the event holding a tag ends, the tag
 * is marked stale if anything of that event can still arrive: a message on
 * the tag's (communicator, tag) not yet received by anyone, a notification
 * naming it still in flight or held by a worker's gate, or a worker's half
 * of it that has not sent its reply. A stale tag stays stale; a new event
 * taking it is a violation (a late message could meet that event).
 */
#ifndef SIM_ORACLE_H
#define SIM_ORACLE_H

#include <stddef.h>

#include "otm/node.h"
#include "net.h"

typedef struct sim_oracle sim_oracle;

sim_oracle *sim_oracle_new(void);
void sim_oracle_free(sim_oracle *o);
/* Forgets every record (a world starting again). */
void sim_oracle_reset(sim_oracle *o);

/* Updates the record from the host's node, the workers' nodes
 * (workers[1..nworkers], NULL for a rank that is down) and the net.
 * Returns 0, or -1 with a sentence in why. */
int sim_oracle_check(sim_oracle *o, otm_node *host, otm_node *const *workers,
                     int nworkers, const sim_net *net, char *why, size_t len);

#endif
