/*
 * test_image.c - device images: checking, loading from memory, symbols,
 * kernel calls of any arity, independent copies, no files on disk, bad
 * images that must be refused with a reason and without a crash, and the
 * offload-binary wrapper of clang 16 (otd_image_unwrap).
 *
 * The images are fixture shared libraries built next to this test
 * (fixture_image.c); their paths come in as compile definitions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otm/device.h"

/* The loader's name for a memfd created by image.c. */
#define MEMFD_MAP "/memfd:otm-image"

typedef struct blob {
    unsigned char *bytes;
    size_t size;
} blob;

typedef struct fixtures {
    blob image;      /* otm_fixture_image: fx_* of fixture_image.h */
    blob nodelete;   /* the same, linked -z nodelete, fx_which() == 2 */
    blob unresolved; /* needs a function no library defines */
} fixtures;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static blob read_file(const char *path)
{
    blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    long end;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    end = ftell(f);
    assert_true(end > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    b.size = (size_t)end;
    b.bytes = malloc(b.size);
    assert_non_null(b.bytes);
    assert_int_equal(fread(b.bytes, 1, b.size, f), b.size);
    fclose(f);
    return b;
}

/* An exact-size heap copy of the first n bytes, so that Valgrind sees any
 * read past its end. */
static unsigned char *copy_prefix(const blob *b, size_t n)
{
    unsigned char *p = malloc(n > 0 ? n : 1);

    assert_non_null(p);
    memcpy(p, b->bytes, n);
    return p;
}

static otd_image *load(const blob *b)
{
    char err[256];
    otd_image *img = NULL;
    otm_status st = otd_image_load(b->bytes, b->size, &img, err, sizeof(err));

    if (st != OTM_OK)
        print_error("otd_image_load: %s\n", err);
    assert_int_equal(st, OTM_OK);
    assert_non_null(img);
    return img;
}

static void *sym(otd_image *img, const char *name)
{
    void *p = otd_image_symbol(img, name);

    if (p == NULL)
        print_error("symbol %s not found\n", name);
    assert_non_null(p);
    return p;
}

static void call(void *fn, void **args, uint32_t nargs)
{
    assert_int_equal(otd_kernel_call(fn, args, nargs), OTM_OK);
}

/* Lines of /proc/self/maps that contain `needle`. */
static int count_maps(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The descriptor number the next memfd_create will get. */
static int lowest_free_fd(void)
{
    int fd = dup(0);

    assert_true(fd >= 0);
    close(fd);
    return fd;
}

static intptr_t weighted(intptr_t i)
{
    /* Distinct, some negative, so a lost or swapped argument shows. */
    return (i % 2 ? -1 : 1) * (i * 1000003 + 17);
}

/* ------------------------------------------------------------------------ */
/* A good image                                                              */

static void test_check_accepts_fixture(void **state)
{
    fixtures *fx = *state;
    char err[128];

    memset(err, 'x', sizeof(err));
    assert_int_equal(otd_image_check(fx->image.bytes, fx->image.size, err,
                                     sizeof(err)),
                     OTM_OK);
    assert_string_equal(err, "");
    assert_int_equal(otd_image_check(fx->nodelete.bytes, fx->nodelete.size,
                                     NULL, 0),
                     OTM_OK);
}

static void test_symbols(void **state)
{
    fixtures *fx = *state;
    otd_image *img = load(&fx->image);
    int64_t pid = 0;
    void *args[1] = {&pid};
    void *direct;

    sym(img, "fx_tick");
    sym(img, "fx_add");
    sym(img, "fx_sum20");
    sym(img, "fx_global");
    call(sym(img, "fx_getpid"), args, 1);
    assert_int_equal(pid, getpid());
    assert_null(otd_image_symbol(img, "fx_no_such_symbol"));
    assert_null(otd_image_symbol(img, NULL));
    assert_null(otd_image_symbol(NULL, "fx_add"));
    /* The fixture links libc, so the loader's own lookup finds malloc
     * through it; the image's lookup must not. */
    direct = dlopen(FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(direct);
    assert_non_null(dlsym(direct, "malloc"));
    dlclose(direct);
    assert_null(otd_image_symbol(img, "malloc"));
    otd_image_unload(img);
}

/* Writes through the address of fx_global are what the image's own code
 * reads: the symbol is the image's global, not a copy. */
static void test_global_visible_to_image(void **state)
{
    fixtures *fx = *state;
    otd_image *img = load(&fx->image);
    int *global = sym(img, "fx_global");
    int64_t sum = -1;
    void *args[1] = {&sum};
    int i;

    for (i = 0; i < 16; i++)
        global[i] = i * i;
    call(sym(img, "fx_global_sum"), args, 1);
    assert_int_equal(sum, 1240); /* 0^2 + ... + 15^2 */
    call(sym(img, "fx_tick"), NULL, 0);
    assert_int_equal(global[0], 1);
    otd_image_unload(img);
}

static void test_kernel_arities(void **state)
{
    fixtures *fx = *state;
    otd_image *img = load(&fx->image);
    int64_t a = 40, b = 2, out = 0, want = 0;
    void *add_args[2] = {&a, &b};
    void *args[40];
    int *global = sym(img, "fx_global");
    intptr_t i;

    call(sym(img, "fx_tick"), NULL, 0);
    call(sym(img, "fx_tick"), NULL, 0);
    assert_int_equal(global[0], 2);

    call(sym(img, "fx_add"), add_args, 2);
    assert_int_equal(a, 42);
    assert_int_equal(b, 2);

    args[0] = &out;
    for (i = 1; i < 40; i++)
        args[i] = (void *)weighted(i);
    for (i = 1; i < 20; i++)
        want += i * weighted(i);
    call(sym(img, "fx_sum20"), args, 20);
    assert_int_equal(out, want);

    for (i = 20; i < 40; i++)
        want += i * weighted(i);
    call(sym(img, "fx_sum40"), args, 40);
    assert_int_equal(out, want);
    otd_image_unload(img);
}

/* 4096 arguments are accepted. The callee reads its 40; the rest are
 * harmless under the SysV ABI, where the caller pops its stack arguments. */
static void test_kernel_max_args(void **state)
{
    fixtures *fx = *state;
    otd_image *img = load(&fx->image);
    void **args = calloc(4096, sizeof(*args));
    int64_t out = 0, want = 0;
    intptr_t i;

    assert_non_null(args);
    args[0] = &out;
    for (i = 1; i < 4096; i++)
        args[i] = (void *)weighted(i);
    for (i = 1; i < 40; i++)
        want += i * weighted(i);
    call(sym(img, "fx_sum40"), args, 4096);
    assert_int_equal(out, want);
    free(args);
    otd_image_unload(img);
}

static void test_kernel_call_invalid(void **state)
{
    fixtures *fx = *state;
    otd_image *img = load(&fx->image);
    void *tick = sym(img, "fx_tick");
    int *global = sym(img, "fx_global");
    void *args[1] = {NULL};

    assert_int_equal(otd_kernel_call(NULL, NULL, 0), OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call(NULL, args, 1), OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call(tick, args, 4097), OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call(tick, args, UINT32_MAX),
                     OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call(tick, NULL, 1), OTM_ERR_INVALID);
    /* None of them ran the kernel. */
    assert_int_equal(global[0], 0);
    otd_image_unload(img);
}

/* Two loads of the same bytes are two memfds, so two libraries with their
 * own globals, as dlopen of two files would be. */
static void test_two_loads_are_independent(void **state)
{
    fixtures *fx = *state;
    otd_image *a = load(&fx->image);
    otd_image *b = load(&fx->image);
    int *ga = sym(a, "fx_global");
    int *gb = sym(b, "fx_global");
    int64_t sum_a = -1, sum_b = -1;
    void *args_a[1] = {&sum_a};
    void *args_b[1] = {&sum_b};

    assert_ptr_not_equal(ga, gb);
    assert_ptr_not_equal(sym(a, "fx_tick"), sym(b, "fx_tick"));
    ga[3] = 7;
    call(sym(a, "fx_tick"), NULL, 0);
    assert_int_equal(gb[3], 0);
    assert_int_equal(gb[0], 0);
    call(sym(a, "fx_global_sum"), args_a, 1);
    call(sym(b, "fx_global_sum"), args_b, 1);
    assert_int_equal(sum_a, 8);
    assert_int_equal(sum_b, 0);
    otd_image_unload(a);
    /* b survives a's unload. */
    call(sym(b, "fx_tick"), NULL, 0);
    assert_int_equal(gb[0], 1);
    otd_image_unload(b);
}

/* Unloading unmaps the library and closes its memfd; a new load starts
 * from fresh globals. */
static void test_unload(void **state)
{
    fixtures *fx = *state;
    int maps = count_maps(MEMFD_MAP), fds = count_fds();
    otd_image *img = load(&fx->image);

    assert_true(count_maps(MEMFD_MAP) > maps);
    assert_int_equal(count_fds(), fds + 1);
    call(sym(img, "fx_tick"), NULL, 0);
    otd_image_unload(img);
    assert_int_equal(count_maps(MEMFD_MAP), maps);
    assert_int_equal(count_fds(), fds);

    img = load(&fx->image);
    assert_int_equal(((int *)sym(img, "fx_global"))[0], 0);
    otd_image_unload(img);
    otd_image_unload(NULL);
}

/* A library the loader never unmaps keeps its /proc/self/fd name; the
 * next image must not get that name and, with it, the old library. */
static void test_nodelete_name_not_reused(void **state)
{
    fixtures *fx = *state;
    int fd = lowest_free_fd();
    char name[32];
    otd_image *img = load(&fx->nodelete);
    int (*which)(void) = (int (*)(void))sym(img, "fx_which");
    void *h;

    assert_int_equal(which(), 2);
    otd_image_unload(img);
    /* The scenario is real: the library is still resident by that name. */
    snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
    h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    dlclose(h);
    /* ... so its memfd was kept, and the next image gets another name. */
    assert_int_not_equal(fcntl(fd, F_GETFD), -1);
    img = load(&fx->image);
    which = (int (*)(void))sym(img, "fx_which");
    assert_int_equal(which(), 1);
    otd_image_unload(img);
}

static void test_loader_refusal(void **state)
{
    fixtures *fx = *state;
    int maps = count_maps(MEMFD_MAP), fds = count_fds();
    otd_image *img = (otd_image *)fx; /* must be reset to NULL */
    char err[512];

    assert_int_equal(otd_image_check(fx->unresolved.bytes,
                                     fx->unresolved.size, NULL, 0),
                     OTM_OK);
    assert_int_equal(otd_image_load(fx->unresolved.bytes, fx->unresolved.size,
                                    &img, err, sizeof(err)),
                     OTM_ERR_NO_KERNEL);
    assert_null(img);
    assert_non_null(strstr(err, "otm_fixture_missing"));
    assert_int_equal(count_maps(MEMFD_MAP), maps);
    assert_int_equal(count_fds(), fds);
    assert_int_equal(otd_image_load(fx->image.bytes, fx->image.size, NULL,
                                    err, sizeof(err)),
                     OTM_ERR_INVALID);
    assert_true(err[0] != '\0');
}

/* ------------------------------------------------------------------------ */
/* No file on disk                                                           */

typedef struct listing {
    char **names;
    size_t count;
} listing;

/* The entries of dir; empty when it does not exist (no /dev/shm). */
static listing list_dir(const char *dir)
{
    listing l = {NULL, 0};
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d == NULL)
        return l;
    while ((e = readdir(d)) != NULL) {
        l.names = realloc(l.names, (l.count + 1) * sizeof(*l.names));
        assert_non_null(l.names);
        l.names[l.count] = strdup(e->d_name);
        assert_non_null(l.names[l.count]);
        l.count++;
    }
    closedir(d);
    return l;
}

static void free_listing(listing *l)
{
    size_t i;

    for (i = 0; i < l->count; i++)
        free(l->names[i]);
    free(l->names);
}

static int listed(const listing *l, const char *name)
{
    size_t i;

    for (i = 0; i < l->count; i++)
        if (strcmp(l->names[i], name) == 0)
            return 1;
    return 0;
}

/* True when this process maps `path` or holds it open. */
static int ours(const char *path)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char link[300], target[PATH_MAX];
    ssize_t n;
    int found = count_maps(path) > 0;

    assert_non_null(d);
    while (!found && (e = readdir(d)) != NULL) {
        snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
        n = readlink(link, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            found = strcmp(target, path) == 0;
        }
    }
    closedir(d);
    return found;
}

/* New entries of dir; with `only_ours`, only those this process maps or
 * holds open, because other processes on the machine may create files in
 * the shared /tmp meanwhile. */
static size_t new_entries(const char *dir, const listing *before,
                          int only_ours)
{
    listing after = list_dir(dir);
    char path[PATH_MAX];
    size_t i, n = 0;

    for (i = 0; i < after.count; i++) {
        if (listed(before, after.names[i]))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, after.names[i]);
        if (only_ours && !ours(path))
            continue;
        print_error("new file during load: %s\n", path);
        n++;
    }
    free_listing(&after);
    return n;
}

