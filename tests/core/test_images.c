/*
 * test_images.c - images on the wire and what regions bring back, in the
 * simulated world: a LOAD whose image's bytes travel (sizes around the
 * fragment size, seeded schedules and every schedule of the smallest
 * cases), a LOAD by reference the worker cannot serve, an image it rejects,
 * a transfer that fails half-way, UNLOAD (the image's kernels and global
 * are gone afterwards, also for bad ids), a region's output forwarded
 * inline and in fragments, and a kernel fault reaching the host with its
 * status while the device then refuses everything but the exit, and a
 * LOAD reply claiming more entries than the host has room for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "otm/wire.h"
#include "explore.h"
#include "scenarios.h"

#define SEEDS 200
#define IMAGE_MAX 200

static uint8_t image[IMAGE_MAX + 1];

static void make_image(void)
{
    for (uint64_t i = 0; i < sizeof image; i++)
        image[i] = sim_image_byte(i);
}

static sim_config config(uint64_t seed)
{
    sim_config cfg = sim_config_default();   /* fragments of 4 bytes */
    cfg.workers = 1;
    cfg.seed = seed;
    return cfg;
}

/* The smallest image-bearing program: load the image's bytes, run one of
 * its kernels on its global, read the global back, unload it. */
static int enqueue_program(scn *s, uint64_t size)
{
    uint64_t id = 0;
    if (scn_load_bytes(s, 0, 1, image, size, &id) ||
        scn_execute(s, 0, 1, SIM_K_INC, scn_global(s, 1), 4) ||
        scn_retrieve(s, 0, 1, s->out[1], scn_global(s, 1), 4) ||
        scn_unload(s, 0, 1, id))
        return -1;
    return 0;
}

static int program_ok(scn *s)
{
    if (s->q[0]->status != OTM_OK || s->nentries[1] != SIM_K_COUNT + 1 ||
        sim_world_images_loaded(s->w, 1) != 0)
        return 0;
    for (int i = 0; i < 4; i++)
        if (s->out[1][i] != 1)
            return 0;
    return 1;
}

/* The program, or (full = 0) its LOAD alone. */
static sim_result run_program(const sim_config *cfg, uint64_t size, int full, sim_trace *t)
{
    scn s;
    if (scn_open(&s, cfg, 1))
        return SIM_VIOLATION;
    memset(sim_world_global(s.w, 1), 0, SIM_GLOBAL_SIZE);
    sim_world_mark(s.w);
    int bad = full ? enqueue_program(&s, size)
                   : scn_load_bytes(&s, 0, 1, image, size, NULL) != OTM_OK;
    sim_result r = bad ? SIM_VIOLATION : sim_world_run(s.w);
    if (r == SIM_OK && (full ? !program_ok(&s)
                             : s.q[0]->status != OTM_OK || s.nentries[1] != SIM_K_COUNT + 1))
        r = SIM_VIOLATION;
    if (r == SIM_OK)
        r = sim_world_teardown(s.w);
    if (t)
        sim_world_take_trace(s.w, t);
    scn_close(&s);
    return r;
}

static void test_load_bytes_seeded(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {1, 3, 4, 5, 8, 9, 63, 64, 65, IMAGE_MAX};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        for (uint64_t seed = 1; seed <= SEEDS; seed++) {
            sim_config cfg = config(seed);
            sim_result r = run_program(&cfg, sizes[i], 1, NULL);
            if (r != SIM_OK)
                fail_msg("image of %llu bytes, seed %llu: result %d",
                         (unsigned long long)sizes[i], (unsigned long long)seed, r);
        }
    }
    print_message("LOAD with the image's bytes, UNLOAD: %zu sizes x %d seeds passed\n",
                  sizeof sizes / sizeof *sizes, SEEDS);
}

static sim_result exh_run(const sim_config *cfg, void *arg, sim_trace *t)
{
    (void)arg;
    return run_program(cfg, 1, 0, t);
}


static sim_result exh_run5(const sim_config *cfg, void *arg, sim_trace *t)
{
    (void)arg;
    return run_program(cfg, 5, 0, t);
}

/* The LOAD of an image of one byte (one fragment) and of five (4 + 1),
 * then the exit: every schedule. The entries come back inline (inline
 * limit 128: the stub's 96 bytes), as they do with the default limit;
 * in 4-byte fragments they would multiply the schedules past counting. */
