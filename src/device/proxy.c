/*
 * proxy.c - the devices of other libomptarget plugins, served as a worker's
 * units 1 and up (otm/proxy.h).
 *
 * A plugin is a table of its __tgt_rtl_* functions, looked up once; a unit
 * is (plugin, its device number). A device is initialised at its first use
 * (init_device may take a while on a GPU). An image is loaded with the
 * descriptor's host entries, as libomptarget passes it, so that the plugin
 * finds its kernels and globals by name.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_internal.h"
#include "otm/fault.h"
#include "otm/proxy.h"
#include "otm/tgt.h"

#define PLUGINS_MAX 8u
#define NAME_MAX_LEN 32u
#define OMP_REQ_NONE 1

/* The entry points a plugin is driven through; NULL where it has none. */
typedef struct rtl {
    int32_t (*is_valid_binary)(__tgt_device_image *);
    int32_t (*number_of_devices)(void);
    int64_t (*init_requires)(int64_t);
    int32_t (*init_device)(int32_t);
    __tgt_target_table *(*load_binary)(int32_t, __tgt_device_image *);
    void *(*data_alloc)(int32_t, int64_t, void *, int32_t);
    int32_t (*data_submit)(int32_t, void *, void *, int64_t);
    int32_t (*data_retrieve)(int32_t, void *, void *, int64_t);
    int32_t (*data_delete)(int32_t, void *);
    int32_t (*is_data_exchangable)(int32_t, int32_t);
    int32_t (*data_exchange)(int32_t, void *, int32_t, void *, int64_t);
    int32_t (*run_target_team_region)(int32_t, void *, void **, ptrdiff_t *, int32_t, int32_t,
                                      int32_t, uint64_t);
    int32_t (*launch_kernel)(int32_t, void *, void **, ptrdiff_t *, __tgt_kernel_arguments *,
                             __tgt_async_info *);
    int32_t (*synchronize)(int32_t, __tgt_async_info *);
    int32_t (*init_plugin)(void);
    int32_t (*deinit_plugin)(void);
} rtl;

typedef struct plugin {
    char name[NAME_MAX_LEN];
    void *handle;
    rtl f;
} plugin;

typedef struct unit {
    plugin *pl;
    int32_t local;              /* the plugin's device number */
    int ready;                  /* init_device succeeded */
    otd_proxy_entry *table;     /* its last load's entries */
    uint64_t ntable;
} unit;

struct otd_proxy {
    plugin plugins[PLUGINS_MAX];
    unsigned nplugins;
    unit units[OTD_PROXY_MAX_UNITS + 1];    /* [0] unused: the rank's CPU */
    uint16_t nunits;
    pthread_mutex_t lock;                   /* a unit's first init, its loads */
};

/* ---- opening ------------------------------------------------------------ */

static void note(char *notes, size_t len, const char *fmt, const char *a, const char *b)
{
    size_t at = strlen(notes);
    if (at + 1 < len)
        snprintf(notes + at, len - at, "%s", at ? "\n" : "");
    at = strlen(notes);
    if (at + 1 < len)
        snprintf(notes + at, len - at, fmt, a, b);
}

#define LOOK(pl, sym) (*(void **)&(pl)->f.sym = dlsym((pl)->handle, "__tgt_rtl_" #sym))

/* The plugin file of `name` in dir: the nextgen one first (libomptarget
 * 16 prefers it), then the plain one. */
static void *open_file(const char *dir, const char *name, char *why, size_t len)
{
    static const char *const forms[] = {"%s/libomptarget.rtl.%s.nextgen.so",
                                        "%s/libomptarget.rtl.%s.so"};
    char path[1024];
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof forms / sizeof *forms; i++) {
        snprintf(path, sizeof path, forms[i], dir, name);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h && i == 1)
            snprintf(why, len, "%s", dlerror());
    }
    return h;
}

