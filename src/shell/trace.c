/*
 * trace.c - the recorder behind the node's trace hook: spans of a
 * timeline (Chrome trace-event JSON) and the host's per-device counters.
 *
 * Recording costs a clock read per point and, at an event's end, one
 * atomic increment to claim a slot in the preallocated array plus a few
 * relaxed atomic additions for the counters; nothing is allocated and no
 * lock is taken, except once per thread to name its track.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "otm/node.h"
#include "otm/status.h"
#include "idle.h"
#include "trace.h"

/* One ended event. Times in ns from the origin; run 0: never progressed. */
typedef struct span {
    uint64_t t0, t1, run;
    uint64_t bytes;
    int32_t device, tag, status;
    uint16_t unit;
    uint8_t kind, side, failed, role, track;
} span;

/* What the host saw of one device; relaxed atomics, read at exit. */
typedef struct dev_counters {
    atomic_uint_fast64_t events[OTM_KIND_END];
    atomic_uint_fast64_t failed, to_dev, from_dev, to_peer, kernel_ns;
} dev_counters;

struct ots_trace {
    char *path;                 /* NULL: counters only */
    int rank, size;
    uint64_t origin;
    span *spans;
    atomic_size_t next;         /* slots claimed, may pass the capacity */
    atomic_uint_fast64_t dropped;
    pthread_mutex_t lock;       /* guards the track names */
    int ntracks;
    char names[OTM_TRACE_TRACKS][40];
    dev_counters *dev;          /* host with counters: ndev devices */
    int ndev;
    int *rank_of;               /* per device (ots_trace_set_devices), or */
    uint16_t *unit_of;          /* NULL: device d is rank d + 1's CPU */
    int *start;                 /* per rank: its first device, or ndev */
};

/* The calling thread's track in the recorder `my_owner` (a process has
 * one recorder at a time; a new one numbers its tracks afresh). */
static _Thread_local int my_track = -1;
static _Thread_local const ots_trace *my_owner;

ots_trace *ots_trace_new(const char *path, int counters, int rank, int size,
                         uint64_t origin_ns, char *err, size_t errlen)
{
    int tracing = path && path[0];
    counters = counters && rank == 0 && size > 1;
    if (!tracing && !counters)
        return NULL;
    ots_trace *t = calloc(1, sizeof *t);
    if (t) {
        t->rank = rank;
        t->size = size;
        t->origin = origin_ns;
        pthread_mutex_init(&t->lock, NULL);
        /* calloc of a large block maps pages lazily: unused capacity
         * costs address space, not memory. */
        if (tracing) {
            t->path = strdup(path);
            t->spans = calloc(OTM_TRACE_CAPACITY, sizeof *t->spans);
        }
        if (counters) {
            t->dev = calloc((size_t)size - 1, sizeof *t->dev);
            t->ndev = size - 1;
        }
        if ((tracing && (!t->path || !t->spans)) || (counters && !t->dev)) {
            ots_trace_free(t);
            t = NULL;
        }
    }
    if (!t)
        snprintf(err, errlen, "out of memory for the trace and counters");
    return t;
}

void ots_trace_free(ots_trace *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->path);
    free(t->spans);
    free(t->dev);
    free(t->rank_of);
    free(t->unit_of);
    free(t->start);
    free(t);
}

int ots_trace_set_devices(ots_trace *t, int ndevices, const int *rank_of,
                          const uint16_t *unit_of)
{
    if (!t || !t->dev)
        return 0;
    size_t n = ndevices > 0 ? (size_t)ndevices : 1;
    int *ranks = malloc(n * sizeof *ranks), *start = malloc((size_t)t->size * sizeof *start);
    uint16_t *units = malloc(n * sizeof *units);
    dev_counters *dev = calloc(n, sizeof *dev);
    if (!ranks || !start || !units || !dev) {
        free(ranks), free(start), free(units), free(dev);
        return -1;
    }
    for (int r = 0; r < t->size; r++)
        start[r] = ndevices;
    for (int d = ndevices - 1; d >= 0; d--) {
        ranks[d] = rank_of[d], units[d] = unit_of[d];
        if (rank_of[d] > 0 && rank_of[d] < t->size)
            start[rank_of[d]] = d;
    }
    free(t->dev);
    t->dev = dev, t->ndev = ndevices;
    t->rank_of = ranks, t->unit_of = units, t->start = start;
    return 0;
}

