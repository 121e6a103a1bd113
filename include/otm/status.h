/*
 * otm/status.h - the error values of the whole project.
 *
 * Every fallible function returns an otm_status. OTM_OK is zero so that
 * `if (st)` reads as "if it failed". The numeric values travel on the wire in
 * completion messages, so they are fixed: add new values at the end, never
 * renumber.
 */
#ifndef OTM_STATUS_H
#define OTM_STATUS_H

#define OTM_STATUS_LIST(X)                                                    \
    X(OTM_OK, 0, "success")                                                   \
    X(OTM_ERR_NOMEM, 1, "out of memory")                                      \
    X(OTM_ERR_MPI, 2, "an MPI call failed")                                   \
    X(OTM_ERR_INVALID, 3, "invalid argument")                                 \
    X(OTM_ERR_BAD_POINTER, 4, "pointer outside a live allocation or global")  \
    X(OTM_ERR_BAD_SIZE, 5, "size out of range or overflowing")                \
    X(OTM_ERR_BAD_KIND, 6, "unknown event kind")                              \
    X(OTM_ERR_BAD_VERSION, 7, "wrong protocol version")                       \
    X(OTM_ERR_BAD_MESSAGE, 8, "malformed message")                            \
    X(OTM_ERR_BAD_TAG, 9, "tag or communicator out of range")                 \
    X(OTM_ERR_NO_KERNEL, 10, "unknown kernel or image")                       \
    X(OTM_ERR_TAGS_EXHAUSTED, 11, "no free tag")                              \
    X(OTM_ERR_TIMEOUT, 12, "peer did not answer in time")                     \
    X(OTM_ERR_SHUTDOWN, 13, "runtime is shutting down")                       \
    X(OTM_ERR_PEER, 14, "peer failed the operation")                          \
    X(OTM_ERR_KERNEL, 15, "kernel call failed")                               \
    X(OTM_ERR_BUSY, 16, "resource busy")                                      \
    X(OTM_ERR_KERNEL_FAULT, 17, "the target region faulted")                  \
    X(OTM_ERR_NO_IMAGE, 18, "the device does not hold this image")            \
    X(OTM_ERR_DEVICE_FAILED, 19, "the device failed earlier")                 \
    X(OTM_ERR_UNRESPONSIVE, 20, "the device stopped answering while a target " \
      "region ran: no answer to a liveness probe within half of "              \
      "OMPTARGET_MPI_TIMEOUT (its rank died or is stopped)")                   \
    X(OTM_ERR_KERNEL_TIMEOUT, 21, "the target region ran longer than "         \
      "OMPTARGET_MPI_KERNEL_TIMEOUT")                                           \
    X(OTM_ERR_NO_DEVICE, 22, "no such device on the device rank")            \
    X(OTM_ERR_PLUGIN_CALL, 23, "the device's plugin failed the call (its "    \
      "line on the device rank's stderr names it)")                           \
    X(OTM_ERR_PLUGIN_INIT, 24, "the device's plugin could not initialise "    \
      "the device (init_device failed)")

typedef enum otm_status {
#define OTM_STATUS_ENUM(name, value, text) name = value,
    OTM_STATUS_LIST(OTM_STATUS_ENUM)
#undef OTM_STATUS_ENUM
    OTM_STATUS_COUNT
} otm_status;

/* A static, human-readable sentence for `st`; never NULL, also for values
 * outside the enum (which a peer may send). */
const char *otm_status_text(int st);

/* The enumerator's name ("OTM_ERR_TIMEOUT"), or "OTM_STATUS_UNKNOWN". */
const char *otm_status_name(int st);

/* True when `st` is a value of the enum (used to validate peer input). */
int otm_status_valid(int st);

#endif
