/*
 * gpu_nowait: `nowait` regions on every accelerator of the job at once
 * (the GPUs the device ranks proxy, or the host plugin's devices under
 * OMPTARGET_MPI_REMOTE_PLUGINS=host), then omp_target_memcpy between
 * devices: accelerator to accelerator on one rank and across ranks,
 * accelerator to a CPU device (its own rank's, another rank's) and back;
 * every byte checked on the host, and on the destination device by a
 * region of its own where it runs this program's regions.
 *
 *   gpu_nowait [--m ELEMENTS] [--work ROUNDS]
 *
 * 1. Each accelerator fills a buffer of its own (omp_target_alloc) in a
 *    region of its own, alone (timed), then all at once (nowait, one
 *    host thread): the sum of the alone times against the time all took
 *    says how many ran at once.
 * 2. Each buffer is checked: a sum on its device, then every element on
 *    the host.
 * 3. The exchanges, each into a fresh buffer on the destination, checked.
 * 4. A last round, nowait on every accelerator at once, on what each
 *    received.
 */
#define GPU_PROGRAM "gpu_nowait"
#include "gpu_common.h"

/* Element i of the buffer seeded s: ROUNDS of an integer hash, so that a
 * region has work to do; the same on every device and the host. */
#pragma omp declare target
static inline uint32_t value(uint32_t s, uint32_t i, int rounds)
{
    uint32_t x = s * 0x9e3779b9u ^ i;
    for (int r = 0; r < rounds; r++) {
        x ^= x >> 16;
        x *= 0x7feb352du;
        x ^= x >> 15;
        x *= 0x846ca68bu;
        x ^= x >> 16;
    }
    return x;
}
#pragma omp end declare target

/* Fills p[0..m) on device d with seed s; nowait when `async`. */
static void fill_on(int d, uint32_t *p, long m, uint32_t s, int rounds, int async)
{
    if (async) {
#pragma omp target teams distribute parallel for device(d) is_device_ptr(p) nowait
        for (long i = 0; i < m; i++)
            p[i] = value(s, (uint32_t)i, rounds);
    } else {
#pragma omp target teams distribute parallel for device(d) is_device_ptr(p)
        for (long i = 0; i < m; i++)
            p[i] = value(s, (uint32_t)i, rounds);
    }
}

/* The sum of p[0..m) (mod 2^64) on device d, in PARTS partial sums that
 * the region writes to parts (device memory of d, omp_target_alloc): no
 * reduction clause, so that a nowait region writes nothing of the host's
 * stack. sum_collect adds them up on the host. */
#define PARTS 1024
static void sum_on(int d, const uint32_t *p, long m, uint64_t *parts, int async)
{
    if (async) {
#pragma omp target teams distribute parallel for device(d) is_device_ptr(p, parts) nowait
        for (int b = 0; b < PARTS; b++) {
            uint64_t s = 0;
            for (long i = m * b / PARTS; i < m * (b + 1) / PARTS; i++)
                s += p[i];
            parts[b] = s;
        }
    } else {
#pragma omp target teams distribute parallel for device(d) is_device_ptr(p, parts)
        for (int b = 0; b < PARTS; b++) {
            uint64_t s = 0;
            for (long i = m * b / PARTS; i < m * (b + 1) / PARTS; i++)
                s += p[i];
            parts[b] = s;
        }
    }
}

/* The sum of device d's partial sums; 0 with *ok cleared if they cannot
 * be read. */
static uint64_t sum_collect(int d, const uint64_t *parts, int *ok)
{
    uint64_t host[PARTS], s = 0;
    if (omp_target_memcpy(host, (void *)parts, sizeof host, 0, 0, omp_get_initial_device(), d)) {
        *ok = 0;
        return 0;
    }
    for (int b = 0; b < PARTS; b++)
        s += host[b];
    return s;
}

static uint64_t host_sum(uint32_t s, long m, int rounds)
{
    uint64_t t = 0;
    for (long i = 0; i < m; i++)
        t += value(s, (uint32_t)i, rounds);
    return t;
}

