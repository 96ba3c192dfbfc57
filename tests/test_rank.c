/* Tree ensembles for a second ranking stage (src/rank/): LightGBM and XGBoost models read and
 * refused, the plain-C evaluator against each library's own raw predictions
 * (tests/data/ltr, made by tools/ltr_fixtures.py), the OpenCL kernels (cl/trees.cl) against the
 * plain-C evaluator bit for bit on the test device, in every layout and variant, and
 * `clsearch predict`.
 *
 * Agreement with a library: |ours - theirs| <= 1e-5 x max(1, |theirs|), absolute below 1 and
 * relative above (both sum the same leaf values, in another order or in double). The data part
 * runs the same on rank.test itself (../shared/data/ltr). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank/model.h"
#include "rank/rank_dev.h"
#include "rank/svmlight.h"
#include "testutil.h"

#define TOL 1e-5

static const char *const models[] = {"lgb_rank.txt", "lgb_reg.txt", "xgb_rank.json", "xgb_reg.json"};
#define NMODELS (sizeof models / sizeof models[0])

/* A file of tests/data/ltr. */
static const char *fixture(const char *name)
{
    static char buf[4][4096];
    static unsigned next;
    const char *src = getenv("CLS_SOURCE_DIR");
    ck_assert_msg(src != NULL, "CLS_SOURCE_DIR is not set");
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/tests/data/ltr/%s", src, name);
    return b;
}

/* Every document of path as rows of m's width (malloc); the count into *n. */
static float *read_rows(const rank_model *m, const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s", path);
    size_t cap = 1024, got;
    float *rows = malloc(cap * m->num_features * sizeof *rows);
    ck_assert(rows != NULL);
    svm_reader r;
    svm_open(&r, f, path, m->num_features, m->absent);
    ck_assert_msg(svm_read(&r, rows, cap, &got) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(got < cap, "%s: more than %zu documents", path, cap);
    svm_close(&r);
    fclose(f);
    *n = got;
    return rows;
}

/* The numbers of a predictions file (one a line); their count into *n. */
static double *read_preds(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s", path);
    size_t cap = 0, k = 0;
    double *v = NULL, x;
    while (fscanf(f, "%lf", &x) == 1) {
        if (k == cap) {
            cap = cap ? 2 * cap : 1024;
            v = realloc(v, cap * sizeof *v);
            ck_assert(v != NULL);
        }
        v[k++] = x;
    }
    fclose(f);
    *n = k;
    return v;
}

/* The model's scores of test (a path) by the C evaluator equal the library's (pred_file). */
static void check_library(const char *model, const char *test, const char *pred_file)
{
    rank_model m;
    ck_assert_msg(rank_model_load(fixture(model), 0, &m) == CLS_OK, "%s", cls_last_error());
    size_t n, np;
    float *rows = read_rows(&m, test, &n);
    double *want = read_preds(pred_file, &np);
    ck_assert_msg(n == np && n > 0, "%s: %zu documents, %zu predictions", test, n, np);
    float *got = malloc(n * sizeof *got);
    ck_assert(got != NULL);
    rank_model_score_rows(&m, rows, m.num_features, n, got);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= TOL * fmax(1.0, fabs(want[i])),
                      "%s on %s, document %zu: %.9g, the library %.17g", model, test, i, (double)got[i], want[i]);
    free(rows), free(want), free(got);
    rank_model_free(&m);
}

/* The kernel variants every model is scored with (CLSEARCH_PARAMS: the registry's trees
 * tunables, src/device/clx_params.c), and the kernel each must run on the test device: the node
 * walk, then the level-order layout with rows from global memory, with several documents a
 * work-item, with rows in local memory, with tiles of trees in local memory too (3: a last tile
 * part full). */
