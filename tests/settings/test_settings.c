/*
 * test_settings.c - the environment parser, driven through a fake
 * environment.
 *
 * Each variable gets values that must be accepted (with the value they must
 * produce) and values that must be refused: out of range on both sides,
 * negative, overflowing, empty, badly suffixed. Refusals must name the
 * variable and leave the settings at their defaults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "otm/settings.h"

#define MIB (1024ull * 1024ull)
#define NS_US 1000ull
#define NS_MS 1000000ull
#define NS_S 1000000000ull

/* ---- a fake environment ---------------------------------------------------- */

typedef struct env {
    const char *name[4];
    const char *value[4];
    int count;
} env;

static const char *env_get(void *ctx, const char *name)
{
    const env *e = ctx;
    for (int i = 0; i < e->count; i++)
        if (strcmp(e->name[i], name) == 0)
            return e->value[i];
    return NULL;
}

static void env_set(env *e, const char *name, const char *value)
{
    assert_true(e->count < 4);
    e->name[e->count] = name;
    e->value[e->count] = value;
    e->count++;
}

/* Loads settings from the one variable name=value. */
static otm_status load1(const char *name, const char *value, otm_settings *s,
                        char *err, size_t errlen)
{
    env e = {.count = 0};
    env_set(&e, name, value);
    return otm_settings_load(s, env_get, &e, err, errlen);
}

/* ---- reading fields by variable name ---------------------------------------- */

static uint64_t field(const otm_settings *s, const char *name)
{
    static const char prefix[] = "OMPTARGET_MPI_";
    const char *n = name + sizeof prefix - 1;
    if (!strcmp(n, "FRAGMENT_SIZE")) return s->core.frag_size;
    if (!strcmp(n, "NUM_COMMS")) return (uint64_t)s->core.ncomms;
    if (!strcmp(n, "INLINE_MAX")) return s->core.inline_max;
    if (!strcmp(n, "WINDOW")) return (uint64_t)s->core.window;
    if (!strcmp(n, "TAG_SPACE")) return (uint64_t)s->core.tag_space;
    if (!strcmp(n, "TIMEOUT")) return s->core.timeout_ns;
    if (!strcmp(n, "KERNEL_TIMEOUT")) return s->core.kernel_timeout_ns;
    if (!strcmp(n, "HANDLERS")) return (uint64_t)s->handlers;
    if (!strcmp(n, "IDLE")) return (uint64_t)s->idle;
    if (!strcmp(n, "SPIN")) return s->spin_ns;
    if (!strcmp(n, "SLEEP_MAX")) return s->sleep_max_ns;
    if (!strcmp(n, "SLICE")) return s->slice_ns;
    if (!strcmp(n, "LOG_LEVEL")) return (uint64_t)s->log_level;
    if (!strcmp(n, "POOL")) return (uint64_t)s->pool;
    if (!strcmp(n, "POOL_MAX")) return s->pool_max;
    if (!strcmp(n, "FORWARD_OUTPUT")) return (uint64_t)s->forward_output;
    if (!strcmp(n, "STDERR_TO_STDOUT")) return (uint64_t)s->stderr_to_stdout;
    if (!strcmp(n, "INFO")) return (uint64_t)s->info;
    if (!strcmp(n, "TRACE")) return (uint64_t)s->trace_len;
    if (!strcmp(n, "USM")) return (uint64_t)s->usm;
    if (!strcmp(n, "HOST_CODE")) return (uint64_t)s->host_code;
    if (!strcmp(n, "REMOTE_PLUGINS")) return (uint64_t)s->remote_plugins_len;
    if (!strcmp(n, "CPU_DEVICES")) return (uint64_t)s->cpu_devices;
    if (!strcmp(n, "MAP")) return (uint64_t)s->map_len;
    fail_msg("no field for %s", name);
    return 0;
}

/* Every variable the plugin has; the table must list exactly these. */
static const char *const all_names[] = {
    "OMPTARGET_MPI_FRAGMENT_SIZE", "OMPTARGET_MPI_NUM_COMMS",
    "OMPTARGET_MPI_INLINE_MAX",    "OMPTARGET_MPI_WINDOW",
    "OMPTARGET_MPI_TAG_SPACE",     "OMPTARGET_MPI_TIMEOUT",
    "OMPTARGET_MPI_KERNEL_TIMEOUT",
    "OMPTARGET_MPI_HANDLERS",      "OMPTARGET_MPI_IDLE",
    "OMPTARGET_MPI_SPIN",          "OMPTARGET_MPI_SLEEP_MAX",
    "OMPTARGET_MPI_SLICE",
    "OMPTARGET_MPI_LOG_LEVEL",     "OMPTARGET_MPI_POOL",
    "OMPTARGET_MPI_POOL_MAX",      "OMPTARGET_MPI_FORWARD_OUTPUT",
    "OMPTARGET_MPI_STDERR_TO_STDOUT",
    "OMPTARGET_MPI_INFO",          "OMPTARGET_MPI_TRACE",
    "OMPTARGET_MPI_USM",           "OMPTARGET_MPI_HOST_CODE",
    "OMPTARGET_MPI_REMOTE_PLUGINS", "OMPTARGET_MPI_CPU_DEVICES",
    "OMPTARGET_MPI_MAP",
};
#define NVARS ((int)(sizeof all_names / sizeof all_names[0]))

/* The table's row of variable `name`. */
static const otm_setting_doc *row(const char *name)
{
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++)
        if (!strcmp(d->name, name))
            return d;
    fail_msg("no row for %s", name);
    return NULL;
}

