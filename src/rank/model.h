/* Tree ensembles for a second ranking stage (learning to rank with gradient-boosted trees): a
 * LightGBM text model or an XGBoost JSON model, regression or ranking, read into one in-memory
 * form that a plain-C evaluator (here) and an OpenCL kernel (rank_dev.h, cl/trees.cl) both walk.
 *
 * A model's score of a document is, in float, the sum of its trees' leaf values in tree order,
 * then plus the base score: the libraries' raw score (LightGBM's predict(raw_score=True),
 * XGBoost's output_margin=True), within float rounding (the libraries sum in another order or
 * in double).
 *
 * The trees are cl/abi.h's abi_tree_node array; each library's split rule is put into the
 * node's flags on load:
 *   LightGBM  left when x <= threshold. The threshold is a double in the file; it is stored as
 *             the largest float not above it, so that for a float x, x <= stored exactly when
 *             x <= the double. decision_type's bits: 1 categorical (refused), 2 default left,
 *             (>> 2) & 3 the missing type: None (NaN taken as 0.0), Zero (NaN taken as 0.0,
 *             then |x| <= 1e-35 to the default side: ABI_TREE_ZERO_DEFAULT), NaN (NaN to the
 *             default side: ABI_TREE_NAN_DEFAULT). A feature absent from a sparse row is 0.0.
 *   XGBoost   left when x < split_condition (ABI_TREE_STRICT); a missing value (NaN) goes to
 *             default_left's side (ABI_TREE_NAN_DEFAULT). A feature absent from a sparse row
 *             is missing (NaN).
 * Hence rank_model.absent: what a document's absent features are, per library.
 *
 * Loading checks what the walk relies on: every feature id below the feature count (the
 * caller's, when it gives one), every child within its tree, every node reached once from the
 * root (no cycle, no node shared, none unreachable), leaves' values and thresholds not NaN. A
 * file that fails, or uses what is not supported (categorical splits, linear trees, several
 * classes or targets, DART, random forests' averaging, an objective whose margin is unknown),
 * is CLS_E_FORMAT naming the file, the tree and what. */
#ifndef CLS_RANK_MODEL_H
#define CLS_RANK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "cl/abi.h"
#include "clsearch.h"

typedef enum rank_format { RANK_LIGHTGBM, RANK_XGBOOST } rank_format;

typedef struct rank_model {
    rank_format format;
    char objective[64];     /* the file's objective ("lambdarank", "rank:ndcg", ...) */
    uint32_t num_trees;
    uint32_t num_nodes;     /* of all trees */
    uint32_t num_features;  /* columns a document has: the given count, else max feature id + 1 */
    uint32_t max_depth;     /* the longest root-to-leaf path, in splits */
    float base;             /* added after the trees (XGBoost's base_score as a margin; LightGBM: 0) */
    float absent;           /* a feature absent from a document: 0.0 (LightGBM) or NaN (XGBoost) */
    abi_tree_node *nodes;   /* num_nodes */
    uint32_t *roots;        /* num_trees + 1: tree t's nodes are [roots[t], roots[t + 1]) */
} rank_model;

/* Reads the model at path, LightGBM's text or XGBoost's JSON (told apart by the first
 * non-blank byte: '{' is JSON). num_features: the documents' column count the caller will give
 * (a feature id at or past it is refused), 0 for none. CLS_E_FORMAT naming the file (and the
 * tree) for a bad or unsupported model, CLS_E_IO when it cannot be read. */
cls_status rank_model_load(const char *path, uint32_t num_features, rank_model *m);
/* The same from text in memory (NUL-terminated at len); name stands for the file in errors. */
cls_status rank_model_parse(const char *text, size_t len, const char *name, uint32_t num_features, rank_model *m);
void rank_model_free(rank_model *m);

/* One line: "LightGBM lambdarank, 50 trees (1490 nodes, depth 9), 301 features, base 0". */
void rank_model_describe(const rank_model *m, char *buf, size_t len);

/* The score of one document, its num_features values in x (absent ones m->absent). */
float rank_model_score(const rank_model *m, const float *x);
/* Scores n documents of stride floats each (stride >= num_features) into out. */
void rank_model_score_rows(const rank_model *m, const float *x, size_t stride, size_t n, float *out);

/* ---- for the format readers (model_lightgbm.c, model_xgboost.c) ---- */

/* A model being built: nodes appended a tree at a time, then checked by rank_model_finish. */
typedef struct rank_builder {
    rank_model *m;
    const char *name; /* the file, for errors */
    size_t nodes_cap, roots_cap;
} rank_builder;

void rank_builder_start(rank_builder *b, rank_model *m, const char *name, rank_format format);
/* Room for a tree of n nodes appended at the end; its first node's position in *first. */
cls_status rank_builder_tree(rank_builder *b, uint32_t n, uint32_t *first);
/* Checks the shapes and features (num_features as rank_model_load's), sets the counts and depth. */
cls_status rank_builder_finish(rank_builder *b, uint32_t num_features);
/* The largest float not above d (d not NaN): x <= result exactly when x <= d, for every float x. */
float rank_float_floor(double d);

cls_status rank_model_parse_lightgbm(const char *text, const char *name, rank_builder *b);
cls_status rank_model_parse_xgboost(const char *text, size_t len, const char *name, rank_builder *b);

#endif
