/*
 * test_registry.c - the worker's region registry: the rules of registry.h
 * case by case, then long random runs against a brute-force model.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "otm/registry.h"

#define A OTM_REGION_ALLOC
#define G OTM_REGION_GLOBAL

/* ---- helpers ----------------------------------------------------------- */

/* Allocation hooks that count blocks and fail on demand. */
typedef struct hooks {
    int fail;
    int allocs;
    int releases;
} hooks;

static void *hook_alloc(void *ctx, size_t size)
{
    hooks *h = ctx;

    if (h->fail)
        return NULL;
    h->allocs++;
    return malloc(size);
}

static void hook_release(void *ctx, void *p)
{
    hooks *h = ctx;

    h->releases++;
    free(p);
}

/* A copy of a registry's observable state, to prove a refusal changed
 * nothing. */
typedef struct reg_copy {
    otm_region *items_ptr;
    size_t count, cap;
    otm_region *items;
} reg_copy;

static void copy_take(reg_copy *c, const otm_registry *r)
{
    c->items_ptr = r->items;
    c->count = r->count;
    c->cap = r->cap;
    c->items = malloc((r->count + 1) * sizeof *c->items);
    assert_non_null(c->items);
    if (r->count)
        memcpy(c->items, r->items, r->count * sizeof *c->items);
}

/* Field by field: the padding at the end of otm_region is never written,
 * so a byte-wise comparison would read uninitialised memory. */
static void assert_region_equal(const otm_region *a, const otm_region *b)
{
    assert_int_equal(a->base, b->base);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->kind, b->kind);
}

static void copy_assert_same(reg_copy *c, const otm_registry *r)
{
    size_t k;

    assert_ptr_equal(r->items, c->items_ptr);
    assert_int_equal(r->count, c->count);
    assert_int_equal(r->cap, c->cap);
    for (k = 0; k < r->count; k++)
        assert_region_equal(&r->items[k], &c->items[k]);
    free(c->items);
    c->items = NULL;
}

/* Adds a region that must be accepted. */
static void add_ok(otm_registry *r, uintptr_t base, uint64_t size,
                   otm_region_kind kind)
{
    assert_int_equal(otm_registry_add(r, base, size, kind), OTM_OK);
}

/* Adds a region that must be refused with `st`, leaving `r` unchanged. */
static void add_refused(otm_registry *r, uintptr_t base, uint64_t size,
                        otm_region_kind kind, otm_status st)
{
    reg_copy c;

    copy_take(&c, r);
    assert_int_equal(otm_registry_add(r, base, size, kind), st);
    copy_assert_same(&c, r);
}

/* ---- the rules, case by case -------------------------------------------- */

/*
 * Against the fixed layout
 *   [100, 200) ALLOC, a zero-sized ALLOC at 300, [400, 500) GLOBAL
 * every shape a new region can take relative to them, with the answer.
 */