/* Every element of device d's buffer p, copied back to the host. */
static long first_wrong(int d, const uint32_t *p, long m, uint32_t s, int rounds,
                        uint32_t *scratch)
{
    if (omp_target_memcpy(scratch, p, (size_t)m * sizeof *p, 0, 0, omp_get_initial_device(), d))
        return -2;
    for (long i = 0; i < m; i++)
        if (scratch[i] != value(s, (uint32_t)i, rounds))
            return i;
    return -1;
}

static long m_elems;
static int rounds;
static uint32_t *scratch;
static gpu_job job;

/* Copies device `from`'s buffer (seed s) into a fresh buffer on device
 * `to`, checks it there (a sum, where `to` runs regions) and on the host. */
static void exchange(const char *check, int from, const uint32_t *src, int to, uint32_t s)
{
    char a[160], b[160];
    gpu_dev_name(&job, from, a, sizeof a);
    gpu_dev_name(&job, to, b, sizeof b);
    size_t bytes = (size_t)m_elems * sizeof(uint32_t);
    uint32_t *dst = omp_target_alloc(bytes, to);
    if (!dst) {
        gpu_check(0, check, "omp_target_alloc of %zu bytes on device %d (%s) failed", bytes, to,
                  b);
        return;
    }
    double t = omp_get_wtime();
    int rc = omp_target_memcpy(dst, (void *)src, bytes, 0, 0, to, (int)from);
    t = omp_get_wtime() - t;
    if (rc) {
        gpu_check(0, check, "omp_target_memcpy device %d (%s) -> device %d (%s) returned %d",
                  from, a, to, b, rc);
        omp_target_free(dst, to);
        return;
    }
    uint64_t want = host_sum(s, m_elems, rounds), got = want;
    int summed = gpu_runs_regions(&job, to), read = 1;
    uint64_t *parts = summed ? omp_target_alloc(PARTS * sizeof *parts, to) : NULL;
    if (summed && parts) {
        sum_on(to, dst, m_elems, parts, 0);
        got = sum_collect(to, parts, &read);
        omp_target_free(parts, to);
    } else if (summed) {
        read = 0;
    }
    if (!read)
        got = ~want;
    long wrong = first_wrong(to, dst, m_elems, s, rounds, scratch);
    gpu_check(wrong == -1 && got == want, check,
              "device %d (%s) -> device %d (%s): %zu bytes in %.4f s (%.0f MiB/s); %s; on the "
              "host %s", from, a, to, b, bytes, t, bytes / t / 1048576.0,
              !summed ? "no region on the destination (variant " GPU_VARIANT ")"
              : got == want ? "the sum on the destination right" : "the sum on the destination WRONG",
              wrong == -1 ? "every element right" : wrong == -2 ? "the copy back FAILED"
                                                                : "an element WRONG");
    omp_target_free(dst, to);
}

