/* LightGBM's text model (Booster.save_model, versions v2 to v4) into a rank_model (model.h).
 *
 * The file is "key=value" lines: a header (num_class, num_tree_per_iteration, objective, ...),
 * then one block a tree ("Tree=N", num_leaves, split_feature, threshold, decision_type,
 * left_child, right_child, leaf_value, ...), then "end of trees" and what follows it
 * (importances, parameters), which is not read. In a tree of L leaves the L - 1 splits are
 * numbered 0.. (0 the root) and a child c >= 0 is split c, c < 0 is leaf ~c; here split i is node
 * i and leaf j is node L - 1 + j, so the root comes first (the node numbers that the shape's
 * errors give, model.c: rank_builder_finish). Leaf values already carry the
 * shrinkage, and boost_from_average's start is in the first tree's leaves: there is no base. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rank/model.h"
#include "util/err.h"

/* The value of a "key=value" line: [v, end). */
typedef struct lgb_field {
    const char *v, *end;
} lgb_field;

/* The lines of one tree that the reader uses. */
typedef struct lgb_tree {
    long id;
    unsigned line;
    lgb_field num_leaves, num_cat, split_feature, threshold, decision_type, left_child, right_child, leaf_value,
        is_linear;
} lgb_tree;

/* Whether [v, end) is exactly word. */
static int field_is(lgb_field f, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(f.end - f.v) == n && memcmp(f.v, word, n) == 0;
}

