/* abi.h: every layout that host and device share, defined once.
 *
 * The host's C code includes this file ("cl/abi.h"); the device's OpenCL C gets it as the first
 * part of every program source (src/device/clx_program.c puts it before common.cl). So block
 * metadata, query and term descriptors, decode tasks and the result layout have one definition,
 * with named fields, and the host checks sizes and offsets at compile time (below): a kernel
 * never reads a record through a magic offset.
 *
 * Every record is made of 32-bit fields only, so C and OpenCL C lay it out the same way with no
 * padding, and an array of uints can be read as an array of records (the batch input buffer
 * holds several record arrays one after another; kernels get the word offset of each). */
#ifndef CLS_ABI_H
#define CLS_ABI_H

/* OpenCL C compilers predefine __OPENCL_VERSION__ (the device's version) or, like clang's own
 * front end as AMD's and the SPIR-V toolchains use it, only __OPENCL_C_VERSION__: either one
 * means device code. */
#if defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
#define ABI_DEVICE 1
#endif

#ifdef ABI_DEVICE
#define ABI_U32 uint
#else
#include <stddef.h>
#include <stdint.h>
#define ABI_U32 uint32_t
#endif

/* Per-block metadata of a posting list, 32 bytes: the index file's blocks section as it is
 * stored (docs/FORMAT.md), uploaded to devices as is.
 *
 * The docID stream holds the block's n-1 gaps d_i - d_{i-1} - 1 (i = 1..n-1), so with x_0 = 0 and
 * x_i = gap_i + 1, docID_i = first + inclusive_prefix_sum(x)_i; the frequency stream holds the n
 * values tf - 1. Both are coded by the index's codec, whose per-stream parameter word is dparam /
 * fparam. */
typedef struct idx_block {
    ABI_U32 first;   /* first docID of the block */
    ABI_U32 last;    /* last docID of the block */
    ABI_U32 offset;  /* first word of the docID stream in the words section */
    ABI_U32 info;    /* (count - 1) | (frequency stream's offset after `offset`, in words) << 10 */
    ABI_U32 dparam;  /* codec parameter of the docID stream */
    ABI_U32 fparam;  /* codec parameter of the frequency stream */
    float max_score; /* largest BM25 contribution in the block at the header's k1, b, qtf 1 */
    ABI_U32 reserved; /* zero */
} idx_block;

#define IDX_INFO_COUNT(info) (((info) & 0x3FFu) + 1u)
#define IDX_INFO_FOFS(info) ((info) >> 10)

/* One block to decode: which block, and where its postings land in the decoded buffers. */
typedef struct abi_task {
    ABI_U32 block; /* index into the blocks section; ABI_NO_BLOCK: nothing (the work-group returns) */
    ABI_U32 dst;   /* first slot of the block's postings in the decoded docIDs / frequencies */
} abi_task;

#define ABI_NO_BLOCK 0xFFFFFFFFu
#define ABI_NO_DOC 0xFFFFFFFFu /* a result slot without a hit */

/* A whole list to decode: expand_lists (decode.cl) writes its num_blocks abi_tasks at task_base
 * of the tasks buffer, block b landing at dst + b * block_size. One record a list instead of one
 * a block keeps the upload small. */
typedef struct abi_list {
    ABI_U32 first_block;
    ABI_U32 num_blocks;
    ABI_U32 dst;
    ABI_U32 task_base;
} abi_list;

/* One query of a device batch. */
typedef struct abi_query {
    ABI_U32 term_start;  /* its first abi_term in the batch */
    ABI_U32 num_terms;   /* 0 when the query matches nothing */
    ABI_U32 cand_offset; /* where its candidates start in the candidate buffers (AND) */
    ABI_U32 flags;       /* ABI_QF_* */
} abi_query;

#define ABI_QF_EMPTY 1u        /* the query matches nothing: nothing of it is decoded */
#define ABI_QF_UNKNOWN_TERM 2u /* a query term is unknown to the index: no document holds every term */
/* OR by partitions: the query's documents are accumulated in a hash table of its own instead
 * (cl/or_parts.cl: or_hash), 2^ABI_QF_HASH_LOG(flags) entries of two words, a docID and a sum,
 * from word cand_offset of the hash buffer on */
#define ABI_QF_HASH 4u
#define ABI_QF_HASH_LOG(flags) (((flags) >> 8) & 31u)

