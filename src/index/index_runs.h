/* The builder's inverted runs: postings grouped by term, held in memory up to a budget, spilled
 * to temporary files beyond it, and merged term by term as the encoders ask for chunks of the
 * dictionary (index_runs.c says how, and what the budget bounds). */
#ifndef CLS_INDEX_RUNS_H
#define CLS_INDEX_RUNS_H

#include <stdint.h>

#include "clsearch.h"

typedef struct idx_runs idx_runs;

/* Sorts n term ids into the dictionary's byte order (idx_term_ref_cmp); 0 when out of memory.
 * Called from the sealing threads, several at once, while the builder goes on adding terms: it
 * must read the dictionary's bytes under whatever keeps them in place. */
typedef int (*runs_sort_fn)(void *user, uint32_t *ids, uint32_t n);

/* What the runs did, for -v: the sealing threads' seconds (sorting, laying out, writing, summed
 * over the threads), the runs sealed, those spilled and their bytes, and the seconds runs_add
 * waited for a seal still running. */
typedef struct runs_stats {
    double spill, wait;
    uint64_t runs, spills, spill_bytes;
} runs_stats;

/* budget: bytes of runs held in memory (at least 1); sealers: threads that sort runs at once
 * (at least 1). Spilled runs go to unnamed files in dir (NULL: $TMPDIR, else /tmp). */
cls_status runs_create(uint64_t budget, unsigned sealers, const char *dir, runs_sort_fn sort, void *user,
                       idx_runs **out);
/* Waits for a spill in flight; closes the spilled runs (their files have no name: nothing is
 * left on disk). NULL is ignored. */
void runs_free(idx_runs *r);

/* One batch of documents, its postings grouped by term: group k holds the postings
 * gstart[k] .. gstart[k + 1] - 1 of term gid[k], docIDs base + doc[i] ascending, frequencies
 * tf[i]. Batches come in docID order; every gid is below num_terms (the dictionary's size). */
typedef struct runs_batch {
    uint32_t base, ngroups;
    const uint32_t *gid, *gstart, *doc, *tf;
} runs_batch;

/* Copies the batch into the run being filled. When the run reaches its share of the budget it is
 * handed to a sealing thread (after the oldest has finished, when all are busy) and a new run
 * starts.
 * A failed spill is reported by this call or a later one, and by runs_finish. */
cls_status runs_add(idx_runs *r, const runs_batch *b, uint32_t num_terms);

/* Starts sealing the run being filled (sorted by term, kept in memory) on a sealing thread,
 * so that the caller can sort its dictionary meanwhile; runs_finish waits for it. After
 * runs_finish every posting added is in a sealed run. More batches may be added after it. */
cls_status runs_seal(idx_runs *r, uint32_t num_terms);
cls_status runs_finish(idx_runs *r);

/* Per term id, its postings so far (num_terms as last given). */
const uint32_t *runs_df(const idx_runs *r);

/* idx_fill_fn over the sealed runs: the lists of the dictionary ranks t0 .. t1 - 1 (rank: term
 * id to its rank in byte order; list_start by rank), merged run by run in docID order. Safe from
 * several threads at once (each its own chunk). */
typedef struct runs_merge {
    const idx_runs *r;
    const uint32_t *rank;
    const uint64_t *list_start;
} runs_merge;
cls_status runs_fill(void *merge, uint32_t t0, uint32_t t1, uint32_t *docs, uint32_t *freqs);

void runs_get_stats(const idx_runs *r, runs_stats *s);

#endif