static int settings_equal(const otm_settings *a, const otm_settings *b)
{
    for (int i = 0; i < NVARS; i++)
        if (field(a, all_names[i]) != field(b, all_names[i]))
            return 0;
    return 1;
}

/* A settings value no load produces, to see that *s is overwritten. */
static otm_settings garbage(void)
{
    otm_settings s;
    memset(&s, 0x5a, sizeof s);
    return s;
}

/* ---- checks ------------------------------------------------------------------ */

static void check_accepted(const char *name, const char *value, uint64_t want)
{
    otm_settings s = garbage();
    char err[256] = "untouched";
    otm_status st = load1(name, value, &s, err, sizeof err);
    if (st != OTM_OK)
        fail_msg("%s=\"%s\" refused: %s", name, value, err);
    assert_string_equal(err, "");
    if (field(&s, name) != want)
        fail_msg("%s=\"%s\" gave %llu, want %llu", name, value,
                 (unsigned long long)field(&s, name),
                 (unsigned long long)want);
}

static void check_refused(const char *name, const char *value)
{
    otm_settings s = garbage();
    otm_settings def = otm_settings_default();
    char err[256] = "";
    otm_status st = load1(name, value, &s, err, sizeof err);
    if (st != OTM_ERR_INVALID)
        fail_msg("%s=\"%s\" accepted", name, value);
    if (!strstr(err, name) || !strstr(err, "expected "))
        fail_msg("%s=\"%s\": error \"%s\" names neither variable nor range",
                 name, value, err);
    assert_null(strchr(err, '\n'));
    assert_true(settings_equal(&s, &def));
}

typedef struct good {
    const char *text;
    uint64_t value;
} good;

typedef struct var_case {
    const char *name;
    good ok[12];            /* ends at text == NULL */
    const char *bad[20];    /* ends at NULL */
} var_case;

/* A path takes almost any text, and a list of plugin names words, so
 * bad_everywhere does not apply to them. */
static int any_text(const char *name)
{
    return !strcmp(name, "OMPTARGET_MPI_TRACE") || !strcmp(name, "OMPTARGET_MPI_MAP") ||
           !strcmp(name, "OMPTARGET_MPI_REMOTE_PLUGINS");
}

/* Refused by every variable: not a value of any kind. */
static const char *const bad_everywhere[] = {
    "", "   ", "-1", "+1", "abc", "99999999999999999999",
    "18446744073709551616", "1 2", "1.5", "0x10", "\t-", "1\n2", "1\r2",
    "\x01", "1\xc3\xa9", NULL};

