/*
 * test_tags.c - the tag allocator against a reference model.
 *
 * The model is deliberately naive: one state per tag and a linear scan from
 * the cursor. It predicts the exact tag every allocation hands out, so any
 * difference in round-robin order, reuse, exhaustion or counting shows up
 * as a mismatch right after the operation that caused it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otm/tags.h"

#define MODEL_MAX 1100
/* A value no allocation can hand out, to see that *tag stays untouched. */
#define TAG_SENTINEL (-4242)

enum { M_FREE, M_LIVE, M_RETIRED };

typedef struct model {
    int first, last, cursor, live, retired;
    unsigned char state[MODEL_MAX];     /* indexed by tag - first */
} model;

static void model_init(model *m, int first, int last)
{
    assert_true(last - first + 1 <= MODEL_MAX);
    memset(m, 0, sizeof *m);
    m->first = first;
    m->last = last;
    m->cursor = first;
}

static int model_count(const model *m)
{
    return m->last - m->first + 1;
}

static int model_state(const model *m, int tag)
{
    if (tag < m->first || tag > m->last)
        return -1;
    return m->state[tag - m->first];
}

/* The reference round robin: the first free tag at or after the cursor. */
static otm_status model_alloc(model *m, int *tag)
{
    int n = model_count(m);
    int k;

    for (k = 0; k < n; k++) {
        int cand = m->first + (m->cursor - m->first + k) % n;

        if (m->state[cand - m->first] == M_FREE) {
            m->state[cand - m->first] = M_LIVE;
            m->live++;
            m->cursor = cand == m->last ? m->first : cand + 1;
            *tag = cand;
            return OTM_OK;
        }
    }
    return OTM_ERR_TAGS_EXHAUSTED;
}

static void model_end(model *m, int tag, int retire)
{
    m->state[tag - m->first] = retire ? M_RETIRED : M_FREE;
    m->live--;
    m->retired += retire;
}

/* Every observable of the allocator agrees with the model. The quick
 * comparison runs at every node of the trees below; only on a mismatch do
 * the assertions run, which then name the field that differs. */
static int model_matches(const otm_tags *t, const model *m)
{
    int tag;

    if (t->first != m->first || t->last != m->last ||
        t->cursor != m->cursor || t->live != m->live ||
        t->retired != m->retired)
        return 0;
    for (tag = m->first - 2; tag <= m->last + 2; tag++)
        if (otm_tags_is_live(t, tag) != (model_state(m, tag) == M_LIVE))
            return 0;
    return 1;
}

static void check_model(const otm_tags *t, const model *m)
{
    int tag;

    if (model_matches(t, m))
        return;
    assert_int_equal(t->first, m->first);
    assert_int_equal(t->last, m->last);
    assert_int_equal(t->cursor, m->cursor);
    assert_int_equal(t->live, m->live);
    assert_int_equal(t->retired, m->retired);
    for (tag = m->first - 2; tag <= m->last + 2; tag++)
        assert_int_equal(otm_tags_is_live(t, tag),
                         model_state(m, tag) == M_LIVE);
    fail_msg("model_matches and check_model disagree");
}

/* One allocation on both; the model predicts the outcome and the tag.
 * Returns the tag, or TAG_SENTINEL when the range was used up. */
static int step_alloc(otm_tags *t, model *m)
{
    int want = TAG_SENTINEL, got = TAG_SENTINEL;
    otm_status want_st = model_alloc(m, &want);
    otm_status got_st = otm_tags_alloc(t, &got);

    assert_int_equal(got_st, want_st);
    assert_int_equal(got, want);
    if (got_st == OTM_OK) {
        /* Never a control tag (below first), never above last. */
        assert_true(got >= m->first && got <= m->last);
    } else {
        assert_int_equal(m->live + m->retired, model_count(m));
    }
    return got;
}

static void step_end(otm_tags *t, model *m, int tag, int retire)
{
    assert_int_equal(model_state(m, tag), M_LIVE);
    if (retire)
        assert_int_equal(otm_tags_retire(t, tag), OTM_OK);
    else
        assert_int_equal(otm_tags_release(t, tag), OTM_OK);
    model_end(m, tag, retire);
}

/* Allocator state as bytes, to prove that a refused call changed nothing. */
typedef struct snapshot {
    otm_tags tags;
    unsigned char *bits;
} snapshot;

static void snapshot_take(snapshot *s, const otm_tags *t, size_t bytes)
{
    s->tags = *t;
    memcpy(s->bits, t->bits, bytes);
}

static void snapshot_restore(const snapshot *s, otm_tags *t, size_t bytes)
{
    *t = s->tags;
    memcpy(t->bits, s->bits, bytes);
}