int main(int argc, char **argv)
{
    m_elems = gpu_arg(argc, argv, "--m", 1L << 22);
    rounds = (int)gpu_arg(argc, argv, "--work", 64);
    gpu_job_read(&job);
    printf("gpu_nowait: %ld elements (%.1f MiB) a buffer, %d hash rounds an element, %d "
           "devices, variant %s\n", m_elems, m_elems * 4.0 / 1048576.0, rounds, job.n,
           GPU_VARIANT);
    if (job.n < 1) {
        gpu_check(0, "devices", "omp_get_num_devices() = 0: no device took this program's "
                  "images (%s; under omptarget-mpirun?)", GPU_IMAGES);
        return gpu_finish("no device");
    }
    static gpu_where where[GPU_MAX_DEVICES];
    gpu_devices_report(&job, where);

    int acc[GPU_MAX_DEVICES], na = 0;
    for (int d = 0; d < job.n; d++)
        if (job.dev[d].proxied && gpu_runs_regions(&job, d))
            acc[na++] = d;
    scratch = malloc((size_t)m_elems * sizeof *scratch);
    if (!scratch) {
        gpu_check(0, "memory", "no host memory for %ld elements", m_elems);
        return gpu_finish("out of memory");
    }
    if (!na) {
        gpu_check(0, "accelerators", "the job has no accelerator that runs this program's "
                  "regions: no proxied device (OMPTARGET_MPI_REMOTE_PLUGINS?)");
        return gpu_finish("no accelerator");
    }
    char name[160], check[64];
    size_t bytes = (size_t)m_elems * sizeof(uint32_t);
    static uint32_t *buf[GPU_MAX_DEVICES];
    for (int a = 0; a < na; a++) {
        buf[a] = omp_target_alloc(bytes, acc[a]);
        gpu_dev_name(&job, acc[a], name, sizeof name);
        if (!buf[a]) {
            gpu_check(0, "alloc", "omp_target_alloc of %zu bytes on device %d (%s)", bytes,
                      acc[a], name);
            return gpu_finish("out of device memory");
        }
    }

    /* 1. Alone, then all at once. The first region of each device loads
     * its image: one untimed round first. */
    for (int a = 0; a < na; a++)
        fill_on(acc[a], buf[a], m_elems, 0, rounds, 0);
    double alone = 0;
    for (int a = 0; a < na; a++) {
        double t = omp_get_wtime();
        fill_on(acc[a], buf[a], m_elems, (uint32_t)(a + 1) * 17u, rounds, 0);
        t = omp_get_wtime() - t;
        alone += t;
        gpu_dev_name(&job, acc[a], name, sizeof name);
        printf("TIME alone device %d (%s): %.4f s\n", acc[a], name, t);
    }
    double t = omp_get_wtime();
    for (int a = 0; a < na; a++)
        fill_on(acc[a], buf[a], m_elems, (uint32_t)(a + 1) * 31u, rounds, 1);
#pragma omp taskwait
    t = omp_get_wtime() - t;
    printf("TIME nowait: %d accelerators at once %.4f s, alone one after another %.4f s: "
           "%.2f at once on average\n", na, t, alone, t > 0 ? alone / t : 0.0);

    /* 2. Every buffer, on its device (nowait, all at once) and on the host. */
    static uint64_t sums[GPU_MAX_DEVICES], *parts[GPU_MAX_DEVICES];
    for (int a = 0; a < na; a++) {
        parts[a] = omp_target_alloc(PARTS * sizeof(uint64_t), acc[a]);
        if (!parts[a]) {
            gpu_check(0, "alloc", "omp_target_alloc of the partial sums on device %d", acc[a]);
            return gpu_finish("out of device memory");
        }
    }
    for (int a = 0; a < na; a++)
        sum_on(acc[a], buf[a], m_elems, parts[a], 1);
#pragma omp taskwait
    for (int a = 0; a < na; a++) {
        int read = 1;
        sums[a] = sum_collect(acc[a], parts[a], &read);
        if (!read)
            sums[a] = ~host_sum((uint32_t)(a + 1) * 31u, m_elems, rounds);
    }
    for (int a = 0; a < na; a++) {
        uint32_t s = (uint32_t)(a + 1) * 31u;
        uint64_t want = host_sum(s, m_elems, rounds);
        long wrong = first_wrong(acc[a], buf[a], m_elems, s, rounds, scratch);
        gpu_dev_name(&job, acc[a], name, sizeof name);
        snprintf(check, sizeof check, "nowait_device_%d", acc[a]);
        gpu_check(sums[a] == want && wrong == -1, check,
                  "device %d (%s): its nowait region's %ld elements: the sum on the device %s, "
                  "every element on the host %s", acc[a], name, m_elems,
                  sums[a] == want ? "right" : "WRONG",
                  wrong == -1 ? "right" : wrong == -2 ? "not copied back" : "NOT right");
    }

    /* 3. The exchanges. */
    int same = -1, across = -1;     /* indexes in acc[] of a pair's first */
    for (int a = 0; a + 1 < na && same < 0; a++)
        if (job.dev[acc[a]].rank == job.dev[acc[a + 1]].rank)
            same = a;
    int other = -1;                 /* an accelerator of another rank than acc[0]'s */
    for (int a = 1; a < na && other < 0; a++)
        if (job.dev[acc[a]].rank != job.dev[acc[0]].rank)
            other = a;
    across = other;
#define SEED(a) ((uint32_t)((a) + 1) * 31u)
    if (same >= 0)
        exchange("exchange_same_rank", acc[same], buf[same], acc[same + 1], SEED(same));
    else
        gpu_skip("exchange_same_rank", "no rank has two accelerators");
    if (across >= 0)
        exchange("exchange_across_ranks", acc[0], buf[0], acc[across], SEED(0));
    else
        gpu_skip("exchange_across_ranks", "one rank serves every accelerator");
    /* An accelerator to the CPU device of its own rank, of another rank,
     * and from a CPU device back to an accelerator. */
    int own_cpu = gpu_cpu_of(&job, job.dev[acc[0]].rank), far_cpu = -1;
    for (int d = 0; d < job.n && far_cpu < 0; d++)
        if (!job.dev[d].proxied && job.dev[d].rank != job.dev[acc[0]].rank &&
            job.dev[d].rank >= 0)
            far_cpu = d;
    if (own_cpu >= 0)
        exchange("exchange_to_own_cpu", acc[0], buf[0], own_cpu, SEED(0));
    else
        gpu_skip("exchange_to_own_cpu", "the map names no CPU device for the rank");
    if (far_cpu >= 0)
        exchange("exchange_to_other_cpu", acc[0], buf[0], far_cpu, SEED(0));
    else
        gpu_skip("exchange_to_other_cpu", "the job has one device rank");
    if (own_cpu >= 0) {
        /* The CPU device's buffer filled from the host, then to the last
         * accelerator (another rank's when there is one). */
        uint32_t *cbuf = omp_target_alloc(bytes, own_cpu);
        int ok = cbuf != NULL;
        for (long i = 0; ok && i < m_elems; i++)
            scratch[i] = value(SEED(0), (uint32_t)i, rounds);
        ok = ok && !omp_target_memcpy(cbuf, scratch, bytes, 0, 0, own_cpu,
                                      omp_get_initial_device());
        if (ok)
            exchange("exchange_from_cpu", own_cpu, cbuf, acc[na - 1], SEED(0));
        else
            gpu_check(0, "exchange_from_cpu", "the CPU device %d's buffer could not be set up",
                      own_cpu);
        if (cbuf)
            omp_target_free(cbuf, own_cpu);
    }

    /* 4. Every accelerator at once again, each on a copy of its left
     * neighbour's buffer (device to device), nowait. */
    static uint32_t *recv[GPU_MAX_DEVICES];
    int copied = 1;
    for (int a = 0; a < na; a++) {
        int from = (a + na - 1) % na;
        recv[a] = omp_target_alloc(bytes, acc[a]);
        copied &= recv[a] && !omp_target_memcpy(recv[a], buf[from], bytes, 0, 0, acc[a],
                                                acc[from]);
    }
    if (copied) {
        for (int a = 0; a < na; a++)
            sum_on(acc[a], recv[a], m_elems, parts[a], 1);
#pragma omp taskwait
        int ok = 1, read = 1;
        for (int a = 0; a < na; a++) {
            uint64_t got = sum_collect(acc[a], parts[a], &read);
            ok &= got == host_sum(SEED((a + na - 1) % na), m_elems, rounds);
        }
        ok &= read;
        gpu_check(ok, "nowait_ring", "%d accelerators each summed its neighbour's buffer, "
                  "copied device to device, at once (nowait): %s", na,
                  ok ? "every sum right" : "a sum WRONG");
    } else {
        gpu_check(0, "nowait_ring", "a buffer could not be copied device to device");
    }
    for (int a = 0; a < na; a++) {
        if (recv[a])
            omp_target_free(recv[a], acc[a]);
        omp_target_free(buf[a], acc[a]);
        omp_target_free(parts[a], acc[a]);
    }
    free(scratch);
    char what[128];
    snprintf(what, sizeof what, "%d accelerators of %d devices, variant %s", na, job.n,
             GPU_VARIANT);
    return gpu_finish(what);
}
