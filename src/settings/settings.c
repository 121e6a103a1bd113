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
    K_PATH          /* a file path (its length is the value), or off (0) */
} kind;

/* X(ID, alias, kind, min, max, field, default, range, meaning)
 *
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
      OTM_FRAG_SIZE_MIN, OTM_FRAG_SIZE_MAX, core.frag_size, "64M",            \
      "bytes in {min}..{max}, suffix K, M or G (e.g. 1048576 or 1M)",         \
      "Largest piece a transfer is cut into; MPI counts are int, hence the "  \
      "upper bound.")                                                         \
    X(NUM_COMMS, "OMPCLUSTER_NUM_EVENT_COMM", K_COUNT,                        \
      OTM_NCOMMS_MIN, OTM_NCOMMS_MAX, core.ncomms, "4",                       \
      "an integer in {min}..{max}",                                           \
      "Event communicators per rank; transfers are spread over them "         \
      "round-robin so that independent transfers do not queue behind each "  \
      "other.")                                                               \
    X(INLINE_MAX, NULL, K_BYTES,                                              \
      OTM_INLINE_MAX_MIN, OTM_INLINE_MAX_MAX, core.inline_max, "4096",        \
      "bytes in {min}..{max}, suffix K or M (e.g. 4096 or 4K)",               \
      "Payloads up to this size travel inside the notification itself, "     \
      "saving a round trip; 0 disables it.")                                  \
    X(WINDOW, NULL, K_COUNT,                                                  \
      OTM_WINDOW_MIN, OTM_WINDOW_MAX, core.window, "4",                       \
      "an integer in {min}..{max}",                                           \
      "Fragments of one transfer in flight at once.")                         \
    X(TAG_SPACE, NULL, K_COUNT,                                               \
      OTM_TAG_SPACE_MIN, OTM_TAG_SPACE_MAX, core.tag_space, "65535",          \
      "an integer in {min}..{max}",                                           \
      "MPI tags per event communicator (clamped to the MPI library's "        \
      "MPI_TAG_UB); bounds the transfers in flight per communicator.")        \
    X(TIMEOUT, NULL, K_DURATION,                                              \
      0, TIMEOUT_MAX, core.timeout_ns, "60s",                                 \
      "a duration in {min}..{max}, suffix ns, us, ms or s, "                  \
      "bare number = ms; 0 = never",                                          \
      "An operation that makes no progress for this long fails instead of "   \
      "hanging; while a region runs, its device is probed every half of it, " \
      "so a device rank that died or is stopped is found within about this "  \
      "long (the region's own length is bounded by KERNEL_TIMEOUT); 0 waits " \
      "forever and probes nothing.")                                          \
    X(KERNEL_TIMEOUT, NULL, K_DURATION,                                       \
      0, TIMEOUT_MAX, core.kernel_timeout_ns, "0",                            \
      "a duration in {min}..{max}, suffix ns, us, ms or s, "                  \
      "bare number = ms; 0 = never",                                          \
      "Longest time a target region may run before the host gives up on "     \
      "it; 0 lets kernels run as long as they need.")                         \
    X(HANDLERS, "OMPCLUSTER_NUM_EXEC_EVENT_HANDLERS", K_COUNT,                \
      1, 64, handlers, "1",                                                   \
      "an integer in {min}..{max}",                                           \
      "Kernel handler threads per device rank.")                              \
    X(IDLE, NULL, K_IDLE,                                                     \
      OTM_IDLE_SPIN, OTM_IDLE_SLEEP, idle, "sleep",                           \
      "spin, yield or sleep",                                                 \
      "What an idle polling thread does: spin (lowest latency, burns a "      \
      "core), yield (spin, then sched_yield), sleep (spin, yield, then "      \
      "naps of an eighth of the time idle so far).")                          \
    X(SPIN, NULL, K_DURATION,                                                 \
      0, NS_S, spin_ns, "50us",                                               \
      "a duration in {min}..{max}, suffix ns, us, ms or s, bare number = ms", \
      "How long an idle thread busy-polls before it yields or sleeps.")       \
    X(SLEEP_MAX, "OMPCLUSTER_EVENT_POLLING_RATE", K_DURATION,                 \
      0, NS_S, sleep_max_ns, "1ms",                                           \
      "a duration in {min}..{max}, suffix ns, us, ms or s, bare number = ms " \
      "(us under the alias, as in the seed)",                                 \
      "Longest nap of an idle thread (IDLE=sleep): bounds the "               \
      "latency added to a request that arrives while it sleeps.")             \
    X(SLICE, NULL, K_DURATION,                                                \
      0, 100 * NS_MS, slice_ns, "100us",                                      \
      "a duration in {min}..{max}, suffix ns, us, ms or s, bare number = ms; "\
      "0 = the kernel's default",                                             \
      "Scheduling slice a host thread waiting on a device asks Linux for "    \
      "once it has spun for SPIN, and keeps (EEVDF, Linux 6.12 and later; "   \
      "older kernels ignore it; Linux clamps it to 100us..100ms): woken by a "\
      "reply, it then runs at once instead of after the slice of a busy "     \
      "thread sharing its core.")                                             \
    X(LOG_LEVEL, NULL, K_LOG,                                                 \
      OTM_LOG_ERROR, OTM_LOG_DEBUG, log_level, "warn",                                \
      "{min}..{max} or error, warn, info, debug",                             \
      "Messages printed to stderr: errors only, warnings, information, or "   \
      "everything (debug).")                                                  \
    X(POOL, NULL, K_BOOL,                                                     \
      0, 1, pool, "on",                                                       \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "Freed device allocations are kept (still allocated on their device) "  \
      "and handed out again for the same size, saving a round trip.")        \
    X(POOL_MAX, NULL, K_BYTES,                                                \
      0, GIB, pool_max, "16M",                                                \
      "bytes in {min}..{max}, suffix K, M or G (e.g. 1048576 or 1M)",         \
      "Largest allocation the pool keeps; bigger ones are freed on the "      \
      "device at once. The pool holds at most 16 times this (and 256 "        \
      "allocations) per device.")                                             \
    X(FORWARD_OUTPUT, NULL, K_BOOL,                                           \
      0, 1, forward_output, "on",                                             \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "What a target region writes to stdout and stderr reaches the host's "  \
      "stdout and stderr when the region completes, in program order; off: "  \
      "it goes straight to the device rank's own descriptors.")               \
    X(INFO, NULL, K_BOOL,                                                     \
      0, 1, info, "off",                                                      \
      "a boolean: 1, true, yes, on or 0, false, no, off",                     \
      "Print the map of devices to ranks, host names and process ids when "  \
      "the plugin starts, and per-device counters (events by kind, bytes "   \
      "each way, kernel time, failures) when it ends.")                      \
    X(TRACE, NULL, K_PATH,                                                    \
      0, PATH_MAX_LEN, trace_len, "off",                                      \
      "a file path prefix of at most {max} bytes, no control characters, or " \
      "off",                                                                  \
      "Write a timeline of every event (Chrome trace-event JSON, for "        \
      "Perfetto or chrome://tracing): each rank writes PATH.RANK.json at "    \
      "exit.")                                                                \
    X(MAP, NULL, K_PATH,                                                      \
      0, PATH_MAX_LEN, map_len, "off",                                        \
      "a file path of at most {max} bytes, no control characters, or off",    \
      "Rank 0 writes the job's map there at start-up, a line `rank R device " \
      "D pid P host H` per rank (device -1: the program), then `ranks N`, "   \
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
#define OTM_SETTING_SPEC(id, alias, k, lo, hi, field, def, range, ...)       \
    {k, lo, hi, range},
    OTM_SETTINGS(OTM_SETTING_SPEC)
#undef OTM_SETTING_SPEC
};

static const otm_setting_doc docs[SET_COUNT + 1] = {
#define OTM_SETTING_DOC(id, alias, k, lo, hi, field, def, range, meaning)    \
    {"OMPTARGET_MPI_" #id, alias, def, meaning},
    OTM_SETTINGS(OTM_SETTING_DOC)
#undef OTM_SETTING_DOC
    {NULL, NULL, NULL, NULL},
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

_Static_assert(sizeof(((otm_settings *)0)->trace) > PATH_MAX_LEN &&
                   sizeof(((otm_settings *)0)->map) > PATH_MAX_LEN,
               "the path buffers hold the longest accepted path");

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
        .info = 0,
        .trace_len = 0,
        .trace = "",
        .map_len = 0,
        .map = "",
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
    case K_LOG:
        return lookup(t, log_words, out) ||
               (digits(&t, out) && t.b == t.e);
    case K_PATH: return path_length(t, out);
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
    if (specs[id].kind == K_PATH) {
        /* A path setting keeps its text (trimmed, as parsed). */
        char *dst = id == SET_TRACE ? s->trace : s->map;
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