/* The device of (rank, unit), or -1. */
static int device_of(const ots_trace *t, int rank, uint16_t unit)
{
    if (!t->rank_of)
        return unit == 0 ? rank - 1 : -1;
    if (rank <= 0 || rank >= t->size)
        return -1;
    for (int d = t->start[rank]; d < t->ndev && t->rank_of[d] == rank; d++)
        if (t->unit_of[d] == unit)
            return d;
    return -1;
}

/* ---- tracks ---------------------------------------------------------------- */

static int track_of_thread(ots_trace *t, const char *name)
{
    if (my_owner == t && !name)
        return my_track;
    pthread_mutex_lock(&t->lock);
    if (my_owner != t) {
        my_owner = t;
        my_track = t->ntracks < OTM_TRACE_TRACKS ? t->ntracks++ : OTM_TRACE_TRACKS - 1;
        long tid = (long)syscall(SYS_gettid);
        if (tid == (long)getpid())
            snprintf(t->names[my_track], sizeof t->names[0], "main");
        else
            snprintf(t->names[my_track], sizeof t->names[0], "thread %ld", tid);
    }
    if (name) {
        /* Several handlers share a name: number the later ones. */
        int same = 0;
        for (int k = 0; k < t->ntracks; k++)
            same += k != my_track && !strncmp(t->names[k], name, strlen(name));
        if (same)
            snprintf(t->names[my_track], sizeof t->names[0], "%.24s %d", name, same + 1);
        else
            snprintf(t->names[my_track], sizeof t->names[0], "%.24s", name);
    }
    pthread_mutex_unlock(&t->lock);
    return my_track;
}

void ots_trace_name_thread(ots_trace *t, const char *name)
{
    if (t)
        track_of_thread(t, name);
}

/* ---- recording ------------------------------------------------------------- */

static uint64_t since_origin(const ots_trace *t)
{
    uint64_t now = ots_clock_ns();
    return now > t->origin ? now - t->origin : 0;
}

/* Payload bytes an event moves (ALLOC: bytes allocated; LOAD, EXECUTE and
 * the others: 0). */
static uint64_t event_bytes(const otm_event *ev)
{
    switch (ev->kind) {
    case OTM_KIND_ALLOC: return ev->p.alloc.size;
    case OTM_KIND_SUBMIT: return ev->p.submit.size;
    case OTM_KIND_RETRIEVE: return ev->p.retrieve.size;
    case OTM_KIND_EXCHANGE: return ev->p.exchange.size;
    default: return 0;
    }
}

static void count(ots_trace *t, const span *s)
{
    if (s->device < 0 || s->device >= t->size - 1 || s->kind >= OTM_KIND_END)
        return;
    int id = device_of(t, s->device + 1, s->unit);
    if (id < 0 || id >= t->ndev)
        return;
    dev_counters *d = &t->dev[id];
    memory_order relaxed = memory_order_relaxed;
    atomic_fetch_add_explicit(&d->events[s->kind], 1, relaxed);
    atomic_fetch_add_explicit(&d->failed, s->failed, relaxed);
    if (s->failed)
        return;
    if (s->kind == OTM_KIND_SUBMIT)
        atomic_fetch_add_explicit(&d->to_dev, s->bytes, relaxed);
    else if (s->kind == OTM_KIND_RETRIEVE)
        atomic_fetch_add_explicit(&d->from_dev, s->bytes, relaxed);
    else if (s->kind == OTM_KIND_EXCHANGE)
        atomic_fetch_add_explicit(&d->to_peer, s->bytes, relaxed);
    else if (s->kind == OTM_KIND_EXECUTE && s->run)
        atomic_fetch_add_explicit(&d->kernel_ns, s->t1 - s->run, relaxed);
}

