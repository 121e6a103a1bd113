/*
 * usm_internal.h - the state of unified shared memory that its two files
 * share: usm_host.c (rank 0's page server) and usm.c (a worker's pager
 * and regions). One otp_usm per process, in otp_plugin's `usm`.
 */
#ifndef OTP_USM_INTERNAL_H
#define OTP_USM_INTERNAL_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

#include "otm/page.h"
#include "otm/pager.h"
#include "plugin.h"

/* Refused pages remembered for the fault reports. */
#define REFUSED_KEPT 16u

struct otp_usm {
    pthread_t thread;               /* the host's server, the worker's pager */
    int thread_on;
    atomic_int stop;
    /* host */
    otm_page_server server;
    /* worker */
    otd_pager *pager;
    uint64_t run_end, run_len;      /* the pager thread's last run: the address
                                     * after it, its length in pages */
    pthread_mutex_t lock;           /* running, and one writeback at a time */
    int running;                    /* regions between begin and end */
    atomic_uint next_tag;
    uint64_t *ranges;               /* the host's, as last received */
    uint64_t ranges_cap;
    int learned;                    /* the host's ranges reserved once (under lock) */
    atomic_uint generation;         /* bumped at each learning of them */
    uint64_t page_mask;
    /* A fault's ask to learn the ranges again (retry_fault, in a signal
     * handler, to the pager's thread): one ask at a time. */
    sem_t ask_slot, answered;
    int sems_on;
    atomic_int pager_gone;          /* its thread ended: no one answers */
    _Atomic uint64_t ask_addr;
    atomic_int ask_write, answer;
    atomic_uint ask_seq, answer_seq;
    uint8_t *records;               /* a writeback's ask (under lock) */
    /* The last pages the pager refused for a reason of its own (no memory,
     * rank 0 not answering), which a region's fault report names. */
    _Atomic uint64_t refused[REFUSED_KEPT];
    atomic_uint nrefused;
    char why[512];                  /* why the pager cannot start */
};

/* A zeroed otp_usm with its lock, NULL when memory is short. */
otp_usm *otp_usm_new(void);
/* Stops and joins its thread (the server's or the pager's), if any. */
void otp_usm_join(otp_usm *u);

#endif
