/* test_status.c - names and sentences of every status, and peer values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "otm/status.h"

static void test_every_value_named(void **state)
{
    (void)state;
    for (int st = 0; st < OTM_STATUS_COUNT; st++) {
        assert_true(otm_status_valid(st));
        assert_true(strncmp(otm_status_name(st), "OTM_", 4) == 0);
        assert_string_not_equal(otm_status_name(st), "OTM_STATUS_UNKNOWN");
        assert_true(strlen(otm_status_text(st)) > 3);
    }
    assert_string_equal(otm_status_name(OTM_OK), "OTM_OK");
    assert_string_equal(otm_status_name(OTM_ERR_TIMEOUT), "OTM_ERR_TIMEOUT");
}

/* Values from a peer can be anything: they must still print. */
static void test_values_outside_the_enum(void **state)
{
    (void)state;
    const int odd[] = {-1, OTM_STATUS_COUNT, 1000, -2147483647 - 1, 2147483647};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        assert_false(otm_status_valid(odd[i]));
        assert_string_equal(otm_status_name(odd[i]), "OTM_STATUS_UNKNOWN");
        assert_string_equal(otm_status_text(odd[i]), "unknown status");
    }
}

/* The numbers travel on the wire: they must never change. */
static void test_wire_values_fixed(void **state)
{
    (void)state;
    assert_int_equal(OTM_OK, 0);
    assert_int_equal(OTM_ERR_NOMEM, 1);
    assert_int_equal(OTM_ERR_BAD_POINTER, 4);
    assert_int_equal(OTM_ERR_TIMEOUT, 12);
    assert_int_equal(OTM_ERR_BUSY, 16);
    assert_int_equal(OTM_ERR_KERNEL_FAULT, 17);
    assert_int_equal(OTM_ERR_NO_IMAGE, 18);
    assert_int_equal(OTM_ERR_DEVICE_FAILED, 19);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_value_named),
        cmocka_unit_test(test_values_outside_the_enum),
        cmocka_unit_test(test_wire_values_fixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