static void end_span(ots_trace *t, const otm_event *ev)
{
    int origin = ev->side == OTM_ORIGIN;
    int device = origin ? ev->rank - 1 : t->rank - 1;
    span s = {
        .t0 = ev->trace[0], .t1 = since_origin(t), .run = ev->trace[1],
        .bytes = event_bytes(ev), .device = device >= 0 ? device : -1,
        .tag = ev->tag, .status = ev->status, .unit = ev->unit, .kind = (uint8_t)ev->kind,
        .side = ev->side, .failed = ev->state == OTM_FAILED, .role = ev->flags,
        .track = (uint8_t)(origin ? ev->trace[2] : (uint64_t)track_of_thread(t, NULL)),
    };
    if (t->dev && origin)
        count(t, &s);
    if (!t->spans)
        return;
    size_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (i < OTM_TRACE_CAPACITY)
        t->spans[i] = s;
    else
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
}

void ots_trace_record(ots_trace *t, otm_event *ev, int point)
{
    switch (point) {
    case OTM_TRACE_BEGIN:
        ev->trace[0] = since_origin(t);
        ev->trace[1] = 0;
        ev->trace[2] = ev->side == OTM_ORIGIN ? (uint64_t)track_of_thread(t, NULL) : 0;
        break;
    case OTM_TRACE_RUN:
        /* 0 means "never ran", so a run at the origin itself reads 1 ns. */
        ev->trace[1] = since_origin(t) | 1u;
        break;
    case OTM_TRACE_END:
        end_span(t, ev);
        break;
    default: break;
    }
}

uint64_t ots_trace_spans(const ots_trace *t)
{
    size_t n = atomic_load(&t->next);
    return n < OTM_TRACE_CAPACITY ? n : OTM_TRACE_CAPACITY;
}

uint64_t ots_trace_dropped(const ots_trace *t)
{
    return atomic_load(&t->dropped);
}

/* ---- the JSON file ------------------------------------------------------------ */

/* A JSON string of text we made (names, status texts): escapes what JSON
 * requires, whatever it is. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void put_meta(FILE *f, int pid, int tid, const char *what, const char *name)
{
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":",
            pid, tid, what);
    put_string(f, name);
    fputs("}},\n", f);
}

static void put_span(FILE *f, int pid, const span *s)
{
    static const char *const roles[] = {"send", "receive", "local"};
    const char *kind = otm_kind_name(s->kind);
    fprintf(f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
            "\"name\":\"%s\",\"cat\":\"%s\",\"args\":{\"kind\":\"%s\","
            "\"device\":%d,\"bytes\":%llu,\"tag\":%d,\"status\":\"%s\"",
            pid, s->track, (double)s->t0 / 1e3, (double)(s->t1 - s->t0) / 1e3, kind,
            s->side == OTM_ORIGIN ? "host" : "device", kind, (int)s->device,
            (unsigned long long)s->bytes, (int)s->tag, s->failed ? "FAILED" : "FINISHED");
    if (s->failed) {
        fputs(",\"error\":", f);
        put_string(f, otm_status_text((otm_status)s->status));
    }
    if (s->side == OTM_ORIGIN && s->run)
        fprintf(f, ",\"queued_us\":%.3f", (double)(s->run - s->t0) / 1e3);
    if (s->side == OTM_DEST && s->kind == OTM_KIND_EXCHANGE && s->role < 3)
        fprintf(f, ",\"role\":\"%s\"", roles[s->role]);
    fputs("}},\n", f);
}

static void put_all(ots_trace *t, FILE *f)
{
    char name[64];
    uint64_t n = ots_trace_spans(t);
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"rank\":%d,\"ranks\":%d,"
            "\"clock\":\"CLOCK_MONOTONIC, microseconds since the ranks left the "
            "start-up barrier\",\"capacity\":%u,\"spans\":%llu,\"dropped_spans\":%llu},\n"
            "\"traceEvents\":[\n",
            t->rank, t->size, OTM_TRACE_CAPACITY, (unsigned long long)n,
            (unsigned long long)ots_trace_dropped(t));
    if (t->rank == 0)
        snprintf(name, sizeof name, "rank 0 (host)");
    else
        snprintf(name, sizeof name, "rank %d (device %d)", t->rank, t->rank - 1);
    put_meta(f, t->rank, 0, "process_name", name);
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\","
            "\"args\":{\"sort_index\":%d}},\n", t->rank, t->rank);
    pthread_mutex_lock(&t->lock);
    for (int k = 0; k < t->ntracks; k++)
        put_meta(f, t->rank, k, "thread_name", t->names[k]);
    pthread_mutex_unlock(&t->lock);
    for (uint64_t i = 0; i < n; i++)
        put_span(f, t->rank, &t->spans[i]);
    /* JSON has no trailing comma: the list ends with one more metadata
     * record, which also names the dropped count where a viewer shows it. */
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_labels\","
            "\"args\":{\"labels\":\"%llu spans, %llu dropped\"}}\n]}\n", t->rank,
            (unsigned long long)n, (unsigned long long)ots_trace_dropped(t));
}

