/*
 * test_frag.c - fragment plans: exact cover for small sizes, closed-form
 * checks around the 2^31 and 2^32 boundaries where int counts would break.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>

#include "otm/frag.h"

#define GIB ((uint64_t)1 << 30)

/* Plans with at most this many fragments are walked in full. */
#define WALK_LIMIT 100000u

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* Walks every fragment of `p`: each follows the previous one without gap
 * or overlap, has a length in [1, INT_MAX] and at most frag, and together
 * they cover exactly [0, total). */
static void check_cover(const otm_frag_plan *p)
{
    uint64_t i, next = 0;

    for (i = 0; i < p->count; i++) {
        int len = otm_frag_length(p, i);

        assert_int_equal(otm_frag_offset(p, i), next);
        assert_true(len >= 1 && len <= INT_MAX);
        assert_true((uint64_t)len <= p->frag);
        /* Only the last fragment may be short. */
        if (i + 1 < p->count)
            assert_int_equal((uint64_t)len, p->frag);
        next += (uint64_t)len;
    }
    assert_int_equal(next, p->total);
}

static void test_small_exact_cover(void **state)
{
    uint64_t f, total, plans = 0;

    (void)state;
    for (f = 1; f <= 8; f++) {
        for (total = 0; total <= 4 * f + 1; total++) {
            otm_frag_plan p = otm_frag_make(total, f);

            assert_int_equal(p.total, total);
            assert_int_equal(p.frag, f);
            assert_int_equal(p.count, ceil_div(total, f));
            assert_int_equal(otm_frag_check(total, p.frag), OTM_OK);
            check_cover(&p);
            plans++;
        }
    }
    /* sum over F = 1..8 of (4F + 2) totals */
    assert_int_equal(plans, 160);
}

/* Fragment i of `p` against the closed form of frag.h. */
static void check_fragment(const otm_frag_plan *p, uint64_t i)
{
    uint64_t off = i * p->frag;
    uint64_t rest = p->total - off;
    uint64_t want = rest < p->frag ? rest : p->frag;

    assert_true(i < p->count);
    assert_int_equal(otm_frag_offset(p, i), off);
    assert_int_equal((uint64_t)otm_frag_length(p, i), want);
    assert_true(want >= 1 && want <= INT_MAX);
}

static void check_large_plan(uint64_t total, uint64_t frag, uint64_t want_frag)
{
    otm_frag_plan p = otm_frag_make(total, frag);
    uint64_t last;

    assert_int_equal(p.total, total);
    assert_int_equal(p.frag, want_frag);
    assert_int_equal(p.count, ceil_div(total, want_frag));
    assert_int_equal(otm_frag_check(total, p.frag), OTM_OK);
    assert_true(p.count > 0);
    last = p.count - 1;

    /* The first and last fragments, whose boundaries are the ones that
     * break when a product or a count wraps. */
    assert_int_equal(otm_frag_offset(&p, 0), 0);
    assert_int_equal((uint64_t)otm_frag_length(&p, 0),
                     total < want_frag ? total : want_frag);
    assert_int_equal(otm_frag_offset(&p, last), last * want_frag);
    assert_int_equal(otm_frag_offset(&p, last) +
                         (uint64_t)otm_frag_length(&p, last),
                     total);
    if (p.count <= WALK_LIMIT) {
        check_cover(&p);
    } else {
        uint64_t k;

        for (k = 0; k < 64; k++)
            check_fragment(&p, k * (last / 64));
        check_fragment(&p, last - 1);
        check_fragment(&p, last);
    }
}

static void test_large_totals(void **state)
{
    const uint64_t totals[] = {
        ((uint64_t)1 << 31) - 1, (uint64_t)1 << 31, ((uint64_t)1 << 31) + 1,
        ((uint64_t)1 << 32) - 1, (uint64_t)1 << 32, ((uint64_t)1 << 32) + 1,
        5 * GIB + 7, 3 * (uint64_t)INT_MAX, 3 * (uint64_t)INT_MAX + 1,
        UINT64_MAX,
    };
    /* Requested fragment size and the one the plan must use. */
    const uint64_t frags[][2] = {
        { INT_MAX, INT_MAX },
        { 0, INT_MAX },
        { (uint64_t)1 << 31, INT_MAX },
        { UINT64_MAX, INT_MAX },
        { 1u << 20, 1u << 20 },
        { 1, 1 },
        { 4096, 4096 },
        { INT_MAX - 1, INT_MAX - 1 },
    };
    size_t t, f;

    (void)state;
    for (t = 0; t < sizeof totals / sizeof totals[0]; t++)
        for (f = 0; f < sizeof frags / sizeof frags[0]; f++)
            check_large_plan(totals[t], frags[f][0], frags[f][1]);
}

/* A few plans spelt out, so that the closed form above is not the only
 * oracle. */
static void test_known_plans(void **state)
{
    otm_frag_plan p;

    (void)state;
    p = otm_frag_make((uint64_t)1 << 31, 0);
    assert_int_equal(p.count, 2);
    assert_int_equal(otm_frag_length(&p, 0), INT_MAX);
    assert_int_equal(otm_frag_offset(&p, 1), INT_MAX);
    assert_int_equal(otm_frag_length(&p, 1), 1);

    p = otm_frag_make(((uint64_t)1 << 32) + 1, (uint64_t)1 << 31);
    assert_int_equal(p.frag, INT_MAX);
    assert_int_equal(p.count, 3);
    assert_int_equal(otm_frag_offset(&p, 2), 2 * (uint64_t)INT_MAX);
    assert_int_equal(otm_frag_length(&p, 2), 3);

    p = otm_frag_make(5 * GIB + 7, 1u << 20);
    assert_int_equal(p.count, 5 * 1024 + 1);
    assert_int_equal(otm_frag_offset(&p, 5 * 1024), 5 * GIB);
    assert_int_equal(otm_frag_length(&p, 5 * 1024), 7);

    p = otm_frag_make(UINT64_MAX, 1);
    assert_int_equal(p.count, UINT64_MAX);
    assert_int_equal(otm_frag_offset(&p, UINT64_MAX - 1), UINT64_MAX - 1);
    assert_int_equal(otm_frag_length(&p, UINT64_MAX - 1), 1);

    p = otm_frag_make(0, 0);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.frag, INT_MAX);
}

static void test_check(void **state)
{
    (void)state;
    assert_int_equal(otm_frag_check(100, 0), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_frag_check(0, 0), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_frag_check(100, (uint64_t)INT_MAX + 1),
                     OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_frag_check(100, (uint64_t)1 << 32), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_frag_check(100, UINT64_MAX), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_frag_check(0, 1), OTM_OK);
    assert_int_equal(otm_frag_check(100, 1), OTM_OK);
    assert_int_equal(otm_frag_check(UINT64_MAX, INT_MAX), OTM_OK);
    assert_int_equal(otm_frag_check(100, 1u << 20), OTM_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_exact_cover),
        cmocka_unit_test(test_large_totals),
        cmocka_unit_test(test_known_plans),
        cmocka_unit_test(test_check),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
