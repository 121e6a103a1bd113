/*
 * test_log_levels.c - the settings' log levels are otm_log_level's
 * (otm/config.h): every word of OMPTARGET_MPI_LOG_LEVEL, and the default,
 * give the level of that name, the one the node's log hook filters by.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "otm/settings.h"

/* An environment of OMPTARGET_MPI_LOG_LEVEL alone; ctx holds its value. */
static const char *one(void *ctx, const char *name)
{
    return strcmp(name, "OMPTARGET_MPI_LOG_LEVEL") ? NULL
                                                   : *(const char **)ctx;
}

static void test_words(void **state)
{
    static const struct {
        const char *word;
        otm_log_level level;
    } words[] = {
        {"error", OTM_LOG_ERROR}, {"warn", OTM_LOG_WARN},
        {"info", OTM_LOG_INFO},   {"debug", OTM_LOG_DEBUG},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        otm_settings s;
        const char *value = words[i].word;
        assert_int_equal(otm_settings_load(&s, one, &value, NULL, 0), OTM_OK);
        assert_int_equal(s.log_level, words[i].level);
    }
    assert_int_equal(otm_settings_default().log_level, OTM_LOG_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
