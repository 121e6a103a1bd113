/*
 * mpi_nodevices.c - the plugin when it must report 0 devices: started
 * without an MPI launcher, on a single rank, or with a bad setting outside a launched job. The
 * first call says why on stderr (EXPECTED must appear, with "0 devices"),
 * and every entry point then behaves: nothing to register or unregister,
 * no device to initialise or allocate on.
 *
 * Usage: mpi_nodevices [--no-launcher] EXPECTED [NAME=VALUE...]
 * The plugin's settings (and with --no-launcher, every launcher's marks)
 * are cleared from the environment first, then NAME=VALUE applied; the
 * plugin reads them at its first call. Prints TAP lines, then "# ...: PASS"
 * and exits 0 when every check passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

extern char **environ;

/* Drops every variable whose name starts with one of the prefixes. */
static void clear_env(const char *const *prefixes, size_t n)
{
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e && !again; e++) {
            for (size_t i = 0; i < n && !again; i++) {
                if (strncmp(*e, prefixes[i], strlen(prefixes[i])) == 0) {
                    char name[256];
                    size_t len = strcspn(*e, "=");
                    if (len >= sizeof name)
                        len = sizeof name - 1;
                    memcpy(name, *e, len);
                    name[len] = 0;
                    unsetenv(name);
                    again = 1;          /* environ changed: scan again */
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    static const char *const settings[] = {"OMPTARGET_MPI_", "OMPCLUSTER_"};
    static const char *const marks[] = {"PMI_", "PMIX_", "OMPI_", "MPI_LOCALNRANKS"};
    int arg = 1, no_launcher = 0;
    if (arg < argc && strcmp(argv[arg], "--no-launcher") == 0)
        no_launcher = 1, arg++;
    if (arg >= argc) {
        fprintf(stderr, "usage: mpi_nodevices [--no-launcher] EXPECTED [NAME=VALUE...]\n");
        return 2;
    }
    const char *expected = argv[arg++];
    clear_env(settings, 2);
    if (no_launcher)
        clear_env(marks, 4);
    for (; arg < argc; arg++)
        putenv(argv[arg]);

    mt_capture_begin();
    int n = __tgt_rtl_number_of_devices();
    const char *said = mt_capture_end();
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", said);
    CHECK(n == 0, "number_of_devices: %d", n);
    CHECK(strstr(msg, "omptarget-mpi") && strstr(msg, expected) && strstr(msg, "0 devices"),
          "stderr says why there is no device (\"%s\")", expected);

    /* The answer is made once: the same, and no second message. */
    mt_capture_begin();
    n = __tgt_rtl_number_of_devices();
    said = mt_capture_end();
    CHECK(n == 0 && said[0] == 0, "a second number_of_devices: %d, silent", n);

    __tgt_bin_desc desc;
    memset(&desc, 0, sizeof desc);
    CHECK(__tgt_rtl_register_lib(&desc) == OFFLOAD_SUCCESS, "register_lib succeeds (nothing to serve)");
    CHECK(__tgt_rtl_is_valid_binary(NULL) == 0, "is_valid_binary(NULL) is 0");
    CHECK(__tgt_rtl_init_device(0) == OFFLOAD_FAIL, "init_device(0) fails");
    CHECK(__tgt_rtl_data_alloc(0, 8, NULL, 0) == NULL, "data_alloc on device 0 gives NULL");
    CHECK(__tgt_rtl_unregister_lib(&desc) == OFFLOAD_SUCCESS, "unregister_lib succeeds");

    int failures = mt_failures();
    printf("# mpi_nodevices (%s): %s\n", expected, failures ? "FAIL" : "PASS");
    return failures != 0;
}
