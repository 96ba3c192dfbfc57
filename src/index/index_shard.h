/* Document-range shards of an index (include/clsearch.h, "Document-range shards"; the file's
 * fields in docs/FORMAT.md, "Shards").
 *
 * Shard i of n holds the documents [lo, hi) of a whole index, renumbered from 0, its header
 * recording i, n, lo (doc_base) and the collection's numbers of documents and tokens, and every
 * term of the collection with the collection's df (the term entry's cdf) beside its own list's.
 * Every scorer reads the collection's statistics (cls_index's coll_docs, coll_avg_doc_len,
 * idx_coll_df; bm25.h), and the blocks' max_score are computed from them, so a document scores
 * on its shard exactly as on the whole index and block-max pruning stays sound. Loops over
 * documents (norms, dense rows) stay over the shard's own.
 *
 * cls_index_shard_write is to the shards what cls_index_recode is to a whole index: the lists
 * decoded by the reference decoder (only the blocks that reach into the range), cut to the
 * range, and handed with the documents' lengths, docnos and stored fields to the builder's
 * writer (idx_write_lists), which codes them in the index's codec, block size and pfor depth. */
#ifndef CLS_INDEX_SHARD_H
#define CLS_INDEX_SHARD_H

#include "index/index.h"

/* How many postings each document of x has (its distinct terms) into count[0 .. num_docs), the
 * postings verified first; CLS_E_CORRUPT as the strict decoders report it. */
cls_status idx_doc_postings(const cls_index *x, uint32_t *count);

/* bounds[0 .. shards] of N documents weighing weight[d] each, so that the documents [bounds[i],
 * bounds[i + 1]) weigh about 1/shards of the total: each inner bound is the document boundary
 * nearest to its share (the lower on a tie), never before the bound before it. Every weight 0:
 * by documents. */
void idx_shard_balance(const uint32_t *weight, uint32_t N, uint32_t shards, uint32_t *bounds);

#endif