static void test_load_bytes_exhaustive(void **state)
{
    (void)state;
    sim_result (*runs[2])(const sim_config *, void *, sim_trace *) = {exh_run, exh_run5};
    const char *env = getenv("OTM_SIM_EXPLORE_MAX");
    uint64_t max = env ? strtoull(env, NULL, 10) : 1000000;
    for (int k = 0; k < 2; k++) {
        sim_config cfg = config(1);
        cfg.eager_at_delivery = 0;
        cfg.node.inline_max = 128;
        sim_explore_stats st = sim_explore(&cfg, runs[k], NULL, 100000, max);
        print_message("LOAD of a %d-byte image: %llu schedules explored (%llu cut as "
                      "reorderings), %s\n", k ? 5 : 1, (unsigned long long)st.schedules,
                      (unsigned long long)st.pruned,
                      st.complete ? "all of them"
                                  : "stopped there by OTM_SIM_EXPLORE_MAX (not exhaustive)");
        assert_int_equal(st.failures, 0);
        assert_true(st.complete || (env && st.schedules >= max));
    }
}

/* Phases on one queue, waited for through the node's idle hook. */
static otm_status wait0(scn *s)
{
    return sim_queue_wait(sim_world_node(s->w, 0), s->q[0]);
}

static void open1(scn *s)
{
    sim_config cfg = config(7);
    assert_int_equal(scn_open(s, &cfg, 1), 0);
}

static void close1(scn *s)
{
    assert_int_equal(sim_world_run(s->w), SIM_OK);
    assert_int_equal(sim_world_teardown(s->w), SIM_OK);
    scn_close(s);
}

static void test_load_refused(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    /* By reference, an image the worker does not hold. */
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = 1, .host = s.entries[1],
                 .size = SIM_K_COUNT + 1, .result = &s.nentries[1],
                 .image = {.id = 99, .size = IMAGE_MAX,
                           .hash = sim_image_hash(IMAGE_MAX),
                           .names_hash = sim_names_hash()}};
    assert_int_equal(otm_host_enqueue(sim_world_node(s.w, 0), s.q[0], &op, NULL), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_NO_IMAGE);
    /* Bytes that are not the device's kind of image: refused. */
    uint8_t bad[9];
    memcpy(bad, image, sizeof bad);
    bad[6] ^= 0xff;
    assert_int_equal(scn_load_bytes(&s, 0, 1, bad, sizeof bad, NULL), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_INVALID);
    assert_int_equal(sim_world_images_loaded(s.w, 1), 0);
    /* Nothing of either stayed: the kernels are unknown. */
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_NO_KERNEL);
    /* The worker still serves: the same image's good bytes load. */
    uint64_t id = 0;
    assert_int_equal(scn_load_bytes(&s, 0, 1, image, sizeof bad, &id), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    /* A second LOAD under a live id is the host's error. */
    op.image = (otm_image_ref){.id = id, .size = 8, .hash = sim_image_hash(8)};
    assert_int_equal(otm_host_enqueue(sim_world_node(s.w, 0), s.q[0], &op, NULL), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_INVALID);
    assert_int_equal(sim_world_images_loaded(s.w, 1), 1);
    /* UNLOAD: of that id once, then of ids that are not loaded. */
    assert_int_equal(scn_unload(&s, 0, 1, id), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_int_equal(scn_unload(&s, 0, 1, id), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_NO_IMAGE);
    assert_int_equal(scn_unload(&s, 0, 1, 12345), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_NO_IMAGE);
    assert_int_equal(sim_world_images_loaded(s.w, 1), 0);
    /* Its global went with it. */
    assert_int_equal(scn_retrieve(&s, 0, 1, s.out[1], scn_global(&s, 1), 4), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_BAD_POINTER);
    close1(&s);
}

/* Two loads list the same entries (the stub's image): unloading one keeps
 * what the other still lists. */
static void test_unload_keeps_shared_entries(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    uint64_t a = 0, b = 0;
    assert_int_equal(scn_load_bytes(&s, 0, 1, image, 8, &a), OTM_OK);
    assert_int_equal(scn_load_bytes(&s, 0, 1, image, 12, &b), OTM_OK);
    assert_int_equal(scn_unload(&s, 0, 1, a), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    assert_int_equal(scn_retrieve(&s, 0, 1, s.out[1], scn_global(&s, 1), 4), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_int_equal(scn_unload(&s, 0, 1, b), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_NO_KERNEL);
    close1(&s);
}

/* The host's sends of the image fail: the LOAD fails with a status, nothing
 * hangs, nothing is loaded, and a later LOAD works. */
static void test_load_transfer_fails(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth <= 4; nth++) {
        scn s;
        sim_config cfg = scn_fault_config(nth);   /* timeouts end the worker's half */
        cfg.workers = 1;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        /* Isend calls of the host: the notification, then fragments. */
        sim_world_fail_call(s.w, 0, SIM_FN_Isend, nth + 1);
        assert_int_equal(scn_load_bytes(&s, 0, 1, image, 13, NULL), OTM_OK);
        otm_status st = wait0(&s);
        assert_int_not_equal(st, OTM_OK);
        assert_int_equal(sim_world_images_loaded(s.w, 1), 0);
        assert_int_equal(scn_load_bytes(&s, 0, 1, image, 13, NULL), OTM_OK);
        assert_int_equal(wait0(&s), OTM_OK);
        assert_int_equal(sim_world_images_loaded(s.w, 1), 1);
        close1(&s);
    }
}

static void test_region_output(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {0, 1, 10, OTM_EXEC_INLINE_MAX - OTM_WIRE_EXEC_HEAD - 2,
                                     OTM_EXEC_INLINE_MAX - OTM_WIRE_EXEC_HEAD - 1,
                                     OTM_EXEC_INLINE_MAX, 3 * OTM_EXEC_FRAG + 5};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        scn s;
        sim_config cfg = config(seed);
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
        uint64_t out = 0;
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            assert_int_equal(scn_execute(&s, 0, 1, SIM_K_PRINT, sizes[i], 0), OTM_OK);
            out += sizes[i];
        }
        assert_int_equal(wait0(&s), OTM_OK);
        const sim_host_seen *seen = sim_world_host_seen(s.w);
        assert_int_equal(seen->out_bytes, out);
        assert_int_equal(seen->out_wrong, 0);
        assert_int_equal(seen->err_bytes, 2 * (sizeof sizes / sizeof *sizes));
        close1(&s);
    }
}