static void test_overlap_shapes(void **state)
{
    static const struct {
        uintptr_t base;
        uint64_t size;
        otm_status want;
    } cases[] = {
        { 100, 100, OTM_ERR_INVALID },  /* identical */
        { 100, 10, OTM_ERR_INVALID },   /* same base, shorter */
        { 100, 150, OTM_ERR_INVALID },  /* same base, longer */
        { 120, 10, OTM_ERR_INVALID },   /* strictly inside */
        { 150, 50, OTM_ERR_INVALID },   /* same end */
        { 50, 51, OTM_ERR_INVALID },    /* straddles the start */
        { 199, 2, OTM_ERR_INVALID },    /* straddles the end */
        { 50, 200, OTM_ERR_INVALID },   /* contains it */
        { 50, 500, OTM_ERR_INVALID },   /* contains all three */
        { 100, 0, OTM_ERR_INVALID },    /* empty, at its base */
        { 150, 0, OTM_ERR_INVALID },    /* empty, inside it */
        { 290, 20, OTM_ERR_INVALID },   /* covers the empty region */
        { 300, 0, OTM_ERR_INVALID },    /* empty, same base as empty */
        { 300, 5, OTM_ERR_INVALID },    /* same base as the empty one */
        { 450, 100, OTM_ERR_INVALID },  /* straddles the global's end */
        { 399, 2, OTM_ERR_INVALID },    /* straddles the global's start */
        { 50, 50, OTM_OK },             /* ends where it starts */
        { 200, 50, OTM_OK },            /* starts where it ends */
        { 200, 100, OTM_OK },           /* fills the gap up to 300 */
        { 200, 0, OTM_OK },             /* empty, at its end */
        { 250, 0, OTM_OK },             /* empty, in a gap */
        { 295, 5, OTM_OK },             /* ends at the empty region */
        { 301, 99, OTM_OK },            /* just after it, up to 400 */
        { 500, 1, OTM_OK },             /* right after the global */
        { 1, 99, OTM_OK },              /* the lowest non-null bytes */
    };
    size_t k;

    (void)state;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        otm_registry r;

        otm_registry_init(&r, NULL, NULL, NULL);
        add_ok(&r, 100, 100, A);
        add_ok(&r, 300, 0, A);
        add_ok(&r, 400, 100, G);
        if (cases[k].want != OTM_OK) {
            add_refused(&r, cases[k].base, cases[k].size, A, cases[k].want);
            add_refused(&r, cases[k].base, cases[k].size, G, cases[k].want);
        } else {
            add_ok(&r, cases[k].base, cases[k].size, A);
            assert_int_equal(r.count, 4);
            assert_int_equal(otm_registry_check(&r, cases[k].base,
                                                cases[k].size),
                             OTM_OK);
        }
        otm_registry_fini(&r);
    }
}

static void test_bad_regions(void **state)
{
    const uintptr_t top = UINTPTR_MAX - 9;
    otm_registry r;

    (void)state;
    otm_registry_init(&r, NULL, NULL, NULL);
    add_refused(&r, 0, 10, A, OTM_ERR_INVALID);
    add_refused(&r, 0, 0, A, OTM_ERR_INVALID);
    add_refused(&r, 0, 1, G, OTM_ERR_INVALID);
    /* base + size must stay representable: the end may be UINTPTR_MAX,
     * not one past it. */
    add_refused(&r, top, 10, A, OTM_ERR_INVALID);
    add_refused(&r, 1, (uint64_t)UINTPTR_MAX, A, OTM_ERR_INVALID);
    add_refused(&r, 1, UINT64_MAX, A, OTM_ERR_INVALID);
    add_refused(&r, UINTPTR_MAX, 1, A, OTM_ERR_INVALID);
    /* Kinds outside the enum are refused too. */
    add_refused(&r, 100, 10, (otm_region_kind)0, OTM_ERR_INVALID);
    add_refused(&r, 100, 10, (otm_region_kind)3, OTM_ERR_INVALID);
    assert_int_equal(r.count, 0);

    add_ok(&r, top, 9, A);
    add_ok(&r, 1, (uint64_t)(top - 1), G);
    assert_int_equal(otm_registry_check(&r, top, 9), OTM_OK);
    assert_int_equal(otm_registry_check(&r, UINTPTR_MAX - 1, 1), OTM_OK);
    assert_int_equal(otm_registry_check(&r, UINTPTR_MAX, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 1, (uint64_t)(top - 1)), OTM_OK);
    /* addr + len overflowing is a size error, whatever the address. */
    assert_int_equal(otm_registry_check(&r, UINTPTR_MAX, 1), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_registry_check(&r, top, 10), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_registry_check(&r, 5, UINT64_MAX), OTM_ERR_BAD_SIZE);
    assert_int_equal(otm_registry_check(&r, 0, (uint64_t)UINTPTR_MAX),
                     OTM_ERR_BAD_POINTER);
    /* The address UINTPTR_MAX itself is still free for an empty region;
     * after that every address but the null one is taken. */
    add_ok(&r, UINTPTR_MAX, 0, A);
    add_refused(&r, UINTPTR_MAX, 0, A, OTM_ERR_INVALID);
    add_refused(&r, 12345, 0, A, OTM_ERR_INVALID);
    add_refused(&r, top - 1, 1, A, OTM_ERR_INVALID);
    assert_int_equal(otm_registry_remove(&r, UINTPTR_MAX, NULL), OTM_OK);
    otm_registry_fini(&r);
}