/* CTest runs this test in a private working directory with a private
 * TMPDIR, which must stay exactly as they were; in the shared /tmp and
 * /dev/shm no new file may be ours. */
static void test_no_file_created(void **state)
{
    fixtures *fx = *state;
    const char *shared[2] = {"/tmp", "/dev/shm"};
    const char *own[2] = {".", getenv("TMPDIR")};
    listing before_shared[2], before_own[2];
    int maps = count_maps(MEMFD_MAP);
    otd_image *img;
    int i;

    if (own[1] == NULL)
        own[1] = ".";
    for (i = 0; i < 2; i++) {
        before_shared[i] = list_dir(shared[i]);
        before_own[i] = list_dir(own[i]);
    }
    img = load(&fx->image);
    call(sym(img, "fx_tick"), NULL, 0);
    /* The library's pages come from the memfd, not from a file. */
    assert_true(count_maps(MEMFD_MAP) > maps);
    for (i = 0; i < 2; i++) {
        assert_int_equal(new_entries(shared[i], &before_shared[i], 1), 0);
        assert_int_equal(new_entries(own[i], &before_own[i], 0), 0);
    }
    otd_image_unload(img);
    for (i = 0; i < 2; i++) {
        assert_int_equal(new_entries(own[i], &before_own[i], 0), 0);
        free_listing(&before_shared[i]);
        free_listing(&before_own[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* Bad images                                                                */

/* Both entry points refuse p with OTM_ERR_INVALID and a sentence, and the
 * load leaves *out NULL. */
static void expect_invalid(const unsigned char *p, size_t size,
                           const char *what)
{
    char err[256];
    otd_image *img = (otd_image *)&img; /* must be reset to NULL */
    otm_status st;

    memset(err, 'x', sizeof(err));
    st = otd_image_check(p, size, err, sizeof(err));
    if (st != OTM_ERR_INVALID)
        print_error("%s: check gave %d\n", what, (int)st);
    assert_int_equal(st, OTM_ERR_INVALID);
    assert_true(strlen(err) > 0 && strlen(err) < sizeof(err));

    memset(err, 'x', sizeof(err));
    st = otd_image_load(p, size, &img, err, sizeof(err));
    if (st != OTM_ERR_INVALID)
        print_error("%s: load gave %d\n", what, (int)st);
    assert_int_equal(st, OTM_ERR_INVALID);
    assert_null(img);
    assert_true(strlen(err) > 0 && strlen(err) < sizeof(err));
}

/* Header fields are edited through copies: the buffer need not be aligned
 * for the ELF structures. */
static Elf64_Ehdr get_ehdr(const unsigned char *p)
{
    Elf64_Ehdr eh;

    memcpy(&eh, p, sizeof(eh));
    return eh;
}

typedef void (*edit_fn)(unsigned char *p, size_t size);

static void set_machine(unsigned char *p, uint16_t machine)
{
    Elf64_Ehdr eh = get_ehdr(p);

    eh.e_machine = machine;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_machine_i386(unsigned char *p, size_t size)
{
    (void)size;
    set_machine(p, EM_386);
}

static void edit_class32(unsigned char *p, size_t size)
{
    (void)size;
    p[EI_CLASS] = ELFCLASS32;
}

static void edit_big_endian(unsigned char *p, size_t size)
{
    (void)size;
    p[EI_DATA] = ELFDATA2MSB;
}

static void edit_magic(unsigned char *p, size_t size)
{
    (void)size;
    p[1] = 'X';
}

static void edit_type(unsigned char *p, uint16_t type)
{
    Elf64_Ehdr eh = get_ehdr(p);

    eh.e_type = type;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_exec(unsigned char *p, size_t size)
{
    (void)size;
    edit_type(p, ET_EXEC);
}

static void edit_rel(unsigned char *p, size_t size)
{
    (void)size;
    edit_type(p, ET_REL);
}

static void edit_shoff_past_end(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);

    eh.e_shoff = size + 1;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_shoff_wraps(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);

    (void)size;
    eh.e_shoff = UINT64_MAX - 8;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_phnum_huge(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);

    (void)size;
    eh.e_phnum = 0xfff0;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_phnum_zero(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);

    (void)size;
    eh.e_phnum = 0;
    memcpy(p, &eh, sizeof(eh));
}

/* Section 0 of the fixture, for the counts kept there. */
static Elf64_Shdr *edit_section0(unsigned char *p, Elf64_Shdr *s0)
{
    Elf64_Ehdr eh = get_ehdr(p);

    memcpy(s0, p + eh.e_shoff, sizeof(*s0));
    return s0;
}

static void edit_phnum_extended_huge(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);
    Elf64_Shdr s0;

    (void)size;
    edit_section0(p, &s0)->sh_info = 0xffffffffu;
    memcpy(p + eh.e_shoff, &s0, sizeof(s0));
    eh.e_phnum = PN_XNUM;
    memcpy(p, &eh, sizeof(eh));
}

static void set_shnum_extended(unsigned char *p, uint64_t count)
{
    Elf64_Ehdr eh = get_ehdr(p);
    Elf64_Shdr s0;

    edit_section0(p, &s0)->sh_size = count;
    memcpy(p + eh.e_shoff, &s0, sizeof(s0));
    eh.e_shnum = 0;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_shnum_extended_huge(unsigned char *p, size_t size)
{
    (void)size;
    set_shnum_extended(p, 1u << 20);
}

/* 2^58 section headers of 64 bytes are 2^64 bytes: a product that wraps
 * to 0 and would fit any buffer. */
static void edit_shnum_extended_wraps(unsigned char *p, size_t size)
{
    (void)size;
    set_shnum_extended(p, (uint64_t)1 << 58);
}

static void edit_phentsize(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);

    (void)size;
    eh.e_phentsize = 32;
    memcpy(p, &eh, sizeof(eh));
}

static void edit_shentsize(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);

    (void)size;
    eh.e_shentsize = 32;
    memcpy(p, &eh, sizeof(eh));
}

/* Applies f to every program header (i = its index). */
static void each_phdr(unsigned char *p, size_t size,
                      void (*f)(Elf64_Phdr *ph, size_t size))
{
    Elf64_Ehdr eh = get_ehdr(p);
    Elf64_Phdr ph;
    size_t i;

    for (i = 0; i < eh.e_phnum; i++) {
        unsigned char *at = p + eh.e_phoff + i * sizeof(ph);

        memcpy(&ph, at, sizeof(ph));
        f(&ph, size);
        memcpy(at, &ph, sizeof(ph));
    }
}

static void load_filesz_past_end(Elf64_Phdr *ph, size_t size)
{
    if (ph->p_type == PT_LOAD)
        ph->p_filesz = size;
}

static void load_offset_wraps(Elf64_Phdr *ph, size_t size)
{
    (void)size;
    if (ph->p_type == PT_LOAD)
        ph->p_offset = UINT64_MAX - 16;
}

static void load_to_note(Elf64_Phdr *ph, size_t size)
{
    (void)size;
    if (ph->p_type == PT_LOAD)
        ph->p_type = PT_NOTE;
}

static void edit_segment_past_end(unsigned char *p, size_t size)
{
    each_phdr(p, size, load_filesz_past_end);
}

static void edit_segment_offset_wraps(unsigned char *p, size_t size)
{
    each_phdr(p, size, load_offset_wraps);
}

static void edit_no_load_segment(unsigned char *p, size_t size)
{
    each_phdr(p, size, load_to_note);
}

/* The last section (the fixture's string table) claims bytes past the end. */
static void edit_section_past_end(unsigned char *p, size_t size)
{
    Elf64_Ehdr eh = get_ehdr(p);
    Elf64_Shdr sh;
    unsigned char *at = p + eh.e_shoff + (eh.e_shnum - 1u) * sizeof(sh);

    memcpy(&sh, at, sizeof(sh));
    sh.sh_offset = size - 4;
    sh.sh_size = 8;
    memcpy(at, &sh, sizeof(sh));
}

static void test_bad_headers(void **state)
{
    static const struct {
        const char *what;
        edit_fn edit;
    } cases[] = {
        {"e_machine EM_386", edit_machine_i386},
        {"ELFCLASS32", edit_class32},
        {"big-endian", edit_big_endian},
        {"bad magic", edit_magic},
        {"ET_EXEC", edit_exec},
        {"ET_REL", edit_rel},
        {"e_shoff past the end", edit_shoff_past_end},
        {"e_shoff + table wraps", edit_shoff_wraps},
        {"e_phnum 0xfff0", edit_phnum_huge},
        {"e_phnum 0", edit_phnum_zero},
        {"PN_XNUM, sh_info 2^32-1", edit_phnum_extended_huge},
        {"e_shnum 0, sh_size 2^20", edit_shnum_extended_huge},
        {"e_shnum 0, sh_size 2^58", edit_shnum_extended_wraps},
        {"e_phentsize 32", edit_phentsize},
        {"e_shentsize 32", edit_shentsize},
        {"PT_LOAD past the end", edit_segment_past_end},
        {"PT_LOAD offset wraps", edit_segment_offset_wraps},
        {"no PT_LOAD", edit_no_load_segment},
        {"section past the end", edit_section_past_end},
    };
    fixtures *fx = *state;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char *p = copy_prefix(&fx->image, fx->image.size);

        cases[i].edit(p, fx->image.size);
        expect_invalid(p, fx->image.size, cases[i].what);
        free(p);
    }
}

static void test_truncated(void **state)
{
    fixtures *fx = *state;
    size_t size = fx->image.size;
    const size_t lengths[] = {1, 16, 63, 64, 65, 200, size / 2, size - 1};
    char what[64];
    size_t i;

    for (i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
        unsigned char *p = copy_prefix(&fx->image, lengths[i]);

        snprintf(what, sizeof(what), "truncated to %zu", lengths[i]);
        expect_invalid(p, lengths[i], what);
        free(p);
    }
}

/* splitmix64: a fixed seed gives the same bytes on every run. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void test_garbage(void **state)
{
    static const unsigned char three[3] = {0x7f, 'E', 0x17};
    size_t size = 64 * 1024, i;
    unsigned char *p = malloc(size);
    uint64_t seed = 20240601;

    (void)state;
    expect_invalid(NULL, 0, "NULL, 0");
    expect_invalid(NULL, 4096, "NULL, 4096");
    expect_invalid(three, 0, "size 0");
    expect_invalid(three, sizeof(three), "3 bytes");
    assert_non_null(p);
    for (i = 0; i < size; i++)
        p[i] = (unsigned char)next_random(&seed);
    expect_invalid(p, size, "64 KiB of noise");
    /* The same noise behind a valid ELF64 x86_64 ET_DYN identification. */
    memcpy(p, ELFMAG, SELFMAG);
    p[EI_CLASS] = ELFCLASS64;
    p[EI_DATA] = ELFDATA2LSB;
    p[EI_VERSION] = EV_CURRENT;
    edit_type(p, ET_DYN);
    set_machine(p, EM_X86_64);
    expect_invalid(p, size, "noise behind an x86_64 ET_DYN header");
    free(p);
}

/* A few bytes of the headers changed at random: whatever the verdict, the
 * check answers without a crash (and, under Valgrind, without reading past
 * the exact-size buffer), and a refusal carries a sentence. */
static void test_header_mutations(void **state)
{
    fixtures *fx = *state;
    Elf64_Ehdr eh = get_ehdr(fx->image.bytes);
    /* {offset, length} of the ELF header and the two header tables. */
    const uint64_t tables[3][2] = {
        {0, sizeof(eh)},
        {eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr)},
        {eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr)},
    };
    uint64_t seed = 7;
    char err[256];
    int round, k, refused = 0;

    for (round = 0; round < 3000; round++) {
        unsigned char *p = copy_prefix(&fx->image, fx->image.size);
        int edits = 1 + (int)(next_random(&seed) % 4);
        otm_status st;

        for (k = 0; k < edits; k++) {
            const uint64_t *t = tables[next_random(&seed) % 3];

            p[t[0] + next_random(&seed) % t[1]] =
                (unsigned char)next_random(&seed);
        }
        st = otd_image_check(p, fx->image.size, err, sizeof(err));
        assert_true(st == OTM_OK || st == OTM_ERR_INVALID);
        if (st == OTM_ERR_INVALID) {
            assert_true(err[0] != '\0');
            refused++;
        }
        free(p);
    }
    /* The mutations reach the checks: many of them are refused. */
    assert_true(refused > 300);
}