static const var_case cases[] = {
    {"OMPTARGET_MPI_FRAGMENT_SIZE",
     {{"1", 1}, {"2147483647", INT_MAX}, {"1K", 1024}, {"3k", 3072},
      {"64M", 64 * MIB}, {"1G", 1024 * MIB}, {" 2M\t", 2 * MIB},
      {"0001", 1}, {NULL, 0}},
     {"0", "2147483648", "2G", "-1M", "1 M", "1MB", "1KiB", "M", "1T",
      "17179869184G", "18014398509481984K", NULL}},
    {"OMPTARGET_MPI_NUM_COMMS",
     {{"1", 1}, {"64", 64}, {" 8 ", 8}, {NULL, 0}},
     {"0", "65", "4K", "4x", "true", NULL}},
    {"OMPTARGET_MPI_INLINE_MAX",
     {{"0", 0}, {"4K", 4096}, {"1M", MIB}, {"1048576", MIB}, {NULL, 0}},
     {"1048577", "1025K", "2M", "1G", "-0", NULL}},
    {"OMPTARGET_MPI_WINDOW",
     {{"1", 1}, {"4", 4}, {NULL, 0}},
     {"0", "5", "2K", NULL}},
    {"OMPTARGET_MPI_TAG_SPACE",
     {{"1", 1}, {"2147483647", INT_MAX}, {"65535", 65535}, {NULL, 0}},
     {"0", "2147483648", "64K", NULL}},
    {"OMPTARGET_MPI_TIMEOUT",
     {{"0", 0}, {"5", 5 * NS_MS}, {"5ms", 5 * NS_MS}, {"250us", 250 * NS_US},
      {"7ns", 7}, {"60s", 60 * NS_S}, {"604800s", 604800 * NS_S},
      {"2S", 2 * NS_S}, {" 10 ", 10 * NS_MS}, {"0s", 0}, {NULL, 0}},
     {"604801s", "604800001", "1m", "1h", "5 s", "s", "ms5",
      "18446744073709551615s", "18446744073709551615ms", NULL}},
    {"OMPTARGET_MPI_KERNEL_TIMEOUT",
     {{"0", 0}, {"90s", 90 * NS_S}, {"3600s", 3600 * NS_S}, {"1", NS_MS},
      {NULL, 0}},
     {"604801s", "-1", "1h", NULL}},
    {"OMPTARGET_MPI_HANDLERS",
     {{"1", 1}, {"64", 64}, {NULL, 0}},
     {"0", "65", NULL}},
    {"OMPTARGET_MPI_IDLE",
     {{"spin", OTM_IDLE_SPIN}, {"YIELD", OTM_IDLE_YIELD},
      {" sleep ", OTM_IDLE_SLEEP}, {NULL, 0}},
     {"0", "2", "busy", "sleepy", "spin yield", NULL}},
    {"OMPTARGET_MPI_SPIN",
     {{"0", 0}, {"1s", NS_S}, {"50us", 50 * NS_US}, {"1000", NS_S},
      {NULL, 0}},
     {"1001", "1000001us", "2s", NULL}},
    {"OMPTARGET_MPI_SLEEP_MAX",
     {{"0", 0}, {"1", NS_MS}, {"1s", NS_S}, {"100us", 100 * NS_US},
      {NULL, 0}},
     {"1001", "1000000001ns", NULL}},
    {"OMPTARGET_MPI_SLICE",
     {{"0", 0}, {"100us", 100 * NS_US}, {"100", 100 * NS_MS}, {"3ms", 3 * NS_MS},
      {NULL, 0}},
     {"101", "100000001ns", "1s", "-1", "short", NULL}},
    {"OMPTARGET_MPI_LOG_LEVEL",
     {{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}, {"error", 0}, {"WARN", 1},
      {"info", 2}, {"Debug", 3}, {" debug ", 3}, {NULL, 0}},
     {"4", "verbose", "warning", "1K", NULL}},
    {"OMPTARGET_MPI_POOL",
     {{"0", 0}, {"1", 1}, {"true", 1}, {"False", 0}, {"yes", 1}, {"NO", 0},
      {"on", 1}, {"off", 0}, {" On ", 1}, {NULL, 0}},
     {"2", "onn", "y", "n", "enabled", NULL}},
    {"OMPTARGET_MPI_POOL_MAX",
     {{"0", 0}, {"1G", 1024 * MIB}, {"1M", MIB}, {NULL, 0}},
     {"1025M", "1073741825", "2G", NULL}},
    {"OMPTARGET_MPI_FORWARD_OUTPUT",
     {{"1", 1}, {"0", 0}, {"on", 1}, {"Off", 0}, {NULL, 0}},
     {"2", "forward", "", NULL}},
    {"OMPTARGET_MPI_STDERR_TO_STDOUT",
     {{"1", 1}, {"0", 0}, {"yes", 1}, {"OFF", 0}, {NULL, 0}},
     {"2", "stdout", "", NULL}},
    {"OMPTARGET_MPI_INFO",
     {{"1", 1}, {"0", 0}, {"TRUE", 1}, {"off", 0}, {NULL, 0}},
     {"2", "maybe", NULL}},
    /* The value seen through field() is the path's length. */
    {"OMPTARGET_MPI_TRACE",
     {{"off", 0}, {"OFF", 0}, {"t", 1}, {"/tmp/run/trace", 14},
      {" out/t ", 5}, {"-1", 2}, {"1 2", 3}, {"a\xc3\xa9", 3}, {NULL, 0}},
     {"", "   ", "\x01", "1\n2", "a\tb", "\x7f", NULL}},
    {"OMPTARGET_MPI_USM",
     {{"auto", OTM_USM_AUTO}, {"on", OTM_USM_ON}, {" OFF ", OTM_USM_OFF},
      {"Auto", OTM_USM_AUTO}, {NULL, 0}},
     {"1", "0", "yes", "", "automatic", NULL}},
    {"OMPTARGET_MPI_HOST_CODE",
     {{"1", 1}, {"0", 0}, {"on", 1}, {"OFF", 0}, {NULL, 0}},
     {"2", "translate", "", NULL}},
    /* The value seen through field() is the list's length. */
    {"OMPTARGET_MPI_REMOTE_PLUGINS",
     {{"auto", 4}, {"none", 4}, {"cuda", 4}, {" cuda,host ", 9}, {"my_plugin-2", 11},
      {NULL, 0}},
     {"", ",", "cuda,", ",cuda", "cuda,,host", "cu da", "../x", "a/b", "-1", "2cuda",
      "\x01", NULL}},
    {"OMPTARGET_MPI_CPU_DEVICES",
     {{"first", OTM_CPU_FIRST}, {"LAST", OTM_CPU_LAST}, {" off ", OTM_CPU_OFF}, {NULL, 0}},
     {"", "on", "0", "none", "firstly", NULL}},
    {"OMPTARGET_MPI_MAP",
     {{"off", 0}, {"/tmp/job/map", 12}, {" m ", 1}, {NULL, 0}},
     {"", "\x01", "a\nb", NULL}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- tests ---------------------------------------------------------------------- */

static void test_every_variable_has_cases(void **state)
{
    assert_int_equal(NCASES, NVARS);
    for (int i = 0; i < NVARS; i++)
        assert_string_equal(cases[i].name, all_names[i]);
}

static void test_valid_values(void **state)
{
    for (int i = 0; i < NCASES; i++)
        for (const good *g = cases[i].ok; g->text; g++)
            check_accepted(cases[i].name, g->text, g->value);
}

static void test_invalid_values(void **state)
{
    for (int i = 0; i < NCASES; i++) {
        for (const char *const *b = cases[i].bad; *b; b++)
            check_refused(cases[i].name, *b);
        for (const char *const *b = bad_everywhere; *b && !any_text(cases[i].name); b++)
            check_refused(cases[i].name, *b);
    }
}

static void test_defaults(void **state)
{
    otm_settings def = otm_settings_default();
    assert_int_equal(otm_config_check(&def.core), OTM_OK);
    otm_config core = otm_config_default();
    assert_int_equal(def.core.frag_size, core.frag_size);
    assert_int_equal(def.core.frag_size, 64 * MIB);
    assert_int_equal(def.core.ncomms, 4);
    assert_int_equal(def.core.inline_max, 4096);
    assert_int_equal(def.core.window, 4);
    assert_int_equal(def.core.tag_space, 65535);
    assert_int_equal(def.core.timeout_ns, 60 * NS_S);
    assert_int_equal(def.handlers, 1);
    assert_int_equal(def.idle, OTM_IDLE_SLEEP);
    assert_int_equal(def.spin_ns, 50 * NS_US);
    assert_int_equal(def.sleep_max_ns, NS_MS);
    assert_int_equal(def.slice_ns, 100 * NS_US);
    assert_int_equal(def.log_level, 1); /* warn (test_log_levels.c) */
    assert_int_equal(def.pool, 1);
    assert_int_equal(def.pool_max, 16 * MIB);
    assert_int_equal(def.info, 0);

    env e = {.count = 0};
    otm_settings s = garbage();
    char err[8] = "x";
    assert_int_equal(otm_settings_load(&s, env_get, &e, err, sizeof err),
                     OTM_OK);
    assert_string_equal(err, "");
    assert_true(settings_equal(&s, &def));
}

/* The table's Default column must be what the plugin really uses. */
static void test_default_texts_parse_to_defaults(void **state)
{
    otm_settings def = otm_settings_default();
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++)
        check_accepted(d->name, d->def, field(&def, d->name));
}

static void test_table(void **state)
{
    const otm_setting_doc *t = otm_settings_table();
    int n = 0;
    for (; t[n].name; n++) {
        char range[OTM_SETTING_RANGE_LEN];
        size_t len = otm_setting_range(&t[n], range, sizeof range);
        assert_true(n < NVARS);
        assert_string_equal(t[n].name, all_names[n]);
        assert_true(t[n].def && t[n].def[0]);
        assert_true(len > 0 && len < sizeof range);
        assert_int_equal(strlen(range), len);
        assert_true(t[n].meaning && strlen(t[n].meaning) > 10);
        assert_true(!t[n].alias || !strncmp(t[n].alias, "OMPCLUSTER_", 11));
        /* A '|' would break the README's markdown table; a '{' left over
         * is a misspelt {min} or {max}. */
        assert_null(strchr(range, '|'));
        assert_null(strchr(range, '{'));
        assert_null(strchr(t[n].meaning, '|'));
    }
    assert_int_equal(n, NVARS);
    assert_null(t[n].alias);
}

/* The range text as the contract promises it: truncated like snprintf,
 * and "" for anything but a row. */
static void test_range_text(void **state)
{
    const otm_setting_doc *comms = row("OMPTARGET_MPI_NUM_COMMS");
    char buf[16];
    memset(buf, 'x', sizeof buf);
    size_t full = otm_setting_range(comms, buf, sizeof buf);
    assert_string_equal(buf, "an integer in 1");
    assert_int_equal(full, strlen("an integer in 1..64"));
    buf[0] = 'x';
    assert_int_equal(otm_setting_range(comms, buf, 0), full);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(otm_setting_range(&otm_settings_table()[NVARS], buf,
                                       sizeof buf), 0);
    assert_string_equal(buf, "");
    otm_setting_doc copy = *comms;
    assert_int_equal(otm_setting_range(&copy, buf, sizeof buf), 0);
    assert_int_equal(otm_setting_range(NULL, buf, sizeof buf), 0);
}

/* The limits written into the range texts, durations in particular. */
static void test_range_limits(void **state)
{
    static const char *const want[][2] = {
        {"OMPTARGET_MPI_TAG_SPACE", "an integer in 1..2147483647"},
        {"OMPTARGET_MPI_TIMEOUT", "a duration in 0..604800s (7 days), "},
        {"OMPTARGET_MPI_SPIN", "a duration in 0..1s, "},
        {"OMPTARGET_MPI_LOG_LEVEL", "0..3 or error"},
        {"OMPTARGET_MPI_TRACE", "a file path prefix of at most 1000 bytes"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const otm_setting_doc *d = row(want[i][0]);
        char range[OTM_SETTING_RANGE_LEN];
        otm_setting_range(d, range, sizeof range);
        if (strncmp(range, want[i][1], strlen(want[i][1])))
            fail_msg("%s: range \"%s\"", d->name, range);
    }
}

/* "e.g. 1048576 or 1M" in a range text: both spellings accepted, and the
 * same value, so an example cannot fall out of a changed range. */
static void test_range_examples(void **state)
{
    int seen = 0;
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++) {
        char range[OTM_SETTING_RANGE_LEN], a[32], b[32];
        otm_setting_range(d, range, sizeof range);
        const char *eg = strstr(range, "(e.g. ");
        if (!eg)
            continue;
        assert_int_equal(sscanf(eg, "(e.g. %31s or %31[^)])", a, b), 2);
        otm_settings s;
        assert_int_equal(load1(d->name, a, &s, NULL, 0), OTM_OK);
        check_accepted(d->name, b, field(&s, d->name));
        seen++;
    }
    assert_int_equal(seen, 3);
}

/* *c: the defaults with the field of variable `name` set to v (v >= 0).
 * Returns 0 when the field's type cannot hold v. */
static int core_with(otm_config *c, const char *name, long long v)
{
    const char *n = name + strlen("OMPTARGET_MPI_");
    *c = otm_config_default();
    if (!strcmp(n, "FRAGMENT_SIZE")) {
        c->frag_size = (uint64_t)v;
        return 1;
    }
    if (!strcmp(n, "INLINE_MAX")) {
        c->inline_max = (uint32_t)v;
        return v <= UINT32_MAX;
    }
    int *f = !strcmp(n, "NUM_COMMS") ? &c->ncomms
           : !strcmp(n, "TAG_SPACE") ? &c->tag_space
           : !strcmp(n, "WINDOW")    ? &c->window : NULL;
    if (!f)
        fail_msg("%s is not the core's", name);
    *f = v <= INT_MAX ? (int)v : 0;
    return v <= INT_MAX;
}

/* Variable `name` and otm_config_check both accept v, or both refuse it. */
static void check_bound(const char *name, long long v, int ok)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", v);
    if (ok)
        check_accepted(name, text, (uint64_t)v);
    else
        check_refused(name, text);
    /* Values the field's type cannot hold are the parser's alone. */
    otm_config c;
    if (core_with(&c, name, v))
        assert_int_equal(otm_config_check(&c), ok ? OTM_OK : OTM_ERR_INVALID);
}

