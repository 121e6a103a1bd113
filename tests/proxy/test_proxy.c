/*
 * test_proxy.c - otd_proxy_* (otm/proxy.h) against the test plugin
 * libomptarget.rtl.otmaccel.so (accel_plugin.c), and the plugin's own
 * ABI: opening (notes, invalid names, bad settings), units and their local
 * ids, accepts(), loads, memory (alloc, put, get, copy, free), kernels and
 * globals, the arena the test process cannot touch, the rendezvous, the
 * queue of the _async entry points, and each failure of OTM_ACCEL_FAIL.
 *
 * usage: proxy_unit GROUP [WHAT]; one process per group, since the plugin
 * reads its environment when it is opened and counts calls per process
 * (CMakeLists.txt registers each group). GROUP fail takes WHAT, the kind
 * of OTM_ACCEL_FAIL whose second call fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "otm/fault.h"
#include "otm/proxy.h"
#include "otm/tgt.h"

#define ERRLEN 512

/* ---- the image and the host's table of its entries -------------------------- */

typedef struct blob {
    unsigned char *bytes;
    size_t size;
} blob;

static blob image;

enum { E_ADD, E_SUM, E_BUMP, E_FILL, E_COUNT, E_GLOBAL, E_RUNS, E_N };
static char n_add[] = "acc_add", n_sum[] = "acc_global_sum", n_bump[] = "acc_global_bump",
            n_fill[] = "acc_fill", n_count[] = "acc_count", n_global[] = "acc_global",
            n_runs[] = "acc_runs", n_missing[] = "acc_missing";
static int host_marks[E_N];      /* the host's addresses: never used by the plugin */
static __tgt_offload_entry host_entries[E_N] = {
    {&host_marks[E_ADD], n_add, 0, 0, 0},       {&host_marks[E_SUM], n_sum, 0, 0, 0},
    {&host_marks[E_BUMP], n_bump, 0, 0, 0},     {&host_marks[E_FILL], n_fill, 0, 0, 0},
    {&host_marks[E_COUNT], n_count, 0, 0, 0},   {&host_marks[E_GLOBAL], n_global, 32, 0, 0},
    {&host_marks[E_RUNS], n_runs, 8, 0, 0}};

static blob read_blob(const char *path)
{
    blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long end = ftell(f);
    assert_true(end > 64);
    rewind(f);
    b.size = (size_t)end;
    b.bytes = malloc(b.size);
    assert_non_null(b.bytes);
    assert_int_equal(fread(b.bytes, 1, b.size, f), b.size);
    fclose(f);
    return b;
}

/* ---- stderr, captured around a call (the plugin writes with write(2)) ------ */

typedef struct capture {
    int saved;
    FILE *f;
} capture;

static void cap_begin(capture *c)
{
    fflush(stderr);
    c->f = tmpfile();
    assert_non_null(c->f);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_int_equal(dup2(fileno(c->f), 2), 2);
}

/* What was written, NUL-terminated (the caller frees it), and echoed to
 * the real stderr so that a failing test shows it. */
static char *cap_end(capture *c)
{
    fflush(stderr);
    assert_int_equal(dup2(c->saved, 2), 2);
    close(c->saved);
    long n = ftell(c->f);
    char *s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    assert_non_null(s);
    rewind(c->f);
    if (n > 0)
        assert_int_equal(fread(s, 1, (size_t)n, c->f), (size_t)n);
    fclose(c->f);
    fprintf(stderr, "%s", s);
    return s;
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *at = s; (at = strstr(at, needle)); at += strlen(needle))
        n++;
    return n;
}

#define assert_contains(hay, needle)                                                   \
    do {                                                                                \
        if (!strstr((hay), (needle)))                                                   \
            fail_msg("'%s' does not contain '%s'", (hay), (needle));                    \
    } while (0)

/* ---- proxy helpers ------------------------------------------------------------------ */

static otd_proxy *open_accel(const char *names, char *notes, size_t noteslen)
{
    char err[ERRLEN] = "", mine[2048];
    otd_proxy *px = NULL;
    if (!notes)
        notes = mine, noteslen = sizeof mine;
    otm_status st = otd_proxy_open(&px, ACCEL_PLUGIN_DIR, names, notes, noteslen, err,
                                   sizeof err);
    if (st != OTM_OK)
        fail_msg("otd_proxy_open(%s): %d %s", names, st, err);
    assert_non_null(px);
    return px;
}

static const otd_proxy_entry *load_on(otd_proxy *px, uint16_t u)
{
    const otd_proxy_entry *t = NULL;
    uint64_t n = 0;
    char err[ERRLEN] = "";
    otm_status st = otd_proxy_load(px, u, image.bytes, image.size, host_entries,
                                   host_entries + E_N, &t, &n, err, sizeof err);
    if (st != OTM_OK)
        fail_msg("load on unit %u: %d %s", u, st, err);
    assert_int_equal(n, E_N);
    return t;
}

static uint64_t alloc_on(otd_proxy *px, uint16_t u, uint64_t size)
{
    uint64_t a = 0;
    char err[ERRLEN] = "";
    otm_status st = otd_proxy_alloc(px, u, size, TARGET_ALLOC_DEFAULT, &a, err, sizeof err);
    if (st != OTM_OK)
        fail_msg("alloc of %llu on unit %u: %d %s", (unsigned long long)size, u, st, err);
    assert_true(a != 0);
    return a;
}

static void put_ok(otd_proxy *px, uint16_t u, uint64_t dst, const void *src, uint64_t len)
{
    char err[ERRLEN] = "";
    otm_status st = otd_proxy_put(px, u, dst, src, len, err, sizeof err);
    if (st != OTM_OK)
        fail_msg("put on unit %u: %d %s", u, st, err);
}

static void get_ok(otd_proxy *px, uint16_t u, void *dst, uint64_t src, uint64_t len)
{
    char err[ERRLEN] = "";
    otm_status st = otd_proxy_get(px, u, dst, src, len, err, sizeof err);
    if (st != OTM_OK)
        fail_msg("get on unit %u: %d %s", u, st, err);
}

static int64_t get_i64(otd_proxy *px, uint16_t u, uint64_t src)
{
    int64_t v = 0;
    get_ok(px, u, &v, src, sizeof v);
    return v;
}

static otm_status run_on(otd_proxy *px, uint16_t u, uint64_t kernel, void **args, uint32_t n,
                         char *err)
{
    otd_fault f;
    memset(&f, 0, sizeof f);
    return otd_proxy_run(px, u, kernel, args, n, 1, 1, &f, err, ERRLEN);
}

static void run_ok(otd_proxy *px, uint16_t u, uint64_t kernel, void **args, uint32_t n)
{
    char err[ERRLEN] = "";
    otm_status st = run_on(px, u, kernel, args, n, err);
    if (st != OTM_OK)
        fail_msg("kernel on unit %u: %d %s", u, st, err);
}

#define ARG(v) ((void *)(uintptr_t)(v))

