/* The device executor: the index's words and block records live on the device; a search is cut
 * into batches, and each batch goes through the same stages whatever the query algorithm (the
 * next batch planned and enqueued while one runs: search_batches):
 *
 *   plan       the batch planner (src/engine/plan.c) picks the queries, the blocks to decode and
 *              writes the descriptors of cl/abi.h into one host buffer
 *   upload     the lists the list cache lacks, then one transfer of the descriptors
 *   decode     expand_lists and decode_blocks: one work-group per block (cl/decode.cl)
 *   algorithm  the algorithm's kernels (src/algo/<name>.c, cl/<name>.cl): decoded lists to dense
 *              score rows or scored candidates
 *   top-k      the top-k stage (src/algo/topk.c): the k best of each query
 *   rerank     with a second ranking stage (dev_rerank.c): the candidates re-ranked by a model
 *              where they lie, the final k kept
 *   read       one read back (into pinned host memory): counts | docIDs | scores (or the rerank
 *              stage's hits), and the algorithm's words; each stage then collects what the batch
 *              left
 *
 * A search is prepared (clx_search_prepare: norms, the algorithm's rules, the limits), ordered by
 * cost (clx_search_order), run over ranges of its queries (clx_search_run, with the re-runs the
 * algorithm asks for) and finished (clx_search_finish: counters, packing), so a scheduler may
 * hand ranges to several executors.
 *
 * Before any batch, clx_create runs check_blocks over every block of the index (check_index):
 * the search's decoders then trust what they decode.
 *
 * Every buffer is sized from the data of the batch and kept for the next one (capacities only
 * grow), so the hot path allocates nothing per query. */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "codec/codec.h"
#include "index/bm25.h"
#include "index/checksum.h"
#include "device/clx_guard.h"
#include "algo/decode.h"
#include "device/dev.h"
#include "engine/dev_engine.h"
#include "util/err.h"
#include "util/vec.h"

/* Staging for resident(). A chunk of the upload is one chunk of the file's checksum
 * (IDX_CHUNK), so the digest of a staged chunk is one of the section's chunk digests. Up to
 * RESIDENT_FILLERS threads copy chunks into pinned staging buffers, in slices of RESIDENT_SLICE
 * bytes each hashed while still in the core's cache; RESIDENT_DEPTH writes travel while the next
 * chunk is enqueued; and one buffer is spare, so a fast filler need not wait for a slow one. */
#define RESIDENT_CHUNK ((size_t)IDX_CHUNK)
#define RESIDENT_SLICE ((size_t)128 << 10)
#define RESIDENT_FILLERS 8u
#define RESIDENT_DEPTH 2u
#define RESIDENT_STAGES (RESIDENT_FILLERS + RESIDENT_DEPTH + 1u)

/* What resident()'s fillers share. Chunk c is staged in buffer c % stages, which it may fill
 * once the write of chunk c - stages has completed: the uploading thread says so by raising
 * granted past c. */
typedef struct resident_fill {
    const char *data;
    size_t bytes;
    uint64_t nchunks;
    void **host;       /* the mapped staging buffers */
    unsigned stages;
    uint64_t *digests; /* nchunks chunk digests, or NULL: no checksum */
    atomic_uint_fast64_t next; /* the next chunk for a filler */
    pthread_mutex_t mu;
    pthread_cond_t granted_cv, filled_cv;
    uint64_t granted;  /* chunks below this may be filled */
    uint64_t *filled;  /* per staging buffer: the chunk it holds, ready to write, or UINT64_MAX */
    int stop, failed;  /* the upload gave up; a digest could not be computed */
} resident_fill;

/* Copies chunk c into its staging buffer, slice by slice, each slice hashed (h, XXH3 streaming:
 * the same digest as XXH3_64bits over the chunk) from the staged copy right after it lands, so
 * the hash reads exactly what the device receives, from cache. 0 if h failed. */
static int resident_copy(resident_fill *f, uint64_t c, XXH3_state_t *h)
{
    size_t off = (size_t)c * RESIDENT_CHUNK, n = f->bytes - off < RESIDENT_CHUNK ? f->bytes - off : RESIDENT_CHUNK;
    char *dst = f->host[c % f->stages];
    int ok = !h || XXH3_64bits_reset(h) == XXH_OK;
    for (size_t at = 0; at < n; at += RESIDENT_SLICE) {
        size_t m = n - at < RESIDENT_SLICE ? n - at : RESIDENT_SLICE;
        memcpy(dst + at, f->data + off + at, m);
        if (h) ok &= XXH3_64bits_update(h, dst + at, m) == XXH_OK;
    }
    if (h) f->digests[c] = XXH3_64bits_digest(h);
    return ok;
}

typedef struct resident_filler_arg {
    resident_fill *f;
    XXH3_state_t *h;
} resident_filler_arg;

/* A filler: takes chunks in order, waits until its buffer is free, fills it, says so. */
static void *resident_filler(void *arg)
{
    resident_fill *f = ((resident_filler_arg *)arg)->f;
    XXH3_state_t *h = ((resident_filler_arg *)arg)->h;
    for (uint64_t c; (c = atomic_fetch_add(&f->next, 1)) < f->nchunks;) {
        pthread_mutex_lock(&f->mu);
        while (!f->stop && f->granted <= c) pthread_cond_wait(&f->granted_cv, &f->mu);
        int stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        if (stop) break;
        int ok = resident_copy(f, c, h);
        pthread_mutex_lock(&f->mu);
        f->filled[c % f->stages] = c;
        f->failed |= !ok;
        pthread_cond_signal(&f->filled_cv); /* only the uploading thread waits for it */
        pthread_mutex_unlock(&f->mu);
    }
    return NULL;
}

/* A read-only device copy of host data (at least DEV_MIN_BUF bytes), uploaded in chunks through
 * pinned staging buffers (CL_MEM_ALLOC_HOST_PTR, mapped once). Filler threads (one per core, at
 * most RESIDENT_FILLERS; none for a single chunk or a single core, when this thread fills) copy
 * and hash chunks into free staging buffers; this thread enqueues each chunk's write in order
 * without blocking, and frees a buffer once its write has completed. With several threads the
 * host keeps up with the bus (one thread copying and hashing from the page cache manages a few
 * GB/s, a PCIe bus 25 or more). With xxh, the chunk digests must combine to *xxh (checksum.h) or
 * the engine is refused as corrupt (idx_words_corrupt): this is where the device's postings are
 * verified before any kernel reads them, in the time the transfer takes anyway. */