static void test_zero_sized(void **state)
{
    otm_registry r;
    uint64_t size = 99;

    (void)state;
    otm_registry_init(&r, NULL, NULL, NULL);
    add_ok(&r, 300, 0, A);
    assert_int_equal(r.count, 1);
    assert_int_equal(otm_registry_check(&r, 300, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 300, 1), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 299, 1), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 299, 0), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 301, 0), OTM_ERR_BAD_POINTER);
    /* Neighbours on both sides leave it alone. */
    add_ok(&r, 200, 100, A);
    add_ok(&r, 301, 0, A);
    add_ok(&r, 302, 8, A);
    assert_int_equal(otm_registry_check(&r, 299, 2), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_remove(&r, 300, &size), OTM_OK);
    assert_int_equal(size, 0);
    assert_int_equal(otm_registry_remove(&r, 300, &size),
                     OTM_ERR_BAD_POINTER);
    /* The end of [200, 300) still admits an empty access at 300. */
    assert_int_equal(otm_registry_check(&r, 300, 0), OTM_OK);
    assert_int_equal(otm_registry_remove(&r, 301, NULL), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 301, 0), OTM_ERR_BAD_POINTER);
    assert_int_equal(r.count, 2);
    otm_registry_fini(&r);
}

static void test_len_zero(void **state)
{
    otm_registry r;

    (void)state;
    otm_registry_init(&r, NULL, NULL, NULL);
    assert_int_equal(otm_registry_check(&r, 0, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 100, 0), OTM_ERR_BAD_POINTER);
    add_ok(&r, 100, 100, A);
    assert_int_equal(otm_registry_check(&r, 0, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 0, 1), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 100, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 150, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 200, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 99, 0), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 201, 0), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, UINTPTR_MAX, 0),
                     OTM_ERR_BAD_POINTER);
    otm_registry_fini(&r);
}

static void test_globals_stay(void **state)
{
    otm_registry r;
    uint64_t size = 0;

    (void)state;
    otm_registry_init(&r, NULL, NULL, NULL);
    add_ok(&r, 1000, 100, G);
    add_ok(&r, 1100, 50, A);
    assert_int_equal(otm_registry_remove(&r, 1000, &size),
                     OTM_ERR_BAD_POINTER);
    assert_int_equal(r.count, 2);
    assert_int_equal(otm_registry_check(&r, 1000, 100), OTM_OK);
    assert_int_equal(otm_registry_remove(&r, 1100, &size), OTM_OK);
    assert_int_equal(size, 50);
    assert_int_equal(otm_registry_check(&r, 1000, 100), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 1100, 1), OTM_ERR_BAD_POINTER);
    otm_registry_fini(&r);
}

static void test_remove_unknown(void **state)
{
    const uintptr_t unknown[] = { 0, 1, 99, 101, 150, 199, 200, 250, 1000,
                                  UINTPTR_MAX };
    otm_registry r;
    uint64_t size = 0;
    size_t k;

    (void)state;
    otm_registry_init(&r, NULL, NULL, NULL);
    assert_int_equal(otm_registry_remove(&r, 100, NULL), OTM_ERR_BAD_POINTER);
    add_ok(&r, 100, 100, A);
    add_ok(&r, 250, 0, G);
    for (k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        reg_copy c;

        copy_take(&c, &r);
        assert_int_equal(otm_registry_remove(&r, unknown[k], &size),
                         OTM_ERR_BAD_POINTER);
        copy_assert_same(&c, &r);
    }
    assert_int_equal(otm_registry_remove(&r, 100, &size), OTM_OK);
    assert_int_equal(size, 100);
    assert_int_equal(otm_registry_remove(&r, 100, &size), OTM_ERR_BAD_POINTER);
    assert_int_equal(r.count, 1);
    otm_registry_fini(&r);
}

static void test_straddle(void **state)
{
    otm_registry r;

    (void)state;
    otm_registry_init(&r, NULL, NULL, NULL);
    add_ok(&r, 100, 100, A);
    add_ok(&r, 200, 100, G);
    add_ok(&r, 301, 100, A);
    /* Adjacent regions are still two regions. */
    assert_int_equal(otm_registry_check(&r, 199, 2), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 100, 200), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 150, 100), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 299, 2), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 299, 3), OTM_ERR_BAD_POINTER);
    assert_int_equal(otm_registry_check(&r, 300, 1), OTM_ERR_BAD_POINTER);
    /* ...each of which is fine up to its edges. */
    assert_int_equal(otm_registry_check(&r, 100, 100), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 199, 1), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 200, 1), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 200, 100), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 300, 0), OTM_OK);
    assert_int_equal(otm_registry_check(&r, 301, 100), OTM_OK);
    otm_registry_fini(&r);
}

