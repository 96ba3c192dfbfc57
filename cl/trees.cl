/* trees.cl: the score of documents under a tree ensemble (a second ranking stage: learning to
 * rank with gradient-boosted trees; src/rank/model.h reads LightGBM and XGBoost models into it).
 *
 * Every kernel here gives each document the same float: its trees' leaf values summed in tree
 * order, then the base score added, exactly the plain-C evaluator's arithmetic
 * (src/rank/model.c: rank_model_score), so they agree bit for bit (no contraction: common.cl
 * turns FP_CONTRACT off, and the sum is additions only, one document's in one work-item, never
 * split across work-items, whose reduction would reorder it). The documents are rows of stride
 * floats, a feature's value at its id, absent features already the model's absent value (0.0 or
 * NaN): a dense row lets a split read its feature at once.
 *
 * Two layouts of the trees (the host's TREES_LAYOUT, src/rank/rank_dev.c, chooses):
 *
 * trees_score, the node walk (any tree shape; cl/abi.h's abi_tree_node): every tree's nodes in
 * one array, a node one 16-byte record (split word, threshold or leaf value, both children's
 * positions), roots[t] tree t's root. A work-item a document walks each tree until a leaf.
 *
 * trees_level, complete level-order arrays (trees of depth at most the host's limit; the
 * default): every tree padded to the model's depth D as a complete binary tree, stored as
 * 2^D - 1 inner nodes of two words (split word, threshold bits) in level order, children of
 * node i implicit at 2i + 1 and 2i + 2, then its 2^D leaf values; a leaf above depth D becomes
 * an inner node that sends every value left (feature 0, threshold +inf, no flags) over copies of
 * itself, so every path meets the same leaf value and the sum does not change. What this buys
 * on a GPU: a walk is D steps for every document and every tree, so the work-items of a warp
 * never wait for one another's longer paths, the loop has no exit test, and a node is 8 bytes
 * instead of 16 (a depth-6 tree of 64 leaves, 760 bytes instead of 2,032), so the ensemble's
 * working set sits better in the caches. Each step is one node load, one feature load, one
 * compare and an index update.
 *
 * Where the documents' features come from (trees_level, the host's TREES_ROWS_LOCAL): straight
 * from the rows in global memory, or (trees_level_local) a work-group's rows copied first into
 * local memory, coalesced, once, and read from there at every split: each split reads a feature
 * at a random place in its own row, which from global memory is one scattered access a
 * work-item, while local memory serves it within the multiprocessor. Local rows are padded to
 * an odd number of words, so that the work-items of a warp reading the same feature (every
 * root) fall in different banks. TREES_DOCS documents a work-item give each work-item
 * independent walks to interleave, hiding the latency of a walk's chain of dependent loads
 * where local memory limits how many work-groups a multiprocessor holds.
 *
 * The trees themselves are read from global memory through the caches (at the root every
 * work-item reads the same node, and deeper a level's nodes lie within a few cache lines), or,
 * in trees_level_local with the host's TREES_TILE, staged in local memory a tile of trees at a
 * time beside the rows, so that a step's two loads both stay within the multiprocessor.
 *
 * The choice, by measurement on an NVIDIA H100 (docs/PERFORMANCE.md, "Tree ensembles on the
 * H100"; the device database, src/device/clx_params.c, holds it): level-order trees, the
 * group's rows and tiles of a few trees in local memory, one document a work-item. What costs
 * on a GPU is reading the features: a split reads 4 bytes at a random place in its document's
 * row, and the rows of the many documents a GPU keeps in flight do not stay in its caches, so
 * with rows in global memory nearly every read goes to memory and the trees' layout hardly
 * matters (the node walk and the level-order kernels ran alike there, as did XGBoost's GPU
 * predictor). Rows in local memory removed most of that; trees staged beside them removed the
 * wait on the caches for every node. What bounds it then is that local memory holds the rows
 * of few work-groups at once while every walk is a chain of dependent loads (node, feature,
 * node): whatever takes local memory, and so work-groups, away from a multiprocessor (larger
 * tiles, several documents a work-item) ran slower, and a smaller footprint a document (its
 * features as small integers, ranks among the model's thresholds) is the next step. QuickScorer's
 * bit vectors, made for CPU caches and SIMD over the trees' false nodes, would need the same
 * rows per work-group and a reduction over trees per document whose order must stay fixed.
 *
 * A split's rule (cl/abi.h, ABI_TREE_*): NaN to the default side where the node says so, else
 * NaN taken as 0.0; LightGBM's zero-as-missing (|x| <= 1e-35) to the default side; then left
 * when x <= threshold, or x < threshold for XGBoost's strict splits. */