static const struct {
    const char *params, *kernel;
} variants[] = {
    {"TREES_LAYOUT=0,WG_TREES=64", "trees_score"},
    {"TREES_LAYOUT=1,WG_TREES=64,TREES_DOCS=1,TREES_ROWS_LOCAL=0,TREES_TILE=0", "trees_level "},
    {"TREES_LAYOUT=1,WG_TREES=32,TREES_DOCS=4,TREES_ROWS_LOCAL=0,TREES_TILE=0", "trees_level "},
    {"TREES_LAYOUT=1,WG_TREES=64,TREES_DOCS=1,TREES_ROWS_LOCAL=1,TREES_TILE=0", "trees_level_local"},
    {"TREES_LAYOUT=1,WG_TREES=64,TREES_DOCS=1,TREES_ROWS_LOCAL=1,TREES_TILE=8", "trees_level_local"},
    {"TREES_LAYOUT=1,WG_TREES=32,TREES_DOCS=2,TREES_ROWS_LOCAL=1,TREES_TILE=3", "trees_level_local"},
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

/* The kernel's scores of rows equal the C evaluator's, bit for bit, in every variant. */
static void check_kernel(const rank_model *m, const float *rows, size_t n, const char *what)
{
    float *ref = malloc((n ? n : 1) * sizeof *ref), *dev = malloc((n ? n : 1) * sizeof *dev);
    ck_assert(ref && dev);
    rank_model_score_rows(m, rows, m->num_features, n, ref);
    const char *old = getenv("CLSEARCH_PARAMS");
    char *keep = old ? tu_strdup(old) : NULL;
    for (size_t v = 0; v < NVARIANTS; v++) {
        ck_assert(setenv("CLSEARCH_PARAMS", variants[v].params, 1) == 0);
        rank_dev rd;
        ck_assert_msg(rank_dev_open(&rd, tu_device(), m) == CLS_OK, "%s: %s", variants[v].params, cls_last_error());
        char how[200];
        rank_dev_describe(&rd, m->num_features, how, sizeof how);
        /* the level-order layout where the model is shallow enough (rank_dev.c), else the walk */
        const char *want = m->max_depth <= 12 ? variants[v].kernel : "trees_score";
        ck_assert_msg(strncmp(how, want, strlen(want)) == 0, "%s: %s ran, not %s", variants[v].params, how, want);
        memset(dev, 0xFF, (n ? n : 1) * sizeof *dev); /* NaN: a score not written shows */
        ck_assert_msg(rank_dev_score(&rd, rows, m->num_features, n, dev) == CLS_OK, "%s", cls_last_error());
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(memcmp(&ref[i], &dev[i], sizeof(float)) == 0, "%s (%s), document %zu: C %a, kernel %a", what,
                          how, i, (double)ref[i], (double)dev[i]);
        rank_dev_close(&rd);
    }
    if (keep) setenv("CLSEARCH_PARAMS", keep, 1);
    else unsetenv("CLSEARCH_PARAMS");
    free(keep);
    free(ref), free(dev);
}

static void check_kernel_file(const char *model, const char *test)
{
    rank_model m;
    ck_assert_msg(rank_model_load(fixture(model), 0, &m) == CLS_OK, "%s", cls_last_error());
    size_t n;
    float *rows = read_rows(&m, test, &n);
    check_kernel(&m, rows, n, model);
    free(rows);
    rank_model_free(&m);
}

START_TEST(library_predictions)
{
    char pred[256];
    snprintf(pred, sizeof pred, "%.*s.rank-nan.test.pred", (int)strcspn(models[_i], "."), models[_i]);
    char *p = tu_strdup(fixture(pred));
    check_library(models[_i], fixture("rank-nan.test"), p);
    free(p);
}
END_TEST

START_TEST(kernel_equals_c)
{
    check_kernel_file(models[_i], fixture("rank-nan.test"));
}
END_TEST

/* One tree a missing type, each a split of two leaves, then a lone leaf. */
static const char edge_lgb[] = "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
                               "max_feature_idx=3\nobjective=regression\n\n"
                               "Tree=0\nnum_leaves=2\nnum_cat=0\nsplit_feature=0\nthreshold=0.10000000000000001\n"
                               "decision_type=0\nleft_child=-1\nright_child=-2\nleaf_value=1 2\nshrinkage=1\n\n"
                               "Tree=1\nnum_leaves=2\nnum_cat=0\nsplit_feature=1\nthreshold=0.5\n"
                               "decision_type=6\nleft_child=-1\nright_child=-2\nleaf_value=10 20\nshrinkage=1\n\n"
                               "Tree=2\nnum_leaves=2\nnum_cat=0\nsplit_feature=2\nthreshold=-0.5\n"
                               "decision_type=8\nleft_child=-1\nright_child=-2\nleaf_value=100 200\nshrinkage=1\n\n"
                               "Tree=3\nnum_leaves=1\nnum_cat=0\nleaf_value=1000\nshrinkage=1\n\n"
                               "end of trees\n\nparameters:\n[boosting: gbdt]\nend of parameters\n";

/* A split at 0.5 of feature 0, missing values to the left. */
static const char edge_xgb[] =
    "{\"learner\":{\"learner_model_param\":{\"base_score\":\"5E-1\",\"num_class\":\"0\",\"num_feature\":\"2\","
    "\"num_target\":\"1\"},\"objective\":{\"name\":\"%s\"},\"gradient_booster\":{\"name\":\"%s\",\"model\":{"
    "\"tree_info\":[0],\"trees\":[{\"tree_param\":{\"num_nodes\":\"3\",\"size_leaf_vector\":\"1\"},"
    "\"left_children\":[%s,-1,-1],\"right_children\":[%s,-1,-1],\"split_indices\":[%s,0,0],"
    "\"split_conditions\":[0.5,-1,3],\"default_left\":[1,0,0],\"split_type\":[%s,0,0]}]}}},\"version\":[2,1,3]}";

/* text (xgb_text's) with its base_score's value "5E-1" replaced by value (malloc). */
static char *xgb_base(const char *text, const char *value)
{
    const char *at = strstr(text, "\"5E-1\"");
    ck_assert(at != NULL);
    size_t head = (size_t)(at - text), len = strlen(text) - 6 + strlen(value) + 1;
    char *out = malloc(len);
    ck_assert(out != NULL);
    snprintf(out, len, "%.*s%s%s", (int)head, text, value, at + 6);
    return out;
}

static void xgb_text(char *buf, size_t len, const char *objective, const char *booster, const char *left,
                     const char *right, const char *feature, const char *type)
{
    snprintf(buf, len, edge_xgb, objective, booster, left, right, feature, type);
}

START_TEST(split_rules)
{
    rank_model m;
    ck_assert_msg(rank_model_parse(edge_lgb, strlen(edge_lgb), "edge.txt", 0, &m) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(m.num_trees, 4);
    ck_assert_uint_eq(m.num_features, 3);
    ck_assert(m.absent == 0.0f);
    const float tiny = 1e-36f;
    /* rows of 3 features and the score each must get (LightGBM's rules, model.h) */
    const struct {
        float x[3];
        float want;
    } cases[] = {
        {{0.1f, 0.0f, NAN}, 1212},       /* 0.1f is above the double 0.1: right; Zero: default left; NaN: default right */
        {{NAN, 0.7f, 0.0f}, 1221},       /* None: NaN is 0, left; 0.7 right; 0 > -0.5 right */
        {{-INFINITY, NAN, -1.0f}, 1111}, /* NaN under Zero is 0: default left; -1 <= -0.5 left */
        {{nextafterf(0.1f, 0), tiny, INFINITY}, 1211},
        {{0.0f, -tiny, -0.5f}, 1111},
        {{0.2f, 0.5f, -0.49999997f}, 1212},
    };
    size_t n = sizeof cases / sizeof cases[0];
    float rows[sizeof cases / sizeof cases[0]][3];
    for (size_t i = 0; i < n; i++) {
        memcpy(rows[i], cases[i].x, sizeof rows[i]);
        float got = rank_model_score(&m, cases[i].x);
        ck_assert_msg(got == cases[i].want, "case %zu: %g, want %g", i, (double)got, (double)cases[i].want);
    }
    check_kernel(&m, &rows[0][0], n, "LightGBM's split rules");
    rank_model_free(&m);

    char text[2048];
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "0", "0");
    ck_assert_msg(rank_model_parse(text, strlen(text), "edge.json", 0, &m) == CLS_OK, "%s", cls_last_error());
    ck_assert(isnan(m.absent) && m.base == 0.5f);
    float xr[][1] = {{0.5f}, {NAN}, {nextafterf(0.5f, 0)}, {INFINITY}, {-INFINITY}};
    const float xwant[] = {3.5f, -0.5f, -0.5f, 3.5f, -0.5f}; /* x < 0.5 left; missing left */
    for (size_t i = 0; i < 5; i++) ck_assert_msg(rank_model_score(&m, xr[i]) == xwant[i], "XGBoost case %zu", i);
    check_kernel(&m, &xr[0][0], 5, "XGBoost's split rule");
    rank_model_free(&m);

    xgb_text(text, sizeof text, "binary:logistic", "gbtree", "1", "2", "0", "0");
    ck_assert_msg(rank_model_parse(text, strlen(text), "edge.json", 0, &m) == CLS_OK, "%s", cls_last_error());
    ck_assert(m.base == 0.0f); /* logit(0.5) */
    rank_model_free(&m);

    /* XGBoost 3 writes base_score as a one-element vector in a string */
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "0", "0");
    char *v3 = xgb_base(text, "\"[5E-1]\"");
    ck_assert_msg(rank_model_parse(v3, strlen(v3), "v3.json", 0, &m) == CLS_OK, "%s", cls_last_error());
    ck_assert(m.base == 0.5f);
    rank_model_free(&m);
    free(v3);
}
END_TEST