/* One term of a query, in the query's term order (the order scores are summed in). */
typedef struct abi_term {
    ABI_U32 list_offset; /* first slot of its decoded list in the decoded docIDs / frequencies */
    ABI_U32 df;          /* postings in the list */
    float weight;        /* BM25 idf times the term's query weight */
    ABI_U32 skip;        /* 0: the whole list is decoded at list_offset; else 1 + its abi_skip */
} abi_term;

/* Block skipping: a list of an AND query of which only some blocks are decoded, chosen on the
 * device by select_blocks (and.cl), one of two ways (kind):
 *   ABI_SKIP_DRIVEN  (Ding et al.) a list other than the query's driving one (its shortest; the
 *                    first of them on a tie): the blocks whose [first, last] holds a docID of the
 *                    driving list. A list's blocks hold disjoint docID ranges, so at most
 *                    min(num_blocks, driving df) blocks are chosen.
 *   ABI_SKIP_TOP     (block-max pruning) the one list of a one-term query searched at the BM25
 *                    parameters of the blocks' max_score: the blocks whose max_score reaches
 *                    the k-th largest max_score of the list (less a relative margin that covers
 *                    rounding). Each of those k blocks holds a posting scoring its max_score, so
 *                    the k-th best score is at least that large, and no posting of a block left
 *                    out can reach it: the top k lie in the chosen blocks.
 * The chosen blocks go, in list order, as abi_tasks at task_base of the selected-tasks buffer,
 * each landing at dst_base + i * block_size, and their number into nsel[its index]; the tasks
 * after them up to max_tasks are ABI_NO_BLOCK. */
typedef struct abi_skip {
    ABI_U32 query;       /* the batch's query this term belongs to */
    ABI_U32 first_block; /* the term's blocks in the blocks section */
    ABI_U32 num_blocks;
    ABI_U32 task_base;   /* first abi_task of its region in the selected-tasks buffer */
    ABI_U32 max_tasks;   /* the region's size */
    ABI_U32 dst_base;    /* first decoded slot of its region */
    ABI_U32 kind;        /* ABI_SKIP_DRIVEN or ABI_SKIP_TOP */
    ABI_U32 k;           /* ABI_SKIP_TOP: the hits the query keeps; else zero */
} abi_skip;

#define ABI_SKIP_DRIVEN 0u
#define ABI_SKIP_TOP 1u
/* A list of a query whose lists are decoded ahead (src/algo/algo.h: algo_need.ahead; OR by
 * partitions, cl/or_parts.cl), one record a query term, in term order: the list's blocks in the
 * blocks section, the batch's abi_olist that decodes it (several queries may share one) and that
 * abi_olist's task_base, the batch's index of its abi_term, and the scale that turns a block's
 * max_score into a bound at the term's weight (weight / idf: max_score was computed at qtf 1).
 * 32 bytes, as abi_skip. */
typedef struct abi_bound {
    ABI_U32 query;       /* the batch's query this term belongs to */
    ABI_U32 first_block;
    ABI_U32 num_blocks;
    ABI_U32 olist;       /* the abi_olist that decodes the list */
    ABI_U32 olist_task;  /* its task_base: the list's first decoded block */
    ABI_U32 term;        /* its abi_term */
    float scale;
    ABI_U32 reserved;    /* zero */
} abi_bound;

/* A list an OR batch decodes once for every query that gives its term the same weight
 * (cl/or_parts.cl: or_expand, or_decode): block b of the list is task task_base + b, and its
 * posting i lands in slot (task_base + b) * block_size + i of the decoded contributions (its BM25
 * contribution at weight `weight`) and offsets (its docID's place within its partition). */
typedef struct abi_olist {
    ABI_U32 first_block;
    ABI_U32 num_blocks;
    ABI_U32 task_base;
    float weight;
} abi_olist;
/* The offset of a slot that holds no posting (a block of fewer than block_size postings): above
 * any place within a partition (OR_PART_LOG <= 15). */
#define ABI_OR_NO_SLOT 0xFFFFu

/* Where or_score's block bounds come from (kernel argument bsrc):
 *   ABI_BOUND_MAXSCORE  the block's max_score times the term's scale: the search runs at the BM25
 *                       parameters the index computed max_score for;
 *   ABI_BOUND_TABLE     the engine's table of block maxima at weight 1 for the search's k1 and b
 *                       (block_maxima, computed on the device when the parameters change), times
 *                       the term's weight;
 *   ABI_BOUND_NONE      no bound (+inf): every block of every partition is decoded. */
