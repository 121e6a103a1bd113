/* proxy_fail: an operation of the test plugin fails on device 1 (rank 1's
 * otmaccel device 0), OTM_ACCEL_FAIL saying which and OTM_TEST_VARIANT
 * what the program does:
 *   alloc, init  omp_target_alloc on device 1 returns NULL (the failed
 *                data_alloc, init_device); the next one works and the
 *                memory round-trips: PASS;
 *   exchange     omp_target_memcpy from device 1 to device 2 (both rank
 *                1's) either fails or leaves the right bytes (libomptarget
 *                may copy through the host instead), never success with
 *                wrong bytes: PASS;
 *   submit, retrieve, run, trap, load
 *                a region mapping an array tofrom on device 1 fails
 *                (libomptarget then ends the program): a RUN line, and
 *                FAIL if the region seems to have worked.
 * alloc, init and exchange also want exactly one line on rank 0's own
 * stderr (the plugin's lines on the host, not the device ranks') during
 * the failed call matching the extended regular expression
 * OTM_TEST_EXPECT_LINE: the device, its rank and plugin, and why. */
#define OMP_TEST_NAME "proxy_fail"
#include "proxy_omp.h"

#include <regex.h>

#define N 256

/* Rank 0's own stderr, captured around a call. */
typedef struct capture {
    FILE *tmp;
    int saved;
    char text[8192];
} capture;

static void capture_begin(capture *c)
{
    fflush(stderr);
    c->tmp = tmpfile();
    c->saved = dup(2);
    CHECK(c->tmp && c->saved >= 0 && dup2(fileno(c->tmp), 2) == 2, "cannot capture stderr");
}

/* The text captured, passed on to the real stderr. */
static void capture_end(capture *c)
{
    fflush(stderr);
    CHECK(dup2(c->saved, 2) == 2, "cannot restore stderr");
    close(c->saved);
    rewind(c->tmp);
    size_t n = fread(c->text, 1, sizeof c->text - 1, c->tmp);
    c->text[n] = '\0';
    fclose(c->tmp);
    fputs(c->text, stderr);
}

/* Exactly one captured line matches OTM_TEST_EXPECT_LINE. */
static void check_said(capture *c, const char *during)
{
    const char *want = getenv("OTM_TEST_EXPECT_LINE");
    CHECK(want && *want, "OTM_TEST_EXPECT_LINE is not set");
    regex_t re;
    CHECK(!regcomp(&re, want, REG_EXTENDED | REG_NOSUB), "bad OTM_TEST_EXPECT_LINE %s", want);
    int lines = 0;
    for (char *line = strtok(c->text, "\n"); line; line = strtok(NULL, "\n"))
        lines += !regexec(&re, line, 0, NULL, 0);
    regfree(&re);
    CHECK(lines == 1, "rank 0 wrote %d lines matching '%s' while %s (its lines are above), "
          "expected exactly 1", lines, want, during);
}

static void alloc_fails_once(void)
{
    int host = omp_get_initial_device();
    capture c;
    capture_begin(&c);
    int *p = omp_target_alloc(N * sizeof(int), 1);
    capture_end(&c);
    CHECK(p == NULL, "the first omp_target_alloc on device 1 worked (%p)", (void *)p);
    check_said(&c, "omp_target_alloc failed on device 1");
    p = omp_target_alloc(N * sizeof(int), 1);
    CHECK(p != NULL, "the second omp_target_alloc on device 1 failed too");
    int in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = 3 * i + 1, out[i] = 0;
    CHECK(!omp_target_memcpy(p, in, sizeof in, 0, 0, 1, host), "to device 1");
#pragma omp target device(1) is_device_ptr(p)
    for (int i = 0; i < N; i++)
        p[i] *= 2;
    CHECK(!omp_target_memcpy(out, p, sizeof out, 0, 0, host, 1), "from device 1");
    for (int i = 0; i < N; i++)
        CHECK(out[i] == 2 * in[i], "out[%d] = %d", i, out[i]);
    omp_target_free(p, 1);
}

/* Device 1 to device 2 (rank 1's otmaccel devices 0 and 1: the plugin's
 * data_exchange, which fails once). */
static void exchange_fails_once(void)
{
    int host = omp_get_initial_device();
    int in[N], out[N], junk[N];
    for (int i = 0; i < N; i++)
        in[i] = 5 * i + 2, junk[i] = -7;
    int *s = omp_target_alloc(sizeof in, 1), *d = omp_target_alloc(sizeof in, 2);
    CHECK(s && d, "omp_target_alloc on devices 1 and 2");
    CHECK(!omp_target_memcpy(s, in, sizeof in, 0, 0, 1, host), "to device 1");
    CHECK(!omp_target_memcpy(d, junk, sizeof junk, 0, 0, 2, host), "to device 2");
    capture c;
    capture_begin(&c);
    int rc = omp_target_memcpy(d, s, sizeof in, 0, 0, 2, 1);
    capture_end(&c);
    CHECK(!omp_target_memcpy(out, d, sizeof out, 0, 0, host, 2), "from device 2");
    int right = !memcmp(out, in, sizeof in);
    CHECK(rc != 0 || right, "omp_target_memcpy from device 1 to device 2 returned success, "
          "but device 2 holds %s (out[0] = %d, expected %d): the failed exchange was lost",
          !memcmp(out, junk, sizeof junk) ? "its old bytes" : "other bytes", out[0], in[0]);
    check_said(&c, "omp_target_memcpy's exchange failed from device 1 to device 2");
    /* The next exchange works. */
    CHECK(!omp_target_memcpy(d, junk, sizeof junk, 0, 0, 2, host), "to device 2");
    CHECK(!omp_target_memcpy(d, s, sizeof in, 0, 0, 2, 1), "device 1 to device 2");
    CHECK(!omp_target_memcpy(out, d, sizeof out, 0, 0, host, 2), "from device 2");
    CHECK(!memcmp(out, in, sizeof in), "device 2 after the second exchange: out[0] = %d",
          out[0]);
    omp_target_free(s, 1);
    omp_target_free(d, 2);
}

static void region_fails(void)
{
    int a[N];
    for (int i = 0; i < N; i++)
        a[i] = i;
#pragma omp target device(1) map(tofrom : a)
    for (int i = 0; i < N; i++)
        a[i] += 1000;
    int fine = 1;
    for (int i = 0; i < N; i++)
        fine &= a[i] == i + 1000;
    CHECK(!fine, "the region on device 1 worked although OTM_ACCEL_FAIL=%s",
          getenv("OTM_ACCEL_FAIL"));
    printf("the region on device 1 failed and the program went on\n");
}

int main(void)
{
    const char *v = getenv("OTM_TEST_VARIANT");
    require_proxied_devices();
    CHECK(v != NULL, "OTM_TEST_VARIANT is not set");
    printf("RUN proxy_fail: %s with OTM_ACCEL_FAIL=%s\n", v, getenv("OTM_ACCEL_FAIL"));
    fflush(stdout);
    if (!strcmp(v, "alloc") || !strcmp(v, "init")) {
        alloc_fails_once();
        PASS("%s: omp_target_alloc on device 1 returned NULL once, then worked", v);
        return 0;
    }
    if (!strcmp(v, "exchange")) {
        exchange_fails_once();
        PASS("exchange: a failed exchange from device 1 to device 2 was said, never lost");
        return 0;
    }
    region_fails();
    return 1;
}