/* The core's variables accept exactly otm_config_check's limits: one
 * authority (otm/config.h), seen from both sides at each bound. */
static void test_core_limits(void **state)
{
    static const struct {
        const char *name;
        long long min, max;
    } core[] = {
        {"OMPTARGET_MPI_NUM_COMMS", OTM_NCOMMS_MIN, OTM_NCOMMS_MAX},
        {"OMPTARGET_MPI_FRAGMENT_SIZE", OTM_FRAG_SIZE_MIN, OTM_FRAG_SIZE_MAX},
        {"OMPTARGET_MPI_INLINE_MAX", OTM_INLINE_MAX_MIN, OTM_INLINE_MAX_MAX},
        {"OMPTARGET_MPI_TAG_SPACE", OTM_TAG_SPACE_MIN, OTM_TAG_SPACE_MAX},
        {"OMPTARGET_MPI_WINDOW", OTM_WINDOW_MIN, OTM_WINDOW_MAX},
    };
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++) {
        check_bound(core[i].name, core[i].min, 1);
        check_bound(core[i].name, core[i].max, 1);
        check_bound(core[i].name, core[i].max + 1, 0);
        if (core[i].min > 0)    /* "-1" is not a number to the parser */
            check_bound(core[i].name, core[i].min - 1, 0);
    }
}