/* A whole integer field; 0 when it is not one. */
static int field_long(lgb_field f, long *out)
{
    if (!f.v || f.v == f.end) return 0;
    char buf[32];
    size_t n = (size_t)(f.end - f.v);
    if (n >= sizeof buf) return 0;
    memcpy(buf, f.v, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    long v = strtol(buf, &e, 10);
    if (errno || *e || e == buf) return 0;
    *out = v;
    return 1;
}

/* The n numbers of a space-separated list into out (doubles); 0 when the list holds another
 * count or something that is not a number. strtod skips newlines too, so each number's start
 * is found within the line first. */
static int field_doubles(lgb_field f, double *out, uint32_t n)
{
    if (!f.v) return 0;
    const char *p = f.v;
    for (uint32_t i = 0; i < n; i++) {
        while (p < f.end && (*p == ' ' || *p == '\t')) p++;
        if (p >= f.end) return 0;
        char *e;
        out[i] = strtod(p, &e);
        if (e == p || e > f.end || (e < f.end && *e != ' ' && *e != '\t')) return 0;
        p = e;
    }
    while (p < f.end && (*p == ' ' || *p == '\t')) p++;
    return p == f.end;
}

/* The same for integers (within long). */
static int field_longs(lgb_field f, long *out, uint32_t n)
{
    if (!f.v) return 0;
    const char *p = f.v;
    for (uint32_t i = 0; i < n; i++) {
        while (p < f.end && (*p == ' ' || *p == '\t')) p++;
        if (p >= f.end || !(*p == '-' || (*p >= '0' && *p <= '9'))) return 0;
        char *e;
        errno = 0;
        out[i] = strtol(p, &e, 10);
        if (errno || e == p || e > f.end || (e < f.end && *e != ' ' && *e != '\t')) return 0;
        p = e;
    }
    while (p < f.end && (*p == ' ' || *p == '\t')) p++;
    return p == f.end;
}

/* One tree's block into the builder. */
static cls_status add_tree(rank_builder *b, const lgb_tree *t)
{
    const char *name = b->name;
    uint32_t ti = b->m->num_trees;
    long L, ncat = 0, linear = 0;
    if (!field_long(t->num_leaves, &L) || L < 1 || L > (1L << 24))
        return err_set(CLS_E_FORMAT, "%s: tree %u (line %u): num_leaves is missing or not a count", name, ti, t->line);
    if (t->num_cat.v && (!field_long(t->num_cat, &ncat) || ncat != 0))
        return err_set(CLS_E_FORMAT, "%s: tree %u (line %u): categorical splits (num_cat=%.*s) are not supported",
                       name, ti, t->line, (int)(t->num_cat.end - t->num_cat.v), t->num_cat.v);
    if (t->is_linear.v && (!field_long(t->is_linear, &linear) || linear != 0))
        return err_set(CLS_E_FORMAT, "%s: tree %u (line %u): linear trees (is_linear=%.*s) are not supported", name,
                       ti, t->line, (int)(t->is_linear.end - t->is_linear.v), t->is_linear.v);
    uint32_t nl = (uint32_t)L, ns = nl - 1, first;
    cls_status s = rank_builder_tree(b, ns + nl, &first);
    if (s != CLS_OK) return s;
    double *dv = malloc(sizeof(double) * nl);
    long *lv = malloc(sizeof(long) * (nl * 4u));
    if (!dv || !lv) {
        free(dv);
        free(lv);
        return err_set(CLS_E_NOMEM, "%s: tree %u: out of memory", name, ti);
    }
    abi_tree_node *nodes = b->m->nodes + first;
    const char *bad = NULL;
    if (!field_doubles(t->leaf_value, dv, nl)) bad = "leaf_value";
    for (uint32_t j = 0; !bad && j < nl; j++) {
        nodes[ns + j].split = ABI_TREE_LEAF;
        nodes[ns + j].value = (float)dv[j];
    }
    long *feat = lv, *dt = lv + nl, *lc = lv + 2 * nl, *rc = lv + 3 * nl;
    if (!bad && ns) {
        if (!field_longs(t->split_feature, feat, ns)) bad = "split_feature";
        else if (!field_doubles(t->threshold, dv, ns)) bad = "threshold";
        else if (!field_longs(t->decision_type, dt, ns)) bad = "decision_type";
        else if (!field_longs(t->left_child, lc, ns)) bad = "left_child";
        else if (!field_longs(t->right_child, rc, ns)) bad = "right_child";
    }
    for (uint32_t i = 0; !bad && i < ns; i++) {
        if (feat[i] < 0 || feat[i] > (long)ABI_TREE_FEATURE(~0u)) {
            s = err_set(CLS_E_FORMAT, "%s: tree %u, node %u: feature %ld is out of range", name, ti, i, feat[i]);
            break;
        }
        if (dt[i] < 0 || dt[i] > 15 || (dt[i] & 1)) {
            s = err_set(CLS_E_FORMAT, "%s: tree %u, node %u: %s (decision_type %ld) is not supported", name, ti, i,
                        dt[i] >= 0 && dt[i] <= 15 ? "a categorical split" : "this decision type", dt[i]);
            break;
        }
        uint32_t split = (uint32_t)feat[i];
        if (dt[i] & 2) split |= ABI_TREE_DEFAULT_LEFT;
        switch ((dt[i] >> 2) & 3) {
        case 0: break; /* None: NaN is 0.0 */
        case 1: split |= ABI_TREE_ZERO_DEFAULT; break;
        case 2: split |= ABI_TREE_NAN_DEFAULT; break;
        default:
            s = err_set(CLS_E_FORMAT, "%s: tree %u, node %u: missing type 3 (decision_type %ld) is not supported", name,
                        ti, i, dt[i]);
            break;
        }
        if (s != CLS_OK) break;
        long kids[2] = {lc[i], rc[i]};
        uint32_t pos[2];
        for (int c = 0; c < 2 && s == CLS_OK; c++) {
            long k = kids[c];
            if (k >= 0 ? k >= (long)ns : ~k >= (long)nl)
                s = err_set(CLS_E_FORMAT, "%s: tree %u, node %u: %s child %ld is outside the tree's %u splits and %u leaves",
                            name, ti, i, c ? "right" : "left", k, ns, nl);
            else pos[c] = first + (k >= 0 ? (uint32_t)k : ns + (uint32_t)~k);
        }
        if (s != CLS_OK) break;
        if (isnan(dv[i])) {
            s = err_set(CLS_E_FORMAT, "%s: tree %u, node %u: the threshold is NaN", name, ti, i);
            break;
        }
        nodes[i].split = split;
        nodes[i].value = rank_float_floor(dv[i]);
        nodes[i].left = pos[0];
        nodes[i].right = pos[1];
    }
    free(dv);
    free(lv);
    if (bad)
        return err_set(CLS_E_FORMAT, "%s: tree %u (line %u): %s is missing or does not hold %u numbers", name, ti,
                       t->line, bad, strcmp(bad, "leaf_value") == 0 ? nl : ns);
    return s;
}

cls_status rank_model_parse_lightgbm(const char *text, const char *name, rank_builder *b)
{
    rank_model *m = b->m;
    lgb_tree tree;
    int in_tree = 0, header = 1, ended = 0;
    unsigned lineno = 0;
    cls_status s = CLS_OK;
    const char *p = text;
    while (*p && !ended && s == CLS_OK) {
        const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p), *next = nl ? nl + 1 : end;
        lineno++;
        const char *lend = end > p && end[-1] == '\r' ? end - 1 : end;
        const char *eq = memchr(p, '=', (size_t)(lend - p));
        lgb_field key = {p, eq ? eq : lend}, val = {eq ? eq + 1 : lend, lend};
        if (lineno == 1 && !field_is(key, "tree")) {
            return err_set(CLS_E_FORMAT, "%s: not a LightGBM text model (the first line is not \"tree\"), nor JSON",
                           name);
        }
        int starts = eq && (size_t)(eq - p) == 4 && memcmp(p, "Tree", 4) == 0;
        if (starts || field_is(key, "end of trees")) {
            if (in_tree) s = add_tree(b, &tree);
            header = 0;
            if (!starts) ended = 1;
            else {
                memset(&tree, 0, sizeof tree);
                in_tree = 1;
                tree.line = lineno;
                if (!field_long(val, &tree.id))
                    s = err_set(CLS_E_FORMAT, "%s: line %u: \"Tree=%.*s\" has no tree number", name, lineno,
                                (int)(val.end - val.v), val.v);
            }
        } else if (header) {
            long v;
            if (field_is(key, "num_class") && (!field_long(val, &v) || v != 1))
                s = err_set(CLS_E_FORMAT, "%s: line %u: multiclass models (num_class=%.*s) are not supported", name,
                            lineno, (int)(val.end - val.v), val.v);
            else if (field_is(key, "num_tree_per_iteration") && (!field_long(val, &v) || v != 1))
                s = err_set(CLS_E_FORMAT, "%s: line %u: several trees an iteration (num_tree_per_iteration=%.*s) are not supported",
                            name, lineno, (int)(val.end - val.v), val.v);
            else if (field_is(key, "average_output"))
                s = err_set(CLS_E_FORMAT, "%s: line %u: averaged outputs (random forest, average_output) are not supported",
                            name, lineno);
            else if (field_is(key, "linear_tree") || field_is(key, "is_linear"))
                s = err_set(CLS_E_FORMAT, "%s: line %u: linear trees are not supported", name, lineno);
            else if (field_is(key, "objective")) {
                size_t n = 0;
                while (val.v + n < val.end && val.v[n] != ' ' && n + 1 < sizeof m->objective) n++;
                memcpy(m->objective, val.v, n);
                m->objective[n] = 0;
            }
        } else if (in_tree && eq) {
            static const struct {
                const char *key;
                size_t offset;
            } keys[] = {
                {"num_leaves", offsetof(lgb_tree, num_leaves)},       {"num_cat", offsetof(lgb_tree, num_cat)},
                {"split_feature", offsetof(lgb_tree, split_feature)}, {"threshold", offsetof(lgb_tree, threshold)},
                {"decision_type", offsetof(lgb_tree, decision_type)}, {"left_child", offsetof(lgb_tree, left_child)},
                {"right_child", offsetof(lgb_tree, right_child)},     {"leaf_value", offsetof(lgb_tree, leaf_value)},
                {"is_linear", offsetof(lgb_tree, is_linear)},
            };
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                if (field_is(key, keys[k].key)) *(lgb_field *)((char *)&tree + keys[k].offset) = val;
        }
        p = next;
    }
    if (s != CLS_OK) return s;
    if (lineno == 0) return err_set(CLS_E_FORMAT, "%s: not a LightGBM text model (an empty file)", name);
    if (!ended) {
        if (in_tree) return err_set(CLS_E_FORMAT, "%s: the model is cut short (no \"end of trees\" line)", name);
        return err_set(CLS_E_FORMAT, "%s: the model has no trees", name);
    }
    if (!m->objective[0]) strcpy(m->objective, "(no objective)");
    m->base = 0.0f;
    return CLS_OK;
}
