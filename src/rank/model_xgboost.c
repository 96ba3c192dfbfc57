/* XGBoost's JSON model (Booster.save_model("*.json"), format of versions 1.x to 3.x) into a
 * rank_model (model.h), through cJSON.
 *
 * learner.learner_model_param gives base_score (in the objective's output space, as a string)
 * and the class and target counts; learner.objective.name the objective, whose link turns
 * base_score into the margin that output_margin=True starts from (identity for regression by
 * squared error and for ranking, logit for logistic objectives, log for Poisson, gamma and
 * Tweedie); learner.gradient_booster.model.trees the trees, each in arrays by node (node 0 the
 * root, left_children[i] == -1 a leaf whose value is split_conditions[i]). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "rank/model.h"
#include "util/err.h"

/* The object at a path of keys (NULL-terminated), or NULL. */
static const cJSON *at(const cJSON *j, const char *const *keys)
{
    for (; j && *keys; keys++) j = cJSON_GetObjectItemCaseSensitive(j, *keys);
    return j;
}

/* A number that XGBoost may write as a JSON number, as a string ("5E-1"), or, from version 3,
 * as a string holding a JSON array of one number per target ("[5E-1]"; one target here); 0 when
 * none of these. */
static int number_of(const cJSON *j, double *out)
{
    if (cJSON_IsNumber(j)) {
        *out = j->valuedouble;
        return 1;
    }
    if (cJSON_IsString(j) && j->valuestring[0] == '[') {
        cJSON *a = cJSON_Parse(j->valuestring);
        int ok = cJSON_IsArray(a) && cJSON_GetArraySize(a) == 1 && cJSON_IsNumber(a->child);
        if (ok) *out = a->child->valuedouble;
        cJSON_Delete(a);
        return ok;
    }
    if (cJSON_IsString(j) && j->valuestring[0]) {
        char *e;
        *out = strtod(j->valuestring, &e);
        return *e == 0;
    }
    return 0;
}

