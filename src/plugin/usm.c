/*
 * usm.c - unified shared memory across processes, a worker's end: the
 * pager's thread and what a region does before and after it runs (the
 * host's ranges learned and reserved, the bytes it changed written back,
 * the pages dropped once no region runs); and the state both ends share
 * (usm_internal.h). Rank 0's page server is usm_host.c.
 *
 * Coherence is OpenMP's for unified shared memory: a region reads the
 * host's memory as it is when the region first touches each page, and the
 * host sees the region's writes when the region has completed (they are
 * written back before the EXECUTE's reply). A region that starts while
 * another runs on the same device shares the pages that one holds.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../shell/idle.h"
#include "otm/fault.h"
#include "otm/host_code.h"
#include "otm/page.h"
#include "otm/pager.h"
#include "plugin.h"
#include "usm_internal.h"

/* Ranges asked for at first; a host with more says how many it has. */
#define RANGES_FIRST 1024u
/* Pages asked for at a fault that does not continue the last run (a run
 * that goes on doubles, up to a READ's most: run_for). */
#define RUN_FIRST 16u
otp_usm *otp_usm_new(void)
{
    otp_usm *u = otp_plugin_calloc(1, sizeof *u);
    if (u) {
        pthread_mutex_init(&u->lock, NULL);
        u->page_mask = otd_pager_page_size() - 1;
    }
    return u;
}

void otp_usm_join(otp_usm *u)
{
    if (!u || !u->thread_on)
        return;
    atomic_store(&u->stop, 1);
    pthread_join(u->thread, NULL);
    u->thread_on = 0;
}

/* ---- a worker: calls to rank 0 -------------------------------------------------- */

static int next_tag(otp_usm *u)
{
    return OTM_PAGE_TAG_FIRST + (int)(atomic_fetch_add(&u->next_tag, 1) % 16384u);
}

/* One ask, waited for: OMPTARGET_MPI_TIMEOUT bounds it (rank 0 may have
 * died), and the worker's end cuts it short. */
static otm_status call(otp_plugin *p, otm_page_kind kind, uint64_t addr, uint64_t len,
                       uint8_t *ask, uint64_t payload, uint8_t *reply, uint64_t cap,
                       uint64_t *value)
{
    otp_usm *u = p->usm;
    otm_page_call c;
    otm_status st = otm_page_call_start(&p->node, &c, kind, next_tag(u), addr, len, ask,
                                        payload, reply, cap);
    if (st)
        return st;
    ots_idle idle;
    ots_idle_init(&idle, &p->settings);
    uint64_t start = ots_clock_ns(), limit = p->settings.core.timeout_ns;
    while (!otm_page_call_test(&p->node, &c, &st, value)) {
        if (atomic_load(&u->stop) || (limit && ots_clock_ns() - start > limit)) {
            otm_page_call_cancel(&p->node, &c);
            return atomic_load(&u->stop) ? OTM_ERR_SHUTDOWN : OTM_ERR_TIMEOUT;
        }
        ots_idle_after(&idle, 0, 1);
    }
    return st;
}

/* ---- a worker: the host's ranges ------------------------------------------------ */

/* The host's ranges, asked for with room for all of them. */
static otm_status fetch_ranges(otp_plugin *p, uint64_t *n)
{
    otp_usm *u = p->usm;
    uint64_t want = u->ranges_cap ? u->ranges_cap : RANGES_FIRST;
    for (int tries = 0; tries < 3; tries++) {
        if (want > u->ranges_cap) {
            uint64_t *grown = otp_plugin_realloc(u->ranges,
                                                 OTM_PAGE_REPLY_HEAD + 16 * want);
            if (!grown)
                return OTM_ERR_NOMEM;
            u->ranges = grown, u->ranges_cap = want;
        }
        uint8_t ask[OTM_PAGE_ASK_HEAD];
        otm_status st = call(p, OTM_PAGE_RANGES, 0, want, ask, 0, (uint8_t *)u->ranges,
                             OTM_PAGE_REPLY_HEAD + 16 * want, n);
        if (st != OTM_ERR_BAD_SIZE)
            return st == OTM_OK && *n > want ? OTM_ERR_BAD_MESSAGE : st;
        want = *n + 64;
    }
    return OTM_ERR_BAD_SIZE;
}

/* The host's ranges but the parts rank 0's code and constants hold here
 * (otm/host_code.h): a call into rank 0's code is resumed in this
 * process's copy, which a page of rank 0's would not be. */
