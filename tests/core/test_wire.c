/* test_wire.c - encoding and decoding of notifications and replies. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "otm/wire.h"

static otm_notify sample(void)
{
    otm_notify n = {.version = OTM_WIRE_VERSION, .kind = OTM_KIND_RETRIEVE,
                    .tag = 77, .comm = 2, .id = 0x1122334455667788ull,
                    .p.retrieve = {1, UINT64_MAX, 0x8000000000000000ull, 42},
                    .peer = -1, .flags = 7, .inline_len = 5, .after = 0x01020304};
    return n;
}

static void test_notify_round_trip(void **state)
{
    (void)state;
    uint8_t buf[OTM_WIRE_NOTIFY_SIZE + 5];
    otm_notify n = sample(), d;
    otm_wire_put_notify(buf, &n);
    memcpy(buf + OTM_WIRE_NOTIFY_SIZE, "hello", 5);
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf, &d), OTM_OK);
    assert_int_equal(d.kind, OTM_KIND_RETRIEVE);
    assert_int_equal(d.tag, 77);
    assert_int_equal(d.comm, 2);
    assert_true(d.id == n.id);
    assert_true(d.p.retrieve.addr == 1 && d.p.retrieve.size == UINT64_MAX);
    assert_true(d.p.retrieve.frag == 0x8000000000000000ull);
    assert_true(d.p.retrieve.inline_max == 42);
    assert_int_equal(d.peer, -1);
    assert_int_equal(d.flags, 7);
    assert_int_equal(d.inline_len, 5);
    assert_int_equal(d.after, 0x01020304);
    assert_memory_equal(d.inline_data, "hello", 5);
    assert_true(d.routable);
}

/* The layout is little-endian with fixed offsets, whatever the struct. */
static void test_notify_layout(void **state)
{
    (void)state;
    uint8_t buf[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = sample();
    n.inline_len = 0;
    otm_wire_put_notify(buf, &n);
    assert_memory_equal(buf, "OTMN", 4);
    assert_int_equal(buf[4], OTM_WIRE_VERSION);
    assert_int_equal(buf[6], OTM_KIND_RETRIEVE);
    assert_int_equal(buf[8], 77);
    assert_int_equal(buf[12], 2);
    assert_int_equal(buf[16], 0x88);
    assert_int_equal(buf[23], 0x11);
    assert_int_equal(buf[56], 0xff);   /* peer -1 */
    assert_int_equal(buf[68], 0x04);   /* after, little-endian */
    assert_int_equal(buf[71], 0x01);
}

static uint64_t word(const uint8_t *buf, int i)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = (v << 8) | buf[24 + 8 * i + b];
    return v;
}

/* Each kind's view sits in the parameter words in field order, unused
 * words are 0, and decoding gives the same view back. */
static void check_params(uint16_t kind, otm_params p, int nwords)
{
    uint8_t buf[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = {.version = OTM_WIRE_VERSION, .kind = kind, .p = p}, d;
    const uint64_t *fields = (const uint64_t *)&p;
    otm_wire_put_notify(buf, &n);
    for (int i = 0; i < 4; i++)
        assert_true(word(buf, i) == (i < nwords ? fields[i] : 0));
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf, &d), OTM_OK);
    assert_memory_equal(&d.p, &p, sizeof p);
}

static void test_params_by_kind(void **state)
{
    (void)state;
    check_params(OTM_KIND_ALLOC, (otm_params){.alloc = {11, 12}}, 2);
    check_params(OTM_KIND_DELETE, (otm_params){.del = {21}}, 1);
    check_params(OTM_KIND_SUBMIT, (otm_params){.submit = {31, 32, 33}}, 3);
    check_params(OTM_KIND_RETRIEVE, (otm_params){.retrieve = {41, 42, 43, 44}}, 4);
    check_params(OTM_KIND_EXCHANGE, (otm_params){.exchange = {51, 52, 53, 54}}, 4);
    check_params(OTM_KIND_EXECUTE, (otm_params){.execute = {61, 62, 63, 64}}, 4);
    check_params(OTM_KIND_LOAD, (otm_params){.load = {71, 72, 73, 74}}, 4);
    check_params(OTM_KIND_UNLOAD, (otm_params){.unload = {81}}, 1);
    check_params(OTM_KIND_EXIT, (otm_params){0}, 0);
}

/* A kind the layer does not know decodes with no parameters (the gate
 * answers it OTM_ERR_BAD_KIND). */
static void test_params_unknown_kind(void **state)
{
    (void)state;
    uint8_t buf[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = {.version = OTM_WIRE_VERSION, .kind = OTM_KIND_LOAD,
                    .p.load = {1, 2, 3, 4}}, d;
    otm_wire_put_notify(buf, &n);
    buf[6] = 200;
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf, &d), OTM_OK);
    assert_int_equal(d.kind, 200);
    otm_params zero = {0};
    assert_memory_equal(&d.p, &zero, sizeof zero);
}