/* An array of n numbers (or booleans, as default_left may be), else NULL. */
static const cJSON *array_of(const cJSON *tree, const char *key, int n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(tree, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return NULL;
    for (const cJSON *e = a->child; e; e = e->next)
        if (!cJSON_IsNumber(e) && !cJSON_IsBool(e)) return NULL;
    return a;
}

/* The margin that base_score stands for under objective obj; 0 when the objective is unknown. */
static int base_margin(const char *obj, double base, double *margin)
{
    static const char *const identity[] = {"reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror",
                                           "reg:absoluteerror", "reg:quantileerror",  "reg:linear",
                                           "rank:ndcg",         "rank:pairwise",      "rank:map"};
    static const char *const logistic[] = {"reg:logistic", "binary:logistic"};
    static const char *const logarithm[] = {"count:poisson", "reg:gamma", "reg:tweedie"};
    for (size_t i = 0; i < sizeof identity / sizeof identity[0]; i++)
        if (strcmp(obj, identity[i]) == 0) return *margin = base, 1;
    for (size_t i = 0; i < sizeof logistic / sizeof logistic[0]; i++)
        if (strcmp(obj, logistic[i]) == 0) return *margin = -log(1.0 / base - 1.0), 1;
    for (size_t i = 0; i < sizeof logarithm / sizeof logarithm[0]; i++)
        if (strcmp(obj, logarithm[i]) == 0) return *margin = log(base), 1;
    return 0;
}

static cls_status add_tree(rank_builder *b, const cJSON *tree)
{
    const char *name = b->name;
    uint32_t ti = b->m->num_trees;
    double nn, leafv = 1;
    if (!number_of(at(tree, (const char *const[]){"tree_param", "num_nodes", NULL}), &nn) || nn < 1 ||
        nn > (double)(1u << 24))
        return err_set(CLS_E_FORMAT, "%s: tree %u: tree_param.num_nodes is missing or not a count", name, ti);
    const cJSON *lv = at(tree, (const char *const[]){"tree_param", "size_leaf_vector", NULL});
    if (lv && (!number_of(lv, &leafv) || leafv > 1))
        return err_set(CLS_E_FORMAT, "%s: tree %u: vector leaves (several targets) are not supported", name, ti);
    int n = (int)nn;
    static const char *const keys[] = {"left_children", "right_children", "split_indices", "split_conditions",
                                       "default_left"};
    const cJSON *a[5];
    for (int k = 0; k < 5; k++)
        if (!(a[k] = array_of(tree, keys[k], n)))
            return err_set(CLS_E_FORMAT, "%s: tree %u: %s is missing or does not hold %d numbers", name, ti, keys[k], n);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(tree, "split_type");
    if (types && !(types = array_of(tree, "split_type", n)))
        return err_set(CLS_E_FORMAT, "%s: tree %u: split_type does not hold %d numbers", name, ti, n);
    uint32_t first;
    cls_status s = rank_builder_tree(b, (uint32_t)n, &first);
    if (s != CLS_OK) return s;
    abi_tree_node *nodes = b->m->nodes + first;
    const cJSON *e[5], *ty = types ? types->child : NULL;
    for (int k = 0; k < 5; k++) e[k] = a[k]->child;
    for (int i = 0; i < n; i++) {
        double left = e[0]->valuedouble, right = e[1]->valuedouble, feat = e[2]->valuedouble,
               cond = e[3]->valuedouble;
        int dleft = cJSON_IsBool(e[4]) ? cJSON_IsTrue(e[4]) : e[4]->valuedouble != 0;
        if (left == -1) {
            nodes[i].split = ABI_TREE_LEAF;
            nodes[i].value = (float)cond;
        } else {
            if (ty && ty->valuedouble != 0)
                return err_set(CLS_E_FORMAT, "%s: tree %u, node %d: categorical splits are not supported", name, ti, i);
            if (left != floor(left) || right != floor(right) || left < 0 || right < 0 || left >= n || right >= n)
                return err_set(CLS_E_FORMAT, "%s: tree %u, node %d: a child (%g, %g) is outside the tree's %d nodes",
                               name, ti, i, left, right, n);
            if (feat != floor(feat) || feat < 0 || feat > (double)ABI_TREE_FEATURE(~0u))
                return err_set(CLS_E_FORMAT, "%s: tree %u, node %d: feature %g is out of range", name, ti, i, feat);
            /* XGBoost writes a float threshold in its shortest decimal form, which cJSON reads as
             * the nearest double: rounding that to float gives the threshold back */
            nodes[i].split = (uint32_t)feat | ABI_TREE_NAN_DEFAULT | ABI_TREE_STRICT | (dleft ? ABI_TREE_DEFAULT_LEFT : 0);
            nodes[i].value = (float)cond;
            nodes[i].left = first + (uint32_t)left;
            nodes[i].right = first + (uint32_t)right;
        }
        for (int k = 0; k < 5; k++) e[k] = e[k]->next;
        if (ty) ty = ty->next;
    }
    return CLS_OK;
}

cls_status rank_model_parse_xgboost(const char *text, size_t len, const char *name, rank_builder *b)
{
    rank_model *m = b->m;
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) return err_set(CLS_E_FORMAT, "%s: not valid JSON (near byte %zu)", name, (size_t)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : 0));
    cls_status s = CLS_OK;
    const cJSON *learner = cJSON_GetObjectItemCaseSensitive(root, "learner");
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(learner, "learner_model_param");
    const cJSON *obj = at(learner, (const char *const[]){"objective", "name", NULL});
    const cJSON *booster = cJSON_GetObjectItemCaseSensitive(learner, "gradient_booster");
    const cJSON *bname = cJSON_GetObjectItemCaseSensitive(booster, "name");
    const cJSON *trees = at(booster, (const char *const[]){"model", "trees", NULL});
    double base, nclass = 0, ntarget = 1, margin;
    if (!learner || !mp || !cJSON_IsString(obj) || !cJSON_IsString(bname))
        s = err_set(CLS_E_FORMAT, "%s: not an XGBoost JSON model (no learner with learner_model_param, objective and "
                                  "gradient_booster)",
                    name);
    else if (strcmp(bname->valuestring, "gbtree") != 0)
        s = err_set(CLS_E_FORMAT, "%s: booster \"%s\" is not supported (gbtree only%s)", name, bname->valuestring,
                    strcmp(bname->valuestring, "dart") == 0 ? ": DART's weights are not" : "");
    else if (!number_of(cJSON_GetObjectItemCaseSensitive(mp, "base_score"), &base))
        s = err_set(CLS_E_FORMAT, "%s: learner_model_param.base_score is missing or not a number", name);
    else if (cJSON_GetObjectItemCaseSensitive(mp, "num_class") &&
             (!number_of(cJSON_GetObjectItemCaseSensitive(mp, "num_class"), &nclass) || nclass > 1))
        s = err_set(CLS_E_FORMAT, "%s: multiclass models (num_class %g) are not supported", name, nclass);
    else if (cJSON_GetObjectItemCaseSensitive(mp, "num_target") &&
             (!number_of(cJSON_GetObjectItemCaseSensitive(mp, "num_target"), &ntarget) || ntarget > 1))
        s = err_set(CLS_E_FORMAT, "%s: models of several targets (num_target %g) are not supported", name, ntarget);
    else if (!base_margin(obj->valuestring, base, &margin))
        s = err_set(CLS_E_FORMAT, "%s: objective \"%s\" is not supported (its margin's link is not known here)", name,
                    obj->valuestring);
    else if (!cJSON_IsArray(trees))
        s = err_set(CLS_E_FORMAT, "%s: learner.gradient_booster.model.trees is missing", name);
    else {
        snprintf(m->objective, sizeof m->objective, "%s", obj->valuestring);
        m->base = (float)margin;
        if (!isfinite(m->base))
            s = err_set(CLS_E_FORMAT, "%s: base_score %g gives no finite margin under %s", name, base, m->objective);
        const cJSON *info = at(booster, (const char *const[]){"model", "tree_info", NULL});
        for (const cJSON *e = info && cJSON_IsArray(info) ? info->child : NULL; e && s == CLS_OK; e = e->next)
            if (!cJSON_IsNumber(e) || e->valuedouble != 0)
                s = err_set(CLS_E_FORMAT, "%s: a tree of class %g: multiclass models are not supported", name,
                            cJSON_IsNumber(e) ? e->valuedouble : -1.0);
        for (const cJSON *t = trees->child; t && s == CLS_OK; t = t->next) s = add_tree(b, t);
    }
    cJSON_Delete(root);
    return s;
}