static void test_err_buffer(void **state)
{
    fixtures *fx = *state;
    char err[16];
    unsigned char *p = copy_prefix(&fx->image, fx->image.size);

    edit_machine_i386(p, fx->image.size);
    assert_int_equal(otd_image_check(p, fx->image.size, NULL, 0),
                     OTM_ERR_INVALID);
    memset(err, 'x', sizeof(err));
    assert_int_equal(otd_image_check(p, fx->image.size, err, 1),
                     OTM_ERR_INVALID);
    assert_int_equal(err[0], '\0');
    assert_int_equal(err[1], 'x');
    memset(err, 'x', sizeof(err));
    assert_int_equal(otd_image_check(p, fx->image.size, err, 8),
                     OTM_ERR_INVALID);
    assert_int_equal(strlen(err), 7);
    free(p);
}

/* ------------------------------------------------------------------------ */

static int setup(void **state)
{
    fixtures *fx = calloc(1, sizeof(*fx));

    if (fx == NULL)
        return -1;
    fx->image = read_file(FIXTURE_PATH);
    fx->nodelete = read_file(FIXTURE_NODELETE_PATH);
    fx->unresolved = read_file(FIXTURE_UNRESOLVED_PATH);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixtures *fx = *state;

    free(fx->image.bytes);
    free(fx->nodelete.bytes);
    free(fx->unresolved.bytes);
    free(fx);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The offload-binary wrapper of clang 16                                    */

/* The fixture wrapped as clang 16 wraps a device image: header (magic,
 * version, total size, entry offset and size), one entry (kinds, flags,
 * string table, image offset and size), two strings, the image. */
static unsigned char *wrap(const blob *elf, size_t *size, uint32_t version)
{
    enum { HEADER = 32, ENTRY = 40, STRINGS = 72, IMAGE = 96 };
    uint64_t total = IMAGE + elf->size, eoff = HEADER, esize = ENTRY;
    uint64_t soff = STRINGS, nstr = 1, ioff = IMAGE, isize = elf->size;
    uint64_t key = 0, value = 0;
    unsigned char *b = calloc(1, total);

    assert_non_null(b);
    memcpy(b, "\x10\xff\x10\xad", 4);
    memcpy(b + 4, &version, 4);
    memcpy(b + 8, &total, 8);
    memcpy(b + 16, &eoff, 8);
    memcpy(b + 24, &esize, 8);
    b[HEADER] = 1;      /* image kind: object */
    b[HEADER + 2] = 1;  /* offload kind: OpenMP */
    memcpy(b + HEADER + 8, &soff, 8);
    memcpy(b + HEADER + 16, &nstr, 8);
    memcpy(b + HEADER + 24, &ioff, 8);
    memcpy(b + HEADER + 32, &isize, 8);
    memcpy(b + STRINGS, &key, 8);
    memcpy(b + STRINGS + 8, &value, 8);
    memcpy(b + IMAGE, elf->bytes, elf->size);
    *size = (size_t)total;
    return b;
}

static void expect_unwrap_invalid(const unsigned char *p, size_t size, const char *why)
{
    const void *image = p;
    size_t image_size = 1;
    char err[160] = "";

    if (otd_image_unwrap(p, size, &image, &image_size, err, sizeof err) != OTM_ERR_INVALID)
        fail_msg("unwrap accepted %s", why);
    if (err[0] == '\0')
        fail_msg("no reason given for %s", why);
}

static void test_unwrap(void **state)
{
    fixtures *fx = *state;
    const void *image = NULL;
    size_t size = 0, image_size = 0;
    char err[160];
    uint64_t big;

    /* A plain ELF image is its own image (clang 14). */
    assert_int_equal(otd_image_unwrap(fx->image.bytes, fx->image.size, &image,
                                      &image_size, err, sizeof err), OTM_OK);
    assert_ptr_equal(image, fx->image.bytes);
    assert_int_equal(image_size, fx->image.size);

    /* Wrapped: the ELF inside, which checks and loads. */
    unsigned char *b = wrap(&fx->image, &size, 1);
    assert_int_equal(otd_image_unwrap(b, size, &image, &image_size, err, sizeof err), OTM_OK);
    assert_ptr_equal(image, b + 96);
    assert_int_equal(image_size, fx->image.size);
    assert_int_equal(otd_image_check(image, image_size, err, sizeof err), OTM_OK);
    otd_image *img = NULL;
    assert_int_equal(otd_image_load(image, image_size, &img, err, sizeof err), OTM_OK);
    assert_non_null(otd_image_symbol(img, "fx_add"));
    otd_image_unload(img);
    /* The wrapper itself is no ELF image. */
    assert_int_equal(otd_image_check(b, size, NULL, 0), OTM_ERR_INVALID);

    /* Broken wrappers are refused with a reason, never read past the end. */
    expect_unwrap_invalid(b, 31, "a header cut to 31 bytes");
    expect_unwrap_invalid(b, size - 1, "a buffer shorter than the claimed size");
    free(b);
    b = wrap(&fx->image, &size, 2);
    expect_unwrap_invalid(b, size, "version 2");
    free(b);
    b = wrap(&fx->image, &size, 1);
    big = size;  /* entry offset at the very end */
    memcpy(b + 16, &big, 8);
    expect_unwrap_invalid(b, size, "an entry past the end");
    big = 1;
    memcpy(b + 16, &(uint64_t){32}, 8);
    memcpy(b + 24, &big, 8);
    expect_unwrap_invalid(b, size, "an entry of 1 byte");
    memcpy(b + 24, &(uint64_t){40}, 8);
    big = UINT64_MAX - 8;
    memcpy(b + 32 + 24, &big, 8);
    expect_unwrap_invalid(b, size, "an image offset that wraps around");
    memcpy(b + 32 + 24, &(uint64_t){96}, 8);
    big = fx->image.size + 1;
    memcpy(b + 32 + 32, &big, 8);
    expect_unwrap_invalid(b, size, "an image one byte longer than the buffer");
    big = 0;
    memcpy(b + 32 + 32, &big, 8);
    expect_unwrap_invalid(b, size, "an empty image");
    /* A total smaller than the header. */
    b = wrap(&fx->image, &size, 1);
    big = 31;
    memcpy(b + 8, &big, 8);
    expect_unwrap_invalid(b, size, "a total of 31 bytes");
    /* Without room for a reason: refused all the same. */
    err[0] = 'x';
    assert_int_equal(otd_image_unwrap(b, size, &image, &image_size, err, 0), OTM_ERR_INVALID);
    assert_int_equal(err[0], 'x');
    assert_int_equal(otd_image_unwrap(b, size, &image, &image_size, NULL, 0), OTM_ERR_INVALID);
    free(b);
    assert_int_equal(otd_image_unwrap(fx->image.bytes, fx->image.size, NULL, &image_size,
                                      err, sizeof err), OTM_ERR_INVALID);
    assert_int_equal(otd_image_unwrap(fx->image.bytes, fx->image.size, &image, NULL,
                                      err, sizeof err), OTM_ERR_INVALID);
    /* Nothing, or fewer bytes than the magic: not wrapped, itself. */
    assert_int_equal(otd_image_unwrap(NULL, 0, &image, &image_size, err, sizeof err), OTM_OK);
    assert_null(image);
    assert_int_equal(otd_image_unwrap(fx->image.bytes, 3, &image, &image_size, err,
                                      sizeof err), OTM_OK);
    assert_ptr_equal(image, fx->image.bytes);
    assert_int_equal(image_size, 3);
    assert_null(otd_image_handle(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_accepts_fixture),
        cmocka_unit_test(test_symbols),
        cmocka_unit_test(test_global_visible_to_image),
        cmocka_unit_test(test_kernel_arities),
        cmocka_unit_test(test_kernel_max_args),
        cmocka_unit_test(test_kernel_call_invalid),
        cmocka_unit_test(test_two_loads_are_independent),
        cmocka_unit_test(test_unload),
        cmocka_unit_test(test_no_file_created),
        cmocka_unit_test(test_loader_refusal),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_header_mutations),
        cmocka_unit_test(test_err_buffer),
        cmocka_unit_test(test_unwrap),
        /* Last: it leaves a NODELETE library mapped for good. */
        cmocka_unit_test(test_nodelete_name_not_reused),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