static int unchanged(const snapshot *s, const otm_tags *t, size_t bytes)
{
    return t->first == s->tags.first && t->last == s->tags.last &&
           t->cursor == s->tags.cursor && t->live == s->tags.live &&
           t->retired == s->tags.retired && t->bits == s->tags.bits &&
           memcmp(t->bits, s->bits, bytes) == 0;
}

static void assert_unchanged(const snapshot *s, const otm_tags *t,
                             size_t bytes)
{
    if (unchanged(s, t, bytes))
        return;
    assert_int_equal(t->first, s->tags.first);
    assert_int_equal(t->last, s->tags.last);
    assert_int_equal(t->cursor, s->tags.cursor);
    assert_int_equal(t->live, s->tags.live);
    assert_int_equal(t->retired, s->tags.retired);
    assert_ptr_equal(t->bits, s->tags.bits);
    fail_msg("a refused call changed the bitmap");
}

/* A tag in `state`, the first one at or after a position picked by
 * `salt` (wrapping around), or -1 if none. */
static int pick_tag(const model *m, int state, uint64_t salt)
{
    int n = model_count(m), start = (int)(salt % (uint64_t)n), k;

    for (k = 0; k < n; k++) {
        int i = (start + k) % n;

        if (m->state[i] == state)
            return m->first + i;
    }
    return -1;
}

/* Releasing or retiring a tag that is not live is refused and changes no
 * byte of the allocator. Tried here: a free tag and a retired tag when
 * there are some, and one tag out of range (the control tag below first,
 * the one above last, or far off on either side). `salt` picks which, so
 * that over a whole tree every choice meets many states. */
static void check_refusals(otm_tags *t, const model *m, snapshot *s,
                           size_t bytes, uint64_t salt)
{
    const int outside[] = { m->first - 1, m->last + 1, -1, INT_MIN, INT_MAX };
    int free_tag = pick_tag(m, M_FREE, salt);
    int retired_tag = pick_tag(m, M_RETIRED, salt);
    int tags[3], n = 0, k;

    if (free_tag != -1)
        tags[n++] = free_tag;
    if (retired_tag != -1)
        tags[n++] = retired_tag;
    tags[n++] = outside[salt % (sizeof outside / sizeof outside[0])];
    snapshot_take(s, t, bytes);
    for (k = 0; k < n; k++) {
        assert_int_equal(otm_tags_release(t, tags[k]), OTM_ERR_INVALID);
        assert_unchanged(s, t, bytes);
        assert_int_equal(otm_tags_retire(t, tags[k]), OTM_ERR_INVALID);
        assert_unchanged(s, t, bytes);
    }
}

/* Allocation hooks that record the bitmap size and hand out dirty memory,
 * so that a missing memset in otm_tags_init shows up. */
typedef struct hook_ctx {
    size_t last_size;
    int allocs, releases, fail;
    void *last_ptr;
} hook_ctx;

static void *dirty_alloc(void *ctx, size_t size)
{
    hook_ctx *h = ctx;
    void *p;

    if (h->fail)
        return NULL;
    p = malloc(size);
    if (p)
        memset(p, 0xa5, size);
    h->last_size = size;
    h->last_ptr = p;
    h->allocs++;
    return p;
}

static void counting_release(void *ctx, void *p)
{
    hook_ctx *h = ctx;

    assert_ptr_equal(p, h->last_ptr);
    h->releases++;
    free(p);
}

/* ---- exhaustive sequences --------------------------------------------- */

/*
 * Every sequence of operations up to length L, for every MPI_TAG_UB from 3
 * to 64 (range [1, tag_ub]). The operations at each step are: one
 * allocation (which fails once the range is used up), the release of each
 * live tag and the retirement of each live tag.
 *
 * The invalid calls (release or retire of a free tag, of a retired tag, of
 * a tag out of range) are checked at every node of the tree instead of
 * being branches of it: each is proven to leave every byte of the
 * allocator as it was, so a sequence containing one behaves exactly like
 * the same sequence without it, and branching on them would only walk the
 * same subtrees again.
 *
 * L is chosen per tag_ub (see depth_for): the number of sequences grows
 * about fivefold per step, so long sequences are affordable only for small
 * ranges, where they matter most because only there do they reach
 * exhaustion, retirement of every tag and wrap-around of the cursor. The
 * randomised test below covers long runs on the larger ranges.
 */
#define TAG_UB_MIN 3
#define TAG_UB_MAX 64

/* L: 12 up to tag_ub 4 and 10 up to tag_ub 8, enough to reach exhaustion
 * and the wrap-around (tag_ub + 2 steps: fill the range, free a tag, get
 * it back after the wrap); then 8. That makes 2,554,810 sequences (of
 * lengths 1..L) in all, about a second. */
static int depth_for(int tag_ub)
{
    if (tag_ub <= 4)
        return 12;
    if (tag_ub <= 8)
        return 10;
    return 8;
}

