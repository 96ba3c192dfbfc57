/* Tree ensembles (model.h): the checks every format's trees pass, the plain-C evaluator, and the
 * choice of reader. */
#include "rank/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/readfile.h"
#include "util/vec.h"

float rank_float_floor(double d)
{
    float f = (float)d; /* nearest; may be above d, or infinite past FLT_MAX */
    if ((double)f > d) f = nextafterf(f, -INFINITY);
    return f;
}

void rank_builder_start(rank_builder *b, rank_model *m, const char *name, rank_format format)
{
    memset(m, 0, sizeof *m);
    memset(b, 0, sizeof *b);
    m->format = format;
    m->absent = format == RANK_XGBOOST ? NAN : 0.0f;
    b->m = m;
    b->name = name;
}

cls_status rank_builder_tree(rank_builder *b, uint32_t n, uint32_t *first)
{
    rank_model *m = b->m;
    if (n == 0) return err_set(CLS_E_FORMAT, "%s: tree %u has no nodes", b->name, m->num_trees);
    if ((uint64_t)m->num_nodes + n > UINT32_MAX / 2)
        return err_set(CLS_E_FORMAT, "%s: tree %u: more than %u nodes in the model", b->name, m->num_trees,
                       UINT32_MAX / 2);
    if (!vec_reserve(&m->nodes, &b->nodes_cap, (size_t)m->num_nodes + n, sizeof *m->nodes) ||
        !vec_reserve(&m->roots, &b->roots_cap, (size_t)m->num_trees + 2, sizeof *m->roots))
        return err_set(CLS_E_NOMEM, "%s: tree %u: out of memory", b->name, m->num_trees);
    memset(m->nodes + m->num_nodes, 0, (size_t)n * sizeof *m->nodes);
    *first = m->num_nodes;
    m->roots[m->num_trees] = m->num_nodes;
    m->num_nodes += n;
    m->num_trees++;
    m->roots[m->num_trees] = m->num_nodes;
    return CLS_OK;
}

/* Tree t's shape: every node reached exactly once from its root through children inside the
 * tree (so no cycle, no shared node, none left over); its depth into *depth. seen and stack
 * have room for the tree's nodes. */
static cls_status check_tree(const rank_builder *b, uint32_t t, uint32_t num_features, unsigned char *seen,
                             uint32_t *stack, uint32_t *sdepth, uint32_t *depth, uint32_t *max_feature)
{
    const rank_model *m = b->m;
    uint32_t first = m->roots[t], n = m->roots[t + 1] - first, top = 0, reached = 0;
    memset(seen, 0, n);
    stack[top] = 0;
    sdepth[top++] = 0;
    seen[0] = 1;
    *depth = 0;
    while (top) {
        top--;
        uint32_t i = stack[top], d = sdepth[top];
        const abi_tree_node *nd = &m->nodes[first + i];
        reached++;
        if (isnan(nd->value))
            return err_set(CLS_E_FORMAT, "%s: tree %u, node %u: %s is NaN", b->name, t, i,
                           nd->split & ABI_TREE_LEAF ? "leaf value" : "threshold");
        if (nd->split & ABI_TREE_LEAF) {
            if (d > *depth) *depth = d;
            continue;
        }
        uint32_t f = ABI_TREE_FEATURE(nd->split);
        if (num_features && f >= num_features)
            return err_set(CLS_E_FORMAT, "%s: tree %u, node %u: feature %u is past the %u features given", b->name, t,
                           i, f, num_features);
        if (f > *max_feature) *max_feature = f;
        uint32_t kids[2] = {nd->left, nd->right};
        for (int c = 0; c < 2; c++) {
            if (kids[c] < first || kids[c] - first >= n)
                return err_set(CLS_E_FORMAT, "%s: tree %u, node %u: %s child is outside the tree's %u nodes", b->name,
                               t, i, c ? "right" : "left", n);
            uint32_t k = kids[c] - first;
            if (seen[k])
                return err_set(CLS_E_FORMAT, "%s: tree %u, node %u: child %u is reached twice (a cycle or a shared node)",
                               b->name, t, i, k);
            seen[k] = 1;
            stack[top] = k;
            sdepth[top++] = d + 1;
        }
    }
    if (reached != n)
        return err_set(CLS_E_FORMAT, "%s: tree %u: %u of its %u nodes are not reachable from its root", b->name, t,
                       n - reached, n);
    return CLS_OK;
}

