/* Error reporting inside the library: every failure sets a per-thread detail message and
 * returns its status, so a caller can `return err_set(CLS_E_IO, "open %s: %s", ...)`. */
#ifndef CLS_ERR_H
#define CLS_ERR_H

#include "clsearch.h"

#if defined(__GNUC__)
#define ERR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ERR_PRINTF(a, b)
#endif

/* Sets the detail message of this thread and returns s. */
cls_status err_set(cls_status s, const char *fmt, ...) ERR_PRINTF(2, 3);
/* err_set for a failure that is the input's, whichever device ran it (a query whose lists exceed
 * what the device can hold), so that a scheduler does not blame the device; err_is_input says
 * whether this thread's last failure was one (err_set clears it). */
cls_status err_input(cls_status s, const char *fmt, ...) ERR_PRINTF(2, 3);
int err_is_input(void);
/* Prepends context ("reading X: ") to the current detail and returns s. */
cls_status err_wrap(cls_status s, const char *fmt, ...) ERR_PRINTF(2, 3);
void err_clear(void);
/* Sends a notice to the function cls_set_notice set, if any (nothing when none). */
void err_notice(const char *fmt, ...) ERR_PRINTF(1, 2);

#endif
