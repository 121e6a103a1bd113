/*
 * settings.c - the one place that reads the plugin's environment.
 *
 * Every variable is one row of OTM_SETTINGS below. The row gives the name,
 * the seed's alias, how the value is spelled (its kind), the accepted range,
 * the field it lands in and the documentation; the parser, the store, the
 * error messages and the README table are all generated from it, so they
 * cannot disagree. The core's ranges are otm/config.h's limits, which
 * otm_config_check enforces too: each number is written once.
 *
 * The seed (OMPCLUSTER_*) read its variables with std::stoi and asserted on
 * the result: "abc" threw, "-5" slipped through to an assert, overflow was
 * undefined. Here every value is parsed by hand (no strtoull: it accepts
 * "-1" and wraps it), range-checked, and a bad one is an error sentence.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otm/settings.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)
#define NS_US 1000ull
#define NS_MS (1000ull * NS_US)
#define NS_S (1000ull * NS_MS)
#define NS_DAY (86400ull * NS_S)
/* Longest trace path prefix; room is left for ".RANK.json". */
#define PATH_MAX_LEN 1000ull
/* Longest list of plugin names. */
#define NAMES_MAX_LEN 200ull
/* Longest TIMEOUT and KERNEL_TIMEOUT: the settings' own bound, since the
 * core accepts any timeout (it compares elapsed times). */
#define TIMEOUT_MAX (7 * NS_DAY)


/* How a value is spelled. */
typedef enum kind {
    K_COUNT,        /* a plain integer */
    K_BYTES,        /* an integer with an optional K/M/G suffix */
    K_DURATION,     /* an integer with an optional ns/us/ms/s suffix */
    K_BOOL,         /* 0/1/true/false/yes/no/on/off */
    K_IDLE,         /* spin/yield/sleep */
    K_LOG,          /* 0..3 or error/warn/info/debug */
    K_USM,          /* auto/on/off */
    K_CPU,          /* first/last/off */
    K_PATH,         /* a file path (its length is the value), or off (0) */
    K_NAMES         /* auto, none, or a comma-separated list of names made of
                     * letters, digits, '_' and '-' (its length is the value) */
} kind;

/* X(ID, alias, kind, min, max, field, scope, default, range, meaning)
 *
 * `scope` says whose value counts (otm_setting_scope): every rank's, which
 * must then agree (the ranks compare them at start-up, otm_settings_judge),
 * each rank's own, or rank 0's alone.
 * `range` makes the text of both the README's Range column and the error
 * message ("expected <range>"), so it must read well after "expected". It
 * names the limits {min} and {max} rather than restating them; they are
 * written as the value is spelled (durations in their largest whole unit,
 * with whole days spelled out), see otm_setting_range. Examples in it
 * ("e.g. 4096 or 4K") must be accepted and equal (the unit test checks).
 * `default` must parse to the value otm_settings_default() holds (the unit
 * test checks it). Durations are in nanoseconds, sizes in bytes. */
