/*
 * fixture_requires.c - programs' `requires` flags as clang records them
 * (src/device/requires.c), for test_requires. Built four times:
 *  FX_REQUIRES 1: entries of the host's offload table, section
 *    omp_offloading_entries: a kernel's, then one with flags
 *    OMP_REGISTER_REQUIRES (0x10) and the requirements (8,
 *    unified_shared_memory) in its last word, as clang 18 and later write
 *    it;
 *  FX_REQUIRES 2: a function .omp_offloading.requires_reg that passes them
 *    to __tgt_register_requires (mov $8, %edi first), as clang 14 to 17
 *    write it;
 *  FX_REQUIRES 3: such a function whose first 16 bytes load no immediate,
 *    and an omp_offloading_entries section without bytes (NOBITS);
 *  FX_REQUIRES 4: an offload table with a kernel's entry only.
 * The functions are written in assembly, so that no instrumentation of the
 * build (coverage counters, sanitizers) moves the immediate. The test reads
 * the files; nothing loads them.
 */
#include <stdint.h>

#ifndef FX_REQUIRES
#define FX_REQUIRES 1
#endif

struct entry {
    void *addr;
    char *name;
    uint64_t size;
    int32_t flags;
    int32_t data;
};

#if FX_REQUIRES == 1
__attribute__((used, section("omp_offloading_entries")))
static const struct entry entries[2] = {{0, 0, 0, 0, 0}, {0, 0, 0, 0x10, 8}};
#elif FX_REQUIRES == 2
__asm__(".text\n"
        ".type .omp_offloading.requires_reg, @function\n"
        ".omp_offloading.requires_reg:\n"
        "movl $8, %edi\n"
        "jmp __tgt_register_requires@PLT\n"
        ".size .omp_offloading.requires_reg, . - .omp_offloading.requires_reg\n");
#elif FX_REQUIRES == 3
__asm__(".text\n"
        ".type .omp_offloading.requires_reg, @function\n"
        ".omp_offloading.requires_reg:\n"
        ".fill 16, 1, 0x90\n"
        "movl $8, %edi\n"
        "ret\n"
        ".size .omp_offloading.requires_reg, . - .omp_offloading.requires_reg\n"
        ".section omp_offloading_entries, \"aw\", @nobits\n"
        ".zero 32\n"
        ".text\n");
#else
__attribute__((used, section("omp_offloading_entries")))
static const struct entry entries[1] = {{0, 0, 0, 0, 0}};
#endif

int fx_requires_which(void);
int fx_requires_which(void)
{
    return FX_REQUIRES;
}