/* ---- the arena, seen from this process --------------------------------------- */

/* The line of /proc/self/maps holding addr: its permissions and name. */
static int mapping_of(uint64_t addr, char perms[8], char *name, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    assert_non_null(f);
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &at) < 3)
            continue;
        if (addr < lo || addr >= hi)
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(name, len, "%s", at ? line + at : "");
        found = 1;
    }
    fclose(f);
    return found;
}

/* A read of addr by this process's own code: the status of a child that
 * tries it (the signal it died of, or 0 when it could read). */
static int read_dies_of(uint64_t addr)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        volatile unsigned char c = *(volatile unsigned char *)(uintptr_t)addr;
        _exit(c == 0x5a ? 3 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* addr is unit u's device memory: in the arena of its local device,
 * which this process cannot read. */
static void assert_device_memory(otd_proxy *px, uint16_t u, uint64_t addr)
{
    char perms[8] = "", name[512] = "", want[64];
    assert_true(mapping_of(addr, perms, name, sizeof name));
    snprintf(want, sizeof want, "otmaccel-arena-%d", otd_proxy_local(px, u));
    assert_contains(name, want);
    assert_string_equal(perms, "---s");
    assert_int_equal(read_dies_of(addr), SIGSEGV);
}

/* No file of load_binary is left in TMPDIR (each test has its own). */
static void assert_no_image_files(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir)
        return;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "otmaccel-image-", 15))
            fail_msg("%s/%s left behind", dir, e->d_name);
    closedir(d);
}

static int setup_faults(void **state)
{
    /* cmocka installs its own SIGSEGV handler for each test: the guarded
     * calls need theirs. */
    return otd_fault_install(2, "proxy_unit: ") == OTM_OK ? 0 : -1;
}

/* ==== group open =================================================================== */

static void test_open_notes(void **state)
{
    char notes[2048];
    otd_proxy *px = open_accel("otmaccel,nosuch", notes, sizeof notes);
    assert_int_equal(otd_proxy_units(px), 3);
    assert_contains(notes, "plugin otmaccel: 3 device(s)");
    assert_contains(notes, "plugin nosuch skipped: it does not load");
    assert_contains(notes, "libomptarget.rtl.nosuch.so");
    for (uint16_t u = 1; u <= 3; u++) {
        assert_string_equal(otd_proxy_plugin(px, u), "otmaccel");
        assert_int_equal(otd_proxy_local(px, u), u - 1);
    }
    assert_null(otd_proxy_plugin(px, 0));
    assert_null(otd_proxy_plugin(px, 4));
    assert_int_equal(otd_proxy_local(px, 0), -1);
    assert_int_equal(otd_proxy_local(px, 4), -1);
    otd_proxy_close(px);
}

static void test_open_none(void **state)
{
    const char *names[] = {"none", "", "host", "nosuch"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char notes[1024];
        otd_proxy *px = open_accel(names[i], notes, sizeof notes);
        assert_int_equal(otd_proxy_units(px), 0);
        assert_null(otd_proxy_plugin(px, 1));
        if (!strcmp(names[i], "host"))
            assert_contains(notes, "plugin x86_64 skipped: it does not load");
        otd_proxy_close(px);
    }
    otd_proxy_close(NULL);
    assert_int_equal(otd_proxy_units(NULL), 0);
}

