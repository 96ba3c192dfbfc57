/* The merge of document-sharded results (merge.c). */
#ifndef CLS_ENGINE_MERGE_H
#define CLS_ENGINE_MERGE_H

#include "query/batch.h"

#define MERGE_MAX_SHARDS 64u

/* out = for each of the nq queries, the best kk hits of the n shards' lists parts[i] (docIDs
 * moved by base[i]), higher score first, then the smaller docID. or_parts (NULL unless and-or):
 * parts are then the shards' AND lists and or_parts their OR lists, whose best hits not among the
 * AND ones complete a query that has fewer than kk; scratch holds kk docIDs. */
cls_status merge_shards(const cls_results *const *parts, const cls_results *const *or_parts, const uint32_t *base,
                        unsigned n, uint64_t nq, uint32_t kk, cls_results *out, uint32_t *scratch);
/* qsort's and bsearch's order of uint32_t. */
int merge_cmp_u32(const void *a, const void *b);

#endif
