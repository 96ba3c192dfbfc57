/* Temporary files written beside their final name and renamed over it when whole: created with
 * the mode any new file gets (0666 less the umask, where mkstemp would give 0600), and listed
 * while they exist so that SIGINT, SIGTERM or SIGHUP removes them before the process dies, and
 * so does the process's exit (a writer that gave up on an error path without removing its
 * file). */
#ifndef CLS_TMPFILE_H
#define CLS_TMPFILE_H

#include <stddef.h>

/* Creates "<final>.tmp.XXXXXX" exclusively (O_CREAT|O_EXCL, mode 0666 less the umask) and
 * registers it for removal on those signals. Returns the descriptor and the name in *tmp
 * (malloc, released by tmp_release), or -1 with errno set. */
int tmp_create(const char *final, char **tmp);

/* Takes tmp off the list (after it was renamed or removed) and frees it; NULL is ignored. */
void tmp_release(char *tmp);

/* Removes tmp and releases it. */
void tmp_discard(char *tmp);

#endif
