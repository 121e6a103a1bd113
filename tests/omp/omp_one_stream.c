/* omp_one_stream: for check_one_stream.sh, never run on its own. Says
 * whether its stdout and stderr are one file (ARGV[1]: "one" or "apart",
 * what the test expects), and writes numbered lines to the two in turn,
 * around a target region, each flushed before the next: through mpiexec
 * the caller sees them in this order only if they are one stream. */
#define OMP_TEST_NAME "omp_one_stream"
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "omp_check.h"

static int one_file(void)
{
    struct stat out, err;
    CHECK(fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0,
          "fstat of stdout or stderr failed");
    return out.st_dev == err.st_dev && out.st_ino == err.st_ino;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (!strcmp(argv[1], "one") || !strcmp(argv[1], "apart")),
          "usage: omp_one_stream one|apart");
    require_devices(1);
    int x = 0;
    for (int i = 0; i < 3; i++) {
        fprintf(stderr, "line %d: stderr\n", 2 * i + 1);
#pragma omp target device(0) map(tofrom: x)
        x++;
        printf("line %d: stdout\n", 2 * i + 2);
        fflush(stdout);
    }
    CHECK(x == 3, "x is %d after 3 regions, not 3", x);
    int one = one_file();
    CHECK(one == !strcmp(argv[1], "one"), "rank 0's stdout and stderr are %s, not %s",
          one ? "one file" : "apart", argv[1]);
    PASS("stdout and stderr %s", one ? "one file" : "apart");
    return 0;
}
