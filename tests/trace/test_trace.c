/*
 * test_trace.c - the trace recorder (src/shell/trace.c) on its own: which
 * settings make a recorder, the spans it keeps, what happens when its array
 * is full, the JSON file (parsed by python3's json module) and the host's
 * counter table; names that JSON must escape, spans that never ran or are
 * not counted; no memory for the recorder or the file's name (calloc,
 * malloc and strdup wrapped, ld --wrap), a file that cannot be written
 * whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otm/node.h"
#include "trace.h"

/* ---- allocations failing on demand --------------------------------------------
 * test_trace is linked with --wrap=calloc, --wrap=malloc and --wrap=strdup
 * (tests/trace/CMakeLists.txt): fail_alloc(n) makes the n-th of them from
 * now return NULL. */
static int alloc_fail_at;   /* 0: none */
static int alloc_calls;

static void fail_alloc(int n)
{
    alloc_calls = 0;
    alloc_fail_at = n;
}

/* 1 when this allocation fails. */
static int alloc_fails(void)
{
    if (!alloc_fail_at || ++alloc_calls != alloc_fail_at)
        return 0;
    alloc_fail_at = 0;
    errno = ENOMEM;
    return 1;
}

void *__real_calloc(size_t n, size_t size);
void *__real_malloc(size_t size);
char *__real_strdup(const char *s);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t size);
char *__wrap_strdup(const char *s);

void *__wrap_calloc(size_t n, size_t size)
{
    return alloc_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_malloc(size_t size)
{
    return alloc_fails() ? NULL : __real_malloc(size);
}

char *__wrap_strdup(const char *s)
{
    return alloc_fails() ? NULL : __real_strdup(s);
}

/* An event as the core would hand it to the hook. */
static otm_event event(int kind, int side, int rank, uint64_t bytes, int tag)
{
    otm_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint16_t)kind;
    ev.side = (uint8_t)side;
    ev.rank = rank;
    ev.tag = tag;
    ev.state = OTM_RUNNING;
    if (kind == OTM_KIND_EXCHANGE)
        ev.p.exchange.size = bytes;
    else if (kind == OTM_KIND_ALLOC)
        ev.p.alloc.size = bytes;
    else if (kind == OTM_KIND_SUBMIT)
        ev.p.submit.size = bytes;
    else
        ev.p.retrieve.size = bytes;
    return ev;
}

/* Takes `ev` through its whole life; status != OTM_OK ends it FAILED. */
static void live(ots_trace *t, otm_event *ev, otm_status status)
{
    ots_trace_record(t, ev, OTM_TRACE_BEGIN);
    ots_trace_record(t, ev, OTM_TRACE_RUN);
    ev->status = status;
    ev->state = status == OTM_OK ? OTM_FINISHED : OTM_FAILED;
    ots_trace_record(t, ev, OTM_TRACE_END);
}

