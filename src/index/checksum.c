/* Section checksums (checksum.h): chunk digests, their combination, and hashing many sections
 * at once on worker threads. */
#include "index/checksum.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/err.h"

/* ck_combine hashes the digests as they lie in memory, which is the format's little-endian
 * order only on a little-endian host; the whole file is read in place on that assumption. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the index file is read in place: little-endian hosts only");
#endif

uint64_t ck_chunk(const void *data, uint64_t size, uint64_t c)
{
    uint64_t at = c * IDX_CHUNK, n = size - at < IDX_CHUNK ? size - at : IDX_CHUNK;
    return XXH3_64bits((const char *)data + at, (size_t)n);
}

uint64_t ck_combine(const uint64_t *digests, uint64_t n)
{
    return XXH3_64bits(digests, (size_t)n * sizeof *digests);
}

unsigned ck_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CK_MAX_THREADS ? CK_MAX_THREADS : (unsigned)n;
}

/* The parts' chunks numbered one after another (part p's chunk c is first[p] + c); threads
 * take the next number from one counter, so a large section is shared out like many small
 * ones. */
typedef struct sums_job {
    const ck_part *parts;
    unsigned nparts;
    const uint64_t *first; /* nparts + 1: the parts' first chunk numbers, then the total */
    uint64_t *digests;
    atomic_uint_fast64_t next;
} sums_job;

static void *sums_worker(void *arg)
{
    sums_job *j = arg;
    unsigned p = 0;
    for (uint64_t g; (g = atomic_fetch_add(&j->next, 1)) < j->first[j->nparts];) {
        while (g >= j->first[p + 1]) p++; /* numbers only grow, so the part only moves on */
        j->digests[g] = ck_chunk(j->parts[p].data, j->parts[p].size, g - j->first[p]);
    }
    return NULL;
}

cls_status ck_sums(const ck_part *parts, unsigned nparts, unsigned threads, uint64_t *sums)
{
    uint64_t *first = malloc(((size_t)nparts + 1) * sizeof *first), bytes = 0;
    if (!first) return err_set(CLS_E_NOMEM, "checksums: out of memory");
    first[0] = 0;
    for (unsigned p = 0; p < nparts; p++) {
        first[p + 1] = first[p] + ck_nchunks(parts[p].size);
        bytes += parts[p].size;
    }
    uint64_t total = first[nparts];
    uint64_t *digests = malloc((size_t)(total ? total : 1) * sizeof *digests);
    if (!digests) {
        free(first);
        return err_set(CLS_E_NOMEM, "checksums: out of memory for %llu chunk digests", (unsigned long long)total);
    }
    /* one thread per full chunk at most: a thread costs more to start than a small chunk to hash */
    uint64_t most = bytes / IDX_CHUNK;
    if (threads > most) threads = most < 1 ? 1 : (unsigned)most;
    if (threads > CK_MAX_THREADS) threads = CK_MAX_THREADS;
    sums_job j = {.parts = parts, .nparts = nparts, .first = first, .digests = digests};
    atomic_init(&j.next, 0);
    pthread_t th[CK_MAX_THREADS];
    unsigned started = 0;
    for (; started + 1 < threads; started++)
        if (pthread_create(&th[started], NULL, sums_worker, &j) != 0) break; /* fewer threads, same result */
    sums_worker(&j);
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (unsigned p = 0; p < nparts; p++) sums[p] = ck_combine(digests + first[p], first[p + 1] - first[p]);
    free(digests);
    free(first);
    return CLS_OK;
}