static void test_open_invalid(void **state)
{
    static const struct { const char *names, *bad; } cases[] = {
        {"9lives", "'9lives'"}, {"../otmaccel", "'../otmaccel'"}, {"otm accel", "'otm accel'"},
        {"otmaccel,,nosuch", "''"}, {"a.b", "'a.b'"}, {"x/y", "'x/y'"},
        {"otmaccel,-x", "'-x'"},
        {"abcdefghijabcdefghijabcdefghijab", "'abcdefghijabcdefghijabcdefghijab'"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char notes[1024], err[ERRLEN] = "";
        otd_proxy *px = (otd_proxy *)&notes;
        otm_status st = otd_proxy_open(&px, ACCEL_PLUGIN_DIR, cases[i].names, notes,
                                       sizeof notes, err, sizeof err);
        if (st != OTM_ERR_INVALID)
            fail_msg("'%s': status %d, expected OTM_ERR_INVALID", cases[i].names, st);
        assert_null(px);
        assert_contains(err, cases[i].bad);
        assert_contains(err, "names no plugin");
    }
}

static void test_accepts(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    unsigned char h[64];
    for (uint16_t u = 1; u <= 3; u++)
        assert_int_equal(otd_proxy_accepts(px, u, image.bytes, image.size), 1);
    assert_int_equal(otd_proxy_accepts(px, 0, image.bytes, image.size), 0);
    assert_int_equal(otd_proxy_accepts(px, 4, image.bytes, image.size), 0);
    assert_int_equal(otd_proxy_accepts(px, 1, image.bytes, 0), 0);
    assert_int_equal(otd_proxy_accepts(px, 1, NULL, image.size), 0);
    /* The header alone is what it reads: ET_DYN, x86_64, 64-bit ELF. */
    memcpy(h, image.bytes, sizeof h);
    assert_int_equal(otd_proxy_accepts(px, 1, h, sizeof h), 1);
    h[18] = 190, h[19] = 0;                 /* EM_CUDA */
    assert_int_equal(otd_proxy_accepts(px, 1, h, sizeof h), 0);
    memcpy(h, image.bytes, sizeof h);
    h[16] = 2;                              /* ET_EXEC */
    assert_int_equal(otd_proxy_accepts(px, 1, h, sizeof h), 0);
    memcpy(h, image.bytes, sizeof h);
    h[4] = 1;                               /* ELFCLASS32 */
    assert_int_equal(otd_proxy_accepts(px, 1, h, sizeof h), 0);
    memcpy(h, image.bytes, sizeof h);
    h[1] = 'X';
    assert_int_equal(otd_proxy_accepts(px, 1, h, sizeof h), 0);
    assert_int_equal(otd_proxy_accepts(px, 1, image.bytes, 16), 0);
    otd_proxy_close(px);
}

/* ==== group devices ================================================================ */

static void test_devices_count(void **state)
{
    static const struct { const char *value; uint16_t units; } cases[] = {
        {"5", 5}, {"1", 1}, {"16", 16}, {"3", 3}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char notes[1024], want[64];
        setenv("OTM_ACCEL_DEVICES", cases[i].value, 1);
        otd_proxy *px = open_accel("otmaccel", notes, sizeof notes);
        assert_int_equal(otd_proxy_units(px), cases[i].units);
        snprintf(want, sizeof want, "plugin otmaccel: %u device(s)", cases[i].units);
        assert_contains(notes, want);
        for (uint16_t u = 1; u <= cases[i].units; u++)
            assert_int_equal(otd_proxy_local(px, u), u - 1);
        /* The last unit works like the first. */
        uint64_t a = alloc_on(px, cases[i].units, 64);
        assert_device_memory(px, cases[i].units, a);
        otd_proxy_close(px);
    }
    unsetenv("OTM_ACCEL_DEVICES");
}

static void test_devices_zero(void **state)
{
    char notes[1024];
    capture c;
    setenv("OTM_ACCEL_DEVICES", "0", 1);
    cap_begin(&c);
    otd_proxy *px = open_accel("otmaccel", notes, sizeof notes);
    char *said = cap_end(&c);
    assert_int_equal(otd_proxy_units(px), 0);
    assert_contains(notes, "plugin otmaccel skipped: it found no device");
    assert_string_equal(said, "");          /* 0 is a valid setting */
    free(said);
    otd_proxy_close(px);
    unsetenv("OTM_ACCEL_DEVICES");
}

/* ==== group bad_env ================================================================ */

static void test_bad_env(void **state)
{
    static const struct { const char *var, *value; } cases[] = {
        {"OTM_ACCEL_DEVICES", "abc"},      {"OTM_ACCEL_DEVICES", "17"},
        {"OTM_ACCEL_DEVICES", "-1"},       {"OTM_ACCEL_DEVICES", ""},
        {"OTM_ACCEL_DEVICES", "3x"},       {"OTM_ACCEL_MEMORY", "0"},
        {"OTM_ACCEL_MEMORY", "lots"},      {"OTM_ACCEL_FAIL", "bogus:1"},
        {"OTM_ACCEL_FAIL", "data_alloc:0"}, {"OTM_ACCEL_FAIL", "data_alloc"},
        {"OTM_ACCEL_FAIL", "data_alloc:x"}, {"OTM_ACCEL_FAIL", "data_alloc:1,"},
        {"OTM_ACCEL_FAIL", ""},            {"OTM_ACCEL_FAIL", "run:1,,trap:2"},
        {"OTM_ACCEL_FAIL", "trap:-1"},     {"OTM_ACCEL_FAIL", "run:99999999999999"},
        {"OTM_ACCEL_RENDEZVOUS", "0"},     {"OTM_ACCEL_RENDEZVOUS", "65"},
        {"OTM_ACCEL_RENDEZVOUS", "3:"},    {"OTM_ACCEL_RENDEZVOUS", "3:0"},
        {"OTM_ACCEL_RENDEZVOUS", "x"},     {"OTM_ACCEL_RENDEZVOUS", "3:601"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char notes[1024], want[256];
        capture c;
        setenv(cases[i].var, cases[i].value, 1);
        cap_begin(&c);
        otd_proxy *px = open_accel("otmaccel", notes, sizeof notes);
        char *said = cap_end(&c);
        if (otd_proxy_units(px) != 0)
            fail_msg("%s=%s: %u units", cases[i].var, cases[i].value, otd_proxy_units(px));
        assert_contains(notes, "plugin otmaccel skipped: it found no device");
        snprintf(want, sizeof want, "otmaccel: %s=%s", cases[i].var, cases[i].value);
        assert_contains(said, want);
        assert_contains(said, "the plugin reports 0 devices");
        assert_int_equal(count_lines(said, "\n"), 1);
        free(said);
        otd_proxy_close(px);
        unsetenv(cases[i].var);
    }
    /* Good values again: the plugin read the environment anew. */
    setenv("OTM_ACCEL_FAIL", "data_alloc:5,run:1,trap:7", 1);
    setenv("OTM_ACCEL_RENDEZVOUS", "1:600", 1);
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    assert_int_equal(otd_proxy_units(px), 3);
    otd_proxy_close(px);
    unsetenv("OTM_ACCEL_FAIL");
    unsetenv("OTM_ACCEL_RENDEZVOUS");
}

/* ==== group memory ================================================================= */

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

static void test_put_get(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    unsigned char in[1000], out[1000];
    uint64_t a = alloc_on(px, 1, sizeof in);
    fill(in, sizeof in, 1);
    put_ok(px, 1, a, in, sizeof in);
    memset(out, 0, sizeof out);
    get_ok(px, 1, out, a, sizeof out);
    assert_memory_equal(in, out, sizeof in);
    /* Inside the allocation, at an offset. */
    put_ok(px, 1, a + 100, "hello", 5);
    get_ok(px, 1, out, a + 98, 9);
    assert_memory_equal(out + 2, "hello", 5);
    assert_int_equal(out[0], in[98]);
    assert_int_equal(out[7], in[105]);
    assert_int_equal(out[8], in[106]);
    /* 8 MiB each way, every byte. */
    size_t big = 8u << 20;
    unsigned char *bin = malloc(big), *bout = calloc(1, big);
    assert_non_null(bin);
    assert_non_null(bout);
    fill(bin, big, 5);
    uint64_t b = alloc_on(px, 2, big);
    put_ok(px, 2, b, bin, big);
    get_ok(px, 2, bout, b, big);
    assert_memory_equal(bin, bout, big);
    free(bin), free(bout);
    otd_proxy_close(px);
}

static void test_arena_faults(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    unsigned char v[64];
    memset(v, 0x5a, sizeof v);
    /* The probe itself: this process's own memory reads fine. */
    assert_int_equal(read_dies_of((uint64_t)(uintptr_t)v), 0);
    for (uint16_t u = 1; u <= 3; u++) {
        uint64_t a = alloc_on(px, u, sizeof v);
        put_ok(px, u, a, v, sizeof v);
        /* The bytes are there for the plugin, not for this process. */
        assert_device_memory(px, u, a);
        unsigned char back[64];
        get_ok(px, u, back, a, sizeof back);
        assert_memory_equal(back, v, sizeof v);
        assert_device_memory(px, u, a);
    }
    otd_proxy_close(px);
}

/* A put or get that leaves its allocation, or lands in freed memory, is
 * refused by the device, with the proxy's sentence and the plugin's line. */
static void expect_refused(otm_status st, const char *err, const char *said,
                           const char *err_want, const char *line_want)
{
    assert_int_equal(st, OTM_ERR_PLUGIN_CALL);
    assert_contains(err, err_want);
    assert_contains(said, line_want);
    assert_int_equal(count_lines(said, "otmaccel: "), 1);
}

static void test_bad_ranges(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    char err[ERRLEN], big[600] = {0};
    capture c;
    uint64_t a = alloc_on(px, 1, 256);
    uint64_t b = alloc_on(px, 1, 256);
    /* Past the end of a (into b's block). */
    cap_begin(&c);
    otm_status st = otd_proxy_put(px, 1, a, big, 300, err, sizeof err);
    char *said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 0: data_submit failed",
                   "otmaccel: device 0: data_submit of 300 bytes to 0x");
    assert_contains(said, "not inside a live allocation");
    free(said);
    /* Freed: put and get refused, a second free too. */
    char e2[ERRLEN] = "";
    assert_int_equal(otd_proxy_free(px, 1, a, e2, sizeof e2), OTM_OK);
    cap_begin(&c);
    st = otd_proxy_put(px, 1, a, "0123456789abcdef", 16, err, sizeof err);
    said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 0: data_submit failed",
                   "otmaccel: device 0: data_submit of 16 bytes to 0x");
    free(said);
    cap_begin(&c);
    st = otd_proxy_get(px, 1, big, a, 16, err, sizeof err);
    said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 0: data_retrieve failed",
                   "otmaccel: device 0: data_retrieve of 16 bytes from 0x");
    free(said);
    cap_begin(&c);
    st = otd_proxy_free(px, 1, a, err, sizeof err);
    said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 0: data_delete failed",
                   "not an address data_alloc returned");
    free(said);
    /* Inside a live block, but not its start. */
    cap_begin(&c);
    st = otd_proxy_free(px, 1, b + 8, err, sizeof err);
    said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 0: data_delete failed",
                   "otmaccel: device 0: data_delete of 0x");
    free(said);
    /* Unit 1's address on unit 2: not its memory. */
    cap_begin(&c);
    st = otd_proxy_put(px, 2, b, "x", 1, err, sizeof err);
    said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 1: data_submit failed",
                   "otmaccel: device 1: data_submit of 1 bytes");
    free(said);
    /* b is untouched by all that. */
    put_ok(px, 1, b, "still", 5);
    get_ok(px, 1, big, b, 5);
    assert_memory_equal(big, "still", 5);
    otd_proxy_close(px);
}