static char dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/otm_trace_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs python3 on `file` with a snippet that prints one line; returns it. */
static const char *python(const char *snippet, const char *file)
{
    static char out[512];
    char cmd[1024];
    const char *py = getenv("OTM_PYTHON3");
    snprintf(cmd, sizeof cmd, "'%s' -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "%s' '%s'", py ? py : "python3", snippet, file);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    out[0] = '\0';
    if (!fgets(out, sizeof out, p))
        out[0] = '\0';
    assert_int_equal(pclose(p), 0);
    out[strcspn(out, "\n")] = '\0';
    return out;
}

static void test_off(void **state)
{
    (void)state;
    char err[64];
    assert_null(ots_trace_new(NULL, 0, 0, 3, 0, err, sizeof err));
    assert_null(ots_trace_new("", 0, 0, 3, 0, err, sizeof err));
    /* Counters are the host's: a worker without a path needs no recorder. */
    assert_null(ots_trace_new(NULL, 1, 1, 3, 0, err, sizeof err));
    ots_trace *t = ots_trace_new(NULL, 1, 0, 3, 0, err, sizeof err);
    assert_non_null(t);
    char e2[64] = "untouched";
    assert_int_equal(ots_trace_write(t, e2, sizeof e2), 0);   /* no path */
    assert_string_equal(e2, "untouched");
    ots_trace_free(t);
}

static void test_spans_json(void **state)
{
    (void)state;
    char err[256], prefix[128], file[160];
    snprintf(prefix, sizeof prefix, "%s/host", dir);
    ots_trace *t = ots_trace_new(prefix, 0, 0, 3, 0, err, sizeof err);
    assert_non_null(t);
    ots_trace_name_thread(t, "main");
    otm_event a = event(OTM_KIND_SUBMIT, OTM_ORIGIN, 1, 1000, 7);
    otm_event b = event(OTM_KIND_RETRIEVE, OTM_ORIGIN, 2, 64, 9);
    otm_event c = event(OTM_KIND_EXCHANGE, OTM_ORIGIN, 1, 4096, 11);
    live(t, &a, OTM_OK);
    live(t, &b, OTM_ERR_BAD_POINTER);
    live(t, &c, OTM_OK);
    assert_int_equal(ots_trace_spans(t), 3);
    assert_int_equal(ots_trace_dropped(t), 0);
    assert_int_equal(ots_trace_write(t, err, sizeof err), 0);
    snprintf(file, sizeof file, "%s.0.json", prefix);
    assert_string_equal(err, file);
    ots_trace_free(t);
    assert_string_equal(
        python("x=[e for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\"]; "
               "print(\";\".join(\"%s %s %d %d %d %s %s\" % (e[\"name\"], e[\"cat\"], "
               "e[\"args\"][\"device\"], e[\"args\"][\"bytes\"], e[\"args\"][\"tag\"], "
               "e[\"args\"][\"status\"], e[\"tid\"]) for e in x))", file),
        "SUBMIT host 0 1000 7 FINISHED 0;RETRIEVE host 1 64 9 FAILED 0;"
        "EXCHANGE host 0 4096 11 FINISHED 0");
    assert_string_equal(
        python("m=[(e[\"name\"], e[\"args\"].get(\"name\")) for e in d[\"traceEvents\"] "
               "if e[\"ph\"]==\"M\" and e[\"name\"] in (\"process_name\", \"thread_name\")]; "
               "print(m, d[\"otherData\"][\"dropped_spans\"])", file),
        "[('process_name', 'rank 0 (host)'), ('thread_name', 'main')] 0");
}

/* A worker's spans: the device is the worker's own, the track the thread
 * that ended the event, and an exchange says its role. */
static void test_worker_tracks(void **state)
{
    (void)state;
    char err[256], prefix[128], file[160];
    snprintf(prefix, sizeof prefix, "%s/worker", dir);
    ots_trace *t = ots_trace_new(prefix, 1, 2, 3, 0, err, sizeof err);
    assert_non_null(t);
    ots_trace_name_thread(t, "gate");
    otm_event a = event(OTM_KIND_EXECUTE, OTM_DEST, 0, 0, 5);
    otm_event b = event(OTM_KIND_EXCHANGE, OTM_DEST, 1, 256, 6);
    b.flags = OTM_XCHG_RECV;
    live(t, &a, OTM_OK);
    live(t, &b, OTM_OK);
    assert_int_equal(ots_trace_write(t, err, sizeof err), 0);
    ots_trace_free(t);
    snprintf(file, sizeof file, "%s.2.json", prefix);
    assert_string_equal(
        python("print([(e[\"pid\"], e[\"args\"][\"device\"], e[\"args\"].get(\"role\")) "
               "for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\"], [e[\"args\"][\"name\"] "
               "for e in d[\"traceEvents\"] if e[\"name\"]==\"process_name\"])", file),
        "[(2, 1, None), (2, 1, 'receive')] ['rank 2 (device 1)']");
}

/* Past the capacity, spans are counted, not stored, and the file says so. */
static void test_full(void **state)
{
    (void)state;
    char err[256], prefix[128], file[160];
    snprintf(prefix, sizeof prefix, "%s/full", dir);
    ots_trace *t = ots_trace_new(prefix, 0, 1, 2, 0, err, sizeof err);
    assert_non_null(t);
    otm_event ev = event(OTM_KIND_ALLOC, OTM_DEST, 0, 8, 3);
    for (unsigned i = 0; i < OTM_TRACE_CAPACITY + 5; i++) {
        ev.state = OTM_RUNNING;
        live(t, &ev, OTM_OK);
    }
    assert_int_equal(ots_trace_spans(t), OTM_TRACE_CAPACITY);
    assert_int_equal(ots_trace_dropped(t), 5);
    assert_int_equal(ots_trace_write(t, err, sizeof err), 0);
    ots_trace_free(t);
    snprintf(file, sizeof file, "%s.1.json", prefix);
    char want[64];
    snprintf(want, sizeof want, "%u %u 5", OTM_TRACE_CAPACITY, OTM_TRACE_CAPACITY);
    assert_string_equal(
        python("print(len([e for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\"]), "
               "d[\"otherData\"][\"spans\"], d[\"otherData\"][\"dropped_spans\"])", file),
        want);
}

static void test_unwritable(void **state)
{
    (void)state;
    char err[256];
    ots_trace *t = ots_trace_new("/nonexistent-dir/x", 0, 0, 2, 0, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(ots_trace_write(t, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot write the trace /nonexistent-dir/x.0.json"));
    ots_trace_free(t);
}

typedef struct lines {
    char text[8][400];
    int n;
} lines;

static void collect(void *ctx, const char *line)
{
    lines *l = ctx;
    assert_true(l->n < 8);
    snprintf(l->text[l->n++], sizeof l->text[0], "%s", line);
}

/* The counters count what the host saw, per device. */
static void test_counters(void **state)
{
    (void)state;
    char err[64];
    ots_trace *t = ots_trace_new(NULL, 1, 0, 3, 0, err, sizeof err);
    assert_non_null(t);
    otm_event evs[] = {
        event(OTM_KIND_SUBMIT, OTM_ORIGIN, 1, 1000, 3),
        event(OTM_KIND_SUBMIT, OTM_ORIGIN, 1, 24, 3),
        event(OTM_KIND_RETRIEVE, OTM_ORIGIN, 1, 500, 3),
        event(OTM_KIND_RETRIEVE, OTM_ORIGIN, 1, 64, 3),     /* fails */
        event(OTM_KIND_EXECUTE, OTM_ORIGIN, 1, 0, 3),
        event(OTM_KIND_EXCHANGE, OTM_ORIGIN, 2, 4096, 3),
        event(OTM_KIND_ALLOC, OTM_ORIGIN, 2, 77, 3),
        event(OTM_KIND_SYNC, OTM_ORIGIN, 0, 0, -1),          /* no device */
        event(OTM_KIND_SUBMIT, OTM_DEST, 0, 999, 3),         /* not the host's */
    };
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        live(t, &evs[i], i == 3 ? OTM_ERR_BAD_POINTER : OTM_OK);
    lines l = {.n = 0};
    ots_trace_report(t, collect, &l);
    ots_trace_free(t);
    assert_int_equal(l.n, 4);
    assert_non_null(strstr(l.text[0], "kernel-ms"));
    const char *cols[] = {"device", "rank", "ALLOC", "DELETE", "SUBMIT", "RETRIEVE",
                          "EXCHANGE", "EXECUTE", "LOAD", "EXIT", "failed",
                          "bytes-to-device", "bytes-from-device", "bytes-to-peer",
                          "kernel-ms"};
    char *save = NULL, *tok = strtok_r(l.text[1], " ", &save);
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++, tok = strtok_r(NULL, " ", &save))
        assert_string_equal(tok, cols[i]);
    assert_null(tok);
    assert_int_equal(strlen(l.text[2]), strlen(l.text[3]));
    unsigned long long v[14];
    double ms;
    /* device rank ALLOC DELETE SUBMIT RETRIEVE EXCHANGE EXECUTE LOAD EXIT
     * failed to from peer */
    assert_int_equal(sscanf(l.text[2], "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                            "%llu %llu %llu %llu %lf", &v[0], &v[1], &v[2], &v[3], &v[4],
                            &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12],
                            &v[13], &ms), 15);
    unsigned long long want0[] = {0, 1, 0, 0, 2, 2, 0, 1, 0, 0, 1, 1024, 500, 0};
    for (int i = 0; i < 14; i++)
        assert_int_equal(v[i], want0[i]);
    assert_true(ms >= 0);
    assert_int_equal(sscanf(l.text[3], "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                            "%llu %llu %llu %llu %lf", &v[0], &v[1], &v[2], &v[3], &v[4],
                            &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12],
                            &v[13], &ms), 15);
    unsigned long long want1[] = {1, 2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4096};
    for (int i = 0; i < 14; i++)
        assert_int_equal(v[i], want1[i]);
    assert_true(ms == 0);
}

/* Thread names that JSON must escape come back as given; a second thread
 * of the same name is numbered. */
static ots_trace *naming;

static void *name_a_thread(void *name)
{
    ots_trace_name_thread(naming, name);
    return NULL;
}

static void test_names_escaped(void **state)
{
    (void)state;
    char err[256], prefix[128], file[160];
    snprintf(prefix, sizeof prefix, "%s/names", dir);
    ots_trace *t = ots_trace_new(prefix, 0, 1, 2, 0, err, sizeof err);
    assert_non_null(t);
    ots_trace_name_thread(NULL, "ignored");
    /* New threads: each is a new track of this recorder. */
    static const char *const names[] = {"q\"b\\t\tn\n", "gate", "gate"};
    naming = t;
    for (int i = 0; i < 3; i++) {
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, name_a_thread, (void *)names[i]), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
    }
    assert_int_equal(ots_trace_write(t, err, sizeof err), 0);
    ots_trace_free(t);
    ots_trace_free(NULL);
    snprintf(file, sizeof file, "%s.1.json", prefix);
    assert_string_equal(
        python("print(repr([e[\"args\"][\"name\"] for e in d[\"traceEvents\"] "
               "if e[\"name\"]==\"thread_name\"]))", file),
        "['q\"b\\\\t\\tn\\n', 'gate', 'gate 2']");
}