static uint64_t next_rand(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Values a split meets at its edges: thresholds, their neighbours, zeros, LightGBM's zero band,
 * infinities, NaN. */
static const float edges[] = {-1.0f, -0.5f, 0.0f, -0.0f, 0.25f, 0.5f, 1.0f, 1e-36f, -1e-36f, 1e-35f, 2.0f};

/* A random tree below depth levels into buf from *count on (children as positions in buf);
 * its root's position. */
static uint32_t random_node(abi_tree_node *buf, uint32_t *count, uint64_t *st, unsigned levels, uint32_t nf)
{
    uint32_t i = (*count)++;
    uint64_t r = next_rand(st);
    if (levels == 0 || r % 5 == 0) { /* a leaf: values that do not sum exactly, of mixed sizes */
        buf[i] = (abi_tree_node){.split = ABI_TREE_LEAF, .value = (float)((int64_t)(r >> 20) % 2000001 - 1000000) / 3e5f};
        return i;
    }
    static const uint32_t flags[] = {ABI_TREE_DEFAULT_LEFT, ABI_TREE_NAN_DEFAULT, ABI_TREE_ZERO_DEFAULT, ABI_TREE_STRICT};
    uint32_t split = (uint32_t)(r >> 8) % nf;
    for (unsigned k = 0; k < 4; k++)
        if ((r >> (40 + k)) & 1) split |= flags[k];
    buf[i].split = split;
    buf[i].value = edges[(r >> 48) % (sizeof edges / sizeof edges[0])];
    buf[i].left = random_node(buf, count, st, levels - 1, nf);
    buf[i].right = random_node(buf, count, st, levels - 1, nf);
    return i;
}

/* Random unbalanced trees of every split rule, of depth up to 7, on rows of edge values: every
 * variant equals the C evaluator, through trees padded to the full depth and document counts
 * that leave a work-group part full. */
START_TEST(random_trees)
{
    uint64_t st = 31;
    const uint32_t nf = 9, ntrees = 41;
    rank_model m;
    rank_builder b;
    rank_builder_start(&b, &m, "random", RANK_LIGHTGBM);
    abi_tree_node buf[256];
    for (uint32_t t = 0; t < ntrees; t++) {
        uint32_t count = 0, first;
        random_node(buf, &count, &st, t == 0 ? 0 : 1 + t % 7, nf);
        ck_assert(rank_builder_tree(&b, count, &first) == CLS_OK);
        for (uint32_t i = 0; i < count; i++) {
            abi_tree_node nd = buf[i];
            if (!(nd.split & ABI_TREE_LEAF)) nd.left += first, nd.right += first;
            m.nodes[first + i] = nd;
        }
    }
    m.base = 0.3f;
    ck_assert_msg(rank_builder_finish(&b, nf) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_le(m.max_depth, 7);
    const size_t n = 1000 + 37;
    float *rows = malloc(n * nf * sizeof *rows);
    ck_assert(rows != NULL);
    for (size_t i = 0; i < n * nf; i++) {
        uint64_t r = next_rand(&st);
        unsigned pick = (unsigned)(r % 8);
        rows[i] = pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                : pick < 6 ? edges[(r >> 8) % (sizeof edges / sizeof edges[0])]
                           : (float)((int64_t)(r >> 16) % 4001 - 2000) / 1000.0f;
    }
    check_kernel(&m, rows, n, "random trees");
    check_kernel(&m, rows, 1, "random trees, one document");
    free(rows);
    rank_model_free(&m);
}
END_TEST

START_TEST(float_floor)
{
    const double ds[] = {0.1, 0.98000000000000009, 1.0, -0.1, 1e-35, 3e38, 1e300, -1e300, 0.0, -0.0};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        float f = rank_float_floor(ds[i]);
        ck_assert_msg((double)f <= ds[i], "%.17g: %a above", ds[i], (double)f);
        ck_assert_msg((double)nextafterf(f, INFINITY) > ds[i], "%.17g: %a not the largest below", ds[i], (double)f);
    }
    ck_assert(rank_float_floor(1e300) == 3.40282347e38f);
    ck_assert(rank_float_floor(-1e300) == -INFINITY);
}
END_TEST

/* A LightGBM model of edge_lgb with from replaced by to. */
static char *lgb_with(const char *from, const char *to)
{
    const char *at = strstr(edge_lgb, from);
    ck_assert_msg(at != NULL, "%s", from);
    size_t n = strlen(edge_lgb) + strlen(to) + 1;
    char *s = malloc(n);
    ck_assert(s != NULL);
    snprintf(s, n, "%.*s%s%s", (int)(at - edge_lgb), edge_lgb, to, at + strlen(from));
    return s;
}

/* A model that must be refused with a message holding want (and naming the file). */
static void refused(const char *text, const char *name, uint32_t nfeat, const char *want)
{
    rank_model m;
    cls_status s = rank_model_parse(text, strlen(text), name, nfeat, &m);
    ck_assert_msg(s == CLS_E_FORMAT, "%s: accepted (want \"%s\")", name, want);
    const char *e = cls_last_error();
    ck_assert_msg(strstr(e, want) && strstr(e, name), "%s: \"%s\", want \"%s\"", name, e, want);
    ck_assert(m.nodes == NULL && m.roots == NULL);
}

START_TEST(load_errors)
{
    static const struct {
        const char *from, *to, *want;
    } lgb[] = {
        {"tree\n", "booster\n", "not a LightGBM text model"},
        {"num_class=1", "num_class=3", "multiclass models"},
        {"num_tree_per_iteration=1", "num_tree_per_iteration=2", "several trees an iteration"},
        {"objective=regression\n", "objective=regression\naverage_output\n", "average_output"},
        {"decision_type=0", "decision_type=1", "tree 0, node 0: a categorical split"},
        {"Tree=1\nnum_leaves=2\nnum_cat=0", "Tree=1\nnum_leaves=2\nnum_cat=1", "tree 1 (line 20): categorical splits"},
        {"leaf_value=10 20\nshrinkage=1", "leaf_value=10 20\nis_linear=1\nshrinkage=1", "tree 1 (line 20): linear trees"},
        {"decision_type=8", "decision_type=12", "missing type 3"},
        {"left_child=-1\nright_child=-2\nleaf_value=1 2", "left_child=-1\nright_child=-3\nleaf_value=1 2",
         "tree 0, node 0: right child -3 is outside"},
        {"left_child=-1\nright_child=-2\nleaf_value=1 2", "left_child=0\nright_child=-2\nleaf_value=1 2",
         "tree 0, node 0: child 0 is reached twice"},
        {"left_child=-1\nright_child=-2\nleaf_value=1 2", "left_child=-1\nright_child=-1\nleaf_value=1 2",
         "tree 0, node 0: child 1 is reached twice"},
        {"leaf_value=1 2", "leaf_value=1", "tree 0 (line 9): leaf_value is missing or does not hold 2 numbers"},
        {"leaf_value=1 2", "leaf_value=1 x", "leaf_value is missing"},
        {"threshold=0.5", "threshold=nan", "tree 1, node 0: the threshold is NaN"},
        {"split_feature=2", "split_feature=-2", "feature -2 is out of range"},
        {"num_leaves=1", "num_leaves=0", "num_leaves is missing or not a count"},
        {"end of trees", "", "cut short"},
    };
    for (size_t i = 0; i < sizeof lgb / sizeof lgb[0]; i++) {
        char *t = lgb_with(lgb[i].from, lgb[i].to);
        refused(t, "bad.txt", 0, lgb[i].want);
        free(t);
    }
    refused(edge_lgb, "narrow.txt", 2, "tree 2, node 0: feature 2 is past the 2 features given");
    refused("tree\nversion=v4\nnum_class=1\n", "empty.txt", 0, "has no trees");
    refused("", "nothing.txt", 0, "not a LightGBM text model");

    char text[2048];
    xgb_text(text, sizeof text, "reg:squarederror", "dart", "1", "2", "0", "0");
    refused(text, "bad.json", 0, "booster \"dart\" is not supported");
    xgb_text(text, sizeof text, "survival:cox", "gbtree", "1", "2", "0", "0");
    refused(text, "bad.json", 0, "objective \"survival:cox\" is not supported");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "0", "1");
    refused(text, "bad.json", 0, "tree 0, node 0: categorical splits are not supported");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "0", "2", "0", "0");
    refused(text, "bad.json", 0, "tree 0, node 0: child 0 is reached twice");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "2", "2", "0", "0");
    refused(text, "bad.json", 0, "child 2 is reached twice");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "3", "0", "0");
    refused(text, "bad.json", 0, "tree 0, node 0: a child (1, 3) is outside the tree's 3 nodes");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "7", "0");
    refused(text, "bad.json", 5, "tree 0, node 0: feature 7 is past the 5 features given");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "0", "0");
    static const char *const bad_bases[] = {"\"[5E-1,1]\"", "\"[x]\"", "\"[]\""};
    for (size_t i = 0; i < sizeof bad_bases / sizeof bad_bases[0]; i++) {
        char *t = xgb_base(text, bad_bases[i]);
        refused(t, "bad.json", 0, "base_score is missing or not a number");
        free(t);
    }
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "1.5", "0");
    refused(text, "bad.json", 0, "feature 1.5 is out of range");
    xgb_text(text, sizeof text, "reg:squarederror", "gbtree", "1", "2", "0", "0");
    char edited[2048];
    const char *nc = strstr(text, "\"num_class\":\"0\"");
    snprintf(edited, sizeof edited, "%.*s\"num_class\":\"3\"%s", (int)(nc - text), text, nc + strlen("\"num_class\":\"0\""));
    refused(edited, "bad.json", 0, "multiclass models (num_class 3)");
    const char *dl = strstr(text, "\"default_left\"");
    snprintf(edited, sizeof edited, "%.*s\"default_lft\"%s", (int)(dl - text), text, dl + strlen("\"default_left\""));
    refused(edited, "bad.json", 0, "tree 0: default_left is missing or does not hold 3 numbers");
    refused("{\"learner\": ", "cut.json", 0, "not valid JSON");
    refused("{\"a\": 1}", "other.json", 0, "not an XGBoost JSON model");
}
END_TEST

