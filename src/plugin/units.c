/*
 * units.c - a worker's proxied devices: the devices of other libomptarget
 * plugins of its node (its GPUs, its host plugin), which it serves as its
 * units 1 and up beside its own CPU (otm/proxy.h), behind the device hooks
 * of the core (otm/node.h).
 *
 * The plugins are those OMPTARGET_MPI_REMOTE_PLUGINS names, opened from
 * the directory of the libomptarget that loaded this plugin (the node's).
 * What a proxied call says when it fails is a line on this rank's stderr;
 * the host says the device, its rank and plugin.
 */
#include <dlfcn.h>
#include <link.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "otm/proxy.h"
#include "plugin.h"

/* dl_iterate_phdr callback: the first object named libomptarget.so*. */
static int find_libomptarget(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    const char *slash = strrchr(info->dlpi_name, '/');
    if (!slash || strncmp(slash + 1, "libomptarget.so", 15))
        return 0;
    *(const char **)out = info->dlpi_name;
    return 1;
}

/* The directory of the libomptarget in this process: the one that binds
 * __tgt_register_lib for everyone, else (a program that dlopen()ed its
 * offload code, whose libomptarget is in that library's local scope, out
 * of RTLD_DEFAULT's reach) the loaded object of that name. */
static int libomptarget_dir(char *dir, size_t len)
{
    Dl_info info;
    const char *file = NULL;
    void *sym = dlsym(RTLD_DEFAULT, "__tgt_register_lib");
    if (sym && dladdr(sym, &info) && info.dli_fname)
        file = info.dli_fname;
    else
        dl_iterate_phdr(find_libomptarget, &file);
    if (!file)
        return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s", file);
    snprintf(dir, len, "%s", dirname(path));
    return 0;
}

/* The smallest ELF64 header of machine `m`: what a plugin's
 * is_valid_binary reads of an image. */
static void elf_header(uint8_t h[64], uint16_t m)
{
    memset(h, 0, 64);
    memcpy(h, "\x7f" "ELF", 4);
    h[4] = 2, h[5] = 1, h[6] = 1;           /* 64-bit, little-endian, version 1 */
    h[16] = 3;                              /* ET_DYN */
    h[18] = (uint8_t)m, h[19] = (uint8_t)(m >> 8);
    h[20] = 1;                              /* EV_CURRENT */
    h[52] = 64;                             /* e_ehsize */
}

/* The machines of the images unit u's plugin takes (OTP_MACHINE_*). */
static uint32_t machines_of(otd_proxy *px, uint16_t u)
{
    static const struct { uint16_t em; uint32_t bit; } known[] = {
        {62, OTP_MACHINE_X86_64}, {190, OTP_MACHINE_CUDA}, {224, OTP_MACHINE_AMDGPU}};
    uint32_t bits = 0;
    uint8_t h[64];
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        elf_header(h, known[i].em);
        if (otd_proxy_accepts(px, u, h, sizeof h))
            bits |= known[i].bit;
    }
    return bits;
}

/* Each line of the proxy's notes, at INFO. */
static void say_notes(const otp_plugin *p, char *notes)
{
    for (char *line = strtok(notes, "\n"); line; line = strtok(NULL, "\n"))
        otp_plugin_log(OTM_LOG_INFO, "rank %d: %s", p->node.rank, line);
}

void otp_units_open(otp_plugin *p, otp_rank_card *me)
{
    char dir[1024], notes[2048], err[256];
    const char *names = p->settings.remote_plugins;
    otm_test_hooks t;
    otm_test_hooks_load(&t, NULL, NULL);
    if (!strcmp(names, "none"))
        return;
    if (t.plugin_dir)
        snprintf(dir, sizeof dir, "%s", t.plugin_dir);
    else if (libomptarget_dir(dir, sizeof dir)) {
        /* Only a process whose plugin no libomptarget loaded (a test's)
         * has none; that is only worth a warning when plugins were named. */
        otp_plugin_log(strcmp(names, "auto") ? OTM_LOG_WARN : OTM_LOG_DEBUG,
                       "rank %d: no libomptarget found in this process: no "
                       "other plugin's devices (OMPTARGET_MPI_REMOTE_PLUGINS=%s)",
                       p->node.rank, names);
        return;
    }
    if (otd_proxy_open(&p->proxy, dir, names, notes, sizeof notes, err, sizeof err)) {
        otp_plugin_log(OTM_LOG_WARN, "rank %d: OMPTARGET_MPI_REMOTE_PLUGINS=%s: %s",
                       p->node.rank, names, err);
        return;
    }
    say_notes(p, notes);
    uint16_t n = otd_proxy_units(p->proxy);
    for (uint16_t u = 1; u <= n && u <= OTP_UNITS_MAX; u++) {
        otp_unit_card *c = &me->unit[u - 1];
        snprintf(c->plugin, sizeof c->plugin, "%s", otd_proxy_plugin(p->proxy, u));
        c->local = otd_proxy_local(p->proxy, u);
        c->machines = machines_of(p->proxy, u);
        me->units = u;
    }
}