/* The seed's spellings, exactly as the seed's getenv calls wrote them. */
static void test_aliases(void **state)
{
    static const char *const pairs[][2] = {
        {"OMPTARGET_MPI_FRAGMENT_SIZE", "OMPCLUSTER_MPI_FRAGMENT_SIZE"},
        {"OMPTARGET_MPI_NUM_COMMS", "OMPCLUSTER_NUM_EVENT_COMM"},
        {"OMPTARGET_MPI_HANDLERS", "OMPCLUSTER_NUM_EXEC_EVENT_HANDLERS"},
        {"OMPTARGET_MPI_SLEEP_MAX", "OMPCLUSTER_EVENT_POLLING_RATE"},
    };
    int aliased = 0;
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++) {
        if (!d->alias)
            continue;
        aliased++;
        int found = 0;
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
            found |= !strcmp(d->name, pairs[i][0]) &&
                     !strcmp(d->alias, pairs[i][1]);
        assert_true(found);
    }
    assert_int_equal(aliased, 4);
}

static void test_alias_alone(void **state)
{
    otm_settings s;
    char err[256];
    assert_int_equal(load1("OMPCLUSTER_MPI_FRAGMENT_SIZE", "100000000", &s,
                           err, sizeof err), OTM_OK);
    assert_int_equal(s.core.frag_size, 100000000);
    assert_int_equal(load1("OMPCLUSTER_NUM_EVENT_COMM", "10", &s, err,
                           sizeof err), OTM_OK);
    assert_int_equal(s.core.ncomms, 10);
    assert_int_equal(load1("OMPCLUSTER_NUM_EXEC_EVENT_HANDLERS", "3", &s, err,
                           sizeof err), OTM_OK);
    assert_int_equal(s.handlers, 3);
    /* The seed's polling rate was bare microseconds. */
    assert_int_equal(load1("OMPCLUSTER_EVENT_POLLING_RATE", "1", &s, err,
                           sizeof err), OTM_OK);
    assert_int_equal(s.sleep_max_ns, NS_US);
    assert_int_equal(load1("OMPCLUSTER_EVENT_POLLING_RATE", "2ms", &s, err,
                           sizeof err), OTM_OK);
    assert_int_equal(s.sleep_max_ns, 2 * NS_MS);
}

static void test_alias_precedence(void **state)
{
    env e = {.count = 0};
    env_set(&e, "OMPCLUSTER_NUM_EVENT_COMM", "10");
    env_set(&e, "OMPTARGET_MPI_NUM_COMMS", "2");
    otm_settings s;
    char err[256];
    assert_int_equal(otm_settings_load(&s, env_get, &e, err, sizeof err),
                     OTM_OK);
    assert_int_equal(s.core.ncomms, 2);

    /* The alias is not even read when the name is set. */
    env f = {.count = 0};
    env_set(&f, "OMPCLUSTER_NUM_EVENT_COMM", "garbage");
    env_set(&f, "OMPTARGET_MPI_NUM_COMMS", "3");
    assert_int_equal(otm_settings_load(&s, env_get, &f, err, sizeof err),
                     OTM_OK);
    assert_int_equal(s.core.ncomms, 3);

    /* ...and a bad name is not rescued by a good alias. */
    env g = {.count = 0};
    env_set(&g, "OMPCLUSTER_NUM_EVENT_COMM", "3");
    env_set(&g, "OMPTARGET_MPI_NUM_COMMS", "0");
    assert_int_equal(otm_settings_load(&s, env_get, &g, err, sizeof err),
                     OTM_ERR_INVALID);
    assert_non_null(strstr(err, "OMPTARGET_MPI_NUM_COMMS=0"));
}