/* A host without a region_output hook takes the output of its regions
 * and drops it: the region still succeeds. */
static void test_region_output_without_hook(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    otm_node *host = sim_world_node(s.w, 0);
    host->hooks.region_output = NULL;
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_PRINT, 100, 0), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_PRINT, 3 * OTM_EXEC_FRAG, 0), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_int_equal(sim_world_host_seen(s.w)->out_bytes, 0);
    close1(&s);
}

static void test_kernel_fault(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(scn_alloc(&s, 0, 1, 8, &s.addr[0]), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_FAULT, 0, 0), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(sim_world_host_seen(s.w)->faults, 1);
    assert_int_equal(sim_world_host_seen(s.w)->last_signo, 11);
    /* The device refuses everything now, but for the exit (close1). */
    assert_int_equal(scn_retrieve(&s, 0, 1, s.out[1], s.addr[0], 8), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_DEVICE_FAILED);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_DEVICE_FAILED);
    close1(&s);
}

/* Events chained behind a region that faults (otm/event.h) reached the
 * worker before the fault (a long region ahead of it holds them all), and
 * are refused all the same, as if they came after it: its process may hold
 * broken state. The SUBMIT's fragments are still received (the teardown
 * finds nothing unreceived). */
static void test_kernel_fault_chained(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(scn_alloc(&s, 0, 1, 64, &s.addr[0]), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    s.keep = 1;
    scn_pattern(s.in[0], 64, 3);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_SLEEP, 1000, 0), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_FAULT, 0, 0), OTM_OK);
    assert_int_equal(scn_retrieve(&s, 0, 1, s.out[1], s.addr[0], 8), OTM_OK);
    assert_int_equal(scn_submit(&s, 0, 1, s.addr[0], s.in[0], 64), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(s.nev, 4);
    assert_int_equal(s.ev[0]->status, OTM_OK);
    assert_int_equal(s.ev[1]->status, OTM_ERR_KERNEL_FAULT);
    assert_int_equal(s.ev[2]->status, OTM_ERR_DEVICE_FAILED);
    assert_int_equal(s.ev[3]->status, OTM_ERR_DEVICE_FAILED);
    assert_int_equal(sim_world_node(s.w, 0)->stats.chained, 3);
    assert_int_equal(sim_world_node(s.w, 1)->stats.chained, 3);
    scn_drop_refs(&s);
    close1(&s);
}

