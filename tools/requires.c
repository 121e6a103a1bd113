/*
 * requires.c - omptarget-mpi-requires PROGRAM: prints the `requires`
 * flags PROGRAM registers (otd_program_requires), as `requires 0xN`, and
 * exits 0; exits 1 when it registers none found, 2 when PROGRAM cannot be
 * read. The launcher asks it whether the program requires unified shared
 * memory, which its ranks' layouts must allow before they start.
 */
#include <stdio.h>

#include "otm/device.h"

int main(int argc, char **argv)
{
    char err[512];
    uint64_t flags = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: omptarget-mpi-requires PROGRAM\n");
        return 2;
    }
    if (otd_program_requires(argv[1], &flags, err, sizeof err)) {
        fprintf(stderr, "omptarget-mpi-requires: %s\n", err);
        return 2;
    }
    if (!flags)
        return 1;
    printf("requires 0x%llx\n", (unsigned long long)flags);
    return 0;
}
