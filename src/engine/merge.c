/* The merge of document-sharded results: shard i searched the documents from base[i] on, under
 * the collection's statistics, so its scores are the whole index's and its top-k is exact for its
 * documents; the top-k of the collection is then the best kk of the shards' lists (higher score
 * first, then the smaller docID), their docIDs moved by the shards' bases.
 *
 * and-or ranks the documents holding every term first, then the best others; a shard's and-or
 * list does not say where its first part ends, so a sharded and-or runs AND (k) and OR (2k) on
 * each shard instead: the AND lists merged give the first part, and, where it has fewer than k
 * documents, the OR lists merged, less those documents, give the rest. A shard's OR list then
 * holds its best k others (all of them where it has fewer), since fewer than k of its documents
 * hold every term. */
#include <stdlib.h>
#include <string.h>

#include "engine/merge.h"
#include "util/err.h"

/* The next hit of the n lists at cursors at[], by hit_before; -1 when all are spent. skip (sorted
 * docIDs, nskip of them) leaves those documents out, advancing past them. */
static int next_hit(const cls_results *const *parts, const uint32_t *base, unsigned n, uint64_t q, size_t *at,
                    const uint32_t *skip, size_t nskip)
{
    int best = -1;
    float bs = 0;
    uint32_t bd = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t m;
        const uint32_t *d;
        const float *sc;
        cls_results_get(parts[i], (size_t)q, &m, &d, &sc);
        while (at[i] < m && skip && bsearch(&(uint32_t){d[at[i]] + base[i]}, skip, nskip, sizeof *skip, merge_cmp_u32))
            at[i]++;
        if (at[i] == m) continue;
        float s = sc[at[i]];
        uint32_t doc = d[at[i]] + base[i];
        if (best < 0 || hit_before(s, doc, bs, bd)) best = (int)i, bs = s, bd = doc;
    }
    return best;
}

int merge_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

cls_status merge_shards(const cls_results *const *parts, const cls_results *const *or_parts, const uint32_t *base,
                        unsigned n, uint64_t nq, uint32_t kk, cls_results *out, uint32_t *scratch)
{
    cls_status s = results_reset(out, nq, nq * (uint64_t)kk);
    if (s != CLS_OK) return s;
    size_t at[MERGE_MAX_SHARDS];
    for (uint64_t q = 0; q < nq; q++) {
        uint32_t *docs = out->docs + q * kk;
        float *scores = out->scores + q * kk;
        uint32_t got = 0;
        memset(at, 0, n * sizeof *at);
        for (int i; got < kk && (i = next_hit(parts, base, n, q, at, NULL, 0)) >= 0; got++) {
            const uint32_t *d;
            const float *sc;
            size_t m;
            cls_results_get(parts[i], (size_t)q, &m, &d, &sc);
            docs[got] = d[at[i]] + base[i];
            scores[got] = sc[at[i]];
            at[i]++;
        }
        if (or_parts && got < kk) {
            /* the documents holding every term, sorted, to leave out of the OR lists */
            memcpy(scratch, docs, got * sizeof *docs);
            qsort(scratch, got, sizeof *scratch, merge_cmp_u32);
            uint32_t nand = got;
            memset(at, 0, n * sizeof *at);
            for (int i; got < kk && (i = next_hit(or_parts, base, n, q, at, scratch, nand)) >= 0; got++) {
                const uint32_t *d;
                const float *sc;
                size_t m;
                cls_results_get(or_parts[i], (size_t)q, &m, &d, &sc);
                docs[got] = d[at[i]] + base[i];
                scores[got] = sc[at[i]];
                at[i]++;
            }
        }
        out->start[q + 1] = got;
    }
    results_pack(out, kk);
    return CLS_OK;
}