#define OTM_SETTINGS(X)                                                       \
    X(FRAGMENT_SIZE, "OMPCLUSTER_MPI_FRAGMENT_SIZE", K_BYTES,                 \
      OTM_FRAG_SIZE_MIN, OTM_FRAG_SIZE_MAX, core.frag_size, OTM_SCOPE_HOST,   \
      "64M",                                                                  \
      "bytes in {min}..{max}, suffix K, M or G (e.g. 1048576 or 1M)",         \
      "Largest piece a transfer is cut into; MPI counts are int, hence the "  \
      "upper bound.")                                                         \
    X(NUM_COMMS, "OMPCLUSTER_NUM_EVENT_COMM", K_COUNT,                        \
      OTM_NCOMMS_MIN, OTM_NCOMMS_MAX, core.ncomms, OTM_SCOPE_JOB, "4",        \
      "an integer in {min}..{max}",                                           \
      "Event communicators per rank; transfers are spread over them "         \
      "round-robin so that independent transfers do not queue behind each "  \
      "other.")                                                               \
    X(INLINE_MAX, NULL, K_BYTES,                                              \
      OTM_INLINE_MAX_MIN, OTM_INLINE_MAX_MAX, core.inline_max,                \
      OTM_SCOPE_HOST, "4096",                                                 \
      "bytes in {min}..{max}, suffix K or M (e.g. 4096 or 4K)",               \
      "Payloads up to this size travel inside the notification itself, "     \
      "saving a round trip; 0 disables it.")                                  \
    X(WINDOW, NULL, K_COUNT,                                                  \
      OTM_WINDOW_MIN, OTM_WINDOW_MAX, core.window, OTM_SCOPE_RANK, "4",       \
      "an integer in {min}..{max}",                                           \
      "Fragments of one transfer in flight at once.")                         \
    X(TAG_SPACE, NULL, K_COUNT,                                               \
      OTM_TAG_SPACE_MIN, OTM_TAG_SPACE_MAX, core.tag_space, OTM_SCOPE_HOST,   \
      "65535",                                                                \
      "an integer in {min}..{max}",                                           \
      "MPI tags per event communicator (clamped to the MPI library's "        \
      "MPI_TAG_UB); bounds the transfers in flight per communicator.")        \
    X(TIMEOUT, NULL, K_DURATION,                                              \
      0, TIMEOUT_MAX, core.timeout_ns, OTM_SCOPE_RANK, "60s",                 \
      "a duration in {min}..{max}, suffix ns, us, ms or s, "                  \
      "bare number = ms; 0 = never",                                          \
      "An operation that makes no progress for this long fails instead of "   \
      "hanging; while a region runs, its device is probed every half of it, " \
      "so a device rank that died or is stopped is found within about this "  \
      "long (the region's own length is bounded by KERNEL_TIMEOUT); 0 waits " \
      "forever and probes nothing.")                                          \
    X(KERNEL_TIMEOUT, NULL, K_DURATION,                                       \
      0, TIMEOUT_MAX, core.kernel_timeout_ns, OTM_SCOPE_HOST, "0",            \
      "a duration in {min}..{max}, suffix ns, us, ms or s, "                  \
      "bare number = ms; 0 = never",                                          \
      "Longest time a target region may run before the host gives up on "     \
      "it; 0 lets kernels run as long as they need.")                         \
    X(HANDLERS, "OMPCLUSTER_NUM_EXEC_EVENT_HANDLERS", K_COUNT,                \
      1, 64, handlers, OTM_SCOPE_RANK, "1",                                   \
      "an integer in {min}..{max}",                                           \
      "Kernel handler threads per device rank; at least one per device it "  \
      "serves (its CPU and the devices of REMOTE_PLUGINS).")                  \
    X(IDLE, NULL, K_IDLE,                                                     \
      OTM_IDLE_SPIN, OTM_IDLE_SLEEP, idle, OTM_SCOPE_RANK, "sleep",           \
      "spin, yield or sleep",                                                 \
      "What an idle polling thread does: spin (lowest latency, burns a "      \
      "core), yield (spin, then sched_yield), sleep (spin, yield, then "      \
      "naps of an eighth of the time idle so far).")                          \
    X(SPIN, NULL, K_DURATION,                                                 \
      0, NS_S, spin_ns, OTM_SCOPE_RANK, "50us",                               \
      "a duration in {min}..{max}, suffix ns, us, ms or s, bare number = ms", \
      "How long an idle thread busy-polls before it yields or sleeps.")       \
    X(SLEEP_MAX, "OMPCLUSTER_EVENT_POLLING_RATE", K_DURATION,                 \
      0, NS_S, sleep_max_ns, OTM_SCOPE_RANK, "1ms",                           \
      "a duration in {min}..{max}, suffix ns, us, ms or s, bare number = ms " \
      "(us under the alias, as in the seed)",                                 \
      "Longest nap of an idle thread (IDLE=sleep): bounds the "               \
      "latency added to a request that arrives while it sleeps.")             \
    X(SLICE, NULL, K_DURATION,                                                \
      0, 100 * NS_MS, slice_ns, OTM_SCOPE_HOST, "100us",                      \
      "a duration in {min}..{max}, suffix ns, us, ms or s, bare number = ms; "\
      "0 = the kernel's default",                                             \
      "Scheduling slice a host thread waiting on a device asks Linux for "    \
      "once it has spun for SPIN, and keeps (EEVDF, Linux 6.12 and later; "   \
      "older kernels ignore it; Linux clamps it to 100us..100ms): woken by a "\
      "reply, it then runs at once instead of after the slice of a busy "     \
      "thread sharing its core.")                                             \
    X(LOG_LEVEL, NULL, K_LOG,                                                 \
      OTM_LOG_ERROR, OTM_LOG_DEBUG, log_level, OTM_SCOPE_RANK, "warn",        \
      "{min}..{max} or error, warn, info, debug",                             \
      "Messages printed to stderr: errors only, warnings, information, or "   \
      "everything (debug).")                                                  \
    X(POOL, NULL, K_BOOL,                                                     \
      0, 1, pool, OTM_SCOPE_HOST, "on",                                       \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "Freed device allocations are kept (still allocated on their device) "  \
      "and handed out again for the same size, saving a round trip.")        \
    X(POOL_MAX, NULL, K_BYTES,                                                \
      0, GIB, pool_max, OTM_SCOPE_HOST, "16M",                                \
      "bytes in {min}..{max}, suffix K, M or G (e.g. 1048576 or 1M)",         \
      "Largest allocation the pool keeps; bigger ones are freed on the "      \
      "device at once. The pool holds at most 16 times this (and 256 "        \
      "allocations) per device.")                                             \
    X(FORWARD_OUTPUT, NULL, K_BOOL,                                           \
      0, 1, forward_output, OTM_SCOPE_RANK, "on",                             \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "What a target region writes to stdout and stderr reaches the host's "  \
      "stdout and stderr when the region completes, in program order; off: "  \
      "it goes straight to the device rank's own descriptors.")               \
    X(STDERR_TO_STDOUT, NULL, K_BOOL,                                         \
      0, 1, stderr_to_stdout, OTM_SCOPE_HOST, "off",                          \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "Rank 0's stderr (the program's, the plugin's, the regions' forwarded " \
      "stderr) is written to its stdout: one stream, in the order written, "  \
      "which mpiexec, forwarding the two apart, does not keep. "              \
      "omptarget-mpirun sets it on when its own stdout and stderr are one "   \
      "file (as after 2>&1), unless it is set.")                              \
    X(INFO, NULL, K_BOOL,                                                     \
      0, 1, info, OTM_SCOPE_RANK, "off",                                      \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "Print the map of devices to ranks, host names and process ids when "  \
      "the plugin starts, and per-device counters (events by kind, bytes "   \
      "each way, kernel time, failures) when it ends.")                      \
    X(TRACE, NULL, K_PATH,                                                    \
      0, PATH_MAX_LEN, trace_len, OTM_SCOPE_RANK, "off",                      \
      "a file path prefix of at most {max} bytes, no control characters, or " \
      "off",                                                                  \
      "Write a timeline of every event (Chrome trace-event JSON, for "        \
      "Perfetto or chrome://tracing): each rank writes PATH.RANK.json at "    \
      "exit.")                                                                \
    X(USM, NULL, K_USM,                                                       \
      OTM_USM_AUTO, OTM_USM_OFF, usm, OTM_SCOPE_JOB, "auto",                  \
      "auto, on or off",                                                      \
      "Unified shared memory across processes: a region on a device rank "   \
      "reads and writes rank 0's memory at rank 0's addresses, its pages "   \
      "fetched on demand (Linux userfaultfd) and its writes sent back when "  \
      "it ends. auto: for a program that requires unified_shared_memory; "   \
      "on: for every region (host memory it never mapped included), and "    \
      "omptarget-mpirun then leaves address randomisation on, which the "    \
      "ranks need (their layouts must differ); off: a program that requires " \
      "it is refused.")                                                       \
    X(HOST_CODE, NULL, K_BOOL,                                                \
      0, 1, host_code, OTM_SCOPE_RANK, "on",                                  \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "A device rank places rank 0's program and libraries (their code, "    \
      "constants and virtual tables) at rank 0's addresses, so that a host "  \
      "function pointer or an object's virtual table handed to a region "     \
      "names the same code there, while every rank keeps its address "        \
      "randomisation; a call through a host function pointer costs one "      \
      "signal on the device. off: such a call faults, with the report.")      \
    X(REMOTE_PLUGINS, NULL, K_NAMES,                                          \
      1, NAMES_MAX_LEN, remote_plugins_len, OTM_SCOPE_RANK, "auto",          \
      "auto, none, or a comma-separated list of plugin names (a letter, "    \
      "then letters, digits, _ and -) of at most {max} bytes, e.g. cuda,host",\
      "Other libomptarget plugins each device rank serves devices of, "      \
      "besides its own CPU (remote accelerators): auto, the node's cuda "    \
      "and amdgpu plugins that load and find a device; a list names them "   \
      "(host: the node's x86_64 plugin; any NAME: its "                      \
      "libomptarget.rtl.NAME.so); none: the CPU alone. Their devices are "   \
      "numbered rank by rank, after each rank's CPU device (CPU_DEVICES); " \
      "a plugin that "                                                        \
      "does not load or finds no device is skipped with a line at info "     \
      "level.")                                                               \
    X(CPU_DEVICES, NULL, K_CPU,                                               \
      OTM_CPU_FIRST, OTM_CPU_OFF, cpu_devices, OTM_SCOPE_HOST, "first",       \
      "first, last or off",                                                   \
      "Where each device rank's own CPU device is numbered among its "       \
      "devices: first (before the devices of REMOTE_PLUGINS), last (after "   \
      "them), or off (not offered: every region runs on another plugin's "    \
      "device; a rank that proxies none offers no device).")                  \
    X(MAP, NULL, K_PATH,                                                      \
      0, PATH_MAX_LEN, map_len, OTM_SCOPE_RANK, "off",                        \
      "a file path of at most {max} bytes, no control characters, or off",    \
      "Rank 0 writes the job's map there at start-up, a line `rank R device " \
      "D pid P host H` per rank (device -1: the program; D its first "       \
      "device, none if it offers none), a "                                   \
      "line `device D rank R unit U plugin P local L host H` per device it "  \
      "proxies, then `ranks N`, "                                             \
      "and a line `end` once the program's end begins; each rank holds a "    \
      "lock on PATH.RANK while it lives: omptarget-mpirun sets it, to name "  \
      "the rank that ended first when a job ends without that line.")