static cls_status resident(clx_engine *e, const void *data, size_t bytes, const char *what, const uint64_t *xxh,
                           cl_mem *out)
{
    cl_int err;
    cls_status s = CLS_OK;
    *out = dev_create_buffer(e->dc.ctx, CL_MEM_READ_ONLY, bytes > DEV_MIN_BUF ? bytes : DEV_MIN_BUF, NULL, &err);
    if (!*out || err != CL_SUCCESS) {
        *out = NULL;
        return err_wrap(clx_fail("clCreateBuffer", err), "uploading %s (%zu bytes): ", what, bytes);
    }
    const uint64_t nchunks = ck_nchunks(bytes);
    const size_t chunk = bytes < RESIDENT_CHUNK ? bytes : RESIDENT_CHUNK;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned fillers = cores < 2 || nchunks < 2 ? 0 : cores > RESIDENT_FILLERS ? RESIDENT_FILLERS : (unsigned)cores;
    if (fillers > nchunks) fillers = (unsigned)nchunks;
    /* this thread alone double-buffers; fillers have a buffer each, one spare, and DEPTH in flight */
    unsigned stages = fillers ? fillers + RESIDENT_DEPTH + 1 : RESIDENT_DEPTH;
    if (stages > nchunks) stages = (unsigned)nchunks;
    dev_pinned stage[RESIDENT_STAGES] = {{0}};
    void *host[RESIDENT_STAGES] = {NULL};
    cl_event ev[RESIDENT_STAGES] = {NULL};
    uint64_t filled[RESIDENT_STAGES];
    XXH3_state_t *hs[RESIDENT_FILLERS] = {NULL};
    pthread_t th[RESIDENT_FILLERS];
    resident_filler_arg args[RESIDENT_FILLERS];
    unsigned started = 0;
    resident_fill f = {.data = data, .bytes = bytes, .nchunks = nchunks, .host = host, .stages = stages,
                       .mu = PTHREAD_MUTEX_INITIALIZER, .granted_cv = PTHREAD_COND_INITIALIZER,
                       .filled_cv = PTHREAD_COND_INITIALIZER, .granted = stages, .filled = filled};
    atomic_init(&f.next, 0);
    for (unsigned k = 0; k < RESIDENT_STAGES; k++) filled[k] = UINT64_MAX;
    if (xxh && !(f.digests = malloc(((size_t)nchunks + 1) * sizeof *f.digests)))
        s = err_set(CLS_E_NOMEM, "out of memory");
    for (unsigned i = 0; xxh && i < (fillers ? fillers : 1) && s == CLS_OK; i++)
        if (!(hs[i] = XXH3_createState())) s = err_set(CLS_E_NOMEM, "out of memory");
    for (unsigned k = 0; k < stages && s == CLS_OK; k++)
        if ((s = dev_pinned_need(&e->dc, &stage[k], chunk, "a staging buffer")) == CLS_OK) host[k] = stage[k].host;
    for (; s == CLS_OK && started < fillers; started++) { /* a thread that cannot start leaves fewer */
        args[started] = (resident_filler_arg){&f, hs[started]};
        if (pthread_create(&th[started], NULL, resident_filler, &args[started]) != 0) break;
    }
    for (uint64_t i = 0; i < nchunks && s == CLS_OK; i++) {
        unsigned k = (unsigned)(i % stages);
        if (i >= RESIDENT_DEPTH) { /* chunk i - DEPTH's write done: its buffer takes chunk i - DEPTH + stages */
            unsigned kd = (unsigned)((i - RESIDENT_DEPTH) % stages);
            err = clWaitForEvents(1, &ev[kd]);
            clReleaseEvent(ev[kd]);
            ev[kd] = NULL;
            if (err != CL_SUCCESS) {
                s = clx_fail("clWaitForEvents(upload)", err);
                break;
            }
            pthread_mutex_lock(&f.mu);
            f.granted = i - RESIDENT_DEPTH + stages;
            pthread_cond_broadcast(&f.granted_cv);
            pthread_mutex_unlock(&f.mu);
        }
        if (started == 0) { /* no fillers: this thread fills (the buffer's last chunk, i - stages, has left) */
            if (!resident_copy(&f, i, hs[0])) f.failed = 1;
        } else {
            pthread_mutex_lock(&f.mu);
            while (f.filled[k] != i) pthread_cond_wait(&f.filled_cv, &f.mu);
            pthread_mutex_unlock(&f.mu);
        }
        size_t off = (size_t)i * RESIDENT_CHUNK;
        err = clEnqueueWriteBuffer(e->dc.queue, *out, CL_FALSE, off, bytes - off < chunk ? bytes - off : chunk, host[k],
                                   0, NULL, &ev[k]);
        if (err == CL_SUCCESS) err = clFlush(e->dc.queue);
        if (err != CL_SUCCESS) s = clx_fail("clEnqueueWriteBuffer", err);
    }
    pthread_mutex_lock(&f.mu); /* fillers waiting for a buffer give up; the others finish a chunk */
    f.stop = 1;
    pthread_cond_broadcast(&f.granted_cv);
    pthread_mutex_unlock(&f.mu);
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    cl_int ferr = clFinish(e->dc.queue);
    if (s == CLS_OK && ferr != CL_SUCCESS) s = clx_fail("clFinish(upload)", ferr);
    for (unsigned k = 0; k < RESIDENT_STAGES; k++) {
        if (ev[k]) clReleaseEvent(ev[k]);
        dev_pinned_release(&e->dc, &stage[k]);
    }
    clFinish(e->dc.queue);
    if (s == CLS_OK && f.failed) s = err_set(CLS_E_NOMEM, "hashing a chunk failed");
    if (s != CLS_OK) s = err_wrap(s, "uploading %s (%zu bytes): ", what, bytes);
    else if (xxh && ck_combine(f.digests, nchunks) != *xxh) s = idx_words_corrupt(e->idx);
    else if (xxh) idx_words_set_verified(e->idx);
    for (unsigned i = 0; i < RESIDENT_FILLERS; i++) XXH3_freeState(hs[i]);
    free(f.digests);
    pthread_mutex_destroy(&f.mu);
    pthread_cond_destroy(&f.granted_cv);
    pthread_cond_destroy(&f.filled_cv);
    if (s != CLS_OK) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    return s;
}

/* Builds the three programs and creates the kernels every search may run. The decoder depends on
 * the index (codec, block size, pfor depth), the query kernels only on the device's parameters, so
 * each caches on its own and another codec costs only the small decode builds. An algorithm's
 * kernels that decode blocks themselves (query_algo.decode_file) are its own to build. */
static cls_status build_programs(clx_engine *e, int cdiv)
{
    const cls_index *idx = e->idx;
    size_t nalgo;
    const query_algo *const *algos = query_algos(&nalgo);
    const char **qfiles = calloc(nalgo + 4, sizeof *qfiles);
    if (!qfiles) return err_set(CLS_E_NOMEM, "out of memory");
    size_t nf = 0;
    for (size_t i = 0; i < nalgo; i++) qfiles[nf++] = algos[i]->kernel_file;
    qfiles[nf++] = "topk.cl";
    qfiles[nf++] = "topk_wide.cl";
    qfiles[nf++] = "cache.cl";
    qfiles[nf] = NULL;
    const char *const dec_files[] = {cdc_kernel_file(idx->codec), "decode.cl", NULL}; /* the codec's fragment first */
    char *dopts = e->dopts, qopts[512], copts[sizeof e->dopts + 32], dnote[4400], qnote[4400], cnote[4400];
    snprintf(dopts, sizeof e->dopts, "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DWG_SCAN_ALGO=%u%s%s%s",
             idx->block_size, idx->pfor_depth, e->dc.prm.wg_scan_algo, cdiv ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             idx_score_option(idx), clx_compiler_defines(&e->dc.dev.info));
    char wg[160];
    clx_query_options(&e->dc.prm, wg, sizeof wg);
    snprintf(qopts, sizeof qopts, "-cl-std=CL1.2%s%s%s%s", wg, cdiv ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             idx_score_option(idx), clx_compiler_defines(&e->dc.dev.info));
    /* the check program: the decoder again, with its checks (cl/decode.cl: check_blocks) */
    snprintf(copts, sizeof copts, "%s -DDECODE_CHECK=1", dopts);
    cls_status s = dev_build(&e->dc, dec_files, dopts, &e->prog_dec, dnote, sizeof dnote);
    if (s == CLS_OK) s = dev_build(&e->dc, qfiles, qopts, &e->prog, qnote, sizeof qnote);
    free(qfiles);
    if (s == CLS_OK) s = dev_build(&e->dc, dec_files, copts, &e->prog_check, cnote, sizeof cnote);
    if (s != CLS_OK) return s;
    if ((s = dev_add_kernel(&e->dc, e->prog_dec, "decode_blocks")) != CLS_OK ||
        (s = dev_add_kernel(&e->dc, e->prog_check, "check_blocks")) != CLS_OK ||
        (s = dev_add_kernel(&e->dc, e->prog_dec, "expand_lists")) != CLS_OK ||
        (s = dev_add_kernel(&e->dc, e->prog, "topk_select")) != CLS_OK ||
        (s = dev_add_kernel(&e->dc, e->prog, "place_lists")) != CLS_OK)
        return s;
    for (size_t i = 0; i < nalgo; i++)
        for (const char *const *k = algos[i]->kernels; *k; k++)
            if ((s = dev_need_kernel(&e->dc, e->prog, *k)) != CLS_OK) return s;
    snprintf(e->notes, sizeof e->notes,
             "programs: decode (%s) %s; query (%s) %s; check (decode's with -DDECODE_CHECK=1) %s", dopts, dnote, qopts,
             qnote, cnote);
    return CLS_OK;
}

/* Where the index lives on the device. Its postings words and block records go up whole when
 * they take at most half of the memory the engine may use (device_mem, else the device's) and
 * each fits one buffer; the other half is for the batches. Otherwise that half holds the list
 * cache's two arenas (split as the index splits its bytes between words and block records) and
 * a staging buffer, and lists go up as batches need them (list_cache.h); the postings are then
 * hashed once on the host first, since no single upload reads them all. */
#define STAGE_MIN_BYTES ((size_t)16 << 10)
#define STAGE_MAX_BYTES ((size_t)64 << 20)

