/*
 * fault_describe.c - a fault in words, written by hand into the caller's
 * buffer so that a signal handler may do it (fault_describe.h).
 */
#include "fault_describe.h"

#include <signal.h>

/* ------------------------------------------------------------------------ */
/* Formatting without stdio                                                  */

void otd_text_put(otd_text *t, const char *s)
{
    while (*s != '\0' && t->pos + 1 < t->len)
        t->buf[t->pos++] = *s++;
    t->buf[t->pos] = '\0';
}

static void put_hex(otd_text *t, uint64_t v)
{
    char digits[19];
    int i = (int)sizeof(digits) - 1;

    digits[i] = '\0';
    do {
        digits[--i] = "0123456789abcdef"[v & 0xfu];
        v >>= 4;
    } while (v != 0);
    otd_text_put(t, "0x");
    otd_text_put(t, digits + i);
}

static void put_dec(otd_text *t, int64_t v)
{
    char digits[21];
    int i = (int)sizeof(digits) - 1;
    /* Negated as unsigned, so that INT64_MIN has a magnitude too. */
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;

    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u != 0);
    if (v < 0)
        otd_text_put(t, "-");
    otd_text_put(t, digits + i);
}

/* ------------------------------------------------------------------------ */
/* Describing a fault                                                        */

static const char *signal_name(int32_t signo)
{
    switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return NULL;
    }
}

/* The kernel's reasons (si_code > 0), as strsignal-like phrases. */
static const char *segv_code(int32_t code)
{
    switch (code) {
    case SEGV_MAPERR: return "address not mapped to object";
    case SEGV_ACCERR: return "invalid permissions for mapped object";
    case SEGV_BNDERR: return "failed address bound checks";
    case SEGV_PKUERR: return "failed protection key checks";
    default: return NULL;
    }
}

static const char *bus_code(int32_t code)
{
    switch (code) {
    case BUS_ADRALN: return "invalid address alignment";
    case BUS_ADRERR: return "nonexistent physical address";
    case BUS_OBJERR: return "object-specific hardware error";
    case BUS_MCEERR_AR: return "hardware memory error consumed";
    case BUS_MCEERR_AO: return "hardware memory error detected";
    default: return NULL;
    }
}

static const char *fpe_code(int32_t code)
{
    switch (code) {
    case FPE_INTDIV: return "integer divide by zero";
    case FPE_INTOVF: return "integer overflow";
    case FPE_FLTDIV: return "floating-point divide by zero";
    case FPE_FLTOVF: return "floating-point overflow";
    case FPE_FLTUND: return "floating-point underflow";
    case FPE_FLTRES: return "floating-point inexact result";
    case FPE_FLTINV: return "floating-point invalid operation";
    case FPE_FLTSUB: return "subscript out of range";
    default: return NULL;
    }
}

static const char *ill_code(int32_t code)
{
    switch (code) {
    case ILL_ILLOPC: return "illegal opcode";
    case ILL_ILLOPN: return "illegal operand";
    case ILL_ILLADR: return "illegal addressing mode";
    case ILL_ILLTRP: return "illegal trap";
    case ILL_PRVOPC: return "privileged opcode";
    case ILL_PRVREG: return "privileged register";
    case ILL_COPROC: return "coprocessor error";
    case ILL_BADSTK: return "internal stack error";
    default: return NULL;
    }
}

/* Codes <= 0 say who sent the signal; there is no address then. */
static const char *sender_code(int32_t signo, int32_t code)
{
    if (signo == SIGABRT && code != SI_USER)
        return "abort"; /* abort() and raise() send it as SI_TKILL */
    switch (code) {
    case SI_USER: return "sent by kill";
    case SI_TKILL: return "sent by tkill or raise";
    case SI_QUEUE: return "sent by sigqueue";
    default: return NULL;
    }
}

static const char *code_text(int32_t signo, int32_t code)
{
    if (code <= 0 || signo == SIGABRT)
        return sender_code(signo, code);
    switch (signo) {
    case SIGSEGV: return segv_code(code);
    case SIGBUS: return bus_code(code);
    case SIGFPE: return fpe_code(code);
    case SIGILL: return ill_code(code);
    default: return NULL;
    }
}

static void describe_exit(otd_text *t, const otd_fault *f)
{
    switch (f->code) {
    case OTM_FAULT_BY__EXIT: otd_text_put(t, "_exit("); break;
    case OTM_FAULT_BY__EXIT_C99: otd_text_put(t, "_Exit("); break;
    case OTM_FAULT_BY_QUICK_EXIT: otd_text_put(t, "quick_exit("); break;
    default: otd_text_put(t, "exit("); break;
    }
    put_dec(t, f->exit_status);
    otd_text_put(t, ")");
}

static void describe_signal(otd_text *t, const otd_fault *f)
{
    const char *name = signal_name(f->signo);
    const char *why = code_text(f->signo, f->code);

    if (name == NULL) {
        otd_text_put(t, "signal ");
        put_dec(t, f->signo);
    } else {
        otd_text_put(t, name);
    }
    otd_text_put(t, " (");
    if (why != NULL) {
        otd_text_put(t, why);
    } else {
        otd_text_put(t, "code ");
        put_dec(t, f->code);
    }
    otd_text_put(t, ")");
    if (name != NULL && f->code > 0 && f->signo != SIGABRT) {
        otd_text_put(t, " at address ");
        put_hex(t, f->addr);
    }
}

void otd_text_put_fault(otd_text *t, const otd_fault *f)
{
    if (f == NULL) {
        otd_text_put(t, "no fault");
        return;
    }
    if (f->signo == 0)
        describe_exit(t, f);
    else
        describe_signal(t, f);
    if (f->foreign)
        otd_text_put(t, " in another thread of the region");
}

const char *otd_fault_describe(const otd_fault *f, char *buf, size_t len)
{
    otd_text t;

    if (buf == NULL || len == 0)
        return buf;
    t.buf = buf;
    t.len = len;
    t.pos = 0;
    buf[0] = '\0';
    otd_text_put_fault(&t, f);
    return buf;
}
