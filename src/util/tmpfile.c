/* Temporary output files and their removal on signals (tmpfile.h).
 *
 * A writer killed by SIGINT, SIGTERM or SIGHUP would leave its "<name>.tmp.XXXXXX" behind, since
 * nothing else knows its name. The names in flight sit in a small fixed table that the handler
 * can read without locks or allocation; the handler unlinks each (unlink is async-signal-safe),
 * restores the default action and raises the signal again, so the process still dies of it and
 * its parent sees that. A handler is put in place only where the action is the default one, so a
 * program that handles these signals itself keeps its own handler. */
#define _POSIX_C_SOURCE 200809L
#include "util/tmpfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* More writers at once than any command runs; a name beyond them is written but not listed. */
#define TMP_SLOTS 32

static _Atomic(char *) slots[TMP_SLOTS];
static pid_t owner[TMP_SLOTS]; /* the process that listed each: a forked child leaves them alone */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};

static void on_signal(int sig)
{
    int saved = errno;
    for (int i = 0; i < TMP_SLOTS; i++) {
        char *p = atomic_load(&slots[i]);
        if (p) unlink(p);
    }
    signal(sig, SIG_DFL);
    errno = saved;
    raise(sig); /* delivered on return from the handler: the process ends by this signal */
}

/* At exit: whatever is still listed was abandoned (the process that wrote it is ending). The
 * names stay listed, so nothing is freed under a writer still running in another thread. */
static void remove_left(void)
{
    pid_t me = getpid();
    for (int i = 0; i < TMP_SLOTS; i++) {
        char *p = atomic_load(&slots[i]);
        if (p && owner[i] == me) unlink(p);
    }
}

static void install(void)
{
    atexit(remove_left);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaddset(&sa.sa_mask, sigs[k]);
        sigaction(sigs[i], &sa, NULL);
    }
}

int tmp_create(const char *final, char **tmp)
{
    pthread_once(&once, install);
    size_t n = strlen(final) + 16;
    char *name = malloc(n);
    if (!name) {
        errno = ENOMEM;
        return -1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^ (uintptr_t)name;
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        for (int i = 0; i < 6; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64: names only need to differ */
            suffix[i] = abc[x % 62];
        }
        suffix[6] = '\0';
        snprintf(name, n, "%s.tmp.%s", final, suffix);
        /* listed before it exists, so no instant has the file on disk and off the list */
        int slot = -1;
        for (int i = 0; i < TMP_SLOTS && slot < 0; i++) {
            char *expect = NULL;
            if (atomic_compare_exchange_strong(&slots[i], &expect, name)) slot = i, owner[i] = getpid();
        }
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp = name;
            return fd;
        }
        int e = errno;
        if (slot >= 0) atomic_store(&slots[slot], NULL);
        if (e != EEXIST) {
            free(name);
            errno = e;
            return -1;
        }
    }
    free(name);
    errno = EEXIST;
    return -1;
}

void tmp_release(char *tmp)
{
    if (!tmp) return;
    for (int i = 0; i < TMP_SLOTS; i++) {
        char *expect = tmp;
        if (atomic_compare_exchange_strong(&slots[i], &expect, NULL)) break;
    }
    free(tmp);
}

void tmp_discard(char *tmp)
{
    if (!tmp) return;
    unlink(tmp);
    tmp_release(tmp);
}