static cls_status place_index(clx_engine *e, uint64_t device_mem, size_t wbytes, size_t bbytes, size_t nbytes)
{
    const cls_index *idx = e->idx;
    const uint64_t max_alloc = e->dc.dev.info.max_alloc;
    /* never more than the device has: a larger figure would only defer its refusal to a batch */
    e->dev_mem = device_mem && device_mem < e->dc.dev.info.global_mem ? device_mem : e->dc.dev.info.global_mem;
    uint64_t half = e->dev_mem / 2;
    if (wbytes + bbytes + nbytes <= half && wbytes <= max_alloc && bbytes <= max_alloc) {
        /* the postings are hashed on their way up unless this process already verified them */
        const uint64_t *wxxh = idx_words_verified(idx) ? NULL : &idx->words_xxh;
        cls_status s = resident(e, idx->words, wbytes, "the postings", wxxh, &e->d_words);
        if (s == CLS_OK) s = resident(e, idx->blocks, bbytes, "the block records", NULL, &e->d_blocks);
        return s;
    }
    /* the list cache: arenas and staging out of half of the memory, less the norms */
    uint64_t room = half > nbytes ? half - nbytes : 0;
    size_t stage = room / 8 < STAGE_MIN_BYTES ? STAGE_MIN_BYTES : room / 8 > STAGE_MAX_BYTES ? STAGE_MAX_BYTES : room / 8;
    room = room > stage ? room - stage : 0;
    uint64_t wroom = (uint64_t)((double)room * ((double)wbytes / (double)(wbytes + bbytes + 1)));
    uint64_t nw = wroom / 4, nb = (room - wroom) / sizeof(idx_block);
    /* no larger than the index, one buffer each, word offsets of 32 bits */
    if (nw > idx->num_words) nw = idx->num_words;
    if (nb > idx->num_blocks) nb = idx->num_blocks;
    if (nw > max_alloc / 4) nw = max_alloc / 4;
    if (nw > UINT32_MAX) nw = UINT32_MAX;
    if (nb > max_alloc / sizeof(idx_block)) nb = max_alloc / sizeof(idx_block);
    if (nw == 0 || nb == 0)
        return err_set(CLS_E_DEVMEM, "%llu bytes of device memory leave no room for posting lists (the index's BM25 "
                       "norms alone take %zu bytes)", (unsigned long long)e->dev_mem, nbytes);
    cls_status s = idx_words_verified(idx) ? CLS_OK : idx_verify_words(idx);
    if (s != CLS_OK) return s;
    if ((s = lc_init(&e->cache, idx, nw, nb)) != CLS_OK) return s;
    e->cached = 1;
    e->stage_words = stage / 4;
    cl_int err;
    e->d_words = dev_create_buffer(e->dc.ctx, CL_MEM_READ_WRITE, nw * 4, NULL, &err);
    if (!e->d_words || err != CL_SUCCESS) {
        e->d_words = NULL;
        return err_wrap(clx_fail("clCreateBuffer", err), "the list cache's words (%llu bytes): ", (unsigned long long)nw * 4);
    }
    e->d_blocks = dev_create_buffer(e->dc.ctx, CL_MEM_READ_WRITE, nb * sizeof(idx_block), NULL, &err);
    if (!e->d_blocks || err != CL_SUCCESS) {
        e->d_blocks = NULL;
        return err_wrap(clx_fail("clCreateBuffer", err), "the list cache's block records (%llu bytes): ",
                        (unsigned long long)nb * sizeof(idx_block));
    }
    if ((s = dev_buf_need(&e->dc, &e->stage, stage, "the list cache's staging buffer")) != CLS_OK) return s;
    /* its host side pinned, so a staging load travels at the link's speed */
    return dev_pinned_need(&e->dc, &e->stage_host, stage, "the list cache's staging buffer");
}

/* Every block of the index through check_blocks (cl/decode.cl) before any search: the host's
 * strict decoders' rules and the max_score comparison of cls_index_check, on the device, so a file
 * forged with consistent checksums is refused with the message `clsearch check` gives instead of
 * searched (the search's decoders only keep such a file from faulting). Where the index is resident
 * the blocks are checked in place, CHECK_GROUPS work-groups a launch; where lists are cached, the
 * index passes through the cache's two arenas (empty until the first batch) in stretches of whole
 * blocks. The device flags blocks; the lowest one flagged is checked again on the host, which gives
 * the message, or, where the host finds it sound, reports the disagreement as a device fault. The
 * norms at the header's k1 and b stay on the device for the searches that use them. */
#define CHECK_GROUPS ((size_t)1 << 22)

/* The word just after the blocks before b (the index's words tile its blocks in order). */
static uint64_t block_end(const cls_index *idx, uint64_t b)
{
    return b < idx->num_blocks ? idx->blocks[b].offset : idx->num_words;
}

static cls_status check_index(clx_engine *e, int exact)
{
    const cls_index *idx = e->idx;
    const uint64_t NB = idx->num_blocks;
    const uint32_t N = idx->num_docs;
    double t0 = clx_now();
    if (NB == 0) return CLS_OK;
    bm25_norms(idx, idx->score_k1, idx->score_b, e->h_norms);
    cl_int err = clEnqueueWriteBuffer(e->dc.queue, e->d_norms, CL_TRUE, 0, (size_t)N * 4 + (N ? 0 : 4), e->h_norms, 0,
                                      NULL, NULL);
    if (err != CL_SUCCESS) return clx_fail("clEnqueueWriteBuffer(norms)", err);
    e->norm_k1 = idx->score_k1;
    e->norm_b = idx->score_b;
    size_t per = CHECK_GROUPS;
    if (e->cached && per > e->cache.blocks.size) per = (size_t)e->cache.blocks.size;
    if (per > NB) per = (size_t)NB;
    float *weights = malloc(per * sizeof *weights);
    cl_uint none = UINT32_MAX, nwords, exact_u = (cl_uint)exact;
    cl_mem d_weights = NULL, d_bad = NULL;
    cls_status s = weights ? CLS_OK : err_set(CLS_E_NOMEM, "out of memory for %zu block weights", per);
    if (s == CLS_OK) {
        d_weights = dev_create_buffer(e->dc.ctx, CL_MEM_READ_ONLY, per * sizeof *weights, NULL, &err);
        if (!d_weights || err != CL_SUCCESS) s = err_wrap(clx_fail("clCreateBuffer", err), "block weights: ");
    }
    if (s == CLS_OK) {
        d_bad = dev_create_buffer(e->dc.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 4, &none, &err);
        if (!d_bad || err != CL_SUCCESS) s = err_wrap(clx_fail("clCreateBuffer", err), "the block check's result: ");
    }
    if (s == CLS_OK) s = dev_words_count(e->d_words, &nwords);
    uint32_t t = 0, wt = UINT32_MAX; /* the term of block b0 (terms tile the blocks in order); whose weight w is */
    float w = 0.0f;
    for (uint64_t b0 = 0; b0 < NB && s == CLS_OK;) {
        uint64_t b1 = b0 + per < NB ? b0 + per : NB;
        cl_uint nblocks = (cl_uint)NB, word_base = 0, word_end = (cl_uint)idx->num_words, block0 = (cl_uint)b0,
                index_base = 0;
        if (e->cached) { /* whole blocks, as many as both arenas take */
            uint64_t w0 = idx->blocks[b0].offset, lo = b0, hi = b1; /* the last end that fits, by bisection */
            while (lo < hi) {
                uint64_t mid = hi - (hi - lo) / 2;
                if (block_end(idx, mid) - w0 <= e->cache.words.size) lo = mid; else hi = mid - 1;
            }
            b1 = lo;
            uint64_t w1 = block_end(idx, b1 > b0 ? b1 : b0 + 1);
            if (b1 == b0) {
                s = err_set(CLS_E_DEVMEM, "checking the index: block %llu's %llu words exceed the list cache's %llu",
                            (unsigned long long)b0, (unsigned long long)(w1 - w0),
                            (unsigned long long)e->cache.words.size);
                break;
            }
            if ((err = clEnqueueWriteBuffer(e->dc.queue, e->d_blocks, CL_FALSE, 0, (b1 - b0) * sizeof(idx_block),
                                            idx->blocks + b0, 0, NULL, NULL)) != CL_SUCCESS ||
                (err = clEnqueueWriteBuffer(e->dc.queue, e->d_words, CL_FALSE, 0, (w1 - w0) * 4, idx->words + w0, 0,
                                            NULL, NULL)) != CL_SUCCESS) {
                s = err_wrap(clx_fail("clEnqueueWriteBuffer", err), "checking the index, blocks %llu to %llu: ",
                             (unsigned long long)b0, (unsigned long long)b1 - 1);
                break;
            }
            nblocks = (cl_uint)(b1 - b0), word_base = (cl_uint)w0, word_end = (cl_uint)w1, block0 = 0;
            index_base = (cl_uint)b0;
        }
        for (uint64_t b = b0; b < b1; b++) {
            /* bounded: a file cut under its mapping reads as zeros (idx_intact says so after) */
            while (t + 1 < idx->num_terms && b >= (uint64_t)idx->terms[t].first_block + idx->terms[t].num_blocks) t++;
            if (t != wt) { /* a term's weight once, not once a block: an idf is a logarithm */
                w = bm25_block_weight(idx->scoring, idx->coll_docs, idx_coll_df(idx, t));
                wt = t;
            }
            weights[b - b0] = w;
        }
        /* blocking: the launch before may still read the weights, and the queue runs in order */
        if ((err = clEnqueueWriteBuffer(e->dc.queue, d_weights, CL_TRUE, 0, (b1 - b0) * sizeof *weights, weights, 0, NULL,
                                        NULL)) != CL_SUCCESS) {
            s = clx_fail("clEnqueueWriteBuffer(block weights)", err);
            break;
        }
        dev_arg args[] = {DEV_MEM(e->d_words), DEV_U32(nwords),    DEV_MEM(e->d_blocks), DEV_U32(nblocks),
                          DEV_U32(word_base),  DEV_U32(word_end),  DEV_MEM(e->d_norms),  DEV_MEM(d_weights),
                          DEV_U32(block0),     DEV_U32(index_base), DEV_U32(exact_u),    DEV_MEM(d_bad)};
        s = dev_run(&e->dc, "check_blocks", args, (size_t)(b1 - b0), idx->block_size, "check blocks");
        if (s == CLS_OK) dev_profile_collect(&e->dc, 0); /* start-up work, not a search's */
        b0 = b1;
    }
    cl_uint bad = UINT32_MAX;
    if (s == CLS_OK && (err = clEnqueueReadBuffer(e->dc.queue, d_bad, CL_TRUE, 0, 4, &bad, 0, NULL, NULL)) != CL_SUCCESS)
        s = clx_fail("clEnqueueReadBuffer(the block check's result)", err);
    if (s != CLS_OK) clFinish(e->dc.queue);
    dev_profile_collect(&e->dc, 0);
    if (d_weights) clReleaseMemObject(d_weights);
    if (d_bad) clReleaseMemObject(d_bad);
    free(weights);
    if (s == CLS_OK && bad != UINT32_MAX) {
        s = idx_check_block(idx, e->h_norms, bad);
        if (s == CLS_OK)
            s = err_set(CLS_E_OPENCL, "%s: the device's check refused block %u of %s, which the host's strict decoder "
                        "accepts: the device's decoder and its host twin disagree", e->dc.dev.info.name, bad, idx->path);
    }
    e->check_secs = clx_now() - t0;
    return s == CLS_OK ? cls_index_intact(idx) : idx_intact(idx, s);
}