START_TEST(svmlight_lines)
{
    float row[4];
    ck_assert_int_eq(svm_parse_line("2 qid:7 1:0.5 3:nan 9:4 # doc 12", strlen("2 qid:7 1:0.5 3:nan 9:4 # doc 12"), "in", 1, 4, -1.0f, row), 1);
    ck_assert(row[0] == -1.0f && row[1] == 0.5f && row[2] == -1.0f && isnan(row[3]));
    ck_assert_int_eq(svm_parse_line("   # a comment", strlen("   # a comment"), "in", 2, 4, 0, row), 0);
    ck_assert_int_eq(svm_parse_line("", 0, "in", 3, 4, 0, row), 0);
    ck_assert_int_eq(svm_parse_line("0\t0:1e3\r", strlen("0\t0:1e3\r"), "in", 4, 4, 0, row), 1);
    ck_assert(row[0] == 1000.0f);
    static const struct {
        const char *line, *want;
    } bad[] = {
        {"x 1:2", "in: line 9: the label \"x\" is not a number"},
        {"1 qid:a 1:2", "\"qid:a\" is not qid:NUMBER"},
        {"1 1:2 1:3", "feature 1 after feature 1 (ids must increase)"},
        {"1 3:2 2:3", "feature 2 after feature 3"},
        {"1 1:abc", "the value of feature 1, \"abc\", is not a number"},
        {"1 1:", "the value of feature 1"},
        {"1 :5", "\":5\" is not idx:value"},
        {"1 5", "\"5\" is not idx:value"},
        {"1 -1:5", "the feature id \"-1\" is not a number"},
        {"1 99999999999:5", "below 2^32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(svm_parse_line(bad[i].line, strlen(bad[i].line), "in", 9, 4, 0, row), -1);
        ck_assert_msg(strstr(cls_last_error(), bad[i].want), "\"%s\": %s", bad[i].line, cls_last_error());
    }
    ck_assert_int_eq(svm_parse_line("1 1:2\0 2:3", 10, "in", 5, 4, 0, row), -1);
    ck_assert(strstr(cls_last_error(), "line 5: a NUL byte"));
}
END_TEST

/* The lines of a file as floats; their count into *n. */
static float *read_scores(const char *path, size_t *n)
{
    double *d = read_preds(path, n);
    float *f = malloc((*n ? *n : 1) * sizeof *f);
    ck_assert(f != NULL);
    for (size_t i = 0; i < *n; i++) f[i] = (float)d[i];
    free(d);
    return f;
}

START_TEST(command)
{
    const char *err;
    char *test = tu_strdup(fixture("rank-nan.test"));
    for (size_t k = 0; k < NMODELS; k++) {
        const char *model = fixture(models[k]);
        char *out_ref = tu_strdup(tu_tmp_path("ref")), *out_dev = tu_strdup(tu_tmp_path("dev"));
        rank_model m;
        ck_assert(rank_model_load(model, 0, &m) == CLS_OK);
        size_t n, nr, nd;
        float *rows = read_rows(&m, test, &n), *want = malloc(n * sizeof *want);
        rank_model_score_rows(&m, rows, m.num_features, n, want);
        int rc = tu_cli(NULL, out_ref, &err, "predict -m '%s' -v '%s'", model, test);
        ck_assert_msg(rc == 0, "%s", err);
        ck_assert_msg(strstr(err, "evaluator: plain C (ref)"), "%s", err);
        rc = tu_cli(test, out_dev, &err, "predict -m '%s' -d '%s' -v -", model, tu_device());
        ck_assert_msg(rc == 0, "%s", err);
        ck_assert_msg(strstr(err, "evaluator: OpenCL kernel trees_score"), "%s", err);
        float *ref = read_scores(out_ref, &nr), *dev = read_scores(out_dev, &nd);
        ck_assert(nr == n && nd == n);
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(memcmp(&ref[i], &want[i], 4) == 0, "%s, document %zu: printed %a, C %a", models[k], i,
                          (double)ref[i], (double)want[i]);
            ck_assert_msg(memcmp(&dev[i], &want[i], 4) == 0, "%s, document %zu: device %a, C %a", models[k], i,
                          (double)dev[i], (double)want[i]);
        }
        free(rows), free(want), free(ref), free(dev), free(out_ref), free(out_dev);
        rank_model_free(&m);
    }

    /* a bad line far in: an error naming it, and nothing on standard output or in -o's file */
    /* tu_tmp_path's names are reused after a few calls (tu_cli takes one each): kept as copies */
    char *bad = tu_strdup(tu_tmp_path("bad.svm")), *out = tu_strdup(tu_tmp_path("out")),
         *ofile = tu_strdup(tu_tmp_path("scores")), *absent = tu_strdup(tu_tmp_path("absent"));
    char lines[256] = "";
    for (int i = 0; i < 5; i++) strcat(lines, "1 qid:1 1:0.5 2:0.25\n");
    strcat(lines, "1 qid:1 1:0.5 1:0.25\n");
    tu_write_file(bad, lines, strlen(lines));
    int rc = tu_cli(NULL, out, &err, "predict -m '%s' '%s'", fixture("xgb_reg.json"), bad);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "line 6: feature 1 after feature 1"), "%s", err);
    size_t len;
    free(tu_read_file(out, &len));
    ck_assert_uint_eq(len, 0);
    rc = tu_cli(NULL, out, &err, "predict -m '%s' -d '%s' -o '%s' '%s'", fixture("lgb_reg.txt"), tu_device(), ofile, bad);
    ck_assert_int_eq(rc, 1);
    ck_assert(!tu_exists(ofile));
    /* -o: written when whole */
    rc = tu_cli(NULL, out, &err, "predict -m '%s' -o '%s' '%s'", fixture("lgb_reg.txt"), ofile, test);
    ck_assert_msg(rc == 0, "%s", err);
    size_t nlines;
    free(read_scores(ofile, &nlines));
    ck_assert_uint_eq(nlines, 200);
    /* a model that is refused, a device that is not there, usage */
    rc = tu_cli(NULL, out, &err, "predict -m '%s' '%s'", bad, test);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "not a LightGBM text model"), "%s", err);
    rc = tu_cli(NULL, out, &err, "predict -m '%s' '%s'", absent, test);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "reading the model"), "%s", err);
    rc = tu_cli(NULL, out, &err, "predict -m '%s' '%s'", fixture("lgb_reg.txt"), absent);
    ck_assert_int_eq(rc, 1);
    rc = tu_cli(NULL, out, &err, "predict '%s'", test);
    ck_assert_int_eq(rc, 2);
    rc = tu_cli(NULL, out, &err, "predict -m '%s' -d 9:9 '%s'", fixture("lgb_reg.txt"), test);
    ck_assert_int_eq(rc, 1);
    free(tu_read_file(out, &len));
    ck_assert_uint_eq(len, 0);
    rc = tu_cli(NULL, out, &err, "predict --help");
    ck_assert_int_eq(rc, 0);
    free(test), free(bad), free(out), free(ofile), free(absent);
}
END_TEST

START_TEST(rank_test_library)
{
    char pred[256];
    snprintf(pred, sizeof pred, "%.*s.rank.test.pred", (int)strcspn(models[_i], "."), models[_i]);
    check_library(models[_i], tu_data_path("ltr/rank.test"), fixture(pred));
    check_kernel_file(models[_i], tu_data_path("ltr/rank.test"));
}
END_TEST

static Suite *plain(void)
{
    Suite *s = suite_create("rank");
    TCase *tc = tcase_create("rank");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, float_floor);
    tcase_add_test(tc, svmlight_lines);
    tcase_add_test(tc, load_errors);
    tcase_add_loop_test(tc, library_predictions, 0, NMODELS);
    tcase_add_test(tc, split_rules);
    tcase_add_test(tc, random_trees);
    tcase_add_loop_test(tc, kernel_equals_c, 0, NMODELS);
    tcase_add_test(tc, command);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data(void)
{
    Suite *s = suite_create("rank_data");
    TCase *tc = tcase_create("ltr");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, rank_test_library, 0, NMODELS);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"ltr/rank.test", NULL};
    return tu_main(argc, argv, plain, data, needs);
}
