/* trees.cl: the score of documents under a tree ensemble (a second ranking stage: learning to
 * rank with gradient-boosted trees; src/rank/model.h reads LightGBM and XGBoost models into it).
 *
 * Layout (cl/abi.h's abi_tree_node): every tree's nodes in one array, a tree's nodes together
 * and its root first, a node one 16-byte record (feature and flags, threshold or leaf value,
 * both children's positions in the whole array), so a step of a walk is one load and a tree is
 * a contiguous run that stays in cache while the documents of a work-group walk it; roots[t] is
 * tree t's root (roots[ntrees] the end). The documents are rows of stride floats, a feature's
 * value at its id, absent features already the model's absent value (0.0 or NaN): a dense row
 * lets a split read its feature at once, where a sparse one would need a search, and a second
 * stage scores a few hundred documents a query, whose rows are small beside the model.
 *
 * One work-item a document walks every tree in tree order, summing the leaves' values in float,
 * and adds the base score last: exactly the plain-C evaluator's arithmetic
 * (src/rank/model.c: rank_model_score), so the two agree bit for bit (no contraction: common.cl
 * turns FP_CONTRACT off, and the sum is additions only). A work-item a document needs no
 * communication; the walks diverge on a GPU (documents take different paths), which a
 * work-item a (document, tree) pair would not avoid either, and it would need a reduction whose
 * order must then be fixed to keep the bits.
 *
 * A split's rule (cl/abi.h, ABI_TREE_*): NaN to the default side where the node says so, else
 * NaN taken as 0.0; LightGBM's zero-as-missing (|x| <= 1e-35) to the default side; then left
 * when x <= threshold, or x < threshold for XGBoost's strict splits. */

#ifndef WG_TREES
#define WG_TREES 64 /* work-items (documents) a work-group */
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