/* A host's span that never ran has no queued_us; a worker's exchange
 * with no role known says none; a point the recorder does not know is
 * ignored. Counters: an event for a rank outside the job and an EXECUTE
 * that never ran add no kernel time. */
static void test_spans_unfinished(void **state)
{
    (void)state;
    char err[256], prefix[128], file[160];
    snprintf(prefix, sizeof prefix, "%s/unfinished", dir);
    ots_trace *t = ots_trace_new(prefix, 1, 0, 3, 0, err, sizeof err);
    assert_non_null(t);
    otm_event a = event(OTM_KIND_EXECUTE, OTM_ORIGIN, 1, 0, 4);
    ots_trace_record(t, &a, OTM_TRACE_BEGIN);
    ots_trace_record(t, &a, 99);               /* unknown: ignored */
    a.state = OTM_FINISHED;
    ots_trace_record(t, &a, OTM_TRACE_END);
    otm_event b = event(OTM_KIND_SUBMIT, OTM_ORIGIN, 7, 64, 5);   /* no such device */
    live(t, &b, OTM_OK);
    otm_event c = event(OTM_KIND_EXCHANGE, OTM_DEST, 0, 32, 6);
    c.flags = 3;                               /* not a role */
    live(t, &c, OTM_OK);
    assert_int_equal(ots_trace_spans(t), 3);
    lines l = {.n = 0};
    ots_trace_report(t, collect, &l);
    assert_int_equal(ots_trace_write(t, err, sizeof err), 0);
    ots_trace_free(t);
    /* device 0: one EXECUTE, no kernel time, nothing else; device 1:
     * nothing. */
    assert_int_equal(l.n, 4);
    assert_non_null(strstr(l.text[2], " 0.000"));
    unsigned long long v[14];
    for (int d = 0; d < 2; d++) {
        assert_int_equal(sscanf(l.text[2 + d], "%llu %llu %llu %llu %llu %llu %llu %llu %llu "
                                "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                                &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12],
                                &v[13]), 14);
        for (int i = 2; i < 14; i++)
            assert_int_equal(v[i], d == 0 && i == 7 ? 1 : 0);
    }
    snprintf(file, sizeof file, "%s.0.json", prefix);
    assert_string_equal(
        python("print([(e[\"name\"], \"queued_us\" in e[\"args\"], e[\"args\"].get(\"role\")) "
               "for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\"])", file),
        "[('EXECUTE', False, None), ('SUBMIT', True, None), ('EXCHANGE', False, None)]");
}