static void test_notify_errors(void **state)
{
    (void)state;
    uint8_t buf[OTM_WIRE_NOTIFY_SIZE + 8];
    otm_notify n = sample(), d;
    n.inline_len = 8;
    otm_wire_put_notify(buf, &n);
    /* Unreadable: nothing to answer on. */
    assert_int_equal(otm_wire_get_notify(buf, 15, &d), OTM_ERR_BAD_MESSAGE);
    assert_false(d.routable);
    buf[0] ^= 1;
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf, &d), OTM_ERR_BAD_MESSAGE);
    assert_false(d.routable);
    buf[0] ^= 1;
    /* Readable prefix: routable errors. */
    assert_int_equal(otm_wire_get_notify(buf, 40, &d), OTM_ERR_BAD_MESSAGE);
    assert_true(d.routable);
    assert_int_equal(d.tag, 77);
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf - 1, &d), OTM_ERR_BAD_MESSAGE);
    assert_int_equal(otm_wire_get_notify(buf, OTM_WIRE_NOTIFY_SIZE, &d), OTM_ERR_BAD_MESSAGE);
    n.version = OTM_WIRE_VERSION + 1;
    otm_wire_put_notify(buf, &n);
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf, &d), OTM_ERR_BAD_VERSION);
    assert_true(d.routable);
    assert_int_equal(d.comm, 2);
    assert_int_equal(d.kind, OTM_KIND_RETRIEVE);
    /* Both bytes of another version survive the trip, for the answer. */
    n.version = 0x8281;
    otm_wire_put_notify(buf, &n);
    assert_int_equal(otm_wire_get_notify(buf, sizeof buf, &d), OTM_ERR_BAD_VERSION);
    assert_int_equal(d.version, 0x8281);
    /* ... and of a kind nobody knows. */
    n.version = OTM_WIRE_VERSION;
    n.kind = 0x8382;
    otm_wire_put_notify(buf, &n);
    (void)otm_wire_get_notify(buf, sizeof buf, &d);
    assert_true(d.routable);
    assert_int_equal(d.kind, 0x8382);
}

static void test_reply_round_trip_and_errors(void **state)
{
    (void)state;
    uint8_t buf[OTM_WIRE_REPLY_SIZE + 3];
    otm_reply r = {.status = OTM_ERR_BAD_POINTER, .value = 0xdeadbeefcafeull,
                   .inline_len = 3}, d;
    otm_wire_put_reply(buf, &r);
    memcpy(buf + OTM_WIRE_REPLY_SIZE, "abc", 3);
    assert_int_equal(otm_wire_get_reply(buf, sizeof buf, &d), OTM_OK);
    assert_int_equal(d.status, OTM_ERR_BAD_POINTER);
    assert_true(d.value == r.value);
    assert_memory_equal(d.inline_data, "abc", 3);
    assert_int_equal(otm_wire_get_reply(buf, sizeof buf - 1, &d), OTM_ERR_BAD_MESSAGE);
    assert_int_equal(otm_wire_get_reply(buf, OTM_WIRE_REPLY_SIZE - 1, &d), OTM_ERR_BAD_MESSAGE);
    r.status = 9999;   /* not a status a peer may send */
    otm_wire_put_reply(buf, &r);
    assert_int_equal(otm_wire_get_reply(buf, sizeof buf, &d), OTM_ERR_BAD_MESSAGE);
    buf[0] = 'X';
    assert_int_equal(otm_wire_get_reply(buf, sizeof buf, &d), OTM_ERR_BAD_MESSAGE);
}

/* The hash is 64-bit FNV-1a, every byte counted: both ends of a job, and
 * the images' descriptors, rely on the same function. */
static void test_hash(void **state)
{
    (void)state;
    assert_true(otm_wire_hash("a", 1, OTM_WIRE_HASH_SEED) == 0xaf63dc4c8601ec8cull);
    assert_true(otm_wire_hash("ab", 2, OTM_WIRE_HASH_SEED) !=
                otm_wire_hash("bb", 2, OTM_WIRE_HASH_SEED));
    assert_true(otm_wire_hash("", 0, 42) == 42);
}

/* An EXECUTE result: its head and output round-trip; a result shorter
 * than its head, or whose lengths do not add up to what came, is refused. */
static void test_exec_result(void **state)
{
    (void)state;
    uint8_t buf[OTM_WIRE_EXEC_HEAD + 5];
    otm_exec_result r = {.out_len = 3, .err_len = 2, .signo = 11, .addr = 0x80}, got;
    otm_wire_put_exec(buf, &r);
    memcpy(buf + OTM_WIRE_EXEC_HEAD, "abcde", 5);
    assert_int_equal(otm_wire_get_exec(buf, sizeof buf, &got), OTM_OK);
    assert_int_equal(got.out_len, 3);
    assert_int_equal(got.err_len, 2);
    assert_int_equal(got.signo, 11);
    assert_int_equal(got.addr, 0x80);
    assert_memory_equal(got.out, "abc", 3);
    assert_int_equal(otm_wire_get_exec(buf, OTM_WIRE_EXEC_HEAD - 1, &got),
                     OTM_ERR_BAD_MESSAGE);
    assert_int_equal(otm_wire_get_exec(buf, sizeof buf - 1, &got), OTM_ERR_BAD_MESSAGE);
    r.out_len = 9;
    otm_wire_put_exec(buf, &r);
    assert_int_equal(otm_wire_get_exec(buf, sizeof buf, &got), OTM_ERR_BAD_MESSAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notify_round_trip),
        cmocka_unit_test(test_notify_layout),
        cmocka_unit_test(test_params_by_kind),
        cmocka_unit_test(test_params_unknown_kind),
        cmocka_unit_test(test_notify_errors),
        cmocka_unit_test(test_reply_round_trip_and_errors),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_exec_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