enum {
#define OTM_SETTING_ID(id, ...) SET_##id,
    OTM_SETTINGS(OTM_SETTING_ID)
#undef OTM_SETTING_ID
    SET_COUNT
};

/* The parsing half of a row, and the form of its range text. */
typedef struct spec {
    kind kind;
    uint64_t min, max;
    const char *range;
} spec;

static const spec specs[SET_COUNT] = {
#define OTM_SETTING_SPEC(id, alias, k, lo, hi, field, scope, def, range, ...) \
    {k, lo, hi, range},
    OTM_SETTINGS(OTM_SETTING_SPEC)
#undef OTM_SETTING_SPEC
};

static const otm_setting_doc docs[SET_COUNT + 1] = {
#define OTM_SETTING_DOC(id, alias, k, lo, hi, field, scope, def, range, meaning) \
    {"OMPTARGET_MPI_" #id, alias, def, meaning, scope},
    OTM_SETTINGS(OTM_SETTING_DOC)
#undef OTM_SETTING_DOC
    {NULL, NULL, NULL, NULL, OTM_SCOPE_RANK},
};

const otm_setting_doc *otm_settings_table(void)
{
    return docs;
}

/* Writes the parsed value into its field; the range check has already made
 * it fit the field's type. */
static void store(otm_settings *s, int id, uint64_t v)
{
    switch (id) {
#define OTM_SETTING_STORE(id, alias, k, lo, hi, field, ...)                   \
    case SET_##id: s->field = v; break;
    OTM_SETTINGS(OTM_SETTING_STORE)
#undef OTM_SETTING_STORE
    default: break;
    }
}

/* The value store() wrote, read back (the ranks compare them). */
static uint64_t fetch(const otm_settings *s, int id)
{
    switch (id) {
#define OTM_SETTING_FETCH(id, alias, k, lo, hi, field, ...)                   \
    case SET_##id: return (uint64_t)s->field;
    OTM_SETTINGS(OTM_SETTING_FETCH)
#undef OTM_SETTING_FETCH
    default: return 0;
    }
}

_Static_assert(sizeof(((otm_settings *)0)->trace) > PATH_MAX_LEN &&
                   sizeof(((otm_settings *)0)->map) > PATH_MAX_LEN,
               "the path buffers hold the longest accepted path");
_Static_assert(sizeof(((otm_settings *)0)->remote_plugins) > NAMES_MAX_LEN,
               "the names buffer holds the longest accepted list");

otm_settings otm_settings_default(void)
{
    otm_settings s = {
        .core = otm_config_default(),
        .handlers = 1,
        .idle = OTM_IDLE_SLEEP,
        .spin_ns = 50 * NS_US,
        .sleep_max_ns = NS_MS,
        .slice_ns = 100 * NS_US,
        .log_level = OTM_LOG_WARN,
        .pool = 1,
        .pool_max = 16 * MIB,
        .forward_output = 1,
        .stderr_to_stdout = 0,
        .host_code = 1,
        .info = 0,
        .trace_len = 0,
        .trace = "",
        .map_len = 0,
        .map = "",
        .remote_plugins_len = 4,
        .remote_plugins = "auto",
    };
    /* The core's default of "never" suits the simulator, whose virtual
     * clock may not advance; a real job should fail rather than hang. */
    s.core.timeout_ns = 60 * NS_S;
    return s;
}

/* ---- lexing ---------------------------------------------------------------- */

/* A word and the value it stands for. */
typedef struct word {
    const char *text;
    uint64_t value;
} word;

static const word size_units[] = {
    {"K", KIB}, {"M", MIB}, {"G", GIB}, {NULL, 0}};
static const word time_units[] = {
    {"ns", 1}, {"us", NS_US}, {"ms", NS_MS}, {"s", NS_S}, {NULL, 0}};
static const word bool_words[] = {
    {"0", 0}, {"1", 1}, {"false", 0}, {"true", 1}, {"no", 0}, {"yes", 1},
    {"off", 0}, {"on", 1}, {NULL, 0}};
static const word idle_words[] = {
    {"spin", OTM_IDLE_SPIN}, {"yield", OTM_IDLE_YIELD},
    {"sleep", OTM_IDLE_SLEEP}, {NULL, 0}};
static const word log_words[] = {
    {"error", OTM_LOG_ERROR}, {"warn", OTM_LOG_WARN},
    {"info", OTM_LOG_INFO}, {"debug", OTM_LOG_DEBUG}, {NULL, 0}};
static const word usm_words[] = {
    {"auto", OTM_USM_AUTO}, {"on", OTM_USM_ON}, {"off", OTM_USM_OFF}, {NULL, 0}};
static const word cpu_words[] = {
    {"first", OTM_CPU_FIRST}, {"last", OTM_CPU_LAST}, {"off", OTM_CPU_OFF}, {NULL, 0}};

/* The text [b, e) without surrounding white space. */
typedef struct span {
    const char *b, *e;
} span;

static span trim(const char *text)
{
    span t = {text, text + strlen(text)};
    while (t.b < t.e && isspace((unsigned char)*t.b))
        t.b++;
    while (t.e > t.b && isspace((unsigned char)t.e[-1]))
        t.e--;
    return t;
}

/* Looks the whole span up in `words`, ignoring case. */
static int lookup(span t, const word *words, uint64_t *out)
{
    size_t n = (size_t)(t.e - t.b);
    for (const word *w = words; w->text; w++) {
        if (strlen(w->text) == n && strncasecmp(w->text, t.b, n) == 0) {
            *out = w->value;
            return 1;
        }
    }
    return 0;
}

/* Consumes the leading decimal digits of *t; fails on none or overflow.
 * A sign is not a digit, so "-1" and "+1" fail here. */
static int digits(span *t, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = t->b;
    for (; p < t->e && isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (p == t->b)
        return 0;
    t->b = p;
    *out = v;
    return 1;
}

/* A number followed by nothing (scaled by `bare`) or by one of `units`. */
static int scaled(span t, const word *units, uint64_t bare, uint64_t *out)
{
    uint64_t n, unit = bare;
    if (!digits(&t, &n))
        return 0;
    if (t.b < t.e && !lookup(t, units, &unit))
        return 0;
    if (unit && n > UINT64_MAX / unit)
        return 0;
    *out = n * unit;
    return 1;
}

/* A path is any non-empty text without control characters; "off" is
 * none (0). The value is its length, so the range bounds it. */
static int path_length(span t, uint64_t *out)
{
    static const word off[] = {{"off", 0}, {NULL, 0}};
    if (t.b == t.e)
        return 0;
    if (lookup(t, off, out))
        return 1;
    for (const char *p = t.b; p < t.e; p++)
        if (iscntrl((unsigned char)*p))
            return 0;
    *out = (uint64_t)(t.e - t.b);
    return 1;
}

/* A list of names: "auto", "none", or names of a letter then letters,
 * digits, '_' and '-', joined by commas. The value is its length. */
static int names_length(span t, uint64_t *out)
{
    int item = 0;
    if (t.b == t.e)
        return 0;
    for (const char *p = t.b; p < t.e; p++) {
        if (*p == ',' && item) {
            item = 0;
        } else if (isalpha((unsigned char)*p) ||
                   (item && (isdigit((unsigned char)*p) || *p == '_' || *p == '-'))) {
            item = 1;
        } else {
            return 0;
        }
    }
    *out = (uint64_t)(t.e - t.b);
    return item;
}

/* Parses `text` as `k`; bare durations are in units of `bare_ns`. */
static int parse(kind k, const char *text, uint64_t bare_ns, uint64_t *out)
{
    span t = trim(text);
    switch (k) {
    case K_COUNT: return digits(&t, out) && t.b == t.e;
    case K_BYTES: return scaled(t, size_units, 1, out);
    case K_DURATION: return scaled(t, time_units, bare_ns, out);
    case K_BOOL: return lookup(t, bool_words, out);
    case K_IDLE: return lookup(t, idle_words, out);
    case K_USM: return lookup(t, usm_words, out);
    case K_CPU: return lookup(t, cpu_words, out);
    case K_LOG:
        return lookup(t, log_words, out) ||
               (digits(&t, out) && t.b == t.e);
    case K_PATH: return path_length(t, out);
    case K_NAMES: return names_length(t, out);
    }
    return 0;
}

/* ---- range texts ----------------------------------------------------------- */

/* Text appended to a caller's buffer of `len` bytes; `n` counts every
 * character, also those that did not fit (snprintf's return value). */
typedef struct text {
    char *buf;
    size_t len, n;
} text;

static void put_char(text *t, char c)
{
    if (t->n + 1 < t->len)
        t->buf[t->n] = c;
    t->n++;
}

static void put(text *t, const char *s)
{
    while (*s)
        put_char(t, *s++);
}

/* A duration in its largest whole unit ("604800s", "50us"; 0 bare), with
 * whole days also spelled out ("604800s (7 days)"). */
static void put_duration(text *t, uint64_t ns)
{
    const word *unit = &time_units[0];
    for (const word *u = time_units; u->text; u++)
        if (ns % u->value == 0)
            unit = u;
    char num[64];
    snprintf(num, sizeof num, "%llu%s", (unsigned long long)(ns / unit->value),
             ns ? unit->text : "");
    put(t, num);
    if (ns && ns % NS_DAY == 0) {
        unsigned long long days = ns / NS_DAY;
        snprintf(num, sizeof num, " (%llu day%s)", days, days > 1 ? "s" : "");
        put(t, num);
    }
}

/* A limit as a value of kind `k` is spelled; bytes stay plain numbers, so
 * that the table shows the exact bound. */
static void put_limit(text *t, kind k, uint64_t v)
{
    if (k == K_DURATION) {
        put_duration(t, v);
        return;
    }
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    put(t, num);
}

/* Copies the row's range form, writing its limits for {min} and {max}. */
static void put_range(text *t, const spec *sp)
{
    static const char lo[] = "{min}", hi[] = "{max}";
    const char *p = sp->range;
    while (*p) {
        if (!strncmp(p, lo, sizeof lo - 1)) {
            put_limit(t, sp->kind, sp->min);
            p += sizeof lo - 1;
        } else if (!strncmp(p, hi, sizeof hi - 1)) {
            put_limit(t, sp->kind, sp->max);
            p += sizeof hi - 1;
        } else {
            put_char(t, *p++);
        }
    }
}

size_t otm_setting_range(const otm_setting_doc *d, char *buf, size_t len)
{
    text t = {buf, len, 0};
    /* Equality, not ordering: `d` may point anywhere. */
    for (int id = 0; id < SET_COUNT; id++)
        if (d == &docs[id])
            put_range(&t, &specs[id]);
    if (len)
        buf[t.n < len ? t.n : len - 1] = '\0';
    return t.n;
}

/* ---- loading --------------------------------------------------------------- */

/* The seed's EVENT_POLLING_RATE was a bare number of microseconds; reading
 * it as milliseconds would make the old spelling sleep 1000 times longer. */
static uint64_t bare_unit(int id, int via_alias)
{
    return via_alias && id == SET_SLEEP_MAX ? NS_US : NS_MS;
}

/* The value as the error echoes it: at most 64 characters, with control
 * characters shown as '?', so the sentence stays one line of a log. */
static void echo_value(char out[72], const char *value)
{
    size_t n = 0;
    for (; value[n] && n < 64; n++)
        out[n] = iscntrl((unsigned char)value[n]) ? '?' : value[n];
    strcpy(out + n, value[n] ? "..." : "");
}

static void report(char *err, size_t errlen, int id, int via_alias,
                   const char *value)
{
    if (!err || !errlen)
        return;
    const otm_setting_doc *d = &docs[id];
    char shown[72], note[80] = "", range[OTM_SETTING_RANGE_LEN];
    echo_value(shown, value);
    otm_setting_range(d, range, sizeof range);
    if (via_alias)
        snprintf(note, sizeof note, " (alias of %s)", d->name);
    snprintf(err, errlen, "%s=%s: expected %s%s",
             via_alias ? d->alias : d->name, shown, range, note);
}

/* Reads one variable into *s; the OMPTARGET_MPI_ name wins over the alias.
 * Returns 0 and writes err on a bad value. */
static int load_one(otm_settings *s, int id,
                    const char *(*get)(void *ctx, const char *name),
                    void *ctx, char *err, size_t errlen)
{
    const otm_setting_doc *d = &docs[id];
    const char *value = get(ctx, d->name);
    int via_alias = 0;
    if (!value && d->alias) {
        value = get(ctx, d->alias);
        via_alias = value != NULL;
    }
    if (!value)
        return 1;
    uint64_t v;
    if (!parse(specs[id].kind, value, bare_unit(id, via_alias), &v) ||
        v < specs[id].min || v > specs[id].max) {
        report(err, errlen, id, via_alias, value);
        return 0;
    }
    store(s, id, v);
    if (specs[id].kind == K_PATH || specs[id].kind == K_NAMES) {
        /* A text setting keeps its text (trimmed, as parsed). */
        char *dst = id == SET_TRACE ? s->trace : id == SET_MAP ? s->map : s->remote_plugins;
        span t = trim(value);
        memcpy(dst, t.b, (size_t)v);
        dst[v] = '\0';
    }
    return 1;
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

otm_status otm_settings_load(otm_settings *s,
                             const char *(*get)(void *ctx, const char *name),
                             void *ctx, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!s)
        return OTM_ERR_INVALID;
    if (!get)
        get = env_get;
    otm_settings next = otm_settings_default();
    *s = next;
    for (int id = 0; id < SET_COUNT; id++)
        if (!load_one(&next, id, get, ctx, err, errlen))
            return OTM_ERR_INVALID;
    /* The core's rows take otm/config.h's limits, so this fires only if a
     * row names the wrong one; it still must not let a bad config through. */
    if (otm_config_check(&next.core)) {
        if (err && errlen)
            snprintf(err, errlen, "OMPTARGET_MPI_*: the core rejects these "
                     "settings (its limits and settings.c disagree)");
        return OTM_ERR_INVALID;
    }
    *s = next;
    return OTM_OK;
}

/* ---- test hooks ---------------------------------------------------------------- */

/* X(ID, field): OTM_TEST_<ID> into otm_test_hooks.field (otm/settings.h
 * says why they are not rows of OTM_SETTINGS; docs/testing.md documents
 * them). */
#define OTM_TEST_HOOKS(X)                                                     \
    X(KILL_AT, kill_at)                                                       \
    X(KILL_RANK, kill_rank)                                                   \
    X(FAIL_ALLOC, fail_alloc)                                                 \
    X(FAIL_ALLOC_RANK, fail_alloc_rank)                                       \
    X(PLUGIN_DIR, plugin_dir)

void otm_test_hooks_load(otm_test_hooks *t,
                         const char *(*get)(void *ctx, const char *name), void *ctx)
{
    if (!get)
        get = env_get;
#define OTM_TEST_HOOK_LOAD(id, field) t->field = get(ctx, "OTM_TEST_" #id);
    OTM_TEST_HOOKS(OTM_TEST_HOOK_LOAD)
#undef OTM_TEST_HOOK_LOAD
}

/* ---- the launcher's marks ---------------------------------------------------- */

int otm_settings_launched(const char *(*get)(void *ctx, const char *name), void *ctx)
{
    static const char *const marks[] = {
        "PMI_RANK", "PMI_SIZE", "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
        "MPI_LOCALNRANKS", "OMPTARGET_MPI_LAUNCHER"};
    if (!get)
        get = env_get;
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (get(ctx, marks[i]))
            return 1;
    return 0;
}

long otm_settings_launcher_rank(const char *(*get)(void *ctx, const char *name),
                                void *ctx)
{
    static const char *const vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
    if (!get)
        get = env_get;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = get(ctx, vars[i]);
        char *end;
        if (!v || *v < '0' || *v > '9')
            continue;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (!*end && !errno && r <= 0x7fffffffL)
            return r;
    }
    return -1;
}

/* ---- the ranks agree --------------------------------------------------------- */

_Static_assert(SET_COUNT <= OTM_SETTINGS_CARD_VALUES,
               "a settings card holds a value per variable");

const char *otm_setting_scope_text(otm_setting_scope scope)
{
    switch (scope) {
    case OTM_SCOPE_JOB: return "must agree";
    case OTM_SCOPE_RANK: return "per rank";
    case OTM_SCOPE_HOST: return "rank 0's";
    }
    return "";
}

void otm_settings_card_make(otm_settings_card *card, const otm_settings *s,
                            const char *error)
{
    memset(card, 0, sizeof *card);
    card->magic = OTM_SETTINGS_CARD_MAGIC;
    card->valid = error == NULL;
    if (error) {
        snprintf(card->error, sizeof card->error, "%s", error);
        return;
    }
    for (int id = 0; id < SET_COUNT; id++)
        card->value[id] = fetch(s, id);
}

/* Whether rank r belongs to the group of rank `of`, by one of the three
 * groupings judge makes. */
typedef enum grouping { G_NOT_A_CARD, G_ERROR, G_VALUE } grouping;

static int is_card(const otm_settings_card *c)
{
    return c->magic == OTM_SETTINGS_CARD_MAGIC;
}

static int same_group(const otm_settings_card *cards, grouping g, int id, int r, int of)
{
    const otm_settings_card *a = &cards[r], *b = &cards[of];
    switch (g) {
    case G_NOT_A_CARD: return !is_card(a);
    case G_ERROR:
        return is_card(a) && !a->valid && is_card(b) &&
               strncmp(a->error, b->error, sizeof a->error) == 0;
    case G_VALUE: return a->value[id] == b->value[id];
    }
    return 0;
}

/* The ranks of rank `of`'s group, as ranges: "rank 2", "ranks 1..2",
 * "ranks 0, 2..4"; "every rank" when that is all of them. */
static void put_ranks(text *t, const otm_settings_card *cards, int n, grouping g, int id,
                      int of)
{
    int count = 0, runs = 0;
    for (int r = 0; r < n; r++)
        count += same_group(cards, g, id, r, of);
    if (count == n && n > 1) {
        put(t, "every rank");
        return;
    }
    put(t, count > 1 ? "ranks " : "rank ");
    for (int r = 0; r < n; r++) {
        if (!same_group(cards, g, id, r, of))
            continue;
        int last = r;
        while (last + 1 < n && same_group(cards, g, id, last + 1, of))
            last++;
        char num[32];
        snprintf(num, sizeof num, last > r ? "%s%d..%d" : "%s%d", runs++ ? ", " : "", r,
                 last);
        put(t, num);
        r = last;
    }
}

/* 1 when rank r is the first of its group. */
static int first_of_group(const otm_settings_card *cards, grouping g, int id, int r)
{
    for (int q = 0; q < r; q++)
        if (same_group(cards, g, id, q, r))
            return 0;
    return 1;
}

static int judge_cards(text *t, const otm_settings_card *cards, int n)
{
    for (int r = 0; r < n; r++)
        if (!is_card(&cards[r])) {
            put_ranks(t, cards, n, G_NOT_A_CARD, 0, r);
            put(t, " sent no settings (a rank of another build of omptarget-mpi?)");
            return 1;
        }
    return 0;
}

static int judge_errors(text *t, const otm_settings_card *cards, int n)
{
    int said = 0;
    for (int r = 0; r < n; r++) {
        if (cards[r].valid || !first_of_group(cards, G_ERROR, 0, r))
            continue;
        put(t, said++ ? "; " : "");
        char line[OTM_SETTINGS_CARD_ERROR + 1];
        snprintf(line, sizeof line, "%.*s", (int)sizeof cards[r].error, cards[r].error);
        put(t, line);
        put(t, " (");
        put_ranks(t, cards, n, G_ERROR, 0, r);
        put(t, ")");
    }
    return said;
}

static int judge_values(text *t, const otm_settings_card *cards, int n)
{
    int said = 0;
    for (int id = 0; id < SET_COUNT; id++) {
        if (docs[id].scope != OTM_SCOPE_JOB)
            continue;
        int differ = 0;
        for (int r = 1; r < n; r++)
            differ |= cards[r].value[id] != cards[0].value[id];
        if (!differ)
            continue;
        put(t, said++ ? "; " : "");
        put(t, docs[id].name);
        put(t, " must be the same on every rank:");
        for (int r = 0, groups = 0; r < n; r++) {
            if (!first_of_group(cards, G_VALUE, id, r))
                continue;
            put(t, groups++ ? ", " : " ");
            put_limit(t, specs[id].kind, cards[r].value[id]);
            put(t, " on ");
            put_ranks(t, cards, n, G_VALUE, id, r);
        }
    }
    return said;
}

otm_status otm_settings_judge(const otm_settings_card *cards, int n, char *msg,
                              size_t len)
{
    text t = {msg, len, 0};
    int bad = n < 1 || judge_cards(&t, cards, n) || judge_errors(&t, cards, n) ||
              judge_values(&t, cards, n);
    if (len)
        msg[t.n < len ? t.n : len - 1] = '\0';
    return bad ? OTM_ERR_INVALID : OTM_OK;
}