#ifndef WG_TREES
#define WG_TREES 64 /* work-items a work-group */
#endif
#ifndef TREES_DOCS
#define TREES_DOCS 1 /* documents a work-item in trees_level (1, 2 or 4) */
#endif

/* Whether a split (its split word and threshold t) sends the value x left. */
inline int tree_left(uint split, float t, float x)
{
    if (isnan(x)) {
        if (split & ABI_TREE_NAN_DEFAULT) return (split & ABI_TREE_DEFAULT_LEFT) != 0;
        x = 0.0f;
    }
    if ((split & ABI_TREE_ZERO_DEFAULT) && x >= -ABI_TREE_ZERO && x <= ABI_TREE_ZERO)
        return (split & ABI_TREE_DEFAULT_LEFT) != 0;
    return (split & ABI_TREE_STRICT) ? x < t : x <= t;
}

/* out[d] for the n documents of rows (stride floats each): the trees' leaves summed in tree
 * order, then base (its float bits). */
__kernel __attribute__((reqd_work_group_size(WG_TREES, 1, 1))) void trees_score(
    __global const float *rows, uint stride, uint n, __global const abi_tree_node *nodes, __global const uint *roots,
    uint ntrees, uint base_bits, __global float *out)
{
    uint d = get_global_id(0);
    if (d >= n) return;
    __global const float *x = rows + (size_t)d * stride;
    float sum = 0.0f;
    for (uint t = 0; t < ntrees; t++) {
        abi_tree_node nd = nodes[roots[t]];
        while (!(nd.split & ABI_TREE_LEAF))
            nd = nodes[tree_left(nd.split, nd.value, x[ABI_TREE_FEATURE(nd.split)]) ? nd.left : nd.right];
        sum += nd.value;
    }
    out[d] = sum + as_float(base_bits);
}

/* The walk of trees_level's kernels over count trees from base (SPACE memory: __global or
 * __local) for the TREES_DOCS documents of a work-item, FEATURE(j, f) reading document j's
 * feature f; sums into sum[]. A tree is tree_words words: 2^depth - 1 inner nodes of two words,
 * then 2^depth leaf values, then a padding word where that count is odd. */
#define TREES_LEVEL_WALK(SPACE, base, count, FEATURE)                                                            \
    do {                                                                                                         \
        const uint inner = (1u << depth) - 1u;                                                                   \
        for (uint t = 0; t < (count); t++) {                                                                     \
            SPACE const uint *tree = (base) + (size_t)t * tree_words;                                            \
            SPACE const uint2 *in = (SPACE const uint2 *)tree;                                                   \
            SPACE const float *leaf = (SPACE const float *)(tree + 2u * inner);                                  \
            uint at[TREES_DOCS];                                                                                 \
            for (uint j = 0; j < TREES_DOCS; j++) at[j] = 0;                                                     \
            for (uint l = 0; l < depth; l++)                                                                     \
                for (uint j = 0; j < TREES_DOCS; j++) {                                                          \
                    uint2 nd = in[at[j]];                                                                        \
                    at[j] = 2u * at[j] + (tree_left(nd.x, as_float(nd.y), FEATURE(j, ABI_TREE_FEATURE(nd.x))) ? 1u : 2u); \
                }                                                                                                \
            for (uint j = 0; j < TREES_DOCS; j++) sum[j] += leaf[at[j] - inner];                                 \
        }                                                                                                        \
    } while (0)

