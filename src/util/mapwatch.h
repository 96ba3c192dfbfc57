/* Watched file mappings: a read-only mapping of a file that another program may shrink while it
 * is in use. Reading a page past the file's new end raises SIGBUS, which would kill the process;
 * for a watched mapping it instead marks the mapping lost and puts zero-filled memory where the
 * file's pages were (from the faulting page to the mapping's end), so the read goes on and sees
 * zeros. A reader of a watched mapping must therefore be memory-safe whatever zeros it reads
 * where data was (index.h says how the index readers are), and a call that read it asks
 * mw_lost before it reports success.
 *
 * SIGBUS from anything else (another mapping, kill -BUS) goes to the handler that was in place
 * before, or ends the process as it would have. */
#ifndef CLS_MAPWATCH_H
#define CLS_MAPWATCH_H

#include <stddef.h>

/* Watches [base, base + len): a watch number (from 1; 0 is never one, so a zeroed record holds
 * none), or 0 when MW_MAX mappings are watched already. The first call puts the SIGBUS handler
 * in place. */
#define MW_MAX 1024
int mw_watch(const void *base, size_t len);
/* Stops watching (before the mapping is unmapped); 0 is ignored. */
void mw_unwatch(int w);
/* 1 once a read of watch w's mapping found the file shorter (or unreadable), else 0. */
int mw_lost(int w);

#endif
