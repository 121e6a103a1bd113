/*
 * host_memory.c - the host's end of unified shared memory (otm/pager.h):
 * rank 0 reads and writes its own memory for a device, and lists the
 * ranges a region may reach.
 *
 * The addresses come from a peer, so they are never dereferenced:
 * process_vm_readv and process_vm_writev on this very process answer
 * EFAULT where a load or a store would have faulted.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "otm/pager.h"

otm_status otd_host_read(uint64_t addr, void *dst, uint64_t len)
{
    struct iovec here = {dst, len}, there = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(getpid(), &here, 1, &there, 1, 0);
    return n == (ssize_t)len ? OTM_OK : OTM_ERR_BAD_POINTER;
}

otm_status otd_host_write(uint64_t addr, const void *src, uint64_t len)
{
    struct iovec here = {(void *)(uintptr_t)src, len};
    struct iovec there = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_writev(getpid(), &here, 1, &there, 1, 0);
    return n == (ssize_t)len ? OTM_OK : OTM_ERR_BAD_POINTER;
}

/* The whole of /proc/self/maps, NUL-terminated (it cannot be sized
 * before it is read). */
static char *read_maps(void)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t len = 0, cap = 16384;
    char *buf = malloc(cap), *grown = buf;
    ssize_t n = 1;
    while (grown && n > 0) {
        buf = grown;
        n = read(fd, buf + len, cap - len - 1);
        len += n > 0 ? (size_t)n : 0;
        /* Room for a read more: procfs writes whole lines per read. */
        if (n > 0 && cap - len < 4096 && (grown = realloc(buf, 2 * cap)) != NULL)
            cap *= 2;
    }
    close(fd);
    if (!grown || n < 0) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

/* Whether a line of the map names a mapping a region may reach. */
static int reachable(const char *perms, const char *name)
{
    static const char *const kernel[] = {"[vvar]", "[vdso]", "[vsyscall]", "[vvar_vclock]"};
    if (perms[0] != 'r' && perms[1] != 'w')
        return 0;
    for (size_t i = 0; i < sizeof kernel / sizeof *kernel; i++)
        if (!strncmp(name, kernel[i], strlen(kernel[i])))
            return 0;
    return 1;
}

otm_status otd_host_ranges(otd_range *out, size_t cap, size_t *n)
{
    char *maps = read_maps();
    if (!maps)
        return OTM_ERR_INVALID;
    size_t count = 0;
    uint64_t last_end = 0;
    int last_ro = -1;
    for (char *line = maps; *line;) {
        char *next = strchrnul(line, '\n');
        if (*next)
            *next++ = '\0';    /* so that the name stays on its line */
        unsigned long a, b;
        char perms[5] = "";
        int at = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &a, &b, perms, &at) >= 3 &&
            reachable(perms, at ? line + at : "")) {
            int ro = perms[1] != 'w';
            if (count && a == last_end && ro == last_ro) {
                if (count <= cap)
                    out[count - 1].end = b;
            } else {
                if (count < cap)
                    out[count] = (otd_range){a | (ro ? OTD_RANGE_READ_ONLY : 0), b};
                count++;
            }
            last_end = b;
            last_ro = ro;
        }
        line = next;
    }
    free(maps);
    *n = count;
    return count <= cap ? OTM_OK : OTM_ERR_BAD_SIZE;
}
