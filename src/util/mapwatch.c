/* Watched file mappings (mapwatch.h).
 *
 * Why zeros and a flag rather than a jump out of the faulting read (sigsetjmp armed around each
 * read): the reads of an index mapping are not all the index module's. The OpenCL engine's
 * upload threads, its list cache's staging copies and the batch planner read it too, inside
 * stdio, hashing and OpenCL calls, holding locks and half-built OpenCL state that a jump would
 * abandon; a jump would also have to be armed on every thread and around every read, inside
 * code this module does not own. Replacing the lost pages lets every reader, on any thread,
 * finish what it is doing on zeros; those readers are memory-safe on any content of the file
 * (the device decoders clamp every read, the strict decoders reject what does not decode, the
 * index's offsets are bounded where they are read), and the flag turns the call that read them
 * into an error before it reports success. The cost on the hot path is one load of the flag per
 * call; nothing is armed per read.
 *
 * The handler looks the address up in a fixed table (no lock, no allocation: it runs inside a
 * fault) and maps anonymous zero pages over the lost range with mmap(MAP_FIXED). mmap is not on
 * POSIX's list of async-signal-safe functions, but on Linux it is the bare system call, taking
 * no lock of the C library's, which is what the list guards against. */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include "util/mapwatch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct watch {
    atomic_int taken;            /* the slot belongs to a watch */
    _Atomic(uintptr_t) base;     /* 0 while the slot is not (yet) watched */
    _Atomic(size_t) len;
    atomic_int lost;
} watch;

static watch table[MW_MAX];
static atomic_int top;           /* slots ever taken: the handler looks no further */
static uintptr_t page_mask;
static struct sigaction previous; /* what SIGBUS did before: other faults go there */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* What SIGBUS would have done without this handler. */
static void pass_on(int sig, siginfo_t *si, void *ctx)
{
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, si, ctx);
        return;
    }
    int sent = !si || si->si_code <= 0; /* by kill or sigqueue, not by a fault */
    if (previous.sa_handler == SIG_IGN && sent) return;
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    /* the default action. A fault returns to the access, which faults again and ends the
     * process; a sent signal is raised again, pending until this handler returns. */
    signal(sig, SIG_DFL);
    if (sent) raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;
    if (si && si->si_code > 0) {
        uintptr_t a = (uintptr_t)si->si_addr;
        int n = atomic_load(&top);
        for (int i = 0; i < n; i++) {
            uintptr_t b = atomic_load(&table[i].base);
            size_t len = atomic_load(&table[i].len);
            if (!b || a < b || a - b >= len) continue;
            atomic_store(&table[i].lost, 1); /* before the zeros can be read */
            uintptr_t from = a & ~page_mask;
            void *p = mmap((void *)from, b + len - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            errno = saved;
            if (p != MAP_FAILED) return; /* the read is made again, of zeros */
            break; /* no memory for the zeros: the process ends as it would have */
        }
    }
    pass_on(sig, si, ctx);
    errno = saved;
}

static void install(void)
{
    long page = sysconf(_SC_PAGESIZE);
    page_mask = (uintptr_t)(page > 0 ? page : 4096) - 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* ONSTACK: a thread's alternate stack, where it has one */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &previous);
}

int mw_watch(const void *base, size_t len)
{
    pthread_once(&once, install);
    for (int i = 0; i < MW_MAX; i++) {
        int free_slot = 0;
        if (!atomic_compare_exchange_strong(&table[i].taken, &free_slot, 1)) continue;
        atomic_store(&table[i].lost, 0);
        atomic_store(&table[i].len, len);
        atomic_store(&table[i].base, (uintptr_t)base); /* watched from here on */
        int t = atomic_load(&top);
        while (t < i + 1 && !atomic_compare_exchange_weak(&top, &t, i + 1)) {}
        return i + 1;
    }
    return 0;
}

void mw_unwatch(int w)
{
    if (w < 1 || w > MW_MAX) return;
    atomic_store(&table[w - 1].base, 0);
    atomic_store(&table[w - 1].len, 0);
    atomic_store(&table[w - 1].taken, 0);
}

int mw_lost(int w) { return w >= 1 && w <= MW_MAX && atomic_load_explicit(&table[w - 1].lost, memory_order_acquire); }