void otp_units_close(otp_plugin *p)
{
    otd_proxy_close(p->proxy);
    p->proxy = NULL;
}

/* ---- the device hooks of units 1.. --------------------------------------- */

/* A failed proxied call, said on this rank's stderr. */
static otm_status said(const otp_plugin *p, otm_status st, const char *err)
{
    if (st)
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: %s", p->node.rank, err);
    return st;
}

static otm_status mem_alloc(void *ctx, uint16_t u, uint64_t size, uint64_t kind,
                            uint64_t *addr)
{
    otp_plugin *p = ctx;
    char err[256];
    return said(p, otd_proxy_alloc(p->proxy, u, size, (int32_t)kind, addr, err, sizeof err),
                err);
}

static otm_status mem_free(void *ctx, uint16_t u, uint64_t addr)
{
    otp_plugin *p = ctx;
    char err[256];
    return said(p, otd_proxy_free(p->proxy, u, addr, err, sizeof err), err);
}

static otm_status mem_put(void *ctx, uint16_t u, uint64_t dst, const void *src, uint64_t len)
{
    otp_plugin *p = ctx;
    char err[256];
    return said(p, otd_proxy_put(p->proxy, u, dst, src, len, err, sizeof err), err);
}

static otm_status mem_get(void *ctx, uint16_t u, void *dst, uint64_t src, uint64_t len)
{
    otp_plugin *p = ctx;
    char err[256];
    return said(p, otd_proxy_get(p->proxy, u, dst, src, len, err, sizeof err), err);
}

static otm_status mem_copy(void *ctx, uint16_t su, uint64_t src, uint16_t du, uint64_t dst,
                           uint64_t len)
{
    otp_plugin *p = ctx;
    char err[256];
    return said(p, otd_proxy_copy(p->proxy, su, src, du, dst, len, err, sizeof err), err);
}

void otp_units_ops(otp_plugin *p, otm_device_ops *ops)
{
    uint16_t n = otd_proxy_units(p->proxy);
    ops->units = (uint16_t)(1 + n);
    if (!n)
        return;
    ops->mem_alloc = mem_alloc, ops->mem_free = mem_free;
    ops->mem_put = mem_put, ops->mem_get = mem_get, ops->mem_copy = mem_copy;
}

/* The image the host names (it picks the one of the descriptor that the
 * unit takes): this rank's own registration of it, whose host entries the
 * plugin finds the kernels and globals by. An image only rank 0 has (a
 * library it opened after start-up) is not served on a proxied device. */
otm_status otp_units_load(otp_plugin *p, uint16_t unit, const otm_image_ref *ref,
                          const otm_entry **out, uint64_t *count)
{
    char err[256];
    const void *elf = NULL;
    if (ref->bytes)
        return said(p, OTM_ERR_NO_IMAGE, "an image only rank 0 holds (a library it opened "
                    "after start-up) cannot be loaded on another plugin's device"), OTM_ERR_NO_IMAGE;
    const __tgt_device_image *im = otp_image_own(p, ref, &elf);
    if (!im)
        return OTM_ERR_NO_IMAGE;       /* the host sends the bytes, refused above */
    size_t size = (size_t)ref->size;
    if (!otd_proxy_accepts(p->proxy, unit, elf, size)) {
        snprintf(err, sizeof err, "%s device %d does not take the image the host named "
                 "(%zu bytes)", otd_proxy_plugin(p->proxy, unit),
                 otd_proxy_local(p->proxy, unit), size);
        return said(p, OTM_ERR_NO_KERNEL, err);
    }
    const otd_proxy_entry *t = NULL;
    otm_status st = otd_proxy_load(p->proxy, unit, elf, size, im->EntriesBegin, im->EntriesEnd,
                                   &t, count, err, sizeof err);
    if (st)
        return said(p, st, err);
    _Static_assert(sizeof(otd_proxy_entry) == sizeof(otm_entry), "the same two words");
    *out = (const otm_entry *)(const void *)t;
    return OTM_OK;
}

otm_status otp_units_run(otp_plugin *p, uint16_t unit, uint64_t kernel, void **args,
                         uint32_t nargs, uint64_t teams, uint64_t threads,
                         otm_region_fault *fault)
{
    char err[256];
    otd_fault f;
    otm_status st = otd_proxy_run(p->proxy, unit, kernel, args, nargs, teams, threads, &f, err,
                                  sizeof err);
    if (st == OTM_ERR_KERNEL_FAULT)
        *fault = (otm_region_fault){
            .signo = f.signo, .code = f.code, .addr = f.addr, .exit_status = f.exit_status,
            .flags = (f.signo ? OTM_EXEC_FAULTED : OTM_EXEC_EXITED) |
                     (f.foreign ? OTM_EXEC_FOREIGN : 0)};
    else if (st)
        said(p, st, err);
    return st;
}
