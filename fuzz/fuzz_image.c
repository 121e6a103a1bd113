/*
 * fuzz_image.c - libFuzzer harness for the device image checker.
 *
 * The input is a candidate device image. otd_image_check must classify any
 * bytes without reading outside them (ASan sees every stray read, because
 * the input is copied into an exactly-sized heap block) and must explain a
 * refusal in its error buffer.
 *
 * Accepted images are NOT loaded: otd_image_load would dlopen fuzzer-made
 * ELF, whose constructors and relocations then run inside the fuzzer. The
 * loader is not the code under test, and running arbitrary input as code
 * would report the input's own behaviour as crashes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otm/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* libFuzzer's buffer is already exactly sized, but a private copy makes
     * the harness independent of that detail and lets libelf see writable
     * memory, as when the plugin checks an image libomptarget handed it. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    char err[256];
    memset(err, 0x55, sizeof err);      /* a missing terminator shows up */
    otm_status st = otd_image_check(copy, size, err, sizeof err);
    if (st != OTM_OK && st != OTM_ERR_INVALID) {
        fprintf(stderr, "fuzz_image: unexpected status %s\n", otm_status_name(st));
        abort();
    }
    if (st != OTM_OK && (!memchr(err, '\0', sizeof err) || !err[0])) {
        fprintf(stderr, "fuzz_image: refusal without a message\n");
        abort();
    }
    free(copy);
    return 0;
}