/* out[d] for the n documents of rows as trees_score, over the complete level-order trees (see
 * the header), the rows read from global memory. A work-group takes WG_TREES x TREES_DOCS
 * consecutive documents, document j of a work-item WG_TREES apart from its j - 1. */
__kernel __attribute__((reqd_work_group_size(WG_TREES, 1, 1))) void trees_level(
    __global const float *rows, uint stride, uint n, __global const uint *trees, uint tree_words, uint depth,
    uint ntrees, uint base_bits, __global float *out)
{
    const uint first = get_group_id(0) * (WG_TREES * TREES_DOCS) + get_local_id(0);
    __global const float *x[TREES_DOCS];
    float sum[TREES_DOCS];
    for (uint j = 0; j < TREES_DOCS; j++) {
        uint d = first + j * WG_TREES;
        x[j] = rows + (size_t)(d < n ? d : n - 1) * stride; /* past the end: the last row, not written */
        sum[j] = 0.0f;
    }
#define TREES_GLOBAL_FEATURE(j, f) x[j][f]
    TREES_LEVEL_WALK(__global, trees, ntrees, TREES_GLOBAL_FEATURE);
#undef TREES_GLOBAL_FEATURE
    for (uint j = 0; j < TREES_DOCS; j++) {
        uint d = first + j * WG_TREES;
        if (d < n) out[d] = sum[j] + as_float(base_bits);
    }
}

/* The same with the work-group's rows first copied into local memory: lrows holds
 * WG_TREES x TREES_DOCS rows of lstride words (stride rounded up to odd). tile > 0: the trees
 * too, tile of them at a time, copied into ltrees (tile x tree_words words) between barriers,
 * so that every step of a walk reads local memory only; tile 0: the trees read from global
 * memory (ltrees unused). */
__kernel __attribute__((reqd_work_group_size(WG_TREES, 1, 1))) void trees_level_local(
    __global const float *rows, uint stride, uint n, __global const uint *trees, uint tree_words, uint depth,
    uint ntrees, uint base_bits, __global float *out, uint lstride, __local float *lrows, uint tile,
    __local uint *ltrees)
{
    const uint lid = get_local_id(0), base_doc = get_group_id(0) * (WG_TREES * TREES_DOCS);
    /* the group's rows are one contiguous run of global memory: read in order, coalesced */
    const size_t from = (size_t)base_doc * stride, end = (size_t)n * stride;
    for (uint k = lid; k < WG_TREES * TREES_DOCS * stride; k += WG_TREES) {
        uint r = k / stride, c = k - r * stride;
        lrows[r * lstride + c] = from + k < end ? rows[from + k] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum[TREES_DOCS];
    for (uint j = 0; j < TREES_DOCS; j++) sum[j] = 0.0f;
#define TREES_LOCAL_FEATURE(j, f) lrows[(lid + (j) * WG_TREES) * lstride + (f)]
    if (tile == 0) {
        TREES_LEVEL_WALK(__global, trees, ntrees, TREES_LOCAL_FEATURE);
    } else {
        for (uint t0 = 0; t0 < ntrees; t0 += tile) {
            uint count = min(tile, ntrees - t0);
            __global const uint *src = trees + (size_t)t0 * tree_words;
            for (uint k = lid; k < count * tree_words; k += WG_TREES) ltrees[k] = src[k];
            barrier(CLK_LOCAL_MEM_FENCE);
            TREES_LEVEL_WALK(__local, ltrees, count, TREES_LOCAL_FEATURE);
            barrier(CLK_LOCAL_MEM_FENCE); /* the tile read by all before the next overwrites it */
        }
    }
#undef TREES_LOCAL_FEATURE
    for (uint j = 0; j < TREES_DOCS; j++) {
        uint d = base_doc + lid + j * WG_TREES;
        if (d < n) out[d] = sum[j] + as_float(base_bits);
    }
}