cls_status clx_create(const cls_index *idx, const char *spec, const clx_params *prm, const cls_engine_opts *o,
                      clx_engine **out, char *desc, size_t desc_len)
{
    *out = NULL;
    clx_engine *e = calloc(1, sizeof *e);
    if (!e) return err_set(CLS_E_NOMEM, "out of memory");
    e->idx = idx;
    e->norm_k1 = e->norm_b = -1;
    uint64_t device_mem = o->device_mem;
    e->batch_secs = o->batch_ms > 0 ? o->batch_ms / 1000.0 : DEV_BATCH_SECONDS;
    e->batch_floor = DEV_FIRST_BATCH;
    cls_status s = clx_select(spec, &e->dc.dev);
    if (s != CLS_OK) goto fail;
    if (prm) {
        e->dc.prm = *prm;
        if ((s = clx_params_check(&e->dc.dev.info, &e->dc.prm, e->dc.prm.source)) != CLS_OK) goto fail;
    } else if ((s = clx_params_for(&e->dc.dev.info, &e->dc.prm)) != CLS_OK) {
        goto fail;
    }
    if (e->dc.dev.info.max_work_group < idx->block_size) {
        s = err_set(CLS_E_NODEVICE, "%s: work-groups of %zu, the decoder needs %u (the index's block size; "
                    "rebuild with a smaller --block)", e->dc.dev.info.name, e->dc.dev.info.max_work_group, idx->block_size);
        goto fail;
    }
    if ((s = dev_open(&e->dc)) != CLS_OK) goto fail;
    int cdiv = clx_correct_div(e->dc.dev.device);
    if ((s = build_programs(e, cdiv)) != CLS_OK) goto fail;

    size_t wbytes = (size_t)idx->num_words * 4, bbytes = (size_t)idx->num_blocks * sizeof(idx_block);
    size_t nbytes = ((size_t)idx->num_docs + 1) * sizeof(float);
    if ((s = place_index(e, device_mem, wbytes, bbytes, nbytes)) != CLS_OK) goto fail;
    cl_int err;
    e->d_norms = dev_create_buffer(e->dc.ctx, CL_MEM_READ_ONLY, nbytes, NULL, &err);
    if (!e->d_norms || err != CL_SUCCESS) {
        e->d_norms = NULL;
        s = clx_fail("clCreateBuffer", err);
        goto fail;
    }
    e->h_norms = malloc(nbytes);
    if (!e->h_norms) {
        s = err_set(CLS_E_NOMEM, "out of memory");
        goto fail;
    }
    if ((s = check_index(e, cdiv)) != CLS_OK) goto fail;
    if ((s = plan_init(&e->flight[0].plan, idx)) != CLS_OK || (s = plan_init(&e->flight[1].plan, idx)) != CLS_OK)
        goto fail;
    /* the per-batch buffers take half of what the index and the norms leave: the rest is the
     * driver's and other programs' */
    uint64_t fixed = nbytes + (e->cached ? (e->cache.words.size * 4 + e->cache.blocks.size * sizeof(idx_block) +
                                            e->stage_words * 4) : wbytes + bbytes);
    e->budget = e->dev_mem > fixed ? (e->dev_mem - fixed) / 2 : 0;
    e->topk = (topk_state){.dc = &e->dc, .prog = e->prog};

    /* each algorithm's state, and its kernels in a few words (and how it runs here, if it says) */
    size_t nalgo;
    const query_algo *const *algos = query_algos(&nalgo);
    const algo_env env = {.dc = &e->dc, .idx = idx, .decode_opts = e->dopts, .words = e->d_words,
                          .blocks = e->d_blocks, .norms = e->d_norms, .cached = e->cached};
    char alg[1024], how[512];
    size_t at = 0;
    for (size_t i = 0; i < nalgo; i++) {
        if (algos[i]->create && (s = algos[i]->create(&env, &e->algo_state[i])) != CLS_OK) goto fail;
        if (at < sizeof alg)
            at += (size_t)snprintf(alg + at, sizeof alg - at, "%s%s=%s", i ? ", " : "", algos[i]->name, algos[i]->describe);
    }
    for (size_t i = 0; i < nalgo; i++)
        if (algos[i]->explain && at < sizeof alg) {
            algos[i]->explain(e->algo_state[i], how, sizeof how);
            at += (size_t)snprintf(alg + at, sizeof alg - at, "; %s", how);
        }
    uint64_t gmib = e->dc.dev.info.global_mem;
    char lists[400], prms[512];
    clx_params_str(&e->dc.prm, prms, sizeof prms);
    if (e->cached)
        snprintf(lists, sizeof lists,
                 "lists: cached on the device, LRU by bytes (%.1f of the index's %.1f MiB: %llu words, %llu block "
                 "records; %.1f MiB staging), of %.1f MiB device memory %s",
                 (double)(e->cache.words.size * 4 + e->cache.blocks.size * sizeof(idx_block)) / (1 << 20),
                 (double)(wbytes + bbytes) / (1 << 20), (unsigned long long)e->cache.words.size,
                 (unsigned long long)e->cache.blocks.size, (double)e->stage_words * 4 / (1 << 20),
                 (double)e->dev_mem / (1 << 20), device_mem ? "given" : "on the device");
    else
        snprintf(lists, sizeof lists, "lists: resident, the whole index (%.1f MiB) of %.1f MiB device memory %s",
                 (double)(wbytes + bbytes) / (1 << 20), (double)e->dev_mem / (1 << 20), device_mem ? "given" : "on the device");
    size_t ll = strlen(lists);
    snprintf(lists + ll, sizeof lists - ll, "; every block (%llu) checked on the device in %.3f s (check_blocks, max_score %s)",
             (unsigned long long)idx->num_blocks, e->check_secs, cdiv ? "to the bit" : "within 4 ulp");
    snprintf(desc, desc_len,
             "device: %u:%u %s (%s, %s; driver %s; %s; %u compute units, %.1f GiB) chosen: %s\n"
             "kernels: decode=%s block-per-workgroup %s scan (WG %u); %s; topk=radix select: topk_select / topk_rows / topk_team / topk_wide by shape, the counters of a search say which ran; "
             "rerank=%s; parameters (%s) from %s; division %s\n%s\n%s",
             e->dc.dev.info.platform, e->dc.dev.info.device, e->dc.dev.info.name, e->dc.dev.info.platform_name,
             e->dc.dev.info.platform_version, e->dc.dev.info.driver_version, e->dc.dev.info.opencl_c_version,
             e->dc.dev.info.compute_units, (double)gmib / (1u << 30), e->dc.dev.reason, cls_codec_name(idx->codec),
             clx_scan_algo_name(e->dc.prm.wg_scan_algo), idx->block_size, alg, dev_rerank_explain(e, cdiv), prms, e->dc.prm.source,
             cdiv ? "correctly rounded" : "NOT correctly rounded (scores may differ from ref in the last bit)", lists,
             e->notes);
    *out = e;
    return CLS_OK;
fail:
    clx_free(e);
    return s;
}

