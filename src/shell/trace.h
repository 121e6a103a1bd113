/*
 * trace.h - the timeline of events (OMPTARGET_MPI_TRACE) and the host's
 * per-device counters (OMPTARGET_MPI_INFO).
 *
 * The recorder is the body of the node's trace hook (otm/node.h). It keeps
 * one span per event that ended: on the host from enqueue to completion, on
 * a worker from arrival at the gate to the reply sent. Spans go into one
 * array preallocated at start-up (OTM_TRACE_CAPACITY spans per rank): a
 * slot is claimed with one atomic increment, and once the array is full
 * further spans are counted as dropped, never stored. With neither a trace
 * path nor counters, no recorder exists and the hook is not installed.
 *
 * A span's track (the "tid" of the trace) is a thread: on the host the
 * thread that enqueued the event, on a worker the thread that ended it (the
 * thread at the gate, or the one that ran the kernel). Times are nanoseconds from
 * `origin_ns`, the moment every rank left the start-up barrier.
 *
 * Thread safety: otm_trace_point and ots_trace_name_thread may run on any
 * thread at once; ots_trace_write, ots_trace_report and ots_trace_free only
 * once no thread records any more (after the exit protocol).
 */
#ifndef OTM_TRACE_H
#define OTM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "otm/event.h"

#define OTM_TRACE_CAPACITY 131072u    /* spans kept per rank */
#define OTM_TRACE_TRACKS 64           /* named threads per rank; later
                                       * threads share the last track */

typedef struct ots_trace ots_trace;

/* A recorder for rank `rank` of `size`. `path` (NULL or "" for none) is the
 * prefix of the trace file; `counters` non-zero keeps the per-device
 * counters (host only). NULL when both are off, or memory is short (then
 * *err says so). */
ots_trace *ots_trace_new(const char *path, int counters, int rank, int size,
                         uint64_t origin_ns, char *err, size_t errlen);

/* The host's device table, once known and before any event: device d
 * (of `ndevices`) is unit `unit_of[d]` of rank `rank_of[d]`, a rank's
 * devices consecutive. The counters are kept per device from then on
 * (until then: device d is rank d + 1's unit 0). 0, or -1 when memory is
 * short (they stay as they were); a no-op without counters. */
int ots_trace_set_devices(ots_trace *t, int ndevices, const int *rank_of,
                          const uint16_t *unit_of);

/* The trace hook: records `ev` reaching `point` (otm_trace_point). */
void ots_trace_record(ots_trace *t, otm_event *ev, int point);

/* Names the calling thread's track ("gate", "handler 1"); NULL t: no-op. */
void ots_trace_name_thread(ots_trace *t, const char *name);

/* Writes PATH.RANK.json (Chrome trace-event JSON). Returns 0, or -1 with
 * the reason in err. Does nothing (0) without a path. */
int ots_trace_write(ots_trace *t, char *err, size_t errlen);

/* Spans recorded and dropped (the array was full). */
uint64_t ots_trace_spans(const ots_trace *t);
uint64_t ots_trace_dropped(const ots_trace *t);

/* The host's counter table, one line at a time (without newline). */
void ots_trace_report(const ots_trace *t,
                      void (*say)(void *ctx, const char *line), void *ctx);

void ots_trace_free(ots_trace *t);

#endif