#define ABI_BOUND_MAXSCORE 0u
#define ABI_BOUND_TABLE 1u
#define ABI_BOUND_NONE 2u
/* cl/or_parts.cl: comparisons with theta inflate a bound by ABI_OR_SLACK (2^-12 relative); a
 * partition bound's top bit marks a seed (scores are < 2^31 as bits). Here so that tests check
 * the partition kernels with the kernels' own constants. */
#define ABI_OR_SLACK (1.0f + 1.0f / 4096.0f)
#define ABI_OR_SEED_BIT 0x80000000u
/* or_score's queue pass runs in rounds (src/algo/or.c): round r takes entries
 * [ABI_OR_ROUND_FROM(r), ABI_OR_ROUND_FROM(r + 1)) of every query's queue (64, 512, 4096, the
 * rest); or_rest lists, per round, the queries whose queue reaches into it. */
#define ABI_OR_ROUNDS 4u
#define ABI_OR_ROUND_FROM(r) ((r) == 0 ? 0u : (r) >= ABI_OR_ROUNDS ? 0xFFFFFFFFu : 8u << (3u * (r)))
/* OR by partitions' control words (or_parts.cl's ctl, src/algo/or.c sizes and clears it):
 * ABI_OR_CTL_Q words a query, word ABI_OR_CTL_AT(q, w) for query q, then from
 * ABI_OR_CTL_BATCH(nq) the batch's ABI_OR_CTL_BATCH_WORDS words. */
#define ABI_OR_CTL_Q 4u
#define ABI_OR_CTL_THETA 0u   /* theta's bits (raised by atomic_max: non-negative floats order as uints) */
#define ABI_OR_CTL_OFFERED 1u /* candidates offered to the query's pool */
#define ABI_OR_CTL_QUEUE 2u   /* its queue's length (or_rest) */
#define ABI_OR_CTL_UBMAX 3u   /* its largest partition bound: the scale of its histogram of offers */
#define ABI_OR_CTL_AT(q, w) (ABI_OR_CTL_Q * (q) + (w))
#define ABI_OR_CTL_BATCH(nq) (ABI_OR_CTL_Q * (nq))
/* the batch's words, after ABI_OR_CTL_BATCH(nq) */
#define ABI_OR_CTL_LONGEST 0u        /* the longest queue */
#define ABI_OR_CTL_TICKET 1u         /* the queue pass's ticket counter, cleared before each round */
#define ABI_OR_CTL_PARTS 2u          /* partitions scored */
#define ABI_OR_CTL_SKIPPED 3u        /* (partition, term) pairs not essential */
#define ABI_OR_CTL_ROUND(r) (4u + (r)) /* the queries or_rest listed for round r */
#define ABI_OR_CTL_BATCH_WORDS (4u + ABI_OR_ROUNDS)
/* Bins of a query's histogram of the scores its partitions offered (or_parts.cl: or_hist_theta),
 * ABI_OR_HIST words a query in global memory. */
#define ABI_OR_HIST 256u
/* Query terms whose records an or_score group holds in local memory at once: the kernel's
 * arrays, and the local memory the host sets aside for them (clx_params.c). */
#define ABI_OR_TT 32u
/* Bins of the radix select's histogram of 8-bit digits (common.cl: wg_kth_key), in local memory
 * of every kernel that calls it. */
#define ABI_KTH_BINS 256u

/* A share of one query's candidate work: postings [begin, end) of its driving list as the
 * device decoded it (match_and and intersect_and run one work-group per unit), so a long query
 * spreads over many work-groups while a short one is one unit (Ding et al.'s parallel merge,
 * partitioned by position in the driving list: a unit of whole blocks is the docID range of
 * those blocks). The host gives each query as many units as its driving list's df asks for and
 * sets query and first_unit (a query's units are consecutive, first_unit the first of them);
 * plan_units (and.cl) sets begin and end on the device, from the driving list's length there:
 * its df, or where its blocks were chosen (ABI_SKIP_TOP), the count in the last chosen block's
 * head past the others; units past that length are empty. match_and and intersect_and leave a
 * unit's candidates at cand_offset + begin, in docID order, and their number in ucount[unit]. */
/* OR by partitions: a query flagged ABI_QF_HASH gets one unit per share of its postings
 * (or_hash runs one work-group a unit), the host setting begin and end to the partitions
 * [begin, end) whose documents the unit adds; another query's one unit is unused. */
typedef struct abi_unit {
    ABI_U32 query;
    ABI_U32 begin, end;
    ABI_U32 first_unit;
} abi_unit;