/* Growth of the array fails on demand: every refusal leaves the registry
 * as it was, and the same add then succeeds once memory is back. Bases go
 * in scrambled order so that refusals also hit inserts in the middle. */
static void test_growth_failure(void **state)
{
    enum { N = 300 };
    hooks h = { 0 };
    otm_registry r;
    int i, refusals = 0;

    (void)state;
    otm_registry_init(&r, hook_alloc, hook_release, &h);
    for (i = 0; i < N; i++) {
        uintptr_t base = 1000 + 16 * (uintptr_t)((i * 37) % N);
        int allocs = h.allocs;
        otm_status st;
        reg_copy c;

        copy_take(&c, &r);
        h.fail = 1;
        st = otm_registry_add(&r, base, 8, A);
        h.fail = 0;
        if (st == OTM_OK) {
            free(c.items);
            assert_int_equal(r.count, (size_t)i + 1);
            continue;
        }
        assert_int_equal(st, OTM_ERR_NOMEM);
        copy_assert_same(&c, &r);
        assert_int_equal(otm_registry_check(&r, base, 8), OTM_ERR_BAD_POINTER);
        refusals++;
        add_ok(&r, base, 8, A);
        assert_int_equal(h.allocs, allocs + 1);
    }
    /* The first add and at least every doubling up to N needed memory. */
    assert_true(refusals >= 5);
    for (i = 0; i < N; i++)
        assert_int_equal(otm_registry_check(&r, 1000 + 16 * (uintptr_t)i, 8),
                         OTM_OK);
    /* Old arrays went back through the release hook, as does the last. */
    assert_int_equal(h.releases, h.allocs - 1);
    otm_registry_fini(&r);
    assert_int_equal(h.releases, h.allocs);
}

/* ---- random runs against a brute-force model ---------------------------- */

#define SPACE 8192                  /* addresses 1..SPACE are used */
#define MODEL_MAX SPACE

typedef struct model {
    otm_region items[MODEL_MAX];    /* unsorted */
    size_t count;
} model;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Addresses a region claims against overlap: its bytes, or its base alone
 * when it is empty. All model values are small, so nothing overflows. */
static int model_clash(const otm_region *a, uintptr_t base, uint64_t size)
{
    uint64_t a_end = a->base + (a->size ? a->size : 1);
    uint64_t b_end = base + (size ? size : 1);

    return a->base < b_end && base < a_end;
}

static otm_status model_add(model *m, uintptr_t base, uint64_t size,
                            otm_region_kind kind)
{
    size_t k;

    if (base == 0)
        return OTM_ERR_INVALID;
    for (k = 0; k < m->count; k++)
        if (model_clash(&m->items[k], base, size))
            return OTM_ERR_INVALID;
    assert_true(m->count < MODEL_MAX);
    m->items[m->count].base = base;
    m->items[m->count].size = size;
    m->items[m->count].kind = kind;
    m->count++;
    return OTM_OK;
}

static otm_status model_remove(model *m, uintptr_t base, uint64_t *size)
{
    size_t k;

    for (k = 0; k < m->count; k++) {
        if (m->items[k].base == base && m->items[k].kind == A) {
            *size = m->items[k].size;
            m->items[k] = m->items[--m->count];
            return OTM_OK;
        }
    }
    return OTM_ERR_BAD_POINTER;
}

static otm_status model_check(const model *m, uintptr_t addr, uint64_t len)
{
    size_t k;

    if (addr == 0 && len == 0)
        return OTM_OK;
    for (k = 0; k < m->count; k++) {
        const otm_region *g = &m->items[k];

        if (addr >= g->base && addr + len <= g->base + g->size)
            return OTM_OK;
    }
    return OTM_ERR_BAD_POINTER;
}