void clx_free(clx_engine *e)
{
    if (!e) return;
    dev_rerank_free(e->rerank); /* its programs and buffers before the context */
    dev_profile_collect(&e->dc, 0);
    size_t nalgo;
    const query_algo *const *algos = query_algos(&nalgo);
    for (size_t i = 0; i < nalgo; i++)
        if (algos[i]->free) algos[i]->free(e->algo_state[i]);
    topk_free(&e->topk);
    dbuf *bufs[] = {&e->in, &e->tasks, &e->docs, &e->freqs, &e->out, &e->stage};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
    for (unsigned i = 0; i < 2; i++) { /* the pinned copies, unmapped while the queue lives */
        if (e->flight[i].first) clReleaseEvent(e->flight[i].first);
        if (e->flight[i].read) clReleaseEvent(e->flight[i].read);
        dev_pinned_release(&e->dc, &e->flight[i].up);
        dev_pinned_release(&e->dc, &e->flight[i].res);
    }
    dev_pinned_release(&e->dc, &e->stage_host);
    if (e->dc.queue) clFinish(e->dc.queue);
    cl_mem mems[] = {e->d_words, e->d_blocks, e->d_norms};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) clReleaseMemObject(mems[i]);
    cl_program progs[] = {e->prog, e->prog_dec, e->prog_check};
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
        if (progs[i]) clReleaseProgram(progs[i]);
    dev_close(&e->dc);
    free(e->h_out);
    free(e->h_norms);
    free(e->order);
    free(e->again);
    free(e->cost);
    free(e->h_places);
    free(e->counters);
    if (e->cached) lc_free(&e->cache);
    for (unsigned i = 0; i < 2; i++) plan_free(&e->flight[i].plan);
    free(e);
}

void clx_build_times(const clx_engine *e, double *seconds, int *from_cache)
{
    *seconds = e->dc.build_secs;
    *from_cache = e->dc.from_cache;
}

size_t clx_profile(const clx_engine *e, const cls_profile_step **steps, uint32_t *batches)
{
    *steps = e->dc.steps;
    if (batches) *batches = e->batches;
    return e->dc.nsteps;
}

/* Sends one staging load up: the data packed so far, then its abi_place records after it; then
 * place_lists puts every piece where the cache gave it room. With wait, returns once both are
 * done (the host side may be refilled), their events taken into the profile. */
static cls_status flush_stage(clx_engine *e, size_t ndata, size_t nword_places, size_t nplaces, int wait)
{
    if (nplaces == 0) return CLS_OK;
    memcpy((uint32_t *)e->stage_host.host + ndata, e->h_places, nplaces * sizeof(abi_place));
    size_t bytes = ndata * 4 + nplaces * sizeof(abi_place);
    cl_event ev;
    CLX_TRY(clEnqueueWriteBuffer(e->dc.queue, e->stage.mem, CL_FALSE, 0, bytes, e->stage_host.host, 0, NULL, &ev));
    cls_status s = dev_record(&e->dc, ev, "lists up", bytes);
    if (s != CLS_OK) return s;
    cl_uint at = (cl_uint)ndata, nw = (cl_uint)nword_places;
    dev_arg a[] = {DEV_MEM(e->stage.mem), DEV_U32(at), DEV_U32(nw), DEV_MEM(e->d_words), DEV_MEM(e->d_blocks)};
    s = dev_run(&e->dc, "place_lists", a, nplaces, e->dc.prm.wg_score, "lists place");
    if (s != CLS_OK || !wait) return s;
    CLX_TRY(clFinish(e->dc.queue));
    dev_profile_collect(&e->dc, 1);
    return CLS_OK;
}

/* Uploads the lists the batch's plan pinned and the device lacks (list_cache.h), through the
 * staging buffer: each list's words, then its block records, packed until a staging load is
 * full. A list is cut into pieces of at most PLACE_PIECE_WORDS words (place_lists runs a
 * work-group a piece: a long list is moved by many). Word pieces and block pieces are kept apart
 * (place_lists runs the word pieces first); the host side is reused only once the previous load
 * has been read, and the events are taken into the profile then, so a batch that loads many
 * lists records a bounded number of them. */
#define PLACE_PIECE_WORDS 8192u

static cls_status upload_loads(clx_engine *e)
{
    const list_cache *c = &e->cache;
    const cls_index *idx = e->idx;
    const size_t cap = e->stage_words, per_place = sizeof(abi_place) / 4;
    if (!vec_reserve(&e->h_places, &e->h_places_cap, cap / per_place + 1, sizeof *e->h_places))
        return err_set(CLS_E_NOMEM, "out of memory for the list cache's staging");
    /* two passes over the loads: words (kind 0), then block records (kind 1) of the same lists;
     * a staging load holds pieces of one kind only, so word pieces precede block pieces */
    for (int kind = 0; kind < 2; kind++) {
        size_t ndata = 0, nplaces = 0;
        for (size_t i = 0; i < c->nloads; i++) {
            const lc_load *l = &c->loads[i];
            const idx_term *te = &idx->terms[l->term];
            uint64_t w0, nw;
            lc_list_words(idx, l->term, &w0, &nw);
            const uint32_t unit = kind ? (uint32_t)(sizeof(idx_block) / 4) : 1u; /* words per element */
            const uint32_t *src = kind ? (const uint32_t *)(idx->blocks + te->first_block) : idx->words + w0;
            uint64_t n = kind ? te->num_blocks : nw, dst = kind ? l->block_pos : l->word_pos;
            uint32_t shift = (uint32_t)(l->word_pos - w0); /* mod 2^32, as place_lists adds it */
            for (uint64_t done = 0; done < n;) {
                /* room for this piece's record and at least one element, else send the load */
                if (ndata + (nplaces + 1) * per_place + unit > cap) {
                    cls_status s = flush_stage(e, ndata, kind ? 0 : nplaces, nplaces, 1);
                    if (s != CLS_OK) return s;
                    ndata = nplaces = 0;
                }
                uint64_t fit = (cap - ndata - (nplaces + 1) * per_place) / unit, m = n - done < fit ? n - done : fit;
                if (m * unit > PLACE_PIECE_WORDS) m = PLACE_PIECE_WORDS / unit; /* many groups share a long list */
                memcpy((uint32_t *)e->stage_host.host + ndata, src + done * unit, m * unit * 4);
                e->h_places[nplaces++] = (abi_place){.src = (uint32_t)ndata, .dst = (uint32_t)(dst + done),
                                                     .count = (uint32_t)m, .shift = kind ? shift : 0};
                ndata += m * unit;
                done += m;
            }
        }
        /* after the words, the host side is refilled with block records: wait for it */
        cls_status s = flush_stage(e, ndata, kind ? 0 : nplaces, nplaces, kind == 0);
        if (s != CLS_OK) return s;
    }
    return CLS_OK;
}

/* The counters an algorithm names. */
static size_t algo_ncounters(const query_algo *a)
{
    size_t n = 0;
    while (a->counters && a->counters[n]) n++;
    return n;
}

/* ---- A batch as a list of stages ---------------------------------------------------------

 * Every batch goes through the same stages in order: each first sizes what it needs (buffers
 * that grow, shared with the batch before, which OpenCL keeps alive until its commands are done),
 * then enqueues its commands without waiting (but for the read of the search's last batch); after
 * the read, each collects what the batch left. The second ranking stage is the row after top-k
 * (dev_rerank.c); with it, the read brings back its hits instead of the candidates. */
typedef struct batch_stage {
    const char *name;
    cls_status (*size)(clx_engine *e, dev_flight *f);    /* NULL: nothing to size */
    cls_status (*enqueue)(clx_engine *e, dev_flight *f);
    cls_status (*collect)(clx_engine *e, dev_flight *f, cls_results *r); /* NULL: nothing to collect */
} batch_stage;

/* upload: one transfer of the plan's descriptors (plan_pack), after the lists the device's list
 * cache lacks */
static cls_status upload_size(clx_engine *e, dev_flight *f)
{
    cls_status s = dev_buf_need(&e->dc, &e->in, f->lay.words * 4, "the batch input");
    if (s == CLS_OK) s = dev_pinned_need(&e->dc, &f->up, f->lay.words * 4, "the batch input's host copy");
    return s;
}

static cls_status upload_enqueue(clx_engine *e, dev_flight *f)
{
    plan_pack(&f->plan, &f->lay, f->up.host);
    cls_status s;
    if (e->cached && e->cache.nloads && (s = upload_loads(e)) != CLS_OK) return s;
    cl_event ev;
    CLX_TRY(clEnqueueWriteBuffer(e->dc.queue, e->in.mem, CL_FALSE, 0, f->lay.words * 4, f->up.host, 0, NULL, &ev));
    return dev_record(&e->dc, ev, "upload", f->lay.words * 4);
}