/* One piece of a list the list cache (src/engine/list_cache.h) puts on the device: count words,
 * or count block records, from word src of the staging buffer to word (block record) dst of the
 * words (blocks) arena. A block record's offset gets shift added, mod 2^32: where its list's
 * words moved from the file to the arena. place_lists (cl/cache.cl) runs one work-group a
 * piece, the word pieces first. */
typedef struct abi_place {
    ABI_U32 src;
    ABI_U32 dst;
    ABI_U32 count;
    ABI_U32 shift;
} abi_place;

/* Top-k ranks documents by a 32-bit key, larger first, then by docID, smaller first. A score's
 * key is its float bits (BM25 scores are positive, so their bits order like the floats; 0 means
 * "no match"); an algorithm that ranks a class of documents first sets ABI_KEY_TIER in their
 * keys, and the results carry the score without it. */
#define ABI_KEY_TIER 0x80000000u
/* topk_rows (cl/topk.cl) reads a row in steps of wg x 4 x ABI_TOPK_VEC(wg) keys (16-byte loads,
 * about 2,048 keys a step); the host sizes its candidate buffer from the step. */
#define ABI_TOPK_VEC(wg) ((wg) >= 512u ? 1u : 2u)
/* Local and global words the top-k kernels take besides their keys, which the host sizes:
 * topk_rows' radix histogram and state words (cl/topk.cl), topk_wide's per-row histograms (one a
 * pass, of ABI_TOPK_BINS) and state words, and its per-slice histogram of the last digit
 * (cl/topk_wide.cl). */
#define ABI_TOPK_BINS 2048u
#define ABI_TOPK_ROWS_SH 6u
#define ABI_TOPK_WIDE_STATE 12u
#define ABI_TOPK_WIDE_TIES 1024u
/* topk_team (cl/topk.cl): rows of at most ABI_TOPK_TEAM(wg) x ABI_TOPK_TEAM_KEYS keys at k up
 * to ABI_TOPK_TEAM_K, a team of ABI_TOPK_TEAM(wg) work-items a row, each holding
 * ABI_TOPK_TEAM_KEYS keys in registers; teams of 32, but at most 16 teams a group (their
 * histograms and survivors stay within 48 KiB of local memory) and no team above the group. */
#define ABI_TOPK_TEAM(wg) ((wg) < 32u ? (wg) : (wg) > 512u ? (wg) / 16u : 32u)
#define ABI_TOPK_TEAM_KEYS 32u
#define ABI_TOPK_TEAM_K 128u

/* Results of a batch of Q queries at k, read back in one transfer, in 32-bit words:
 *   [0, Q)                 hits per query (at most k)
 *   [Q + q*k + r]          docID of query q's hit r (rank order); ABI_NO_DOC past its hits
 *   [Q + Q*k + q*k + r]    its score, as float bits; 0 past its hits */
#define ABI_OUT_DOC(Q, k, q, r) ((Q) + (q) * (k) + (r))
#define ABI_OUT_SCORE(Q, k, q, r) ((Q) + (Q) * (k) + (q) * (k) + (r))
#define ABI_OUT_WORDS(Q, k) ((Q) + 2 * (Q) * (k))
/* After them, the algorithm's own words (query_algo.extra_words, from ABI_OUT_WORDS): AND's one
 * word counts the blocks block skipping chose to decode in the batch (select_blocks); OR batches
 * by partitions (or_finish) leave that word unused and add, after it: per query the candidates
 * its partitions offered when they overflowed its pool (0: they fit), then the batch's
 * partitions scored, then its (partition, term) pairs whose postings or_score's first pass left
 * unread (terms that were not essential there). */
#define ABI_OUT_OR(Q, k) (ABI_OUT_WORDS(Q, k) + 1)
#define ABI_OUT_OR_WORDS(Q) ((Q) + 2)

/* The second ranking stage in a device batch (cl/rerank.cl, cl/features.cl: features_rows), after
 * top-k: one record a term of each query of the batch, the query's terms together in its term
 * order (query q's from abi_rerank_query.term_start on). idf, weight and pc are the feature
 * extractor's values (src/rank/features.h: feat_term), computed once on the host in double;
 * first_block and num_blocks are the term's list in the blocks section. */
typedef struct abi_rerank_term {
    float idf, weight, pc;
    ABI_U32 query;       /* the batch's query it belongs to */
    ABI_U32 first_block;
    ABI_U32 num_blocks;
} abi_rerank_term;
typedef struct abi_rerank_query {
    ABI_U32 term_start;
    ABI_U32 num_terms;
} abi_rerank_query;
/* The stage's results of a batch of Q queries that keeps k hits each, read back in place of the
 * candidates: [0, Q) hits per query, then for query q's hit r its docID, its model score and its
 * first-stage score (float bits), each an array of Q * k. */