/* No memory for the recorder, its path, its spans or its counters: no
 * recorder, and err says why; then one is made. */
static void test_new_without_memory(void **state)
{
    (void)state;
    char err[256], prefix[128];
    snprintf(prefix, sizeof prefix, "%s/nomem", dir);
    int failures = 0;
    for (int n = 1; n < 16; n++) {
        err[0] = '\0';
        fail_alloc(n);
        ots_trace *t = ots_trace_new(prefix, 1, 0, 3, 0, err, sizeof err);
        int fired = alloc_fail_at == 0;
        fail_alloc(0);
        if (!fired) {
            assert_non_null(t);
            ots_trace_free(t);
            break;
        }
        failures++;
        assert_null(t);
        assert_string_equal(err, "out of memory for the trace and counters");
    }
    assert_int_equal(failures, 4);      /* the record, path, spans, counters */
    /* Writing: no memory for the file's name. */
    ots_trace *t = ots_trace_new(prefix, 0, 0, 2, 0, err, sizeof err);
    assert_non_null(t);
    fail_alloc(1);
    assert_int_equal(ots_trace_write(t, err, sizeof err), -1);
    assert_string_equal(err, "out of memory writing the trace");
    ots_trace_free(t);
}

/* A file whose writes fail (here the device with no room, through a
 * symbolic link named as the file): -1, and err says so. */