/* decode: the whole lists' tasks, made on the device from one record a list (expand_lists), then
 * decode_blocks */
static cls_status decode_size(clx_engine *e, dev_flight *f)
{
    const batch_plan *pl = &f->plan;
    cls_status s;
    if ((s = dev_buf_need(&e->dc, &e->tasks, (size_t)pl->ntasks * sizeof(abi_task), "decode tasks")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->docs, (size_t)pl->dec * 4, "decoded docIDs")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->freqs, (size_t)pl->dec * 4, "decoded frequencies")) != CLS_OK)
        return s;
    f->b.docs = e->docs.mem;
    f->b.freqs = e->freqs.mem;
    return CLS_OK;
}

static cls_status decode_enqueue(clx_engine *e, dev_flight *f)
{
    const batch_plan *pl = &f->plan;
    cls_status s;
    if (pl->nlists) {
        dev_arg a[] = {DEV_MEM(e->in.mem), DEV_MEM(e->tasks.mem)};
        if ((s = dev_run(&e->dc, "expand_lists", a, pl->nlists, e->idx->block_size, "decode")) != CLS_OK) return s;
    }
    return decode_run(&e->dc, e->idx->block_size, e->d_words, e->d_blocks, e->tasks.mem, 0, pl->ntasks, e->docs.mem,
                      e->freqs.mem, "decode");
}

/* the algorithm: its kernels, from the decoded lists to what top-k ranks; after the read, its
 * result words and counters */
static cls_status algo_enqueue(clx_engine *e, dev_flight *f) { return e->search.algo->launch(e->search.state, &f->b); }

static cls_status algo_collect(clx_engine *e, dev_flight *f, cls_results *r)
{
    (void)r;
    const dev_search *sr = &e->search;
    if (!sr->algo->collect) return CLS_OK;
    const uint32_t *extra = (const uint32_t *)f->res.host + ABI_OUT_WORDS((size_t)f->b.nq, f->b.kk);
    uint64_t blocks = 0;
    cls_status s = sr->algo->collect(sr->state, &f->b, extra, &blocks, e->counters + sr->algo_counters);
    e->counters[DEV_C_BLOCKS_DECODED].value += blocks;
    return s;
}

/* top-k: the k best of each query, into the results */
static cls_status topk_enqueue(clx_engine *e, dev_flight *f)
{
    return topk_run(&e->topk, &f->b.rank, f->b.nq, e->out.mem, "topk");
}

/* read: the results (and the algorithm's words after them) into pinned host memory. Where the host
 * waits the driver's way (HOST_WAIT 0) the search's last batch is waited for here, by a blocking
 * read: no batch is left to plan meanwhile, and a blocking read returned sooner than
 * clWaitForEvents woke (docs/PERFORMANCE.md, "Search batches overlap: the next planned and
 * enqueued while one runs"); else batch_complete waits with dev_wait. After it, query qi's hits land at r->docs + qi * kk (every query has room
 * for kk) with their count in r->start[qi + 1]; clx_search_finish packs them. */
static cls_status read_size(clx_engine *e, dev_flight *f)
{
    cls_status s = dev_buf_need(&e->dc, &e->out, f->read_len * 4 + 4, "results");
    /* with the second ranking stage, its hits after the read_len words */
    if (s == CLS_OK)
        s = dev_pinned_need(&e->dc, &f->res, (f->read_len + dev_rerank_words(e, f)) * 4, "the results' host copy");
    f->b.out = e->out.mem;
    return s;
}

static cls_status read_enqueue(clx_engine *e, dev_flight *f)
{
    cl_event ev;
    /* blocking for the last batch only where the host waits the driver's way (HOST_WAIT 0) */
    cl_bool block = f->last && e->dc.prm.host_wait == 0 ? CL_TRUE : CL_FALSE;
    cl_mem src = e->out.mem;
    size_t to = 0, words = f->read_len; /* words of src read, to word `to` of the host copy */
    cls_status s;
    if (e->search.rerank_k) {
        /* the second ranking stage's hits in place of the candidates; the algorithm's words, if
         * any, still from out */
        size_t top = ABI_OUT_WORDS((size_t)f->b.nq, f->b.kk);
        if (f->read_len > top) {
            CLX_TRY(clEnqueueReadBuffer(e->dc.queue, e->out.mem, CL_FALSE, top * 4, (f->read_len - top) * 4,
                                        (uint32_t *)f->res.host + top, 0, NULL, &ev));
            if ((s = dev_record(&e->dc, ev, "download", (f->read_len - top) * 4)) != CLS_OK) return s;
        }
        src = dev_rerank_results(e);
        to = f->read_len;
        words = dev_rerank_words(e, f);
    }
    CLX_TRY(clEnqueueReadBuffer(e->dc.queue, src, block, 0, words * 4, (uint32_t *)f->res.host + to, 0, NULL, &ev));
    if (f->last && !block) CLX_TRY(clFlush(e->dc.queue)); /* batch_enqueue flushes the others */
    s = dev_record(&e->dc, ev, "download", words * 4);
    if (s != CLS_OK) return s;
    CLX_TRY(clRetainEvent(ev));
    f->read = ev;
    return CLS_OK;
}

static cls_status read_collect(clx_engine *e, dev_flight *f, cls_results *r)
{
    if (e->search.rerank_k) return dev_rerank_collect(e, f, (const uint32_t *)f->res.host + f->read_len, r);
    const uint32_t nq = f->b.nq, kk = f->b.kk, *h_out = f->res.host;
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t m = h_out[i];
        if (m > kk) return err_set(CLS_E_OPENCL, "topk_select returned %u hits for k = %u", m, kk);
        uint64_t qi = algo_batch_query(&f->b, i);
        memcpy(r->docs + qi * kk, h_out + ABI_OUT_DOC((size_t)nq, kk, i, 0), (size_t)m * 4);
        memcpy(r->scores + qi * kk, h_out + ABI_OUT_SCORE((size_t)nq, kk, i, 0), (size_t)m * 4);
        r->start[qi + 1] = m;
    }
    return CLS_OK;
}

static const batch_stage stages[] = {
    {"upload", upload_size, upload_enqueue, NULL},
    {"decode", decode_size, decode_enqueue, NULL},
    {"algorithm", NULL, algo_enqueue, algo_collect},
    {"top-k", NULL, topk_enqueue, NULL},
    {"rerank", dev_rerank_size, dev_rerank_enqueue, NULL}, /* the second ranking stage, when the search has one */
    {"read", read_size, read_enqueue, read_collect},
};
#define NSTAGES (sizeof stages / sizeof stages[0])

/* The planned batch f through every stage, enqueued without waiting (but for the search's last
 * batch): the device may still run the batch before (search_batches); the upload reads f's own
 * plan, which stays untouched until f is done. */
static cls_status batch_enqueue(clx_engine *e, dev_flight *f, int last)
{
    batch_plan *pl = &f->plan;
    const dev_search *sr = &e->search;
    const uint32_t nq = pl->nq, kk = pl->kk;
    const unsigned before = e->dc.nevents; /* the batch before may still have its commands there */
    cls_status s = plan_finish(pl, &f->lay);
    if (s != CLS_OK) return s;
    e->plan = pl;
    f->fail = 0;
    f->last = last;
    if (e->fail_in && --e->fail_in == 0) {
        if (!e->fail_late) return err_set(CLS_E_DEVMEM, "batch of %u queries: a failure the tests asked for", nq);
        f->fail = 1;
    }
    const plan_layout *lay = &f->lay;
    f->b = (algo_batch){.dc = &e->dc, .topk = &e->topk, .idx = e->idx, .nq = nq, .num_docs = e->idx->num_docs,
                        .kk = kk, .P = pl->P, .words = e->d_words, .blocks = e->d_blocks,
                        .norms = e->d_norms, .in = NULL, .queries_base = lay->queries_base,
                        .terms_base = lay->terms_base, .skips_base = lay->skips_base, .bounds_base = lay->bounds_base,
                        .units_base = lay->units_base, .olists_base = lay->olists_base, .nterms = pl->nterms,
                        .nskips = pl->nskips, .nbounds = pl->nbounds, .nunits = pl->nunits, .nolists = pl->nolists,
                        .otasks = (cl_uint)pl->otasks, .nstasks = (cl_uint)pl->stasks, .cand = pl->cand,
                        .two_level = pl->two_level, .ntables = pl->ntables, .table_words = pl->table_words,
                        .bounds = pl->bounds,
                        .extra_at = (cl_uint)ABI_OUT_WORDS((size_t)nq, kk), .order = pl->order, .q0 = pl->q0,
                        .rank = {.kk = kk, .P = pl->P, .num_docs = e->idx->num_docs}};
    f->read_len = ABI_OUT_WORDS((size_t)nq, kk) + (sr->algo->extra_words ? sr->algo->extra_words(sr->state, &f->b) : 0);
    for (size_t i = 0; i < NSTAGES; i++)
        if (stages[i].size && (s = stages[i].size(e, f)) != CLS_OK) return s;
    f->b.in = e->in.mem;
    for (size_t i = 0; i < NSTAGES; i++)
        if ((s = stages[i].enqueue(e, f)) != CLS_OK) return s;
    f->nevents = e->dc.nevents - before;
    assert(f->nevents > 1 && f->read);
    CLX_TRY(clRetainEvent(e->dc.events[before].ev));
    f->first = e->dc.events[before].ev;
    if (!last) CLX_TRY(clFlush(e->dc.queue)); /* to the device now: the host goes on to plan the next batch */
    return CLS_OK;
}