typedef struct explorer {
    otm_tags tags;
    model m;
    size_t bytes;               /* bitmap size, learnt from the hook */
    int depth;                  /* L */
    unsigned char *saved;       /* one bitmap copy per level */
    unsigned long long sequences;
} explorer;

static void explore(explorer *x, int level)
{
    snapshot s = { .bits = x->saved + (size_t)level * x->bytes };
    model saved_model = x->m;
    int live[TAG_UB_MAX];
    int n_live = 0, k, retire;

    check_model(&x->tags, &x->m);
    check_refusals(&x->tags, &x->m, &s, x->bytes, x->sequences);
    if (level == x->depth)
        return;
    for (k = 0; k < model_count(&x->m); k++)
        if (x->m.state[k] == M_LIVE)
            live[n_live++] = x->m.first + k;

    snapshot_take(&s, &x->tags, x->bytes);
    step_alloc(&x->tags, &x->m);
    x->sequences++;
    explore(x, level + 1);
    snapshot_restore(&s, &x->tags, x->bytes);
    x->m = saved_model;

    for (k = 0; k < n_live; k++) {
        for (retire = 0; retire <= 1; retire++) {
            step_end(&x->tags, &x->m, live[k], retire);
            x->sequences++;
            explore(x, level + 1);
            snapshot_restore(&s, &x->tags, x->bytes);
            x->m = saved_model;
        }
    }
}

static unsigned long long explore_tag_ub(int tag_ub)
{
    hook_ctx h = { 0 };
    explorer x;

    memset(&x, 0, sizeof x);
    assert_int_equal(otm_tags_init(&x.tags, 1, tag_ub, dirty_alloc, &h),
                     OTM_OK);
    model_init(&x.m, 1, tag_ub);
    x.bytes = h.last_size;
    x.depth = depth_for(tag_ub);
    x.saved = malloc((size_t)(x.depth + 1) * x.bytes);
    assert_non_null(x.saved);
    explore(&x, 0);
    free(x.saved);
    otm_tags_fini(&x.tags, counting_release, &h);
    assert_int_equal(h.releases, 1);
    return x.sequences;
}

static void test_exhaustive_sequences(void **state)
{
    unsigned long long total = 0, band = 0;
    clock_t start = clock();
    int tag_ub, band_start = 0;

    (void)state;
    for (tag_ub = TAG_UB_MIN; tag_ub <= TAG_UB_MAX; tag_ub++) {
        unsigned long long n = explore_tag_ub(tag_ub);

        /* The tree is never empty: at least one allocation per sequence
         * of length 1, so this guards against a silently skipped walk. */
        assert_true(n > (unsigned long long)depth_for(tag_ub));
        if (band_start == 0)
            band_start = tag_ub;
        band += n;
        total += n;
        if (tag_ub == TAG_UB_MAX ||
            depth_for(tag_ub + 1) != depth_for(tag_ub)) {
            print_message("tags: L = %d for tag_ub %d..%d: %llu sequences\n",
                          depth_for(tag_ub), band_start, tag_ub, band);
            band = 0;
            band_start = 0;
        }
    }
    print_message("tags: %llu sequences in all, tag_ub %d..%d, %.2f s\n",
                  total, TAG_UB_MIN, TAG_UB_MAX,
                  (double)(clock() - start) / CLOCKS_PER_SEC);
}

/* ---- long random runs -------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A long random walk on [first, last]: mostly allocations and releases, so
 * the cursor wraps many times with the range partly full, and a few
 * retirements; when every tag is retired the allocator starts afresh. */
static void random_walk(int first, int last, int steps, uint64_t seed)
{
    otm_tags t;
    model m;
    snapshot s;
    size_t bytes;
    hook_ctx h = { 0 };
    int i, wraps = 0, exhausted = 0;

    assert_int_equal(otm_tags_init(&t, first, last, dirty_alloc, &h), OTM_OK);
    bytes = h.last_size;
    s.bits = malloc(bytes);
    assert_non_null(s.bits);
    model_init(&m, first, last);
    for (i = 0; i < steps; i++) {
        uint64_t r = splitmix64(&seed);
        int choice = (int)(r % 100), tag = pick_tag(&m, M_LIVE, r >> 8);
        int before = m.cursor, got;

        if (m.retired == model_count(&m)) {
            otm_tags_fini(&t, counting_release, &h);
            assert_int_equal(otm_tags_init(&t, first, last, dirty_alloc, &h),
                             OTM_OK);
            model_init(&m, first, last);
        } else if (choice < 55 || tag == -1) {
            got = step_alloc(&t, &m);
            /* Handing out a tag below the cursor means it went around. */
            wraps += got != TAG_SENTINEL && got < before;
            exhausted += got == TAG_SENTINEL;
        } else {
            step_end(&t, &m, tag, choice >= 97);
        }
        check_model(&t, &m);
        check_refusals(&t, &m, &s, bytes, r >> 16);
    }
    /* The walk must have reached the interesting states. */
    assert_true(wraps > 0);
    assert_true(exhausted > 0);
    free(s.bits);
    otm_tags_fini(&t, counting_release, &h);
    assert_int_equal(h.allocs, h.releases);
}