static void test_alias_error_names_both(void **state)
{
    otm_settings s = garbage();
    otm_settings def = otm_settings_default();
    char err[256];
    assert_int_equal(load1("OMPCLUSTER_NUM_EVENT_COMM", "0", &s, err,
                           sizeof err), OTM_ERR_INVALID);
    assert_string_equal(err, "OMPCLUSTER_NUM_EVENT_COMM=0: expected an "
                        "integer in 1..64 (alias of OMPTARGET_MPI_NUM_COMMS)");
    assert_true(settings_equal(&s, &def));
}

static void test_error_text(void **state)
{
    otm_settings s;
    char err[256];
    assert_int_equal(load1("OMPTARGET_MPI_FRAGMENT_SIZE", "abc", &s, err,
                           sizeof err), OTM_ERR_INVALID);
    assert_string_equal(err, "OMPTARGET_MPI_FRAGMENT_SIZE=abc: expected "
                        "bytes in 1..2147483647, suffix K, M or G "
                        "(e.g. 1048576 or 1M)");
}

/* A long value is cut in the message; a short buffer still ends in NUL. */
static void test_error_truncation(void **state)
{
    char value[300];
    memset(value, '7', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    otm_settings s;
    char err[512];
    assert_int_equal(load1("OMPTARGET_MPI_WINDOW", value, &s, err, sizeof err),
                     OTM_ERR_INVALID);
    assert_true(strlen(err) < 200);
    assert_non_null(strstr(err, "...: expected an integer in 1..4"));

    char small[12];
    memset(small, 'x', sizeof small);
    assert_int_equal(load1("OMPTARGET_MPI_WINDOW", "9", &s, small,
                           sizeof small), OTM_ERR_INVALID);
    assert_string_equal(small, "OMPTARGET_M");
    assert_int_equal(load1("OMPTARGET_MPI_WINDOW", "9", &s, NULL, 0),
                     OTM_ERR_INVALID);
}

/* The first bad variable fails the whole load, whatever else is good. */
static void test_one_bad_fails_all(void **state)
{
    env e = {.count = 0};
    env_set(&e, "OMPTARGET_MPI_WINDOW", "2");
    env_set(&e, "OMPTARGET_MPI_INFO", "perhaps");
    env_set(&e, "OMPTARGET_MPI_HANDLERS", "8");
    otm_settings s = garbage();
    otm_settings def = otm_settings_default();
    char err[256];
    assert_int_equal(otm_settings_load(&s, env_get, &e, err, sizeof err),
                     OTM_ERR_INVALID);
    assert_non_null(strstr(err, "OMPTARGET_MPI_INFO=perhaps"));
    assert_true(settings_equal(&s, &def));
}

static void test_many_at_once(void **state)
{
    env e = {.count = 0};
    env_set(&e, "OMPTARGET_MPI_WINDOW", "2");
    env_set(&e, "OMPTARGET_MPI_IDLE", "spin");
    env_set(&e, "OMPTARGET_MPI_TIMEOUT", "0");
    env_set(&e, "OMPCLUSTER_MPI_FRAGMENT_SIZE", "1M");
    otm_settings s;
    assert_int_equal(otm_settings_load(&s, env_get, &e, NULL, 0), OTM_OK);
    assert_int_equal(s.core.window, 2);
    assert_int_equal(s.idle, OTM_IDLE_SPIN);
    assert_int_equal(s.core.timeout_ns, 0);
    assert_int_equal(s.core.frag_size, MIB);
    assert_int_equal(s.core.ncomms, 4);
    assert_int_equal(otm_config_check(&s.core), OTM_OK);
}

static void test_null_settings(void **state)
{
    env e = {.count = 0};
    assert_int_equal(otm_settings_load(NULL, env_get, &e, NULL, 0),
                     OTM_ERR_INVALID);
}

/* The trace path is kept as text (trimmed); 1000 bytes fit, 1001 do not. */
static void test_trace_path(void **state)
{
    (void)state;
    otm_settings s = garbage();
    char err[256] = "";
    assert_int_equal(load1("OMPTARGET_MPI_TRACE", "  out/my trace ", &s, err,
                           sizeof err), OTM_OK);
    assert_string_equal(s.trace, "out/my trace");
    assert_int_equal(s.trace_len, strlen("out/my trace"));
    /* The map's path is a text of its own. */
    env e = {.count = 0};
    env_set(&e, "OMPTARGET_MPI_TRACE", "out/t");
    env_set(&e, "OMPTARGET_MPI_MAP", " job/map ");
    assert_int_equal(otm_settings_load(&s, env_get, &e, err, sizeof err), OTM_OK);
    assert_string_equal(s.map, "job/map");
    assert_int_equal(s.map_len, strlen("job/map"));
    assert_string_equal(s.trace, "out/t");
    assert_int_equal(load1("OMPTARGET_MPI_TRACE", "off", &s, err, sizeof err),
                     OTM_OK);
    assert_string_equal(s.trace, "");
    assert_string_equal(s.map, "");
    static char longest[1002];
    memset(longest, 'x', 1000);
    longest[1000] = '\0';
    assert_int_equal(load1("OMPTARGET_MPI_TRACE", longest, &s, err, sizeof err),
                     OTM_OK);
    assert_int_equal(strlen(s.trace), 1000);
    longest[1000] = 'x';
    longest[1001] = '\0';
    check_refused("OMPTARGET_MPI_TRACE", longest);
}

/* ---- the ranks agree (otm_settings_judge) -------------------------------------- */

/* Cards of n ranks: rank r loads env[r] (NULL: an empty environment). */
static void cards_of(otm_settings_card *cards, int n, env *const *envs)
{
    for (int r = 0; r < n; r++) {
        env none = {.count = 0};
        otm_settings s;
        char err[256];
        otm_status st = otm_settings_load(&s, env_get, envs[r] ? envs[r] : &none, err,
                                          sizeof err);
        otm_settings_card_make(&cards[r], &s, st == OTM_OK ? NULL : err);
    }
}

static void test_judge_agree(void **state)
{
    (void)state;
    env per_rank = {.count = 0};
    env_set(&per_rank, "OMPTARGET_MPI_WINDOW", "2");     /* each rank its own */
    env_set(&per_rank, "OMPTARGET_MPI_FRAGMENT_SIZE", "1M");    /* rank 0's */
    env *envs[3] = {NULL, &per_rank, NULL};
    otm_settings_card cards[3];
    char msg[256] = "x";
    cards_of(cards, 3, envs);
    assert_int_equal(otm_settings_judge(cards, 3, msg, sizeof msg), OTM_OK);
    assert_string_equal(msg, "");
    assert_int_equal(otm_settings_judge(cards, 1, msg, sizeof msg), OTM_OK);
}

/* A bad value on some ranks only: the line of each, with its ranks. */
static void test_judge_bad_on_some(void **state)
{
    (void)state;
    env bad = {.count = 0}, other = {.count = 0};
    env_set(&bad, "OMPTARGET_MPI_WINDOW", "9");
    env_set(&other, "OMPTARGET_MPI_NUM_COMMS", "x");
    env *envs[5] = {NULL, &bad, &bad, &other, &bad};
    otm_settings_card cards[5];
    char msg[512];
    cards_of(cards, 3, envs);
    assert_int_equal(otm_settings_judge(cards, 3, msg, sizeof msg), OTM_ERR_INVALID);
    assert_string_equal(msg, "OMPTARGET_MPI_WINDOW=9: expected an integer in 1..4 "
                        "(ranks 1..2)");
    envs[0] = &bad;
    cards_of(cards, 5, envs);
    assert_int_equal(otm_settings_judge(cards, 5, msg, sizeof msg), OTM_ERR_INVALID);
    assert_string_equal(msg, "OMPTARGET_MPI_WINDOW=9: expected an integer in 1..4 "
                        "(ranks 0..2, 4); OMPTARGET_MPI_NUM_COMMS=x: expected an "
                        "integer in 1..64 (rank 3)");
    cards_of(cards, 3, envs);
    assert_int_equal(otm_settings_judge(cards, 3, msg, sizeof msg), OTM_ERR_INVALID);
    assert_string_equal(msg, "OMPTARGET_MPI_WINDOW=9: expected an integer in 1..4 "
                        "(every rank)");
}

/* Valid values that must agree and do not: each value with its ranks. */
static void test_judge_differ(void **state)
{
    (void)state;
    env eight = {.count = 0}, two = {.count = 0};
    env_set(&eight, "OMPTARGET_MPI_NUM_COMMS", "8");
    env_set(&two, "OMPCLUSTER_NUM_EVENT_COMM", "2");
    env *envs[4] = {NULL, &eight, &eight, &two};
    otm_settings_card cards[4];
    char msg[256];
    cards_of(cards, 4, envs);
    assert_int_equal(otm_settings_judge(cards, 4, msg, sizeof msg), OTM_ERR_INVALID);
    assert_string_equal(msg, "OMPTARGET_MPI_NUM_COMMS must be the same on every rank: "
                        "4 on rank 0, 8 on ranks 1..2, 2 on rank 3");
    /* A short buffer is cut, and still ends in NUL. */
    char small[8];
    assert_int_equal(otm_settings_judge(cards, 4, small, sizeof small), OTM_ERR_INVALID);
    assert_string_equal(small, "OMPTARG");
    assert_int_equal(otm_settings_judge(cards, 4, NULL, 0), OTM_ERR_INVALID);
}

/* A job of one rank with a bad value: that rank, named alone. Two values
 * that must agree and do not: both said, one after the other. */
static void test_judge_one_rank_and_two_values(void **state)
{
    (void)state;
    env bad = {.count = 0}, other = {.count = 0};
    env_set(&bad, "OMPTARGET_MPI_WINDOW", "9");
    env_set(&other, "OMPTARGET_MPI_NUM_COMMS", "8");
    env_set(&other, "OMPTARGET_MPI_USM", "off");
    env *envs[2] = {&bad, NULL};
    otm_settings_card cards[2];
    char msg[512];
    cards_of(cards, 1, envs);
    assert_int_equal(otm_settings_judge(cards, 1, msg, sizeof msg), OTM_ERR_INVALID);
    assert_string_equal(msg, "OMPTARGET_MPI_WINDOW=9: expected an integer in 1..4 "
                        "(rank 0)");
    envs[0] = NULL;
    envs[1] = &other;
    cards_of(cards, 2, envs);
    assert_int_equal(otm_settings_judge(cards, 2, msg, sizeof msg), OTM_ERR_INVALID);
    assert_non_null(strstr(msg, "OMPTARGET_MPI_NUM_COMMS must be the same on every rank: "
                                "4 on rank 0, 8 on rank 1; OMPTARGET_MPI_USM must be "
                                "the same on every rank: "));
}

/* A bad value with no room for the sentence: refused all the same, and
 * the buffer is not written. */
static void test_error_without_room(void **state)
{
    (void)state;
    otm_settings s;
    char err[8] = "keep";
    assert_int_equal(load1("OMPTARGET_MPI_WINDOW", "9", &s, err, 0), OTM_ERR_INVALID);
    assert_string_equal(err, "keep");
}

/* What is not a card (another build, garbage) is said before anything. */
static void test_judge_not_a_card(void **state)
{
    (void)state;
    env *envs[3] = {NULL, NULL, NULL};
    otm_settings_card cards[3];
    char msg[256];
    cards_of(cards, 3, envs);
    cards[2].magic = 0;
    assert_int_equal(otm_settings_judge(cards, 3, msg, sizeof msg), OTM_ERR_INVALID);
    assert_string_equal(msg, "rank 2 sent no settings (a rank of another build of "
                        "omptarget-mpi?)");
    assert_int_equal(otm_settings_judge(cards, 0, msg, sizeof msg), OTM_ERR_INVALID);
}

/* Exactly the settings whose values must agree are judged: NUM_COMMS (each
 * rank duplicates its communicators collectively) and USM (the host serves
 * pages only if every device asks for them). */
static void test_scopes(void **state)
{
    (void)state;
    int job = 0;
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++) {
        job += d->scope == OTM_SCOPE_JOB;
        assert_true(*otm_setting_scope_text(d->scope));
        if (d->scope == OTM_SCOPE_JOB)
            assert_true(!strcmp(d->name, "OMPTARGET_MPI_NUM_COMMS") ||
                        !strcmp(d->name, "OMPTARGET_MPI_USM"));
    }
    assert_int_equal(job, 2);
    /* The three texts the table and the refusals print, none for a bad one. */
    assert_string_equal(otm_setting_scope_text(OTM_SCOPE_JOB), "must agree");
    assert_string_equal(otm_setting_scope_text(OTM_SCOPE_RANK), "per rank");
    assert_string_equal(otm_setting_scope_text(OTM_SCOPE_HOST), "rank 0's");
    assert_string_equal(otm_setting_scope_text((otm_setting_scope)99), "");
}