static otm_status reserve(otd_pager *pg, const otd_range *r, uint64_t n, char *why,
                          size_t len)
{
    size_t nplaced;
    const otd_range *placed = otd_host_code_ranges(&nplaced);
    otm_status st = OTM_OK;
    for (uint64_t i = 0; i < n && !st; i++) {
        uint64_t ro = r[i].start & OTD_RANGE_READ_ONLY;
        otd_range piece = {r[i].start & ~(uint64_t)OTD_RANGE_READ_ONLY, r[i].end};
        for (size_t j = 0; j < nplaced && piece.start < piece.end && !st; j++) {
            if (placed[j].end <= piece.start || placed[j].start >= piece.end)
                continue;
            if (placed[j].start > piece.start) {
                otd_range before = {piece.start | ro, placed[j].start};
                st = otd_pager_reserve(pg, &before, 1, why, len);
            }
            piece.start = placed[j].end;
        }
        piece.start |= ro;
        if (!st && (piece.start & ~(uint64_t)OTD_RANGE_READ_ONLY) < piece.end)
            st = otd_pager_reserve(pg, &piece, 1, why, len);
    }
    return st;
}

/* The host's ranges, asked for and reserved here (under u->lock): at the
 * first region, then when a region faults outside them (retry_fault). A
 * range rank 0 mapped since is so reserved at its first touch; one it
 * unmapped stays reserved, and a touch there asks rank 0, which refuses
 * it: nothing is served from a stale list. */
static otm_status learn_ranges(otp_plugin *p, char *why, size_t len)
{
    otp_usm *u = p->usm;
    uint64_t n = 0;
    otm_status st = fetch_ranges(p, &n);
    if (st)
        snprintf(why, len, "unified shared memory: the host's address ranges: %s",
                 otm_status_text(st));
    else
        st = reserve(u->pager,
                     (const otd_range *)(void *)((uint8_t *)u->ranges + OTM_PAGE_REPLY_HEAD),
                     n, why, len);
    atomic_fetch_add(&u->generation, 1);
    u->learned |= st == OTM_OK;
    return st;
}

/* The pager's thread, woken by retry_fault: the ranges learned again, and
 * whether the fault's address is now reached. */
static void answer_ask(otp_plugin *p)
{
    otp_usm *u = p->usm;
    unsigned seq = atomic_load(&u->ask_seq);
    if (seq == atomic_load(&u->answer_seq))
        return;
    char why[512];
    pthread_mutex_lock(&u->lock);
    otm_status st = learn_ranges(p, why, sizeof why);
    pthread_mutex_unlock(&u->lock);
    if (st)
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: %s", p->node.rank, why);
    atomic_store(&u->answer, otd_pager_reaches(u->pager, atomic_load(&u->ask_addr),
                                               atomic_load(&u->ask_write)));
    atomic_store(&u->answer_seq, seq);
    sem_post(&u->answered);
}

/* The pager's thread: a fault there is never asked about (it would wait
 * for itself). A thread's last retried access (its page, the low bit set
 * for a write) and the generation it was retried at: the same access
 * faulting again with nothing learned since is a fault. */
static __thread int on_pager_thread __attribute__((tls_model("initial-exec")));
static __thread uint64_t retried_access __attribute__((tls_model("initial-exec")));
static __thread unsigned retried_at __attribute__((tls_model("initial-exec")));

/* sem_wait in slices (async-signal-safe), given up when the worker ends
 * or the pager's thread did. */
static int wait_sem(otp_usm *u, sem_t *sem)
{
    while (!atomic_load(&u->stop) && !atomic_load(&u->pager_gone)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000;
        if (until.tv_nsec >= 1000000000)
            until.tv_sec++, until.tv_nsec -= 1000000000;
        if (sem_timedwait(sem, &until) == 0)
            return 1;
    }
    return 0;
}

/* otd_fault_retry_fn, in the SIGSEGV handler of any thread of this rank: a
 * region touched an address outside the host's ranges as last learned, or
 * wrote one learned read-only. The pager's thread learns them again; the
 * touch runs again when it now reaches the host. */
static int retry_fault(void *ctx, uint64_t addr, int write)
{
    otp_plugin *p = ctx;
    otp_usm *u = p->usm;
    uint64_t access = (addr & ~u->page_mask) | (write != 0);
    if (on_pager_thread || !u->thread_on ||
        (access == retried_access && atomic_load(&u->generation) == retried_at))
        return 0;
    int saved = errno;      /* the interrupted code's */
    if (!wait_sem(u, &u->ask_slot))
        return errno = saved, 0;
    unsigned seq = atomic_load(&u->ask_seq) + 1;
    atomic_store(&u->ask_addr, addr);
    atomic_store(&u->ask_write, write);
    atomic_store(&u->ask_seq, seq);
    otd_pager_wake(u->pager);
    int ok = 0;
    while (wait_sem(u, &u->answered))
        if (atomic_load(&u->answer_seq) == seq) {
            ok = atomic_load(&u->answer);
            break;
        }
    sem_post(&u->ask_slot);
    if (ok)
        retried_access = access, retried_at = atomic_load(&u->generation);
    errno = saved;
    return ok;
}