static void test_random_walks(void **state)
{
    int tag_ub;

    (void)state;
    for (tag_ub = TAG_UB_MIN; tag_ub <= TAG_UB_MAX; tag_ub++)
        random_walk(1, tag_ub, 2000, (uint64_t)tag_ub);
    /* Ranges over several bitmap words, with and without a ragged end. */
    random_walk(1, 128, 20000, 1);
    random_walk(0, 127, 20000, 2);
    random_walk(7, 1030, 30000, 3);
}

/* ---- fixed cases ------------------------------------------------------- */

static void test_exhaustion_small(void **state)
{
    otm_tags t;
    int tag = TAG_SENTINEL;

    (void)state;
    assert_int_equal(otm_tags_init(&t, 1, 3, NULL, NULL), OTM_OK);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, 1);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, 2);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, 3);
    tag = TAG_SENTINEL;
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_ERR_TAGS_EXHAUSTED);
    assert_int_equal(tag, TAG_SENTINEL);
    assert_int_equal(t.live, 3);

    /* A retired tag does not come back; a released one does. */
    assert_int_equal(otm_tags_retire(&t, 2), OTM_OK);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_ERR_TAGS_EXHAUSTED);
    assert_int_equal(otm_tags_release(&t, 2), OTM_ERR_INVALID);
    assert_int_equal(otm_tags_is_live(&t, 2), 0);
    assert_int_equal(otm_tags_release(&t, 3), OTM_OK);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, 3);
    assert_int_equal(t.live, 2);
    assert_int_equal(t.retired, 1);
    otm_tags_fini(&t, NULL, NULL);
    assert_null(t.bits);
}

static void test_init_bad_ranges(void **state)
{
    const int bad[][2] = {
        { 5, 4 }, { 1, 0 }, { INT_MAX, 1 }, { -1, 10 }, { -5, -1 },
        { 0, -1 }, { INT_MIN, INT_MAX }, { 0, INT_MAX },
    };
    hook_ctx h = { 0 };
    otm_tags t;
    size_t k;
    int tag;

    (void)state;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&t, 0x5a, sizeof t);
        assert_int_equal(otm_tags_init(&t, bad[k][0], bad[k][1], dirty_alloc,
                                       &h),
                         OTM_ERR_INVALID);
    }
    /* A bad range is refused before anything is allocated. */
    assert_int_equal(h.allocs, 0);

    /* One-tag ranges are fine, including the top of the int range. */
    assert_int_equal(otm_tags_init(&t, 0, 0, NULL, NULL), OTM_OK);
    otm_tags_fini(&t, NULL, NULL);
    assert_int_equal(otm_tags_init(&t, INT_MAX, INT_MAX, NULL, NULL), OTM_OK);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, INT_MAX);
    assert_int_equal(t.cursor, INT_MAX);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_ERR_TAGS_EXHAUSTED);
    assert_int_equal(otm_tags_release(&t, INT_MAX), OTM_OK);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, INT_MAX);
    otm_tags_fini(&t, NULL, NULL);

    h.fail = 1;
    assert_int_equal(otm_tags_init(&t, 1, 100, dirty_alloc, &h),
                     OTM_ERR_NOMEM);
}

static void test_large_range(void **state)
{
    const int last = 65535, again = 31337;
    otm_tags t;
    int expect, tag;

    (void)state;
    assert_int_equal(otm_tags_init(&t, 1, last, NULL, NULL), OTM_OK);
    for (expect = 1; expect <= last; expect++) {
        assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
        assert_int_equal(tag, expect);
    }
    assert_int_equal(t.live, last);
    tag = TAG_SENTINEL;
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_ERR_TAGS_EXHAUSTED);
    assert_int_equal(tag, TAG_SENTINEL);

    assert_int_equal(otm_tags_release(&t, again), OTM_OK);
    assert_int_equal(otm_tags_is_live(&t, again), 0);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_OK);
    assert_int_equal(tag, again);
    assert_int_equal(otm_tags_is_live(&t, again), 1);
    assert_int_equal(otm_tags_alloc(&t, &tag), OTM_ERR_TAGS_EXHAUSTED);
    otm_tags_fini(&t, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exhaustive_sequences),
        cmocka_unit_test(test_random_walks),
        cmocka_unit_test(test_exhaustion_small),
        cmocka_unit_test(test_init_bad_ranges),
        cmocka_unit_test(test_large_range),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