/* The test hooks are read as set, unjudged, and are not settings: they
 * load whatever their text, and no row of the table names them. */
static void test_test_hooks(void **state)
{
    (void)state;
    env e = {0};
    otm_test_hooks t;
    otm_test_hooks_load(&t, env_get, &e);
    assert_null(t.kill_at);
    assert_null(t.kill_rank);
    assert_null(t.fail_alloc);
    assert_null(t.fail_alloc_rank);
    env_set(&e, "OTM_TEST_KILL_AT", "NOT A KIND");
    env_set(&e, "OTM_TEST_KILL_RANK", "2");
    env_set(&e, "OTM_TEST_FAIL_ALLOC", "x");
    env_set(&e, "OTM_TEST_FAIL_ALLOC_RANK", "3");
    otm_test_hooks_load(&t, env_get, &e);
    assert_string_equal(t.kill_at, "NOT A KIND");
    assert_string_equal(t.kill_rank, "2");
    assert_string_equal(t.fail_alloc, "x");
    assert_string_equal(t.fail_alloc_rank, "3");
    otm_settings s;
    assert_int_equal(otm_settings_load(&s, env_get, &e, NULL, 0), OTM_OK);
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++)
        assert_null(strstr(d->name, "OTM_TEST_"));
}

/* The launchers' marks: any one of them means launched; the rank is the
 * first variable that holds a count, in the order PMI, Open MPI, PMIx. */