/* Opens one plugin and adds its devices as units; a note says why not. */
static void add_plugin(otd_proxy *px, const char *dir, const char *name, char *notes,
                       size_t noteslen)
{
    char why[512] = "";
    if (px->nplugins == PLUGINS_MAX)
        return note(notes, noteslen, "plugin %s skipped: more than 8 plugins%s", name, "");
    plugin *pl = &px->plugins[px->nplugins];
    memset(pl, 0, sizeof *pl);
    snprintf(pl->name, sizeof pl->name, "%s", name);
    if (!(pl->handle = open_file(dir, name, why, sizeof why)))
        return note(notes, noteslen, "plugin %s skipped: it does not load (%s)", name, why);
    LOOK(pl, is_valid_binary), LOOK(pl, number_of_devices), LOOK(pl, init_requires);
    LOOK(pl, init_device), LOOK(pl, load_binary), LOOK(pl, data_alloc);
    LOOK(pl, data_submit), LOOK(pl, data_retrieve), LOOK(pl, data_delete);
    LOOK(pl, is_data_exchangable), LOOK(pl, data_exchange), LOOK(pl, run_target_team_region);
    LOOK(pl, launch_kernel), LOOK(pl, synchronize), LOOK(pl, init_plugin);
    LOOK(pl, deinit_plugin);
    rtl *f = &pl->f;
    int complete = f->is_valid_binary && f->number_of_devices && f->init_device &&
                   f->load_binary && f->data_alloc && f->data_submit && f->data_retrieve &&
                   f->data_delete && (f->run_target_team_region || f->launch_kernel);
    int32_t n = complete && (!f->init_plugin || f->init_plugin() == 0) ? f->number_of_devices() : -1;
    if (n <= 0) {
        note(notes, noteslen, "plugin %s skipped: %s", name,
             !complete ? "it lacks an entry point of the plugin interface"
             : n < 0   ? "its init_plugin failed" : "it found no device (no driver, no GPU)");
        if (complete && n == 0 && f->deinit_plugin)
            f->deinit_plugin();
        dlclose(pl->handle);
        return;
    }
    if (f->init_requires)
        f->init_requires(OMP_REQ_NONE);
    px->nplugins++;
    int added = 0;
    for (int32_t i = 0; i < n && px->nunits < OTD_PROXY_MAX_UNITS; i++, added++)
        px->units[++px->nunits] = (unit){.pl = pl, .local = i};
    char count[32];
    snprintf(count, sizeof count, "%d", added);
    note(notes, noteslen, "plugin %s: %s device(s)", name, count);
}