static int by_base(const void *a, const void *b)
{
    const otm_region *x = a, *y = b;

    return (x->base > y->base) - (x->base < y->base);
}

/* The registry holds exactly the model's regions, sorted by base. */
static void compare_contents(const otm_registry *r, const model *m,
                             otm_region *scratch)
{
    size_t k;

    assert_int_equal(r->count, m->count);
    memcpy(scratch, m->items, m->count * sizeof *scratch);
    qsort(scratch, m->count, sizeof *scratch, by_base);
    for (k = 0; k < m->count; k++)
        assert_region_equal(&r->items[k], &scratch[k]);
}

/* A random access, biased towards the short and empty ones. */
static void random_check(const otm_registry *r, const model *m, uint64_t *s)
{
    uint64_t x = splitmix64(s);
    uintptr_t addr = (uintptr_t)(x % (SPACE + 64));
    uint64_t len = (x >> 20) % 4 == 0 ? 0 : (x >> 24) % 80;

    assert_int_equal(otm_registry_check(r, addr, len),
                     model_check(m, addr, len));
}

/* Every address with the empty and one-byte accesses. */
static void sweep_checks(const otm_registry *r, const model *m)
{
    uintptr_t addr;

    for (addr = 0; addr <= SPACE + 70; addr++) {
        assert_int_equal(otm_registry_check(r, addr, 0),
                         model_check(m, addr, 0));
        assert_int_equal(otm_registry_check(r, addr, 1),
                         model_check(m, addr, 1));
    }
}

static void random_op(otm_registry *r, model *m, uint64_t *s)
{
    uint64_t x = splitmix64(s);
    unsigned choice = (unsigned)(x % 100);

    if (choice < 55) {
        uintptr_t base = (uintptr_t)((x >> 8) % (SPACE + 1));
        uint64_t size = (x >> 24) % 8 == 0 ? 0 : 1 + (x >> 28) % 64;
        otm_region_kind kind = (x >> 40) % 50 == 0 ? G : A;

        assert_int_equal(otm_registry_add(r, base, size, kind),
                         model_add(m, base, size, kind));
    } else {
        uintptr_t base;
        uint64_t got = 0, want = 0;

        /* Mostly the base of a recorded region, else any address. */
        if (m->count && choice < 90)
            base = m->items[(x >> 8) % m->count].base;
        else
            base = (uintptr_t)((x >> 8) % (SPACE + 1));
        assert_int_equal(otm_registry_remove(r, base, &got),
                         model_remove(m, base, &want));
        assert_int_equal(got, want);
    }
}

static void test_random_against_model(void **state)
{
    enum { ROUNDS = 4, OPS = 5000, CHECKS = 8, SWEEP = 1000 };
    model *m = malloc(sizeof *m);
    otm_region *scratch = malloc(sizeof m->items);
    uint64_t seed = 20240601;
    size_t peak = 0;
    int round, i, k;

    (void)state;
    assert_non_null(m);
    assert_non_null(scratch);
    /* Fresh rounds, because globals are never removed and would slowly
     * fill the space. */
    for (round = 0; round < ROUNDS; round++) {
        otm_registry r;

        otm_registry_init(&r, NULL, NULL, NULL);
        m->count = 0;
        for (i = 0; i < OPS; i++) {
            random_op(&r, m, &seed);
            compare_contents(&r, m, scratch);
            for (k = 0; k < CHECKS; k++)
                random_check(&r, m, &seed);
            if (i % SWEEP == SWEEP - 1)
                sweep_checks(&r, m);
            if (r.count > peak)
                peak = r.count;
        }
        otm_registry_fini(&r);
    }
    /* The runs must have kept many regions at once, or they prove little. */
    assert_true(peak >= 100);
    print_message("registry: %d random operations, up to %zu regions\n",
                  ROUNDS * OPS, peak);
    free(scratch);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlap_shapes),
        cmocka_unit_test(test_bad_regions),
        cmocka_unit_test(test_zero_sized),
        cmocka_unit_test(test_len_zero),
        cmocka_unit_test(test_globals_stay),
        cmocka_unit_test(test_remove_unknown),
        cmocka_unit_test(test_straddle),
        cmocka_unit_test(test_growth_failure),
        cmocka_unit_test(test_random_against_model),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