static void test_launcher_marks(void **state)
{
    (void)state;
    env e = {0};
    assert_int_equal(otm_settings_launched(env_get, &e), 0);
    assert_int_equal(otm_settings_launcher_rank(env_get, &e), -1);
    static const char *const marks[] = {
        "PMI_RANK", "PMI_SIZE", "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
        "MPI_LOCALNRANKS", "OMPTARGET_MPI_LAUNCHER"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++) {
        env one = {0};
        env_set(&one, marks[i], "1");
        assert_int_equal(otm_settings_launched(env_get, &one), 1);
    }
    env_set(&e, "PMIX_RANK", "7");
    assert_int_equal(otm_settings_launcher_rank(env_get, &e), 7);
    env_set(&e, "OMPI_COMM_WORLD_RANK", "5");
    assert_int_equal(otm_settings_launcher_rank(env_get, &e), 5);
    /* PMI_RANK first, unless it is not a count. */
    static const char *const pmi[] = {"-1", "99999999999", "2x", "", "x",
                                      "99999999999999999999", "3"};
    for (size_t i = 0; i < sizeof pmi / sizeof *pmi; i++) {
        env with = e;
        env_set(&with, "PMI_RANK", pmi[i]);
        assert_int_equal(otm_settings_launcher_rank(env_get, &with), i < 6 ? 5 : 3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_variable_has_cases),
        cmocka_unit_test(test_test_hooks),
        cmocka_unit_test(test_judge_one_rank_and_two_values),
        cmocka_unit_test(test_error_without_room),
        cmocka_unit_test(test_launcher_marks),
        cmocka_unit_test(test_valid_values),
        cmocka_unit_test(test_invalid_values),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_default_texts_parse_to_defaults),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_range_text),
        cmocka_unit_test(test_range_limits),
        cmocka_unit_test(test_range_examples),
        cmocka_unit_test(test_core_limits),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_alias_alone),
        cmocka_unit_test(test_alias_precedence),
        cmocka_unit_test(test_alias_error_names_both),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_error_truncation),
        cmocka_unit_test(test_one_bad_fails_all),
        cmocka_unit_test(test_many_at_once),
        cmocka_unit_test(test_null_settings),
        cmocka_unit_test(test_trace_path),
        cmocka_unit_test(test_judge_agree),
        cmocka_unit_test(test_judge_bad_on_some),
        cmocka_unit_test(test_judge_differ),
        cmocka_unit_test(test_judge_not_a_card),
        cmocka_unit_test(test_scopes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