/* ---- a worker: the pager's thread -------------------------------------------- */

/* How many pages to ask for at a fault on `page`: RUN_FIRST, or twice
 * the last run when the fault continues it (a region walking memory in
 * order: 16, 32, ... up to a READ's most), as unified memory on GPUs
 * prefetches what it sees walked. */
static uint64_t run_for(const otp_usm *u, uint64_t page, uint64_t most)
{
    uint64_t want = page == u->run_end && u->run_len ? 2 * u->run_len : RUN_FIRST;
    if (most > OTD_PAGER_RUN_MAX)
        most = OTD_PAGER_RUN_MAX;
    return want < most ? want : most;
}

/* The page from rank 0, placed, with the pages after it that are not
 * placed yet (run_for's count, in one ask). Refused when rank 0 has no
 * such memory or cannot answer: the region then faults there, as it
 * would alone; a run that rank 0 cannot read whole is asked again for
 * the one page. */
static void page_in(otp_plugin *p, uint64_t page, uint8_t *reply, uint64_t cap)
{
    uint8_t ask[OTM_PAGE_ASK_HEAD];
    otp_usm *u = p->usm;
    otd_pager *pg = u->pager;
    uint64_t size = otd_pager_page_size(), got = 0;
    uint64_t want = run_for(u, page, (cap - OTM_PAGE_REPLY_HEAD) / size);
    uint64_t n = otd_pager_absent_run(pg, page, want);
    if (n == 0)
        return;     /* placed since the fault was read */
    u->run_end = page + n * size, u->run_len = n;
    otm_status st = call(p, OTM_PAGE_READ, page, n * size, ask, 0, reply, cap, &got);
    if (st == OTM_ERR_BAD_POINTER && n > 1) {
        n = 1;
        st = call(p, OTM_PAGE_READ, page, size, ask, 0, reply, cap, &got);
    }
    if (st == OTM_OK && got != n * size)
        st = OTM_ERR_BAD_MESSAGE;
    /* The faulting page is woken last: placing it lets its region go on,
     * end, and drop every page (the last region's end), and a page of the
     * run placed after that drop would outlive it with the bytes of this
     * read, which the next region would take for the host's. */
    if (st == OTM_OK)
        st = otd_pager_place_run(pg, page, n, reply + OTM_PAGE_REPLY_HEAD);
    if (st == OTM_OK)
        return;
    if (st != OTM_ERR_BAD_POINTER) {
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: the host's page 0x%llx cannot be placed "
                       "here: %s", p->node.rank, (unsigned long long)page,
                       otm_status_text(st));
        atomic_store(&u->refused[atomic_fetch_add(&u->nrefused, 1) % REFUSED_KEPT], page);
    }
    otd_pager_refuse(pg, page);
}

int otp_usm_refused(otp_plugin *p, uint64_t addr)
{
    otp_usm *u = p->usm;
    uint64_t page = addr & ~(otd_pager_page_size() - 1);
    for (unsigned i = 0; u && page && i < REFUSED_KEPT; i++)
        if (atomic_load(&u->refused[i]) == page)
            return 1;
    return 0;
}

static void *pager_thread(void *arg)
{
    otp_plugin *p = arg;
    otp_usm *u = p->usm;
    uint64_t cap = OTM_PAGE_REPLY_HEAD + OTM_PAGE_READ_MAX;
    uint8_t *reply = otp_plugin_malloc(cap);
    on_pager_thread = 1;
    while (reply && !atomic_load(&u->stop)) {
        uint64_t page = 0;
        int r = otd_pager_next_fault(u->pager, 50, &page);
        if (r < 0) {
            otp_plugin_log(OTM_LOG_ERROR, "rank %d: the pager's descriptor failed: "
                           "regions can no longer reach the host's memory", p->node.rank);
            break;
        }
        if (r == 1)
            page_in(p, page, reply, cap);
        else if (r == 2)
            answer_ask(p);
    }
    otp_plugin_free(reply);
    atomic_store(&u->pager_gone, 1);
    return NULL;
}

/* The pager, its thread, and the fault handler's retry hook; u->why says
 * what failed. */
static void start_pager(otp_plugin *p, otp_usm *u)
{
    if (otd_pager_open(&u->pager, u->why, sizeof u->why))
        return;
    otd_pager_use_alloc(u->pager, otp_plugin_malloc, otp_plugin_free);
    sem_init(&u->ask_slot, 0, 1);
    sem_init(&u->answered, 0, 0);
    u->sems_on = 1;
    if (pthread_create(&u->thread, NULL, pager_thread, p)) {
        snprintf(u->why, sizeof u->why, "no thread for the pager");
        return;
    }
    u->thread_on = 1;
    otd_fault_set_retry(retry_fault, p);
}

