/*
 * sim_model.c - the scaling model: predicted times of the stencil and the
 * nowait benchmark on 1 to 63 devices, for links this machine cannot offer.
 *
 * The simulator runs the core's own protocol (the real event state machine,
 * fragments, tags and exit protocol) with a cost per message in virtual
 * time (sim_link: latency, a per-message software overhead, bandwidth) and
 * kernels that last a given time (SIM_K_SLEEP, one at a time per worker, as
 * with one handler thread). Nothing else costs time: the host's and the
 * workers' own work is the overhead. A benchmark, not a test: it prints
 * figures (ci/bench.sh --update-docs keeps them in docs/bench/model.md).
 *
 *   stencil  CELLS cells over P devices for STEPS steps: each step a kernel
 *            of CELLS / P * CELL_NS on every device, then the halos (HALO
 *            bytes each way between neighbours, device to device, after
 *            both kernels), then the host waits for every device, as
 *            bench_apps' stencil does              (predicted ms per step)
 *   nowait   REGIONS regions spread over P devices by 8 host threads (each
 *            an EXECUTE and a RETRIEVE of 4 bytes, in order per thread, as
 *            libomptarget 14's eight hidden helper threads run bench_omp's
 *            `target nowait map(from:)`), in rounds of one region per
 *            thread                                  (predicted regions/s)
 *
 * usage: sim_model [--cell-ns X] [--cells N] [--steps S] [--halo B]
 *                  [--regions R] [--devices P,P,...] [--stencil-only 1]
 *                  [--link NAME:LATENCY_NS:OVERHEAD_NS:BYTES_PER_S]...
 * Without --link: two links, "1.5us/10GB/s" and "5us/1GB/s", each with a
 * 1 us overhead per message. Without --devices: 1, 2, 4, 8, 16, 32 and 63
 * (the most the wide world holds). --stencil-only 1 leaves the nowait
 * column out (and its time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios.h"

typedef struct model_link {
    char name[48];
    sim_link link;
} model_link;

typedef struct model {
    double cell_ns;
    uint64_t cells, regions, halo;
    int steps;
    int stencil_only;
    int devices[16];        /* the device counts, in order */
    int ndevices;
} model;

static void die(const char *what)
{
    fprintf(stderr, "sim_model: %s\n", what);
    exit(2);
}

static sim_config config(int devices, const sim_link *link)
{
    sim_config cfg = sim_config_default();
    cfg.workers = devices;
    cfg.node = otm_config_default();    /* the plugin's defaults */
    cfg.link = *link;
    cfg.max_steps = 1000000000u;
    cfg.quiet = 0;
    return cfg;
}

/* Opens a world of `devices` workers and `nq` queues, each worker's image
 * loaded; returns the virtual time the loads took. */
static uint64_t open_world(scn *s, int devices, int nq, const sim_link *link)
{
    sim_config cfg = config(devices, link);
    if (scn_open(s, &cfg, nq))
        die("cannot create the world");
    for (int d = 1; d <= devices; d++)
        scn_load(s, (d - 1) % nq, d);
    for (int q = 0; q < nq; q++)
        if (sim_world_run_queue(s->w, s->q[q]) != SIM_OK)
            die("the loads failed");
    return sim_world_time(s->w);
}

static void close_world(scn *s)
{
    if (sim_world_run(s->w) != SIM_OK || sim_world_teardown(s->w) != SIM_OK)
        die("the world did not end cleanly");
    scn_close(s);
}

static double stencil(const model *m, int p, const sim_link *link)
{
    scn s;
    uint64_t t0 = open_world(&s, p, p, link);
    uint64_t kernel_ns = (uint64_t)(m->cell_ns * (double)(m->cells / (uint64_t)p));
    for (int step = 0; step < m->steps; step++) {
        for (int d = 1; d <= p; d++)
            scn_execute(&s, d - 1, d, SIM_K_SLEEP, kernel_ns, 0);
        /* The halos of d and d + 1, on d's queue once d + 1's kernel ended. */
        for (int d = 1; d < p; d++) {
            scn_wait_for(&s, d - 1, d);
            scn_exchange(&s, d - 1, d, scn_global(&s, d), d + 1, scn_global(&s, d + 1),
                         m->halo);
            scn_exchange(&s, d - 1, d + 1, scn_global(&s, d + 1) + 32, d,
                         scn_global(&s, d) + 32, m->halo);
        }
        for (int q = 0; q < p; q++)
            if (sim_world_run_queue(s.w, s.q[q]) != SIM_OK)
                die("a stencil step failed");
    }
    double t = (double)(sim_world_time(s.w) - t0) * 1e-9;
    close_world(&s);
    return t;
}

