/* Per-thread error detail: the status says what kind of failure, this says where and why. And
 * notices (cls_set_notice): lines for a person waiting, sent to the caller's function, never printed. */
#include "util/err.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ERR_CAP 16384 /* build logs can be long; longer ones are cut */
static _Thread_local char err_msg[ERR_CAP];
static _Thread_local int err_input_flag; /* the last failure was the input's (err_input) */

const char *cls_status_str(cls_status s)
{
    switch (s) {
    case CLS_OK: return "success";
    case CLS_E_ARG: return "invalid argument";
    case CLS_E_NOMEM: return "out of host memory";
    case CLS_E_IO: return "input/output error";
    case CLS_E_FORMAT: return "malformed input";
    case CLS_E_CORRUPT: return "damaged or foreign file";
    case CLS_E_VERSION: return "unsupported format version";
    case CLS_E_NODEVICE: return "no such OpenCL device";
    case CLS_E_OPENCL: return "OpenCL call failed";
    case CLS_E_BUILD: return "kernel build failed";
    case CLS_E_DEVMEM: return "out of device memory";
    case CLS_E_MISMATCH: return "results differ";
    }
    return "unknown status";
}

const char *cls_last_error(void) { return err_msg; }

const char *cls_version(void) { return CLSEARCH_VERSION; }

cls_status err_set(cls_status s, const char *fmt, ...)
{
    err_input_flag = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return s;
}

cls_status err_input(cls_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    err_input_flag = 1;
    return s;
}

int err_is_input(void) { return err_input_flag; }

cls_status err_wrap(cls_status s, const char *fmt, ...)
{
    char prefix[1024], old[ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err_msg, sizeof old);
    size_t n = strlen(prefix);
    if (n >= sizeof err_msg) n = sizeof err_msg - 1;
    memcpy(err_msg, prefix, n);
    size_t rest = strlen(old);
    if (rest > sizeof err_msg - 1 - n) rest = sizeof err_msg - 1 - n;
    memcpy(err_msg + n, old, rest);
    err_msg[n + rest] = '\0';
    return s;
}

void err_clear(void) { err_msg[0] = '\0'; }

/* The notice function and its argument, set and read together. */
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
static cls_notice_fn notice_fn;
static void *notice_user;

void cls_set_notice(cls_notice_fn fn, void *user)
{
    pthread_mutex_lock(&notice_lock);
    notice_fn = fn;
    notice_user = user;
    pthread_mutex_unlock(&notice_lock);
}

void err_notice(const char *fmt, ...)
{
    pthread_mutex_lock(&notice_lock);
    cls_notice_fn fn = notice_fn;
    void *user = notice_user;
    pthread_mutex_unlock(&notice_lock);
    if (!fn) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fn(user, line);
}