/* The pager and its thread, once (the setting, or the first LOAD of a
 * program that requires unified shared memory). A pager that cannot open
 * is said at each region, which then fails. */
void otp_usm_worker_enable(otp_plugin *p)
{
    pthread_mutex_lock(&p->images_lock);
    if (!p->usm && (p->usm = otp_usm_new()) != NULL) {
        otp_usm *u = p->usm;
        u->records = otp_plugin_malloc(OTM_PAGE_ASK_HEAD + OTM_PAGE_WRITE_MAX);
        if (!u->records)
            snprintf(u->why, sizeof u->why, "out of memory");
        else
            start_pager(p, u);
        /* Rank 0's stack is served here now. */
        otd_host_code_unguard();
        __atomic_store_n(&p->usm_on, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&p->images_lock);
}

/* ---- a worker: around each region -------------------------------------------- */

otm_status otp_usm_region_begin(otp_plugin *p, char *why, size_t len)
{
    otp_usm *u = p->usm;
    if (!__atomic_load_n(&p->usm_on, __ATOMIC_ACQUIRE) || !u)
        return OTM_OK;
    if (!u->thread_on)
        return snprintf(why, len, "unified shared memory: %s", u->why), OTM_ERR_INVALID;
    pthread_mutex_lock(&u->lock);
    otm_status st = u->learned ? OTM_OK : learn_ranges(p, why, len);
    if (st == OTM_OK)
        u->running++;
    pthread_mutex_unlock(&u->lock);
    return st;
}

/* What a region wrote, gathered into asks of at most OTM_PAGE_WRITE_MAX
 * bytes of records, each sent when full. */
typedef struct writeback {
    otp_plugin *p;
    uint8_t *buf;                   /* the ask's header, then records */
    uint64_t used;                  /* bytes of records */
    otm_status st;
} writeback;

static otm_status send_records(writeback *w)
{
    uint64_t done = 0;
    if (!w->used)
        return OTM_OK;
    uint8_t reply[OTM_PAGE_REPLY_HEAD];
    otm_status st = call(w->p, OTM_PAGE_WRITE, 0, w->used, w->buf, w->used, reply,
                         sizeof reply, &done);
    w->used = 0;
    return st;
}

static int add_record(void *ctx, uint64_t addr, const void *bytes, uint64_t len)
{
    writeback *w = ctx;
    if (w->used + OTM_PAGE_RECORD_HEAD + len > OTM_PAGE_WRITE_MAX &&
        (w->st = send_records(w)) != OTM_OK)
        return 1;
    uint8_t *at = w->buf + OTM_PAGE_ASK_HEAD + w->used;
    memcpy(at, &addr, 8);
    memcpy(at + 8, &len, 8);
    memcpy(at + OTM_PAGE_RECORD_HEAD, bytes, len);
    w->used += OTM_PAGE_RECORD_HEAD + len;
    return 0;
}

otm_status otp_usm_region_end(otp_plugin *p)
{
    otp_usm *u = p->usm;
    if (!__atomic_load_n(&p->usm_on, __ATOMIC_ACQUIRE) || !u || !u->thread_on)
        return OTM_OK;
    writeback w = {.p = p, .buf = u->records};
    pthread_mutex_lock(&u->lock);
    int last = --u->running == 0;
    if (!otd_pager_flush(u->pager, last, add_record, &w))
        w.st = send_records(&w);
    pthread_mutex_unlock(&u->lock);
    if (w.st)
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: what the region wrote in the host's "
                       "memory could not be written back: %s%s", p->node.rank,
                       otm_status_text(w.st), w.st != OTM_ERR_BAD_POINTER ? "" :
                       " (the host unmapped that memory, or made it read-only, after "
                       "this device learned it writable)");
    return w.st;
}

void otp_usm_worker_stop(otp_plugin *p)
{
    otp_usm *u = p->usm;
    if (!u)
        return;
    if (u->thread_on)
        otd_fault_set_retry(NULL, NULL);
    otp_usm_join(u);
    otd_pager_close(u->pager);
    u->pager = NULL;
}

void otp_usm_release(otp_plugin *p)
{
    otp_usm *u = p->usm;
    if (!u)
        return;
    otp_plugin_free(u->ranges);
    otp_plugin_free(u->records);
    if (u->sems_on)
        sem_destroy(&u->ask_slot), sem_destroy(&u->answered);
    pthread_mutex_destroy(&u->lock);
    otp_plugin_free(u);
    p->usm = NULL;
}