int ots_trace_write(ots_trace *t, char *err, size_t errlen)
{
    if (!t || !t->path)
        return 0;
    size_t len = strlen(t->path) + 32;
    char *file = malloc(len);
    if (!file)
        return snprintf(err, errlen, "out of memory writing the trace"), -1;
    snprintf(file, len, "%s.%d.json", t->path, t->rank);
    FILE *f = fopen(file, "w");
    int rc = 0;
    if (!f) {
        snprintf(err, errlen, "cannot write the trace %s: %m", file);
        rc = -1;
    } else {
        put_all(t, f);
        int bad = ferror(f);
        if (fclose(f) || bad) {
            snprintf(err, errlen, "writing the trace %s failed", file);
            rc = -1;
        } else {
            snprintf(err, errlen, "%s", file);
        }
    }
    free(file);
    return rc;
}

/* ---- the counter table ---------------------------------------------------------- */

static const int shown[] = {OTM_KIND_ALLOC, OTM_KIND_DELETE, OTM_KIND_SUBMIT,
                            OTM_KIND_RETRIEVE, OTM_KIND_EXCHANGE, OTM_KIND_EXECUTE,
                            OTM_KIND_LOAD, OTM_KIND_EXIT};
#define NSHOWN (sizeof shown / sizeof shown[0])

void ots_trace_report(const ots_trace *t, void (*say)(void *ctx, const char *line),
                      void *ctx)
{
    char line[400];
    if (!t || !t->dev)
        return;
    say(ctx, "counters per device, as the host saw them (kernel-ms: from each "
             "EXECUTE's notification to its reply, summed):");
    int n = snprintf(line, sizeof line, "%6s %4s", "device", "rank");
    for (size_t k = 0; k < NSHOWN; k++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %8s", otm_kind_name(shown[k]));
    snprintf(line + n, sizeof line - (size_t)n, " %6s %15s %17s %15s %12s", "failed",
             "bytes-to-device", "bytes-from-device", "bytes-to-peer", "kernel-ms");
    say(ctx, line);
    for (int d = 0; d < t->ndev; d++) {
        const dev_counters *c = &t->dev[d];
        n = snprintf(line, sizeof line, "%6d %4d", d, t->rank_of ? t->rank_of[d] : d + 1);
        for (size_t k = 0; k < NSHOWN; k++)
            n += snprintf(line + n, sizeof line - (size_t)n, " %8llu",
                          (unsigned long long)atomic_load(&c->events[shown[k]]));
        snprintf(line + n, sizeof line - (size_t)n, " %6llu %15llu %17llu %15llu %12.3f",
                 (unsigned long long)atomic_load(&c->failed),
                 (unsigned long long)atomic_load(&c->to_dev),
                 (unsigned long long)atomic_load(&c->from_dev),
                 (unsigned long long)atomic_load(&c->to_peer),
                 (double)atomic_load(&c->kernel_ns) / 1e6);
        say(ctx, line);
    }
}