static void test_copy(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    size_t n = (1u << 20) + 13;
    unsigned char *in = malloc(n), *out = malloc(n);
    assert_non_null(in);
    assert_non_null(out);
    fill(in, n, 9);
    uint64_t a1 = alloc_on(px, 1, n), b1 = alloc_on(px, 1, n);
    uint64_t a2 = alloc_on(px, 2, n), a3 = alloc_on(px, 3, n);
    char err[ERRLEN] = "";
    put_ok(px, 1, a1, in, n);
    /* Within a device, between two devices, and on. */
    assert_int_equal(otd_proxy_copy(px, 1, a1, 1, b1, n, err, sizeof err), OTM_OK);
    assert_int_equal(otd_proxy_copy(px, 1, b1, 2, a2, n, err, sizeof err), OTM_OK);
    assert_int_equal(otd_proxy_copy(px, 2, a2, 3, a3, n, err, sizeof err), OTM_OK);
    struct { uint16_t u; uint64_t a; } at[] = {{1, b1}, {2, a2}, {3, a3}};
    for (size_t i = 0; i < 3; i++) {
        memset(out, 0, n);
        get_ok(px, at[i].u, out, at[i].a, n);
        assert_memory_equal(in, out, n);
    }
    /* A part, at offsets. */
    assert_int_equal(otd_proxy_copy(px, 3, a3 + 1000, 1, a1 + 17, 4096, err, sizeof err),
                     OTM_OK);
    get_ok(px, 1, out, a1, n);
    assert_memory_equal(out, in, 17);
    assert_memory_equal(out + 17, in + 1000, 4096);
    assert_memory_equal(out + 17 + 4096, in + 17 + 4096, n - 17 - 4096);
    /* A copy that leaves the source's allocation: refused, nothing copied. */
    capture c;
    cap_begin(&c);
    otm_status st = otd_proxy_copy(px, 2, a2 + n - 10, 3, a3, 20, err, sizeof err);
    char *said = cap_end(&c);
    expect_refused(st, err, said, "otmaccel device 1: data_exchange failed",
                   "otmaccel: device 1: data_exchange of 20 bytes from 0x");
    free(said);
    get_ok(px, 3, out, a3, n);
    assert_memory_equal(out, in, n);
    free(in), free(out);
    otd_proxy_close(px);
}

static void test_out_of_memory(void **state)
{
    setenv("OTM_ACCEL_MEMORY", "4", 1);
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    char err[ERRLEN] = "";
    uint64_t a = 0;
    capture c;
    cap_begin(&c);
    otm_status st = otd_proxy_alloc(px, 1, 5u << 20, TARGET_ALLOC_DEFAULT, &a, err, sizeof err);
    char *said = cap_end(&c);
    assert_int_equal(st, OTM_ERR_NOMEM);
    assert_contains(err, "otmaccel device 0: data_alloc failed");
    assert_contains(said, "otmaccel: device 0: data_alloc: out of device memory");
    free(said);
    /* Freed memory is used again: 3 MiB twice in a 4 MiB arena. */
    uint64_t b = alloc_on(px, 1, 3u << 20);
    char e2[ERRLEN] = "";
    assert_int_equal(otd_proxy_free(px, 1, b, e2, sizeof e2), OTM_OK);
    b = alloc_on(px, 1, 3u << 20);
    assert_int_equal(otd_proxy_free(px, 1, b, e2, sizeof e2), OTM_OK);
    otd_proxy_close(px);
    unsetenv("OTM_ACCEL_MEMORY");
}

/* ==== group kernels ================================================================ */

static void test_load_table(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    const otd_proxy_entry *t1 = load_on(px, 1);
    otd_proxy_entry copy1[E_N];
    memcpy(copy1, t1, sizeof copy1);
    for (int e = 0; e < E_N; e++) {
        assert_true(copy1[e].addr != 0);
        assert_int_equal(copy1[e].size, host_entries[e].size);
        assert_true(copy1[e].addr != (uint64_t)(uintptr_t)host_entries[e].addr);
    }
    /* Globals are device memory; their first bytes the image's. */
    assert_device_memory(px, 1, copy1[E_GLOBAL].addr);
    int64_t g[4];
    get_ok(px, 1, g, copy1[E_GLOBAL].addr, sizeof g);
    assert_int_equal(g[0], 1);
    assert_int_equal(g[3], 4);
    /* Another device has its own copies of everything. */
    const otd_proxy_entry *t2 = load_on(px, 2);
    for (int e = 0; e < E_N; e++)
        assert_true(t2[e].addr != copy1[e].addr);
    assert_device_memory(px, 2, t2[E_GLOBAL].addr);
    assert_no_image_files();
    otd_proxy_close(px);
}

