/*
 * test_core_edges.c - the edges of the core's small contracts that the
 * end-to-end tests do not reach: the names printed in failure reports,
 * the configuration check field by field, node set-up refusing a bad
 * configuration before it touches MPI, fragment indices past the end, and
 * settings read from the process environment when no getter is given.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "otm/event.h"
#include "otm/frag.h"
#include "otm/node.h"
#include "otm/settings.h"

/* Every valid value has its own name; anything else is "?". */
static void check_names(const char *(*name)(int), int first, int last)
{
    for (int v = first; v <= last; v++) {
        const char *n = name(v);
        assert_non_null(n);
        assert_string_not_equal(n, "?");
        for (int u = first; u < v; u++)
            assert_string_not_equal(n, name(u));
    }
    assert_string_equal(name(first - 1), "?");
    assert_string_equal(name(last + 1), "?");
    assert_string_equal(name(INT_MIN), "?");
    assert_string_equal(name(INT_MAX), "?");
}

static void test_names(void **state)
{
    (void)state;
    check_names(otm_kind_name, OTM_KIND_ALLOC, OTM_KIND_END - 1);
    check_names(otm_state_name, OTM_CREATED, OTM_FAILED);
    check_names(otm_step_name, OTM_AT_START, OTM_AT_END);
    assert_string_equal(otm_kind_name(OTM_KIND_SUBMIT), "SUBMIT");
    assert_string_equal(otm_state_name(OTM_FAILED), "FAILED");
    assert_string_equal(otm_step_name(OTM_AT_REPLY_DATA), "REPLY_DATA");
}

/* Each field out of range on its own is refused; the limits themselves
 * are accepted. */
static void test_config_check(void **state)
{
    (void)state;
    otm_config d = otm_config_default();
    assert_int_equal(otm_config_check(&d), OTM_OK);

    otm_config c;
#define BAD(field, value)                                                     \
    do {                                                                      \
        c = d;                                                                \
        c.field = (value);                                                    \
        assert_int_equal(otm_config_check(&c), OTM_ERR_INVALID);              \
    } while (0)
#define GOOD(field, value)                                                    \
    do {                                                                      \
        c = d;                                                                \
        c.field = (value);                                                    \
        assert_int_equal(otm_config_check(&c), OTM_OK);                       \
    } while (0)
    BAD(ncomms, 0);
    BAD(ncomms, 65);
    GOOD(ncomms, 1);
    GOOD(ncomms, 64);
    BAD(frag_size, 0);
    BAD(frag_size, (uint64_t)INT_MAX + 1);
    GOOD(frag_size, 1);
    GOOD(frag_size, INT_MAX);
    BAD(inline_max, (1u << 20) + 1);
    GOOD(inline_max, 0);
    GOOD(inline_max, 1u << 20);
    BAD(tag_space, 0);
    GOOD(tag_space, 1);
    BAD(window, 0);
    BAD(window, OTM_WINDOW_MAX + 1);
    GOOD(window, 1);
    GOOD(window, OTM_WINDOW_MAX);
#undef BAD
#undef GOOD
}

/* A bad configuration is refused before any MPI call, and the node is
 * left zeroed (safe to drop). */
static void test_node_init_bad_config(void **state)
{
    (void)state;
    otm_config c = otm_config_default();
    c.window = 0;
    otm_hooks h;
    memset(&h, 0, sizeof h);
    otm_node node;
    memset(&node, 0xa5, sizeof node);
    assert_int_equal(otm_node_init(&node, &c, &h), OTM_ERR_INVALID);
    assert_int_equal(node.rank, 0);
    assert_null(node.comms);
    assert_null(node.all);
}

/* Past the last fragment: the offset is the end of the buffer (no
 * wrapped product) and nothing is left to move. */
static void test_frag_past_end(void **state)
{
    (void)state;
    otm_frag_plan p = otm_frag_make(10, 4);
    assert_int_equal(p.count, 3);
    assert_int_equal(otm_frag_offset(&p, 2), 8);
    assert_int_equal(otm_frag_length(&p, 2), 2);
    assert_int_equal(otm_frag_offset(&p, 3), 10);
    assert_int_equal(otm_frag_length(&p, 3), 0);
    assert_int_equal(otm_frag_offset(&p, UINT64_MAX), 10);
    assert_int_equal(otm_frag_length(&p, UINT64_MAX), 0);
    otm_frag_plan empty = otm_frag_make(0, 4);
    assert_int_equal(otm_frag_offset(&empty, 0), 0);
    assert_int_equal(otm_frag_length(&empty, 0), 0);
}

/* With no getter, settings come from the process environment. */
static void test_settings_from_environment(void **state)
{
    (void)state;
    char err[256];
    otm_settings s;
    assert_int_equal(setenv("OMPTARGET_MPI_WINDOW", "3", 1), 0);
    assert_int_equal(setenv("OMPTARGET_MPI_FRAGMENT_SIZE", "2K", 1), 0);
    assert_int_equal(otm_settings_load(&s, NULL, NULL, err, sizeof err), OTM_OK);
    assert_string_equal(err, "");
    assert_int_equal(s.core.window, 3);
    assert_int_equal(s.core.frag_size, 2048);

    /* A bad value in the environment is named and leaves the defaults. */
    assert_int_equal(setenv("OMPTARGET_MPI_WINDOW", "5", 1), 0);
    assert_int_equal(otm_settings_load(&s, NULL, NULL, err, sizeof err),
                     OTM_ERR_INVALID);
    assert_non_null(strstr(err, "OMPTARGET_MPI_WINDOW"));
    assert_int_equal(s.core.window, otm_config_default().window);
    unsetenv("OMPTARGET_MPI_WINDOW");
    unsetenv("OMPTARGET_MPI_FRAGMENT_SIZE");
}

int main(void)
{
    /* The process's own settings must not leak into the checks above. */
    unsetenv("OMPTARGET_MPI_WINDOW");
    unsetenv("OMPTARGET_MPI_FRAGMENT_SIZE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_node_init_bad_config),
        cmocka_unit_test(test_frag_past_end),
        cmocka_unit_test(test_settings_from_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