static int plain_name(const char *s, size_t n)
{
    if (!n || n >= NAME_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int letter = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z');
        if (!letter && (i == 0 || !((s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-')))
            return 0;
    }
    return 1;
}

/* auto: an accelerator plugin is opened only where its driver's library
 * loads (opening the plugin costs a tenth of a second and tens of MiB on
 * a node without one). */
static void add_if_driver(otd_proxy *px, const char *dir, const char *name, const char *lib,
                          const char *what, char *notes, size_t noteslen)
{
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return note(notes, noteslen, "plugin %s skipped: no %s", name, what);
    dlclose(h);
    add_plugin(px, dir, name, notes, noteslen);
}

otm_status otd_proxy_open(otd_proxy **out, const char *dir, const char *names, char *notes,
                          size_t noteslen, char *err, size_t errlen)
{
    *out = NULL;
    if (noteslen)
        notes[0] = '\0';
    otd_proxy *px = calloc(1, sizeof *px);
    if (!px)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    pthread_mutex_init(&px->lock, NULL);
    if (!strcmp(names, "auto")) {
        add_if_driver(px, dir, "cuda", "libcuda.so.1", "NVIDIA driver (libcuda.so.1 does not "
                      "load)", notes, noteslen);
        add_if_driver(px, dir, "amdgpu", "libhsa-runtime64.so.1", "ROCm runtime "
                      "(libhsa-runtime64.so.1 does not load)", notes, noteslen);
    } else if (strcmp(names, "none") != 0) {
        for (const char *at = names; *at;) {
            size_t n = strcspn(at, ",");
            if (!plain_name(at, n)) {
                otd_proxy_close(px);
                return otd_device_fail(OTM_ERR_INVALID, err, errlen, "'%.*s' names no plugin "
                                       "(a letter, then letters, digits, '_' and '-')",
                                       (int)n, at);
            }
            char name[NAME_MAX_LEN];
            snprintf(name, sizeof name, "%.*s", (int)n, at);
            add_plugin(px, dir, strcmp(name, "host") ? name : "x86_64", notes, noteslen);
            at += n + (at[n] == ',');
        }
    }
    *out = px;
    return OTM_OK;
}

void otd_proxy_close(otd_proxy *px)
{
    if (!px)
        return;
    for (unsigned i = 0; i < px->nplugins; i++) {
        if (px->plugins[i].f.deinit_plugin)
            px->plugins[i].f.deinit_plugin();
        /* The plugin's threads and the runtimes it loaded may outlive the
         * call: it stays mapped. */
    }
    for (uint16_t u = 1; u <= px->nunits; u++)
        free(px->units[u].table);
    pthread_mutex_destroy(&px->lock);
    free(px);
}

uint16_t otd_proxy_units(const otd_proxy *px)
{
    return px ? px->nunits : 0;
}

static unit *unit_of(const otd_proxy *px, uint16_t u)
{
    return px && u >= 1 && u <= px->nunits ? (unit *)&px->units[u] : NULL;
}

const char *otd_proxy_plugin(const otd_proxy *px, uint16_t u)
{
    unit *un = unit_of(px, u);
    return un ? un->pl->name : NULL;
}

int32_t otd_proxy_local(const otd_proxy *px, uint16_t u)
{
    unit *un = unit_of(px, u);
    return un ? un->local : -1;
}

/* ---- per unit ------------------------------------------------------------ */

/* The unit, its device initialised (once). */
static unit *ready(otd_proxy *px, uint16_t u, otm_status *st, char *err, size_t errlen)
{
    unit *un = unit_of(px, u);
    if (!un) {
        *st = otd_device_fail(OTM_ERR_NO_DEVICE, err, errlen, "no device %u here", u);
        return NULL;
    }
    pthread_mutex_lock(&px->lock);
    if (!un->ready)
        un->ready = un->pl->f.init_device(un->local) == 0;
    int ok = un->ready;
    pthread_mutex_unlock(&px->lock);
    if (!ok) {
        *st = otd_device_fail(OTM_ERR_PLUGIN_INIT, err, errlen, "%s device %d: init_device "
                              "failed", un->pl->name, un->local);
        return NULL;
    }
    return un;
}

static otm_status failed(const unit *un, otm_status st, char *err, size_t errlen,
                         const char *what)
{
    return otd_device_fail(st, err, errlen, "%s device %d: %s failed", un->pl->name, un->local,
                           what);
}

static __tgt_device_image image_of(const void *start, size_t size, const void *begin,
                                   const void *end)
{
    __tgt_device_image img = {(void *)start, (char *)start + size,
                              (__tgt_offload_entry *)begin, (__tgt_offload_entry *)end};
    return img;
}

int otd_proxy_accepts(otd_proxy *px, uint16_t u, const void *start, size_t size)
{
    unit *un = unit_of(px, u);
    if (!un || !start || !size)
        return 0;
    __tgt_device_image img = image_of(start, size, NULL, NULL);
    return un->pl->f.is_valid_binary(&img) != 0;
}

otm_status otd_proxy_load(otd_proxy *px, uint16_t u, const void *start, size_t size,
                          const void *entries_begin, const void *entries_end,
                          const otd_proxy_entry **table, uint64_t *count, char *err,
                          size_t errlen)
{
    otm_status st = OTM_OK;
    unit *un = ready(px, u, &st, err, errlen);
    if (!un)
        return st;
    __tgt_device_image img = image_of(start, size, entries_begin, entries_end);
    pthread_mutex_lock(&px->lock);
    __tgt_target_table *t = un->pl->f.load_binary(un->local, &img);
    uint64_t n = t ? (uint64_t)(t->EntriesEnd - t->EntriesBegin) : 0;
    otd_proxy_entry *mine = t ? calloc(n ? n : 1, sizeof *mine) : NULL;
    for (uint64_t i = 0; mine && i < n; i++)
        mine[i] = (otd_proxy_entry){(uint64_t)(uintptr_t)t->EntriesBegin[i].addr,
                                    t->EntriesBegin[i].size};
    if (mine) {
        free(un->table);
        un->table = mine, un->ntable = n;
    }
    pthread_mutex_unlock(&px->lock);
    if (!t)
        return otd_device_fail(OTM_ERR_PLUGIN_CALL, err, errlen, "%s device %d refused the "
                               "image (%zu bytes): its load_binary failed", un->pl->name,
                               un->local, size);
    if (!mine)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    *table = mine, *count = n;
    return OTM_OK;
}

otm_status otd_proxy_alloc(otd_proxy *px, uint16_t u, uint64_t size, int32_t kind,
                           uint64_t *addr, char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    unit *un = ready(px, u, &st, err, errlen);
    if (!un)
        return st;
    void *p = size > INT64_MAX ? NULL : un->pl->f.data_alloc(un->local, (int64_t)size, NULL, kind);
    if (!p)
        return failed(un, OTM_ERR_NOMEM, err, errlen, "data_alloc");
    *addr = (uint64_t)(uintptr_t)p;
    return OTM_OK;
}

otm_status otd_proxy_free(otd_proxy *px, uint16_t u, uint64_t addr, char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    unit *un = ready(px, u, &st, err, errlen);
    if (!un)
        return st;
    return un->pl->f.data_delete(un->local, (void *)(uintptr_t)addr)
               ? failed(un, OTM_ERR_PLUGIN_CALL, err, errlen, "data_delete") : OTM_OK;
}

otm_status otd_proxy_put(otd_proxy *px, uint16_t u, uint64_t dst, const void *src, uint64_t len,
                         char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    unit *un = ready(px, u, &st, err, errlen);
    if (!un)
        return st;
    if (!len)
        return OTM_OK;
    return un->pl->f.data_submit(un->local, (void *)(uintptr_t)dst, (void *)src, (int64_t)len)
               ? failed(un, OTM_ERR_PLUGIN_CALL, err, errlen, "data_submit") : OTM_OK;
}

otm_status otd_proxy_get(otd_proxy *px, uint16_t u, void *dst, uint64_t src, uint64_t len,
                         char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    unit *un = ready(px, u, &st, err, errlen);
    if (!un)
        return st;
    if (!len)
        return OTM_OK;
    return un->pl->f.data_retrieve(un->local, dst, (void *)(uintptr_t)src, (int64_t)len)
               ? failed(un, OTM_ERR_PLUGIN_CALL, err, errlen, "data_retrieve") : OTM_OK;
}

otm_status otd_proxy_copy(otd_proxy *px, uint16_t su, uint64_t src, uint16_t du, uint64_t dst,
                          uint64_t len, char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    unit *s = ready(px, su, &st, err, errlen), *d = s ? ready(px, du, &st, err, errlen) : NULL;
    if (!d)
        return st;
    if (!len)
        return OTM_OK;
    rtl *f = &s->pl->f;
    if (s->pl == d->pl && f->data_exchange &&
        (!f->is_data_exchangable || f->is_data_exchangable(s->local, d->local)))
        return f->data_exchange(s->local, (void *)(uintptr_t)src, d->local,
                                (void *)(uintptr_t)dst, (int64_t)len)
                   ? failed(s, OTM_ERR_PLUGIN_CALL, err, errlen, "data_exchange") : OTM_OK;
    /* Two plugins (or one without exchange): through this process. */
    void *tmp = len < SIZE_MAX ? malloc((size_t)len) : NULL;
    if (!tmp)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    st = otd_proxy_get(px, su, tmp, src, len, err, errlen);
    if (st == OTM_OK)
        st = otd_proxy_put(px, du, dst, tmp, len, err, errlen);
    free(tmp);
    return st;
}

/* ---- kernels ---------------------------------------------------------------- */

typedef struct launch {
    unit *un;
    void *entry;
    void **args;
    ptrdiff_t *offsets;
    uint32_t nargs;
    int32_t teams, threads;
    int32_t rc;
} launch;

/* The plugin's kernel call, run guarded (a host plugin's region faults on
 * this thread). LLVM 16's nextgen plugins take the kernel arguments of
 * launch_kernel, with no queue: synchronous. */
static void launch_now(void *arg)
{
    launch *l = arg;
    rtl *f = &l->un->pl->f;
    if (f->run_target_team_region) {
        l->rc = f->run_target_team_region(l->un->local, l->entry, l->args, l->offsets,
                                          (int32_t)l->nargs, l->teams, l->threads, 0);
        return;
    }
    __tgt_kernel_arguments k = {.Version = 2, .NumArgs = l->nargs, .ArgBasePtrs = l->args,
                                .ArgPtrs = l->args, .NumTeams = {(uint32_t)l->teams, 0, 0},
                                .ThreadLimit = {(uint32_t)l->threads, 0, 0}};
    l->rc = f->launch_kernel(l->un->local, l->entry, l->args, l->offsets, &k, NULL);
}

otm_status otd_proxy_run(otd_proxy *px, uint16_t u, uint64_t kernel, void **args,
                         uint32_t nargs, uint64_t teams, uint64_t threads, otd_fault *fault,
                         char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    unit *un = ready(px, u, &st, err, errlen);
    if (!un)
        return st;
    ptrdiff_t *offsets = calloc(nargs ? nargs : 1, sizeof *offsets);
    if (!offsets)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    launch l = {.un = un, .entry = (void *)(uintptr_t)kernel, .args = args, .offsets = offsets,
                .nargs = nargs, .teams = teams > INT32_MAX ? 0 : (int32_t)teams,
                .threads = threads > INT32_MAX ? 0 : (int32_t)threads};
    void *call_args[1] = {&l};
    st = otd_kernel_call_guarded((void *)(uintptr_t)launch_now, call_args, 1, fault);
    free(offsets);
    if (st)
        return st == OTM_ERR_KERNEL_FAULT
                   ? otd_device_fail(st, err, errlen, "%s device %d: the region faulted",
                                     un->pl->name, un->local)
                   : st;
    return l.rc ? failed(un, OTM_ERR_KERNEL, err, errlen, "the kernel") : OTM_OK;
}