static void test_kernels(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    otd_proxy_entry t1[E_N], t2[E_N];
    memcpy(t1, load_on(px, 1), sizeof t1);
    memcpy(t2, load_on(px, 2), sizeof t2);
    uint64_t a = alloc_on(px, 1, 8), b = alloc_on(px, 1, 8);
    int64_t five = 5, seven = 7;
    put_ok(px, 1, a, &five, 8);
    put_ok(px, 1, b, &seven, 8);
    void *args[3] = {ARG(a), ARG(b)};
    run_ok(px, 1, t1[E_ADD].addr, args, 2);
    assert_int_equal(get_i64(px, 1, a), 12);
    assert_int_equal(get_i64(px, 1, b), 7);
    /* The arena is closed again once the kernel ended. */
    assert_device_memory(px, 1, a);
    /* A global: written by the host, read by a kernel; written by a
     * kernel, read by the host; each device its own. */
    int64_t g[4] = {10, 20, 30, 40};
    put_ok(px, 1, t1[E_GLOBAL].addr, g, sizeof g);
    args[0] = ARG(a);
    run_ok(px, 1, t1[E_SUM].addr, args, 1);
    assert_int_equal(get_i64(px, 1, a), 100);
    run_ok(px, 1, t1[E_BUMP].addr, NULL, 0);
    get_ok(px, 1, g, t1[E_GLOBAL].addr, sizeof g);
    assert_int_equal(g[0], 20);
    assert_int_equal(g[3], 50);
    get_ok(px, 2, g, t2[E_GLOBAL].addr, sizeof g);
    assert_int_equal(g[0], 1);
    assert_int_equal(g[3], 4);
    /* Scalars in the pointers. */
    uint64_t buf = alloc_on(px, 2, 3000);
    void *fa[3] = {ARG(buf), ARG(3000), ARG(0xa7)};
    run_ok(px, 2, t2[E_FILL].addr, fa, 3);
    unsigned char out[3000];
    get_ok(px, 2, out, buf, sizeof out);
    for (size_t i = 0; i < sizeof out; i++)
        assert_int_equal(out[i], 0xa7);
    assert_device_memory(px, 2, buf);
    otd_proxy_close(px);
}

static void test_kernel_refused(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    otd_proxy_entry t1[E_N];
    memcpy(t1, load_on(px, 1), sizeof t1);
    const otd_proxy_entry *t2 = load_on(px, 2);
    uint64_t a = alloc_on(px, 1, 8);
    char err[ERRLEN] = "";
    capture c;
    void *args[1] = {ARG(a)};
    /* Unit 2's kernel on unit 1, and a global's address as a kernel. */
    cap_begin(&c);
    otm_status st = run_on(px, 1, t2[E_COUNT].addr, args, 1, err);
    otm_status st2 = run_on(px, 1, t1[E_GLOBAL].addr, args, 1, err);
    char *said = cap_end(&c);
    assert_int_equal(st, OTM_ERR_KERNEL);
    assert_int_equal(st2, OTM_ERR_KERNEL);
    assert_contains(err, "otmaccel device 0: the kernel failed");
    assert_int_equal(count_lines(said, "otmaccel: device 0: run: the entry is no kernel"), 2);
    free(said);
    assert_int_equal(get_i64(px, 1, t1[E_RUNS].addr), 0);
    otd_proxy_close(px);
}

static void test_load_refused(void **state)
{
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    __tgt_offload_entry missing[2] = {host_entries[E_ADD],
                                      {&host_marks[0], n_missing, 0, 0, 0}};
    const otd_proxy_entry *t = NULL;
    uint64_t n = 0;
    char err[ERRLEN] = "";
    capture c;
    cap_begin(&c);
    otm_status st = otd_proxy_load(px, 1, image.bytes, image.size, missing, missing + 2, &t,
                                   &n, err, sizeof err);
    char *said = cap_end(&c);
    assert_int_equal(st, OTM_ERR_PLUGIN_CALL);
    assert_contains(err, "otmaccel device 0 refused the image");
    assert_contains(said, "otmaccel: device 0: load_binary: entry acc_missing is not in the image");
    free(said);
    /* Bytes that are no x86_64 shared object. */
    unsigned char junk[256];
    memset(junk, 0x11, sizeof junk);
    cap_begin(&c);
    st = otd_proxy_load(px, 2, junk, sizeof junk, host_entries, host_entries + E_N, &t, &n, err,
                        sizeof err);
    said = cap_end(&c);
    assert_int_equal(st, OTM_ERR_PLUGIN_CALL);
    assert_contains(err, "otmaccel device 1 refused the image (256 bytes)");
    assert_contains(said, "otmaccel: device 1: load_binary: not an x86_64 shared object");
    free(said);
    /* Both devices load the right image afterwards. */
    load_on(px, 1);
    load_on(px, 2);
    assert_no_image_files();
    otd_proxy_close(px);
}

/* ==== group rendezvous ============================================================= */

typedef struct runner {
    otd_proxy *px;
    uint16_t unit;
    uint64_t kernel, out;
    otm_status st;
    char err[ERRLEN];
} runner;

static void *run_thread(void *arg)
{
    runner *r = arg;
    void *args[1] = {ARG(r->out)};
    r->st = run_on(r->px, r->unit, r->kernel, args, 1, r->err);
    return NULL;
}

/* k kernels on units 1..k from k threads: each returns only once all run
 * at once, so every one passing proves that they overlapped. */
static void rendezvous_of(int k)
{
    char value[16];
    snprintf(value, sizeof value, "%d:30", k);
    setenv("OTM_ACCEL_RENDEZVOUS", value, 1);
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    runner r[3];
    pthread_t th[3];
    for (int i = 0; i < k; i++) {
        uint16_t u = (uint16_t)(i + 1);
        r[i] = (runner){.px = px, .unit = u, .kernel = load_on(px, u)[E_COUNT].addr,
                        .out = alloc_on(px, u, 8)};
    }
    for (int i = 0; i < k; i++)
        assert_int_equal(pthread_create(&th[i], NULL, run_thread, &r[i]), 0);
    for (int i = 0; i < k; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < k; i++) {
        if (r[i].st != OTM_OK)
            fail_msg("unit %u: %d %s", r[i].unit, r[i].st, r[i].err);
        assert_int_equal(get_i64(px, r[i].unit, r[i].out), 1);
    }
    otd_proxy_close(px);
    unsetenv("OTM_ACCEL_RENDEZVOUS");
}

static void test_rendezvous_met(void **state)
{
    rendezvous_of(2);
    rendezvous_of(3);
}

