/*
 * otm/output.h - capturing what target regions on a worker write to stdout
 * and stderr, so that the plugin can forward it to rank 0 when each region
 * completes and device printf comes out on the host in program order.
 *
 * While a capture runs, descriptors 1 and 2 of the process are two memfds;
 * whatever writes to them (printf, write(1, ...), a child process that
 * inherited them) lands there. The worker keeps duplicates of the original
 * descriptors for its own log lines (otd_output_fd). Taken bytes are
 * released from the memfds by punching holes, so a long run holds only
 * what has not been taken yet; the memfds' sizes keep growing (sparse
 * files, offsets never move), so an RLIMIT_FSIZE below the total output of
 * the run would make writes fail with EFBIG/SIGXFSZ.
 *
 * Descriptors 1 and 2 are process-wide, so at most one capture runs at a
 * time. The bytes of each stream come out in the order they reached the
 * stream; stdio's buffering decides when printf's bytes reach it, which is
 * why otd_output_pending flushes.
 *
 * Errors are values with a sentence in `err` (always NUL-terminated when
 * errlen > 0); nothing here aborts on bad input.
 */
#ifndef OTM_OUTPUT_H
#define OTM_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

typedef struct otd_output otd_output;

/* Starts capturing. Flushes stdout and stderr (what was written before
 * goes to the original descriptors), saves duplicates of descriptors 1 and
 * 2 (F_DUPFD_CLOEXEC, numbered >= 3), then puts on 1 and 2 two memfds
 * (memfd_create, MFD_CLOEXEC; descriptors 1 and 2 themselves are not
 * close-on-exec) opened O_APPEND: a write from any thread goes to the end,
 * never blocks, never overwrites another. stdout stays the FILE* on
 * descriptor 1; a stream first used after this call is fully buffered (a
 * memfd is not a terminal), one used before keeps the mode stdio gave it.
 *
 * On success *out owns the capture. OTM_ERR_INVALID for a NULL out or when
 * descriptor 1 or 2 is not open; OTM_ERR_BUSY when a capture is already
 * running (start twice without stop: the first stays as it was);
 * OTM_ERR_NOMEM when the system is out of memory or descriptors. On any
 * failure *out is NULL, err says why and everything is undone:
 * descriptors 1 and 2 are what they were and nothing stays open. */
otm_status otd_output_start(otd_output **out, char *err, size_t errlen);

/* The saved original descriptor of stream 1 (stdout) or 2 (stderr): the
 * worker writes its own log lines there, not into the capture. -1 for
 * another stream or a NULL o. Valid until otd_output_stop. */
int otd_output_fd(const otd_output *o, int stream);

/* Flushes stdout and stderr, then stores in *out_bytes and *err_bytes the
 * number of captured bytes of each stream not yet taken (each memfd's size,
 * from fstat, minus what was taken). A NULL pointer is not written; a NULL
 * o counts 0 and 0. Thread-safe; costs two flushes, two fstat calls and an
 * uncontended mutex when nothing was written. */
void otd_output_pending(otd_output *o, uint64_t *out_bytes,
                        uint64_t *err_bytes);

/* Copies exactly out_bytes of stdout's, then err_bytes of stderr's oldest
 * untaken bytes into dst (stdout's first, stderr's right after them:
 * out_bytes + err_bytes bytes in all), and releases their memory in the
 * memfds (fallocate FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE; if the
 * kernel refuses to punch, the bytes stay allocated but the take still
 * succeeds). Does not flush: counts come from otd_output_pending, and bytes
 * written after it stay for the next take. Thread-safe (one mutex).
 *
 * OTM_ERR_INVALID, taking nothing, when o is NULL, when dst is NULL and
 * out_bytes + err_bytes > 0, when either count exceeds what is untaken, or
 * when the memfd cannot be read (something truncated descriptor 1 or 2);
 * dst's contents are then unspecified. */
otm_status otd_output_take(otd_output *o, uint8_t *dst, uint64_t out_bytes,
                           uint64_t err_bytes);

/* Ends the capture: flushes stdout and stderr, writes what is still
 * untaken to the saved descriptors (so nothing is lost at exit), puts the
 * original descriptors back on 1 and 2 (with their close-on-exec flag),
 * closes the memfds and saved copies and frees o; a new capture may start
 * afterwards. Call it when no region runs: a write racing the switch of
 * descriptor 1 or 2 may be lost. A write error on a saved descriptor drops
 * the rest of that stream. NULL is a no-op. */
void otd_output_stop(otd_output *o);

#endif