/* A device that faulted refuses a SUBMIT whose data follows in fragments
 * and a LOAD whose bytes follow, but still receives those bytes: the tag
 * they came on carries nothing stale when the next event (to the other
 * device) takes it again. With one tag, the world's oracle of tags fails
 * the run otherwise; and nothing is left unreceived at the end. */
static void test_refusal_drains_payload(void **state)
{
    (void)state;
    sim_config cfg = config(3);
    cfg.workers = 2;
    cfg.node.ncomms = 1;
    cfg.node.tag_space = 1;
    cfg.node.inline_max = 0;        /* every payload in fragments (of 4) */
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(scn_alloc(&s, 0, 2, 16, &s.addr[0]), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_FAULT, 0, 0), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_KERNEL_FAULT);
    scn_pattern(s.in[0], 16, 5);
    assert_int_equal(scn_submit(&s, 0, 1, 0x1000, s.in[0], 16), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_DEVICE_FAILED);
    assert_int_equal(scn_load_bytes(&s, 0, 1, image, 13, NULL), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_DEVICE_FAILED);
    assert_int_equal(scn_submit(&s, 0, 2, s.addr[0], s.in[0], 16), OTM_OK);
    assert_int_equal(scn_retrieve(&s, 0, 2, s.out[0], s.addr[0], 16), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_memory_equal(s.out[0], s.in[0], 16);
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    sim_rest rest[3];
    assert_int_equal(sim_world_rest(s.w, rest), 0);     /* nothing in flight */
    for (int r = 0; r <= 2; r++)
        assert_int_equal(rest[r].unreceived, 0);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

/* Every allocation of the worker, then of the host, failing in turn over
 * a LOAD with bytes, a region printing 3 MiB and one faulting: each fails
 * with a status or loses only its output (said so), nothing hangs or
 * leaks, and the device serves (or, once faulted, refuses) what follows. */
static void test_allocations_fail(void **state)
{
    (void)state;
    for (int rank = 1; rank >= 0; rank--) {
        for (uint64_t nth = 1; nth <= 40; nth++) {
            scn s;
            sim_config cfg = scn_fault_config(nth);
            cfg.workers = 1;
            assert_int_equal(scn_open(&s, &cfg, 1), 0);
            s.keep = 1;
            sim_world_fail_alloc(s.w, rank, nth);
            scn_load_bytes(&s, 0, 1, image, 13, NULL);
            scn_execute(&s, 0, 1, SIM_K_PRINT, 3 * OTM_EXEC_FRAG, 0);
            scn_execute(&s, 0, 1, SIM_K_PRINT, 100, 0);
            scn_execute(&s, 0, 1, SIM_K_FAULT, 0, 0);
            (void)wait0(&s);
            const sim_host_seen *seen = sim_world_host_seen(s.w);
            /* What arrived is the pattern, never more than was printed. */
            assert_int_equal(seen->out_wrong, 0);
            assert_true(seen->out_bytes <= 3 * OTM_EXEC_FRAG + 100);
            /* A fault the host heard of is the region's status too, also
             * when late output rode on its reply in fragments. */
            for (int i = 0; i < s.nev && seen->faults; i++)
                if (s.ev[i]->kind == OTM_KIND_EXECUTE &&
                    s.ev[i]->p.execute.kernel == sim_kernel_addr(SIM_K_FAULT))
                    assert_int_equal(s.ev[i]->status, OTM_ERR_KERNEL_FAULT);
            scn_drop_refs(&s);
            close1(&s);
        }
    }
}

/* A region that faults is reported with its signal whichever allocation of
 * the worker fails: without memory for the result and its output, the
 * worker sends the fault alone. Each run fails the worker's nth allocation
 * from the EXECUTE on. */
static void test_fault_reported_without_memory(void **state)
{
    (void)state;
    int reported = 0;
    for (uint64_t nth = 1; nth <= 8; nth++) {
        scn s;
        sim_config cfg = scn_fault_config(nth);
        cfg.workers = 1;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
        assert_int_equal(wait0(&s), OTM_OK);
        sim_world_fail_alloc(s.w, 1, nth);
        assert_int_equal(scn_execute(&s, 0, 1, SIM_K_FAULT, 0, 0), OTM_OK);
        otm_status st = wait0(&s);
        const sim_host_seen *seen = sim_world_host_seen(s.w);
        if (st == OTM_ERR_KERNEL_FAULT) {
            assert_int_equal(seen->faults, 1);
            assert_int_equal(seen->last_signo, 11);
            reported++;
        } else {
            assert_int_equal(seen->faults, 0);
        }
        close1(&s);
    }
    /* Most runs lose an allocation the region does not need. */
    assert_true(reported >= 4);
}

/* Many images at once: the worker's table of loaded images grows past its
 * first capacity (8), and they unload in turn. */
static void test_many_images(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    uint64_t ids[20];
    for (int i = 0; i < 20; i++)
        assert_int_equal(scn_load_bytes(&s, 0, 1, image, 13, &ids[i]), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    for (int i = 0; i < 20; i++)
        assert_int_equal(scn_unload(&s, 0, 1, ids[i]), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    close1(&s);
}

/* A LOAD that says its bytes travel but has none: the host refuses it. */
static void test_load_without_bytes_refused(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = 1, .host = s.entries[1],
                 .size = SIM_K_COUNT + 1, .result = &s.nentries[1],
                 .image = {.id = 50, .bytes = image, .size = 0, .send = 1}};
    otm_node *host = sim_world_node(s.w, 0);
    assert_int_equal(otm_host_enqueue(host, s.q[0], &op, NULL), OTM_ERR_INVALID);
    op.image = (otm_image_ref){.id = 51, .bytes = NULL, .size = 8, .send = 1};
    assert_int_equal(otm_host_enqueue(host, s.q[0], &op, NULL), OTM_ERR_INVALID);
    assert_true(otm_queue_empty(s.q[0]));
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    close1(&s);
}

/* A worker that answers a LOAD with more entries than the host has room
 * for: the host refuses the reply (OTM_ERR_BAD_SIZE), writes nothing past
 * its table, and the job still serves and ends cleanly. */
static void test_load_reply_too_many_entries(void **state)
{
    (void)state;
    scn s;
    open1(&s);
    struct {
        otm_entry table[2];
        uint8_t guard[SIM_K_COUNT * sizeof(otm_entry)];
    } room;
    memset(&room, 0xa5, sizeof room);
    uint64_t count = 0;
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = 1, .host = room.table, .size = 2,
                 .result = &count, .image = {.id = 60, .size = 8, .hash = sim_image_hash(8),
                                             .names_hash = sim_names_hash()}};
    assert_int_equal(otm_host_enqueue(sim_world_node(s.w, 0), s.q[0], &op, NULL), OTM_OK);
    assert_int_equal(wait0(&s), OTM_ERR_BAD_SIZE);
    assert_int_equal(count, SIM_K_COUNT + 1);   /* what the worker claimed */
    for (size_t i = 0; i < sizeof room.guard; i++)
        assert_int_equal(room.guard[i], 0xa5);
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(wait0(&s), OTM_OK);
    assert_int_equal(s.nentries[1], SIM_K_COUNT + 1);
    close1(&s);
}

int main(void)
{
    make_image();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_bytes_seeded),
        cmocka_unit_test(test_load_bytes_exhaustive),
        cmocka_unit_test(test_load_refused),
        cmocka_unit_test(test_unload_keeps_shared_entries),
        cmocka_unit_test(test_load_transfer_fails),
        cmocka_unit_test(test_region_output),
        cmocka_unit_test(test_region_output_without_hook),
        cmocka_unit_test(test_kernel_fault),
        cmocka_unit_test(test_kernel_fault_chained),
        cmocka_unit_test(test_refusal_drains_payload),
        cmocka_unit_test(test_allocations_fail),
        cmocka_unit_test(test_fault_reported_without_memory),
        cmocka_unit_test(test_many_images),
        cmocka_unit_test(test_load_without_bytes_refused),
        cmocka_unit_test(test_load_reply_too_many_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
