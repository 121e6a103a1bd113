/*
 * tags.c - round-robin allocation of MPI tags.
 *
 * The bitmap is one block holding two planes of the same number of 64-bit
 * words. The first plane marks the tags that are not free (live or
 * retired) and alone drives allocation. The second marks the retired tags;
 * it exists because release and retire must refuse a tag that is not live,
 * and a single "not free" bit cannot tell live from retired.
 *
 * The bits of the first plane past the last tag are set at init, so the
 * search for a free tag never tests the range bound: those phantom tags
 * simply never look free.
 */
#include "otm/tags.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define WORD_BITS 64

/* Words per plane for a range of `count` tags. */
static size_t words_for(size_t count)
{
    return (count + WORD_BITS - 1) / WORD_BITS;
}

static size_t tag_count(const otm_tags *t)
{
    return (size_t)t->last - (size_t)t->first + 1;
}

static uint64_t *retired_plane(const otm_tags *t)
{
    return t->bits + words_for(tag_count(t));
}

static int in_range(const otm_tags *t, int tag)
{
    return tag >= t->first && tag <= t->last;
}

static int test_bit(const uint64_t *plane, size_t i)
{
    return (int)((plane[i / WORD_BITS] >> (i % WORD_BITS)) & 1u);
}

static void set_bit(uint64_t *plane, size_t i)
{
    plane[i / WORD_BITS] |= (uint64_t)1 << (i % WORD_BITS);
}

static void clear_bit(uint64_t *plane, size_t i)
{
    plane[i / WORD_BITS] &= ~((uint64_t)1 << (i % WORD_BITS));
}

/* Index of the lowest set bit of `x`, which must not be 0. */
static unsigned lowest_bit(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned n = 0;

    while (!(x & 1u)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

otm_status otm_tags_init(otm_tags *t, int first, int last,
                         void *(*alloc)(void *ctx, size_t size), void *ctx)
{
    size_t count, words, bytes;
    uint64_t *bits;

    /* A range of INT_MAX + 1 tags (0..INT_MAX) would overflow the int
     * counters once every tag is live, so it is refused too. */
    if (first < 0 || last < first || last - first == INT_MAX)
        return OTM_ERR_INVALID;
    count = (size_t)(last - first) + 1;
    words = words_for(count);
    bytes = 2 * words * sizeof *bits;
    bits = alloc ? alloc(ctx, bytes) : malloc(bytes);
    if (!bits)
        return OTM_ERR_NOMEM;
    /* Neither malloc nor the instance's hook promises zeroed memory. */
    memset(bits, 0, bytes);
    if (count % WORD_BITS)
        bits[words - 1] = ~(uint64_t)0 << (count % WORD_BITS);

    t->first = first;
    t->last = last;
    t->cursor = first;
    t->live = 0;
    t->retired = 0;
    t->bits = bits;
    return OTM_OK;
}

void otm_tags_fini(otm_tags *t, void (*release)(void *ctx, void *p), void *ctx)
{
    if (!t->bits)
        return;
    if (release)
        release(ctx, t->bits);
    else
        free(t->bits);
    t->bits = NULL;
}

/* Index of the first free tag at or after index `start`, wrapping around.
 * The caller guarantees that a free tag exists. */
static size_t find_free(const uint64_t *busy, size_t words, size_t start)
{
    size_t w = start / WORD_BITS;
    uint64_t free_bits = ~busy[w] & (~(uint64_t)0 << (start % WORD_BITS));
    size_t steps = 0;

    /* After a full turn the start word is looked at again, whole this time,
     * which covers the tags below the cursor within that word. */
    while (free_bits == 0) {
        assert(steps < words);
        w = (w + 1) % words;
        free_bits = ~busy[w];
        steps++;
    }
    return w * WORD_BITS + lowest_bit(free_bits);
}

otm_status otm_tags_alloc(otm_tags *t, int *tag)
{
    size_t count = tag_count(t);
    size_t i;

    if ((size_t)t->live + (size_t)t->retired == count)
        return OTM_ERR_TAGS_EXHAUSTED;
    i = find_free(t->bits, words_for(count), (size_t)(t->cursor - t->first));
    assert(i < count);
    set_bit(t->bits, i);
    t->live++;
    *tag = t->first + (int)i;
    t->cursor = *tag == t->last ? t->first : *tag + 1;
    return OTM_OK;
}

otm_status otm_tags_release(otm_tags *t, int tag)
{
    if (!otm_tags_is_live(t, tag))
        return OTM_ERR_INVALID;
    clear_bit(t->bits, (size_t)(tag - t->first));
    t->live--;
    return OTM_OK;
}

otm_status otm_tags_retire(otm_tags *t, int tag)
{
    size_t i;

    if (!otm_tags_is_live(t, tag))
        return OTM_ERR_INVALID;
    i = (size_t)(tag - t->first);
    /* The "not free" bit stays set: a retired tag is never handed out. */
    set_bit(retired_plane(t), i);
    t->live--;
    t->retired++;
    return OTM_OK;
}

int otm_tags_is_live(const otm_tags *t, int tag)
{
    size_t i;

    if (!in_range(t, tag))
        return 0;
    i = (size_t)(tag - t->first);
    return test_bit(t->bits, i) && !test_bit(retired_plane(t), i);
}
