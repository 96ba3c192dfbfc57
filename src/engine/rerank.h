/* The second ranking stage (cls_search_params.rerank): a tree ensemble re-ranks each query's
 * first-stage candidates by their rows of the feature table (rank/features.h, rank/model.h).
 *
 * Where it runs: the scheduler runs it on a search's results once the first stage's last part
 * has finished (after a split search's pack and a sharded search's merge: the candidates are the
 * whole collection's top depth), before the search is done, on the thread that finished it:
 * feature rows from the extractor, rank_model_score_rows and a sort, in plain C. A device
 * executor that ran the search whole has already run the stage in its batches (dev_rerank.c:
 * the same bits, kernels that twin this file's steps) and left final results (r->reranked),
 * which rerank_run then leaves as they are.
 *
 * One extractor an engine, its buffers grown to the largest query met; searches that finish at
 * once take the stage in turn (its lock). */
#ifndef CLS_ENGINE_RERANK_H
#define CLS_ENGINE_RERANK_H

#include "clsearch.h"
#include "rank/model.h"

struct cls_model {
    rank_model m;
    char desc[1280];
};

typedef struct rerank_stage rerank_stage;

/* The stage of an engine on idx (kept); nothing is read until a search asks for it. */
cls_status rerank_create(const cls_index *idx, rerank_stage **out);
void rerank_free(rerank_stage *st);
/* The candidates a search's first stage keeps: p->rerank_depth, 0 meaning CLS_RERANK_DEPTH. */
uint32_t rerank_depth(const cls_search_params *p);
/* CLS_OK when p asks for no stage, or for one the engine runs: a depth in range and a model that
 * reads no feature past the index's table (CLS_E_ARG naming both widths). Opens the extractor on
 * first use (CLS_E_CORRUPT for postings that fail their checksum). */
cls_status rerank_check(rerank_stage *st, const cls_search_params *p);
/* The stage on r, the first stage's results of b at p (p->rerank set): each query's candidates
 * scored by the model, sorted by (score desc, docID asc) and cut to k; the first stage's
 * scores kept beside them (r->first, r->reranked). */
cls_status rerank_run(rerank_stage *st, const cls_batch *b, const cls_search_params *p, uint32_t k, cls_results *r);

#endif