cls_status rank_builder_finish(rank_builder *b, uint32_t num_features)
{
    rank_model *m = b->m;
    if (m->num_trees == 0) return err_set(CLS_E_FORMAT, "%s: the model has no trees", b->name);
    uint32_t widest = 0;
    for (uint32_t t = 0; t < m->num_trees; t++)
        if (m->roots[t + 1] - m->roots[t] > widest) widest = m->roots[t + 1] - m->roots[t];
    unsigned char *seen = malloc(widest);
    uint32_t *stack = malloc((size_t)widest * 2 * sizeof *stack);
    if (!seen || !stack) {
        free(seen);
        free(stack);
        return err_set(CLS_E_NOMEM, "%s: out of memory", b->name);
    }
    cls_status s = CLS_OK;
    uint32_t max_feature = 0;
    m->max_depth = 0;
    for (uint32_t t = 0; t < m->num_trees && s == CLS_OK; t++) {
        uint32_t d;
        s = check_tree(b, t, num_features, seen, stack, stack + widest, &d, &max_feature);
        if (d > m->max_depth) m->max_depth = d;
    }
    free(seen);
    free(stack);
    if (s != CLS_OK) return s;
    if (isnan(m->base)) return err_set(CLS_E_FORMAT, "%s: the base score is NaN", b->name);
    m->num_features = num_features ? num_features : max_feature + 1;
    return CLS_OK;
}

void rank_model_free(rank_model *m)
{
    free(m->nodes);
    free(m->roots);
    memset(m, 0, sizeof *m);
}

cls_status rank_model_parse(const char *text, size_t len, const char *name, uint32_t num_features, rank_model *m)
{
    if (strlen(text) != len) return err_set(CLS_E_FORMAT, "%s: a NUL byte in the model", name);
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    rank_builder b;
    int json = *p == '{';
    rank_builder_start(&b, m, name, json ? RANK_XGBOOST : RANK_LIGHTGBM);
    cls_status s = json ? rank_model_parse_xgboost(text, len, name, &b) : rank_model_parse_lightgbm(text, name, &b);
    if (s == CLS_OK) s = rank_builder_finish(&b, num_features);
    if (s != CLS_OK) rank_model_free(m);
    return s;
}

cls_status rank_model_load(const char *path, uint32_t num_features, rank_model *m)
{
    memset(m, 0, sizeof *m);
    size_t len;
    char *text = read_whole_file(path, &len);
    if (!text) return err_set(CLS_E_IO, "reading the model %s: %s", path, strerror(errno));
    cls_status s = rank_model_parse(text, len, path, num_features, m);
    free(text);
    return s;
}

void rank_model_describe(const rank_model *m, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s, %u trees (%u nodes, depth %u), %u features, base %.9g, absent features %s",
             m->format == RANK_XGBOOST ? "XGBoost" : "LightGBM", m->objective, m->num_trees, m->num_nodes,
             m->max_depth, m->num_features, (double)m->base, isnan(m->absent) ? "missing" : "0");
}

/* cl/trees.cl's tree_left: the same rule, in the same float arithmetic. */
static inline int tree_left(uint32_t split, float t, float x)
{
    if (isnan(x)) {
        if (split & ABI_TREE_NAN_DEFAULT) return (split & ABI_TREE_DEFAULT_LEFT) != 0;
        x = 0.0f;
    }
    if ((split & ABI_TREE_ZERO_DEFAULT) && x >= -ABI_TREE_ZERO && x <= ABI_TREE_ZERO)
        return (split & ABI_TREE_DEFAULT_LEFT) != 0;
    return (split & ABI_TREE_STRICT) ? x < t : x <= t;
}

float rank_model_score(const rank_model *m, const float *x)
{
    float sum = 0.0f;
    for (uint32_t t = 0; t < m->num_trees; t++) {
        const abi_tree_node *nd = &m->nodes[m->roots[t]];
        while (!(nd->split & ABI_TREE_LEAF))
            nd = &m->nodes[tree_left(nd->split, nd->value, x[ABI_TREE_FEATURE(nd->split)]) ? nd->left : nd->right];
        sum += nd->value;
    }
    return sum + m->base;
}

void rank_model_score_rows(const rank_model *m, const float *x, size_t stride, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = rank_model_score(m, x + i * stride);
}