#define ABI_RR_DOC(Q, k, q, r) ((Q) + (q) * (k) + (r))
#define ABI_RR_MODEL(Q, k, q, r) ((Q) + (Q) * (k) + (q) * (k) + (r))
#define ABI_RR_FIRST(Q, k, q, r) ((Q) + 2 * (Q) * (k) + (q) * (k) + (r))
#define ABI_RR_WORDS(Q, k) ((Q) + 3 * (Q) * (k))

/* A node of a tree ensemble (src/rank/model.h), 16 bytes: the model's trees are one array of
 * these, each tree's nodes together, its root first (the offsets of the roots in a second array
 * of uints, ntrees + 1 of them). A node is one record so that a step of the walk is one 16-byte
 * load. split holds the feature (ABI_TREE_FEATURE) and the flags (ABI_TREE_*) of a split, or
 * ABI_TREE_LEAF alone; value is the split's threshold, or the leaf's value. left and right are
 * the children's positions in the whole array (leaves: 0).
 *
 * A split sends a document's value x of its feature left or right as both libraries do
 * (src/rank/model.h says how each maps onto these flags):
 *   x NaN:   ABI_TREE_NAN_DEFAULT: to the default side; else x is taken as 0.0
 *   ABI_TREE_ZERO_DEFAULT and |x| <= ABI_TREE_ZERO (1e-35f): to the default side
 *   otherwise left when x <= value, or, with ABI_TREE_STRICT, when x < value.
 * The default side is left with ABI_TREE_DEFAULT_LEFT, else right. */
typedef struct abi_tree_node {
    ABI_U32 split; /* feature | flags */
    float value;
    ABI_U32 left, right;
} abi_tree_node;

#define ABI_TREE_FEATURE_BITS 24u
#define ABI_TREE_FEATURE(split) ((split) & 0xFFFFFFu) /* features 0 .. 2^24 - 1 */
#define ABI_TREE_LEAF (1u << 24)
#define ABI_TREE_DEFAULT_LEFT (1u << 25)
#define ABI_TREE_NAN_DEFAULT (1u << 26)
#define ABI_TREE_ZERO_DEFAULT (1u << 27)
#define ABI_TREE_STRICT (1u << 28)
#define ABI_TREE_ZERO 1e-35f /* LightGBM's kZeroThreshold */

#ifndef ABI_DEVICE
_Static_assert(sizeof(float) == 4, "the device's float is 32 bits");
_Static_assert(sizeof(idx_block) == 32 && offsetof(idx_block, offset) == 8 && offsetof(idx_block, info) == 12 && offsetof(idx_block, max_score) == 24,
               "idx_block is the file's 32-byte block record");
_Static_assert(sizeof(abi_task) == 8, "abi_task is 2 words");
_Static_assert(sizeof(abi_query) == 16 && offsetof(abi_query, flags) == 12, "abi_query is 4 words");
_Static_assert(sizeof(abi_term) == 16 && offsetof(abi_term, weight) == 8, "abi_term is 4 words");
_Static_assert(sizeof(abi_unit) == 16, "abi_unit is 4 words");
_Static_assert(sizeof(abi_list) == 16, "abi_list is 4 words");
_Static_assert(sizeof(abi_olist) == 16 && offsetof(abi_olist, weight) == 12, "abi_olist is 4 words");
_Static_assert(sizeof(abi_place) == 16, "abi_place is 4 words");
_Static_assert(sizeof(abi_bound) == 32 && offsetof(abi_bound, term) == 20 && offsetof(abi_bound, scale) == 24, "abi_bound is 8 words");
_Static_assert(sizeof(abi_skip) == 32 && offsetof(abi_skip, dst_base) == 20 && offsetof(abi_skip, k) == 28,
               "abi_skip is 8 words");
_Static_assert(sizeof(abi_rerank_term) == 24 && offsetof(abi_rerank_term, query) == 12, "abi_rerank_term is 6 words");
_Static_assert(sizeof(abi_rerank_query) == 8, "abi_rerank_query is 2 words");
_Static_assert(sizeof(abi_tree_node) == 16 && offsetof(abi_tree_node, value) == 4 && offsetof(abi_tree_node, right) == 12,
               "abi_tree_node is 4 words");
#endif

#endif