/* Waits for batch f (batch_enqueue) and lets each stage collect what it left. */
static cls_status batch_complete(clx_engine *e, dev_flight *f, cls_results *r)
{
    const batch_plan *pl = &f->plan;
    cls_status ws = dev_wait(&e->dc, f->read, "the results' read");
    if (ws != CLS_OK) return ws;
    if (f->fail) return err_set(CLS_E_DEVMEM, "batch of %u queries: a failure the tests asked for", pl->nq);
    e->counters[DEV_C_QUERIES].value += pl->nq;
    e->counters[DEV_C_BLOCKS_IN_LISTS].value += pl->blocks_in_lists;
    e->counters[DEV_C_BLOCKS_DECODED].value += pl->ntasks + pl->otasks;
    e->counters[DEV_C_QUERIES_PRUNED].value += pl->npruned;
    e->counters[DEV_C_POSTINGS_IN_LISTS].value += pl->postings_in_lists;
    e->counters[DEV_C_POSTINGS_DECODED].value += pl->opostings;
    cls_status s = CLS_OK;
    for (size_t i = 0; i < NSTAGES && s == CLS_OK; i++)
        if (stages[i].collect) s = stages[i].collect(e, f, r);
    return s;
}

static int cmp_cost(const void *a, const void *b)
{
    const dev_qcost *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return (x->q > y->q) - (x->q < y->q); /* stable: batch order among equals */
}

/* After a failure: waits for what the device still has of the search, forgets the events and
 * the batches in flight (their plans' slots cleared), and what the list cache holds, whose loads
 * may not all have happened. */
static void batches_abandon(clx_engine *e)
{
    clFinish(e->dc.queue);
    if (e->cached) lc_reset(&e->cache);
    dev_profile_collect(&e->dc, 0);
    for (unsigned i = 0; i < 2; i++) {
        dev_flight *f = &e->flight[i];
        plan_abandon(&f->plan);
        if (f->first) clReleaseEvent(f->first);
        if (f->read) clReleaseEvent(f->read);
        f->first = f->read = NULL;
    }
}

/* Plans into f the next batch of order[q0..n) (each query added while the batch fits the limits). */
static cls_status batch_plan_next(clx_engine *e, dev_flight *f, const cls_batch *bt, const uint32_t *order, uint64_t q0,
                                  uint64_t n)
{
    dev_search *sr = &e->search;
    plan_begin(&f->plan, sr->algo, sr->state, sr->kk, &sr->lim, order, q0);
    int added = 1;
    cls_status s;
    while (added && q0 + f->plan.nq < n)
        if ((s = plan_add(&f->plan, bt, &added)) != CLS_OK) return s;
    if (!added && f->plan.cut != PLAN_CUT_NONE) /* batches_cut_* */
        e->counters[DEV_C_BATCHES_CUT + f->plan.cut - PLAN_CUT_QUERIES].value++;
    return CLS_OK;
}

/* A batch that failed with s: where the device's allocation failed, 1, the limits halved to run
 * it again from its first query (*next), down to one query (the later batches stay within the
 * smaller limits); 0 where s is the search's error (any other failure, or one query's). */
static int split_failed(cls_status s, const batch_plan *pl, plan_limits *lim, unsigned *splits, uint64_t *next)
{
    if (s != CLS_E_DEVMEM || pl->nq <= 1 || (*splits)++ >= 32) return 0;
    lim->max_queries = pl->nq / 2;
    if (lim->cost_floor > lim->max_queries) lim->cost_floor = lim->max_queries;
    *next = pl->q0;
    return 1;
}

/* The queries order[0..n) of bt, batch after batch. Each batch is planned and enqueued while the
 * one before runs on the device, so that the host's planning leaves the device no gap; then the
 * one before is waited for and its results taken. Not with the list cache: a batch's plan places
 * its lists in the cache's room, which the batch before may still be reading. A batch that fails
 * for want of device memory runs again in halves (from its first query; the batch after it,
 * already enqueued, is forgotten). */
static cls_status search_batches(clx_engine *e, const cls_batch *bt, const uint32_t *order, uint64_t n, cls_results *r)
{
    plan_limits *lim = &e->search.lim;
    const int ahead = !e->cached;
    dev_flight *run = NULL; /* the batch on the device */
    uint64_t next = 0;      /* the first query of order not yet planned */
    unsigned splits = 0;
    for (;;) {
        dev_flight *f = NULL;
        cls_status s = CLS_OK, sf = CLS_OK;
        if (next < n && (ahead || !run)) {
            f = &e->flight[run == &e->flight[0]];
            if ((s = batch_plan_next(e, f, bt, order, next, n)) != CLS_OK) {
                batches_abandon(e);
                return s;
            }
            sf = batch_enqueue(e, f, !ahead || next + f->plan.nq >= n);
            next += f->plan.nq;
        }
        if (run) {
            s = batch_complete(e, run, r);
            /* the batch's time on the device, from its first command's start to its read's end
             * (host clocks would count the planning it overlaps, or, for a last batch read
             * blocking, almost nothing) */
            double t = s == CLS_OK ? clx_event_span(run->first, run->read) : 0;
            clReleaseEvent(run->first);
            clReleaseEvent(run->read);
            run->first = run->read = NULL;
            e->batches++;
            if (s == CLS_OK) {
                dev_profile_collect_first(&e->dc, run->nevents, 1);
                if (t > 0 && run->plan.cost > 0) {
                    /* postings per second, smoothed: one odd batch moves the next batch's size a
                     * little */
                    double rate = (double)run->plan.cost / t;
                    e->rate = e->rate > 0 ? 0.75 * e->rate + 0.25 * rate : rate;
                    /* the search's later batches sized by the rate as it now stands: an engine's
                     * first search would otherwise keep its first batch's size (the floor, no rate
                     * yet) to the end; not after a split, whose smaller limit holds */
                    if (!splits) {
                        lim->max_queries = DEV_MAX_BATCH;
                        lim->max_cost = (uint64_t)(e->rate * e->batch_secs) + 1;
                    }
                }
            } else {
                /* the batch after it, enqueued behind it, is forgotten and planned again */
                batches_abandon(e);
                if (!split_failed(s, &run->plan, lim, &splits, &next)) return s;
                run = NULL;
                continue;
            }
        }
        if (f && sf != CLS_OK) {
            batches_abandon(e);
            e->batches++;
            if (!split_failed(sf, &f->plan, lim, &splits, &next)) return sf;
            run = NULL;
            continue;
        }
        run = f;
        if (!run && next >= n) return CLS_OK;
    }
}

/* ---- A search: prepare, order, run ranges, finish ----------------------------------------- */

static const char *const own_counter_names[DEV_C_CACHE_END] = {
    [DEV_C_QUERIES] = "queries",
    [DEV_C_BLOCKS_IN_LISTS] = "blocks_in_lists",
    [DEV_C_BLOCKS_DECODED] = "blocks_decoded",
    [DEV_C_COST_RATE] = "cost_rate",
    [DEV_C_QUERIES_PRUNED] = "queries_pruned",
    [DEV_C_POSTINGS_IN_LISTS] = "postings_in_lists",
    [DEV_C_POSTINGS_DECODED] = "postings_decoded",
    [DEV_C_QUERIES_RERUN] = "queries_rerun",
    [DEV_C_BATCHES_CUT + PLAN_CUT_QUERIES - PLAN_CUT_QUERIES] = "batches_cut_queries",
    [DEV_C_BATCHES_CUT + PLAN_CUT_BYTES - PLAN_CUT_QUERIES] = "batches_cut_bytes",
    [DEV_C_BATCHES_CUT + PLAN_CUT_COST - PLAN_CUT_QUERIES] = "batches_cut_cost",
    [DEV_C_BATCHES_CUT + PLAN_CUT_ALLOC - PLAN_CUT_QUERIES] = "batches_cut_alloc",
    [DEV_C_TOPK + TOPK_SELECT] = "topk_select",
    [DEV_C_TOPK + TOPK_ROWS] = "topk_rows",
    [DEV_C_TOPK + TOPK_TEAM] = "topk_team",
    [DEV_C_TOPK + TOPK_WIDE] = "topk_wide",
    [DEV_C_LISTS_FOUND] = "lists_found",
    [DEV_C_LISTS_LOADED] = "lists_loaded",
    [DEV_C_BYTES_LOADED] = "bytes_loaded",
};