static void test_write_fails(void **state)
{
    (void)state;
    char err[256], prefix[128], link[160];
    snprintf(prefix, sizeof prefix, "%s/full", dir);
    snprintf(link, sizeof link, "%s.0.json", prefix);
    assert_int_equal(symlink("/dev/full", link), 0);
    ots_trace *t = ots_trace_new(prefix, 0, 0, 2, 0, err, sizeof err);
    assert_non_null(t);
    otm_event a = event(OTM_KIND_SUBMIT, OTM_ORIGIN, 1, 8, 3);
    live(t, &a, OTM_OK);
    assert_int_equal(ots_trace_write(t, err, sizeof err), -1);
    assert_non_null(strstr(err, "writing the trace"));
    assert_non_null(strstr(err, "failed"));
    ots_trace_free(t);
}

/* No counters in a job of one rank; nothing to report or write without a
 * recorder, or without counters; an origin later than the clock (ranks'
 * clocks apart) puts spans at 0. */
static void test_edges(void **state)
{
    (void)state;
    char err[256] = "", prefix[128], file[160];
    lines l = {.n = 0};
    assert_null(ots_trace_new(NULL, 1, 0, 1, 0, err, sizeof err));
    assert_int_equal(ots_trace_write(NULL, err, sizeof err), 0);
    ots_trace_report(NULL, collect, &l);
    snprintf(prefix, sizeof prefix, "%s/late", dir);
    ots_trace *t = ots_trace_new(prefix, 0, 1, 2, UINT64_MAX, err, sizeof err);
    assert_non_null(t);
    ots_trace_report(t, collect, &l);
    assert_int_equal(l.n, 0);
    otm_event a = event(OTM_KIND_ALLOC, OTM_DEST, 0, 16, 3);
    live(t, &a, OTM_OK);
    assert_int_equal(ots_trace_write(t, err, sizeof err), 0);
    ots_trace_free(t);
    snprintf(file, sizeof file, "%s.1.json", prefix);
    assert_string_equal(
        python("print([(e[\"ts\"], e[\"dur\"]) for e in d[\"traceEvents\"] "
               "if e[\"ph\"]==\"X\"])", file),
        "[(0.0, 0.0)]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_spans_json),
        cmocka_unit_test(test_worker_tracks),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_unwritable),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_names_escaped),
        cmocka_unit_test(test_spans_unfinished),
        cmocka_unit_test(test_new_without_memory),
        cmocka_unit_test(test_write_fails),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