static void test_rendezvous_missed(void **state)
{
    setenv("OTM_ACCEL_RENDEZVOUS", "2:1", 1);
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    otd_proxy_entry t[E_N];
    memcpy(t, load_on(px, 1), sizeof t);
    uint64_t out = alloc_on(px, 1, 8);
    void *args[1] = {ARG(out)};
    char err[ERRLEN] = "";
    capture c;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cap_begin(&c);
    otm_status st = run_on(px, 1, t[E_COUNT].addr, args, 1, err);
    char *said = cap_end(&c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(st, OTM_ERR_KERNEL);
    assert_contains(err, "otmaccel device 0: the kernel failed");
    assert_contains(said, "otmaccel: device 0: run: the rendezvous of 2 kernels was not "
                          "reached within 1 s");
    /* Bounded: it gave up after its second, not never. */
    assert_true(t1.tv_sec - t0.tv_sec < 30);
    free(said);
    assert_int_equal(get_i64(px, 1, t[E_RUNS].addr), 0);
    otd_proxy_close(px);
    unsetenv("OTM_ACCEL_RENDEZVOUS");
}

/* ==== group abi: the plugin's entry points, without the proxy ==================== */

typedef struct abi {
    void *h;
    int32_t (*init_plugin)(void);
    int32_t (*deinit_plugin)(void);
    int32_t (*number_of_devices)(void);
    int64_t (*init_requires)(int64_t);
    int32_t (*is_valid_binary)(__tgt_device_image *);
    int32_t (*init_device)(int32_t);
    __tgt_target_table *(*load_binary)(int32_t, __tgt_device_image *);
    void *(*data_alloc)(int32_t, int64_t, void *, int32_t);
    int32_t (*data_delete)(int32_t, void *);
    int32_t (*data_submit)(int32_t, void *, void *, int64_t);
    int32_t (*data_submit_async)(int32_t, void *, void *, int64_t, __tgt_async_info *);
    int32_t (*data_retrieve)(int32_t, void *, void *, int64_t);
    int32_t (*data_retrieve_async)(int32_t, void *, void *, int64_t, __tgt_async_info *);
    int32_t (*is_data_exchangable)(int32_t, int32_t);
    int32_t (*data_exchange)(int32_t, void *, int32_t, void *, int64_t);
    int32_t (*data_exchange_async)(int32_t, void *, int32_t, void *, int64_t,
                                   __tgt_async_info *);
    int32_t (*run_target_region)(int32_t, void *, void **, ptrdiff_t *, int32_t);
    int32_t (*run_target_region_async)(int32_t, void *, void **, ptrdiff_t *, int32_t,
                                       __tgt_async_info *);
    int32_t (*run_target_team_region_async)(int32_t, void *, void **, ptrdiff_t *, int32_t,
                                            int32_t, int32_t, uint64_t, __tgt_async_info *);
    int32_t (*synchronize)(int32_t, __tgt_async_info *);
} abi;

#define ABI_LOOK(a, f)                                                                 \
    do {                                                                                \
        *(void **)&(a)->f = dlsym((a)->h, "__tgt_rtl_" #f);                             \
        if (!(a)->f)                                                                    \
            fail_msg("the plugin lacks __tgt_rtl_" #f);                                 \
    } while (0)

static void abi_open(abi *a)
{
    a->h = dlopen(ACCEL_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!a->h)
        fail_msg("dlopen: %s", dlerror());
    ABI_LOOK(a, init_plugin);
    ABI_LOOK(a, deinit_plugin);
    ABI_LOOK(a, number_of_devices);
    ABI_LOOK(a, init_requires);
    ABI_LOOK(a, is_valid_binary);
    ABI_LOOK(a, init_device);
    ABI_LOOK(a, load_binary);
    ABI_LOOK(a, data_alloc);
    ABI_LOOK(a, data_delete);
    ABI_LOOK(a, data_submit);
    ABI_LOOK(a, data_submit_async);
    ABI_LOOK(a, data_retrieve);
    ABI_LOOK(a, data_retrieve_async);
    ABI_LOOK(a, is_data_exchangable);
    ABI_LOOK(a, data_exchange);
    ABI_LOOK(a, data_exchange_async);
    ABI_LOOK(a, run_target_region);
    ABI_LOOK(a, run_target_region_async);
    ABI_LOOK(a, run_target_team_region_async);
    ABI_LOOK(a, synchronize);
    assert_int_equal(a->init_plugin(), 0);
}

static __tgt_device_image abi_image(void)
{
    __tgt_device_image im = {image.bytes, image.bytes + image.size, host_entries,
                             host_entries + E_N};
    return im;
}

static void test_abi_basics(void **state)
{
    abi a;
    abi_open(&a);
    assert_int_equal(a.number_of_devices(), 3);
    assert_int_equal(a.init_requires(OMP_REQ_UNIFIED_SHARED_MEMORY),
                     OMP_REQ_UNIFIED_SHARED_MEMORY);
    __tgt_device_image im = abi_image();
    assert_int_equal(a.is_valid_binary(&im), 1);
    assert_int_equal(a.is_data_exchangable(0, 2), 1);
    assert_int_equal(a.is_data_exchangable(0, 3), 0);
    capture c;
    cap_begin(&c);
    void *early = a.data_alloc(1, 8, NULL, TARGET_ALLOC_DEFAULT);
    int32_t bad = a.init_device(3);
    char *said = cap_end(&c);
    assert_null(early);
    assert_int_not_equal(bad, 0);
    assert_contains(said, "otmaccel: device 1: data_alloc: the device was not initialised");
    assert_contains(said, "otmaccel: device 3: init_device: no such device (3 devices)");
    free(said);
    for (int32_t d = 0; d < 3; d++)
        assert_int_equal(a.init_device(d), 0);
    cap_begin(&c);
    void *p = a.data_alloc(0, 8, NULL, 7);
    said = cap_end(&c);
    assert_null(p);
    assert_contains(said, "otmaccel: device 0: data_alloc: bad kind (7)");
    free(said);
    assert_int_equal(a.deinit_plugin(), 0);
}

/* The _async calls only queue; synchronize does them, in order. */
static void test_abi_queue(void **state)
{
    abi a;
    abi_open(&a);
    for (int32_t d = 0; d < 2; d++)
        assert_int_equal(a.init_device(d), 0);
    __tgt_device_image im = abi_image();
    __tgt_target_table *t = a.load_binary(0, &im);
    assert_non_null(t);
    void *add = t->EntriesBegin[E_ADD].addr;
    char A[64], B[64], out[64];
    memset(A, 'A', sizeof A), memset(B, 'B', sizeof B);
    void *m = a.data_alloc(0, 64, NULL, TARGET_ALLOC_DEVICE);
    assert_non_null(m);
    assert_int_equal(a.data_submit(0, m, A, 64), 0);
    __tgt_async_info q = {NULL};
    assert_int_equal(a.data_submit_async(0, m, B, 64, &q), 0);
    assert_non_null(q.Queue);
    assert_int_equal(a.data_retrieve(0, out, m, 64), 0);
    assert_memory_equal(out, A, 64);        /* not done yet */
    memset(out, 'Z', sizeof out);
    assert_int_equal(a.data_retrieve_async(0, out, m, 64, &q), 0);
    assert_int_equal(out[0], 'Z');
    assert_int_equal(a.synchronize(0, &q), 0);
    assert_null(q.Queue);
    assert_memory_equal(out, B, 64);        /* submitted, then retrieved */
    /* A kernel between a submit and a retrieve, all queued. */
    int64_t *x = a.data_alloc(0, 16, NULL, TARGET_ALLOC_DEFAULT), one = 1, two = 2, got = 0;
    assert_non_null(x);
    assert_int_equal(a.data_submit(0, x + 1, &two, 8), 0);
    void *args[2] = {x, x + 1};
    ptrdiff_t offs[2] = {0, 0};
    assert_int_equal(a.data_submit_async(0, x, &one, 8, &q), 0);
    assert_int_equal(a.run_target_team_region_async(0, add, args, offs, 2, 1, 1, 0, &q), 0);
    args[0] = args[1] = NULL;               /* the queue kept its own copies */
    assert_int_equal(a.data_retrieve_async(0, &got, x, 8, &q), 0);
    assert_int_equal(got, 0);
    assert_int_equal(a.synchronize(0, &q), 0);
    assert_int_equal(got, 3);
    /* An exchange, queued, to another device. */
    char *m1 = a.data_alloc(1, 64, NULL, TARGET_ALLOC_DEFAULT);
    assert_non_null(m1);
    assert_int_equal(a.data_submit(1, m1, A, 64), 0);
    assert_int_equal(a.data_exchange_async(0, m, 1, m1, 64, &q), 0);
    assert_int_equal(a.data_retrieve(1, out, m1, 64), 0);
    assert_memory_equal(out, A, 64);
    assert_int_equal(a.synchronize(0, &q), 0);
    assert_int_equal(a.data_retrieve(1, out, m1, 64), 0);
    assert_memory_equal(out, B, 64);
    /* The first failure stops the queue: the later submit never happens. */
    void *gone = a.data_alloc(0, 64, NULL, TARGET_ALLOC_DEFAULT);
    assert_int_equal(a.data_delete(0, gone), 0);
    capture c;
    assert_int_equal(a.data_submit_async(0, gone, A, 64, &q), 0);
    assert_int_equal(a.data_submit_async(0, m, A, 64, &q), 0);
    cap_begin(&c);
    int32_t rc = a.synchronize(0, &q);
    int32_t no_queue = a.data_submit_async(0, m, A, 64, NULL);
    char *said = cap_end(&c);
    assert_int_not_equal(rc, 0);
    assert_null(q.Queue);
    assert_int_not_equal(no_queue, 0);
    assert_contains(said, "otmaccel: device 0: data_submit of 64 bytes to");
    assert_contains(said, "otmaccel: device 0: data_submit_async: no __tgt_async_info");
    free(said);
    assert_int_equal(a.data_retrieve(0, out, m, 64), 0);
    assert_memory_equal(out, B, 64);
    /* An empty queue synchronizes at once. */
    assert_int_equal(a.synchronize(0, &q), 0);
    assert_int_equal(a.deinit_plugin(), 0);
}

/* synchronize:1 and trap:1 through the queue. */
static void test_abi_queue_failures(void **state)
{
    abi a;
    setenv("OTM_ACCEL_FAIL", "synchronize:1,trap:1", 1);
    abi_open(&a);
    assert_int_equal(a.init_device(0), 0);
    __tgt_device_image im = abi_image();
    __tgt_target_table *t = a.load_binary(0, &im);
    assert_non_null(t);
    int64_t *x = a.data_alloc(0, 8, NULL, TARGET_ALLOC_DEFAULT), v = 41, got = 0;
    assert_non_null(x);
    assert_int_equal(a.data_submit(0, x, &v, 8), 0);
    __tgt_async_info q = {NULL};
    int64_t w = 99;
    assert_int_equal(a.data_submit_async(0, x, &w, 8, &q), 0);
    capture c;
    cap_begin(&c);
    int32_t rc = a.synchronize(0, &q);
    char *said = cap_end(&c);
    assert_int_not_equal(rc, 0);
    assert_null(q.Queue);
    assert_contains(said, "otmaccel: device 0: synchronize: failed on request "
                          "(OTM_ACCEL_FAIL=synchronize:1); its 1 queued operation(s) dropped");
    free(said);
    assert_int_equal(a.data_retrieve(0, &got, x, 8), 0);
    assert_int_equal(got, 41);
    /* The first kernel traps when synchronize starts it; the second runs. */
    void *count = t->EntriesBegin[E_COUNT].addr, *args[1] = {x};
    ptrdiff_t off[1] = {0};
    assert_int_equal(a.run_target_region_async(0, count, args, off, 1, &q), 0);
    cap_begin(&c);
    rc = a.synchronize(0, &q);
    said = cap_end(&c);
    assert_int_not_equal(rc, 0);
    assert_contains(said, "otmaccel: device 0: run: kernel acc_count trapped "
                          "(OTM_ACCEL_FAIL=trap:1)");
    free(said);
    assert_int_equal(a.data_retrieve(0, &got, x, 8), 0);
    assert_int_equal(got, 41);
    assert_int_equal(a.run_target_region(0, count, args, off, 1), 0);
    assert_int_equal(a.data_retrieve(0, &got, x, 8), 0);
    assert_int_equal(got, 1);
    assert_int_equal(a.deinit_plugin(), 0);
    unsetenv("OTM_ACCEL_FAIL");
}

/* ==== group fail: OTM_ACCEL_FAIL=WHAT:2 through the proxy ========================= */

static const char *fail_what;

/* The second call fails: its status, the proxy's sentence (plugin and
 * device), the plugin's one line; the calls around it work. */
typedef struct failing {
    otm_status st;
    char err[ERRLEN];
    char *said;
} failing;

static void expect_failure(const failing *f, otm_status st, const char *err_want, int dev,
                           const char *op)
{
    char line[256];
    if (f->st != st)
        fail_msg("%s: status %d (%s), expected %d", fail_what, f->st, f->err, st);
    assert_contains(f->err, err_want);
    if (!strcmp(fail_what, "trap"))
        snprintf(line, sizeof line, "otmaccel: device %d: run: kernel acc_count trapped "
                 "(OTM_ACCEL_FAIL=trap:2)", dev);
    else
        snprintf(line, sizeof line, "otmaccel: device %d: %s: failed on request "
                 "(OTM_ACCEL_FAIL=%s:2)", dev, op, fail_what);
    assert_contains(f->said, line);
    assert_int_equal(count_lines(f->said, "otmaccel: "), 1);
}

static void test_fail(void **state)
{
    char value[64];
    snprintf(value, sizeof value, "%s:2", fail_what);
    setenv("OTM_ACCEL_FAIL", value, 1);
    otd_proxy *px = open_accel("otmaccel", NULL, 0);
    failing f = {.st = OTM_OK, .err = ""};
    capture c;
    char err[ERRLEN] = "";
    int64_t v = 1234, back = 0;
    if (!strcmp(fail_what, "init_device")) {
        alloc_on(px, 1, 8);                      /* init 1 */
        cap_begin(&c);
        uint64_t a = 0;
        f.st = otd_proxy_alloc(px, 2, 8, TARGET_ALLOC_DEFAULT, &a, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_PLUGIN_INIT, "otmaccel device 1: init_device failed", 1,
                       "init_device");
        alloc_on(px, 2, 8);                      /* init 3: tried again, works */
    } else if (!strcmp(fail_what, "load_binary")) {
        load_on(px, 1);
        const otd_proxy_entry *t = NULL;
        uint64_t n = 0;
        cap_begin(&c);
        f.st = otd_proxy_load(px, 2, image.bytes, image.size, host_entries,
                              host_entries + E_N, &t, &n, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_PLUGIN_CALL, "otmaccel device 1 refused the image", 1,
                       "load_binary");
        load_on(px, 2);
        assert_no_image_files();
    } else if (!strcmp(fail_what, "data_alloc")) {
        alloc_on(px, 1, 8);
        uint64_t a = 0;
        cap_begin(&c);
        f.st = otd_proxy_alloc(px, 2, 8, TARGET_ALLOC_DEFAULT, &a, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_NOMEM, "otmaccel device 1: data_alloc failed", 1,
                       "data_alloc");
        alloc_on(px, 2, 8);
    } else if (!strcmp(fail_what, "data_submit")) {
        uint64_t a = alloc_on(px, 3, 8);
        put_ok(px, 3, a, &v, 8);
        int64_t w = 99;
        cap_begin(&c);
        f.st = otd_proxy_put(px, 3, a, &w, 8, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_PLUGIN_CALL, "otmaccel device 2: data_submit failed", 2,
                       "data_submit");
        assert_int_equal(get_i64(px, 3, a), 1234);   /* the failed put did nothing */
        put_ok(px, 3, a, &w, 8);
        assert_int_equal(get_i64(px, 3, a), 99);
    } else if (!strcmp(fail_what, "data_retrieve")) {
        uint64_t a = alloc_on(px, 1, 8);
        put_ok(px, 1, a, &v, 8);
        assert_int_equal(get_i64(px, 1, a), 1234);
        back = -1;
        cap_begin(&c);
        f.st = otd_proxy_get(px, 1, &back, a, 8, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_PLUGIN_CALL, "otmaccel device 0: data_retrieve failed", 0,
                       "data_retrieve");
        assert_int_equal(back, -1);
        assert_int_equal(get_i64(px, 1, a), 1234);
    } else if (!strcmp(fail_what, "data_delete")) {
        uint64_t a = alloc_on(px, 1, 8), b = alloc_on(px, 1, 8);
        assert_int_equal(otd_proxy_free(px, 1, a, err, sizeof err), OTM_OK);
        cap_begin(&c);
        f.st = otd_proxy_free(px, 1, b, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_PLUGIN_CALL, "otmaccel device 0: data_delete failed", 0,
                       "data_delete");
        put_ok(px, 1, b, &v, 8);                      /* still allocated */
        assert_int_equal(otd_proxy_free(px, 1, b, err, sizeof err), OTM_OK);
    } else if (!strcmp(fail_what, "data_exchange")) {
        uint64_t a = alloc_on(px, 1, 8), b = alloc_on(px, 2, 8);
        int64_t zero = 0;
        put_ok(px, 1, a, &v, 8);
        put_ok(px, 2, b, &zero, 8);
        assert_int_equal(otd_proxy_copy(px, 1, a, 2, b, 8, err, sizeof err), OTM_OK);
        put_ok(px, 2, b, &zero, 8);
        cap_begin(&c);
        f.st = otd_proxy_copy(px, 1, a, 2, b, 8, f.err, sizeof f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_PLUGIN_CALL, "otmaccel device 0: data_exchange failed", 0,
                       "data_exchange");
        assert_int_equal(get_i64(px, 2, b), 0);
        assert_int_equal(otd_proxy_copy(px, 1, a, 2, b, 8, err, sizeof err), OTM_OK);
        assert_int_equal(get_i64(px, 2, b), 1234);
    } else if (!strcmp(fail_what, "run") || !strcmp(fail_what, "trap")) {
        otd_proxy_entry t[E_N];
        memcpy(t, load_on(px, 2), sizeof t);
        uint64_t out = alloc_on(px, 2, 8);
        void *args[1] = {ARG(out)};
        run_ok(px, 2, t[E_COUNT].addr, args, 1);
        assert_int_equal(get_i64(px, 2, out), 1);
        cap_begin(&c);
        f.st = run_on(px, 2, t[E_COUNT].addr, args, 1, f.err);
        f.said = cap_end(&c);
        expect_failure(&f, OTM_ERR_KERNEL, "otmaccel device 1: the kernel failed", 1, "run");
        assert_int_equal(get_i64(px, 2, t[E_RUNS].addr), 1);   /* it did not run */
        run_ok(px, 2, t[E_COUNT].addr, args, 1);
        assert_int_equal(get_i64(px, 2, out), 2);
    } else {
        fail_msg("unknown kind of failure '%s'", fail_what);
    }
    free(f.said);
    otd_proxy_close(px);
    unsetenv("OTM_ACCEL_FAIL");
}

/* ==== main ======================================================================== */

int main(int argc, char **argv)
{
    static const struct CMUnitTest open[] = {
        cmocka_unit_test(test_open_notes), cmocka_unit_test(test_open_none),
        cmocka_unit_test(test_open_invalid), cmocka_unit_test(test_accepts)};
    static const struct CMUnitTest devices[] = {
        cmocka_unit_test(test_devices_count), cmocka_unit_test(test_devices_zero)};
    static const struct CMUnitTest bad_env[] = {cmocka_unit_test(test_bad_env)};
    static const struct CMUnitTest memory[] = {
        cmocka_unit_test(test_put_get), cmocka_unit_test(test_arena_faults),
        cmocka_unit_test(test_bad_ranges), cmocka_unit_test(test_copy),
        cmocka_unit_test(test_out_of_memory)};
    static const struct CMUnitTest kernels[] = {
        cmocka_unit_test_setup(test_load_table, setup_faults),
        cmocka_unit_test_setup(test_kernels, setup_faults),
        cmocka_unit_test_setup(test_kernel_refused, setup_faults),
        cmocka_unit_test_setup(test_load_refused, setup_faults)};
    static const struct CMUnitTest rendezvous[] = {
        cmocka_unit_test_setup(test_rendezvous_met, setup_faults),
        cmocka_unit_test_setup(test_rendezvous_missed, setup_faults)};
    static const struct CMUnitTest abi_tests[] = {
        cmocka_unit_test(test_abi_basics), cmocka_unit_test(test_abi_queue),
        cmocka_unit_test(test_abi_queue_failures)};
    static const struct CMUnitTest fail[] = {cmocka_unit_test_setup(test_fail, setup_faults)};

    const char *group = argc > 1 ? argv[1] : "";
    fail_what = argc > 2 ? argv[2] : "";
    unsetenv("OTM_ACCEL_DEVICES"), unsetenv("OTM_ACCEL_FAIL");
    unsetenv("OTM_ACCEL_RENDEZVOUS"), unsetenv("OTM_ACCEL_MEMORY");
    image = read_blob(ACCEL_IMAGE_PATH);
    int rc = -1;
#define GROUP(name, tests)                                                             \
    if (!strcmp(group, name))                                                          \
        rc = cmocka_run_group_tests_name(name, tests, NULL, NULL);
    GROUP("open", open)
    GROUP("devices", devices)
    GROUP("bad_env", bad_env)
    GROUP("memory", memory)
    GROUP("kernels", kernels)
    GROUP("rendezvous", rendezvous)
    GROUP("abi", abi_tests)
    GROUP("fail", fail)
    if (rc < 0)
        fprintf(stderr, "usage: proxy_unit open|devices|bad_env|memory|kernels|rendezvous|"
                        "abi|fail WHAT\n");
    free(image.bytes);
    return rc < 0 ? 2 : rc;
}