cls_status clx_search_prepare(clx_engine *e, const cls_search_params *p, uint64_t nq)
{
    dev_search *sr = &e->search;
    const cls_index *idx = e->idx;
    dev_profile_reset(&e->dc);
    e->batches = 0;
    sr->algo = query_algo_for(p->mode);
    sr->state = e->algo_state[p->mode];
    sr->rerank_k = 0; /* a part of a search: the scheduler's stage ranks the whole search's (clx_search) */
    sr->rerank_batch = NULL;
    /* the counters: the executor's, the list cache's where it has one, the algorithm's */
    const size_t own = e->cached ? DEV_C_CACHE_END : DEV_C_OWN, mine = algo_ncounters(sr->algo);
    if (!vec_reserve(&e->counters, &e->counters_cap, own + mine, sizeof *e->counters))
        return err_set(CLS_E_NOMEM, "out of memory for the counters");
    for (size_t i = 0; i < own; i++) e->counters[i] = (cls_counter){own_counter_names[i], 0};
    for (size_t i = 0; i < mine; i++) e->counters[own + i] = (cls_counter){sr->algo->counters[i], 0};
    e->ncounters = own + mine;
    sr->algo_counters = own;
    e->counters[DEV_C_COST_RATE].value = (uint64_t)e->rate;
    memset(e->topk.launches, 0, sizeof e->topk.launches);
    uint32_t N = idx->num_docs;
    sr->kk = p->k < N ? p->k : (N ? N : 1);
    if (nq == 0) return CLS_OK;
    if (nq > UINT32_MAX) return err_set(CLS_E_ARG, "more than 2^32 queries in one search");
    if (e->norm_k1 != p->k1 || e->norm_b != p->b) {
        bm25_norms(idx, p->k1, p->b, e->h_norms);
        cl_event ev;
        cl_int err = clEnqueueWriteBuffer(e->dc.queue, e->d_norms, CL_TRUE, 0, (size_t)N * 4 + (N ? 0 : 4), e->h_norms,
                                          0, NULL, &ev);
        if (err != CL_SUCCESS) return clx_fail("clEnqueueWriteBuffer(norms)", err);
        cls_status s = dev_record(&e->dc, ev, "upload", (size_t)N * 4);
        if (s != CLS_OK) return s;
        dev_profile_collect(&e->dc, 1);
        e->norm_k1 = p->k1;
        e->norm_b = p->b;
    }
    /* Block-max pruning needs the blocks' max_score to bound this search's scores: the same k1 and
     * b (a query's weight scales every posting's score alike, so any weight will do). */
    const uint32_t prune = (uint32_t)idx_bounds_valid(idx, p->k1, p->b);
    if (sr->algo->prepare) {
        algo_search as = {.kk = sr->kk, .k1 = p->k1, .b = p->b, .prune = (int)prune, .counters = e->counters + own};
        cls_status s = sr->algo->prepare(sr->state, &as);
        if (s != CLS_OK) return s;
    }
    /* The cost model: a batch takes at least the floor's queries (fewer leave the device part
     * idle), and more, up to DEV_MAX_BATCH, while the device gets through them in the target
     * time at the rate measured so far; until a batch has been measured, the floor. */
    sr->lim = (plan_limits){.budget = e->budget, .max_alloc = e->dc.dev.info.max_alloc,
                            .max_queries = e->rate > 0 ? DEV_MAX_BATCH : e->batch_floor,
                            .max_cost = e->rate > 0 ? (uint64_t)(e->rate * e->batch_secs) + 1 : 0,
                            .cost_floor = e->batch_floor,
                            .cache = e->cached ? &e->cache : NULL, .prune = prune};
    sr->hits0 = e->cache.hits;
    sr->misses0 = e->cache.misses;
    sr->loaded0 = e->cache.words_loaded * 4 + e->cache.blocks_loaded * sizeof(idx_block);
    return CLS_OK;
}

/* Balanced batches: the queries in order of cost, so batches hold queries of like cost. */
cls_status clx_search_order(clx_engine *e, const cls_batch *bt, const uint32_t **order)
{
    const dev_search *sr = &e->search;
    if (!vec_reserve(&e->order, &e->order_cap, bt->nq, sizeof *e->order) ||
        !vec_reserve(&e->cost, &e->cost_cap, bt->nq, sizeof *e->cost))
        return err_set(CLS_E_NOMEM, "out of memory for the query order");
    for (uint64_t i = 0; i < bt->nq; i++)
        e->cost[i] = (dev_qcost){plan_cost(e->idx, sr->algo, sr->state, &bt->q[i], bt->terms + bt->q[i].term_start,
                                           sr->lim.prune ? sr->kk : 0, sr->lim.max_alloc),
                                 (uint32_t)i};
    qsort(e->cost, bt->nq, sizeof *e->cost, cmp_cost);
    for (uint64_t i = 0; i < bt->nq; i++) e->order[i] = e->cost[i].q;
    *order = e->order;
    return CLS_OK;
}

cls_status clx_search_run(clx_engine *e, const cls_batch *bt, const uint32_t *order, uint64_t n, cls_results *r)
{
    dev_search *sr = &e->search;
    cls_status s = search_batches(e, bt, order, n, r);
    /* the queries the algorithm asks to run again (having raised what they outgrew), until none */
    while (s == CLS_OK && sr->algo->rerun) {
        const uint32_t *again;
        uint64_t m;
        if ((s = sr->algo->rerun(sr->state, &again, &m)) != CLS_OK || m == 0) break;
        if (!vec_reserve(&e->again, &e->again_cap, m, sizeof *e->again))
            return err_set(CLS_E_NOMEM, "out of memory for the queries to run again");
        memcpy(e->again, again, m * sizeof *e->again);
        e->counters[DEV_C_QUERIES_RERUN].value += m;
        s = search_batches(e, bt, e->again, m, r);
    }
    return s;
}

void clx_search_finish(clx_engine *e)
{
    const dev_search *sr = &e->search;
    e->counters[DEV_C_COST_RATE].value = (uint64_t)e->rate;
    for (unsigned i = 0; i < TOPK_KINDS; i++) e->counters[DEV_C_TOPK + i].value = e->topk.launches[i];
    if (e->cached) {
        e->counters[DEV_C_LISTS_FOUND].value = e->cache.hits - sr->hits0;
        e->counters[DEV_C_LISTS_LOADED].value = e->cache.misses - sr->misses0;
        e->counters[DEV_C_BYTES_LOADED].value =
            e->cache.words_loaded * 4 + e->cache.blocks_loaded * sizeof(idx_block) - sr->loaded0;
    }
}

uint32_t clx_search_k(const clx_engine *e) { return e->search.kk; }

cls_status clx_search(clx_engine *e, const cls_batch *bt, const cls_search_params *p, cls_results *r)
{
    cls_status s = clx_search_prepare(e, p, bt->nq);
    if (s == CLS_OK) s = results_reset(r, bt->nq, bt->nq * (uint64_t)e->search.kk);
    if (s != CLS_OK || bt->nq == 0) return s;
    /* the second ranking stage in the batches, where this device runs it */
    int rerank = 0;
    if ((s = dev_rerank_begin(e, bt, p, &rerank)) != CLS_OK || (s = dev_rerank_prepare_results(e, r)) != CLS_OK)
        return s;
    const uint32_t *order;
    if ((s = clx_search_order(e, bt, &order)) != CLS_OK || (s = clx_search_run(e, bt, order, bt->nq, r)) != CLS_OK)
        return s;
    clx_search_finish(e);
    if (rerank) dev_rerank_pack(e, r);
    else results_pack(r, e->search.kk);
    return s;
}



size_t clx_counters(const clx_engine *e, const cls_counter **counters)
{
    *counters = e->counters;
    return e->ncounters;
}

void *clx_algo_state(clx_engine *e, cls_mode mode)
{
    return (int)mode >= 0 && mode < CLS_NUM_MODES ? e->algo_state[mode] : NULL;
}

void clx_set_budget(clx_engine *e, uint64_t bytes) { e->budget = bytes; }

void clx_set_batch_floor(clx_engine *e, uint32_t queries) { e->batch_floor = queries ? queries : 1; }

void clx_fail_batch(clx_engine *e, uint32_t nth, int late)
{
    e->fail_in = nth;
    e->fail_late = late != 0;
}

const clx_params *clx_engine_params(const clx_engine *e) { return &e->dc.prm; }