static double nowait(const model *m, int p, const sim_link *link)
{
    enum { THREADS = 8 };
    static uint8_t res[THREADS][4];
    scn s;
    uint64_t t0 = open_world(&s, p, THREADS, link);
    /* In rounds of one region per thread, as each helper thread runs one
     * region at a time (and a long queue slows the simulator down). */
    for (uint64_t i = 0; i < m->regions;) {
        for (int q = 0; q < THREADS && i < m->regions; q++, i++) {
            int d = 1 + (int)(i % (uint64_t)p);
            scn_execute(&s, q, d, SIM_K_NOP, 0, 0);
            scn_retrieve(&s, q, d, res[q], scn_global(&s, d), sizeof res[q]);
        }
        for (int q = 0; q < THREADS; q++)
            if (sim_world_run_queue(s.w, s.q[q]) != SIM_OK)
                die("the nowait regions failed");
    }
    double t = (double)(sim_world_time(s.w) - t0) * 1e-9;
    close_world(&s);
    return (double)m->regions / t;
}

/* "1,2,4": the device counts of the table, each 1..SIM_MAX_WORKERS. */
static int parse_devices(const char *arg, model *m)
{
    m->ndevices = 0;
    for (const char *p = arg; *p;) {
        char *end;
        long d = strtol(p, &end, 10);
        if (end == p || d < 1 || d > SIM_MAX_WORKERS || m->ndevices == 16)
            return -1;
        m->devices[m->ndevices++] = (int)d;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return m->ndevices ? 0 : -1;
}

static int parse_link(const char *arg, model_link *out)
{
    unsigned long long lat, ovh, bw;
    const char *colon = strchr(arg, ':');
    if (!colon || (size_t)(colon - arg) >= sizeof out->name ||
        sscanf(colon + 1, "%llu:%llu:%llu", &lat, &ovh, &bw) != 3)
        return -1;
    memcpy(out->name, arg, (size_t)(colon - arg));
    out->name[colon - arg] = '\0';
    out->link = (sim_link){.latency_ns = lat, .overhead_ns = ovh, .bytes_per_s = bw};
    return 0;
}

int main(int argc, char **argv)
{
    model m = {.cell_ns = 1.0, .cells = 4u << 20, .steps = 100, .halo = 8,
               .regions = 10000};
    model_link links[8];
    int nlinks = 0;
    for (int i = 1; i < argc; i += 2) {     /* options come in pairs */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die("every option takes a value (see the header of sim_model.c)");
        if (!strcmp(a, "--cell-ns"))
            m.cell_ns = atof(v);
        else if (!strcmp(a, "--cells"))
            m.cells = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--steps"))
            m.steps = atoi(v);
        else if (!strcmp(a, "--halo"))
            m.halo = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--regions"))
            m.regions = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--stencil-only"))
            m.stencil_only = atoi(v) != 0;
        else if (!strcmp(a, "--devices") && parse_devices(v, &m) == 0)
            ;
        else if (!strcmp(a, "--link") && nlinks < 8 && parse_link(v, &links[nlinks]) == 0)
            nlinks++;
        else
            die("bad option or value (see the header of sim_model.c)");
    }
    if (m.cell_ns <= 0 || m.cells < 64 || m.steps < 1 || m.halo < 1 || m.halo > 32 ||
        m.regions < 1)
        die("--cell-ns > 0, --cells >= 64, --steps >= 1, --halo 1..32, --regions >= 1");
    if (nlinks == 0) {
        links[nlinks++] = (model_link){"1.5us/10GB/s", {1500, 1000, 10000000000ull}};
        links[nlinks++] = (model_link){"5us/1GB/s", {5000, 1000, 1000000000ull}};
    }
    static const int standard[] = {1, 2, 4, 8, 16, 32, 63};
    if (m.ndevices == 0) {
        memcpy(m.devices, standard, sizeof standard);
        m.ndevices = (int)(sizeof standard / sizeof *standard);
    }
    printf("stencil: %llu cells, %d steps, %.3g ns per cell, %llu-byte halos; "
           "nowait: %llu regions, 8 host threads\n\n",
           (unsigned long long)m.cells, m.steps, m.cell_ns, (unsigned long long)m.halo,
           (unsigned long long)m.regions);
    printf("| link (latency, overhead per message, bandwidth) | devices | stencil ms/step "
           "| stencil speed-up | nowait regions/s |\n|---|---|---|---|---|\n");
    for (int l = 0; l < nlinks; l++) {
        double one = 0;
        for (int k = 0; k < m.ndevices; k++) {
            int p = m.devices[k];
            double t = stencil(&m, p, &links[l].link);
            double r = m.stencil_only ? 0 : nowait(&m, p, &links[l].link);
            if (p == 1)
                one = t;        /* the speed-ups are against one device */
            char rate[32] = "—";
            if (!m.stencil_only)
                snprintf(rate, sizeof rate, "%.0f", r);
            printf("| %s (%llu ns, %llu ns, %llu B/s) | %d | %.4g | %.2f | %s |\n",
                   links[l].name, (unsigned long long)links[l].link.latency_ns,
                   (unsigned long long)links[l].link.overhead_ns,
                   (unsigned long long)links[l].link.bytes_per_s, p, t * 1e3 / m.steps,
                   one > 0 ? one / t : 0.0, rate);
            fflush(stdout);
        }
    }
    return 0;
}
