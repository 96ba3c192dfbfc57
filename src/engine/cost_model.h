/* An executor's per-query cost model (Ding et al., WWW 2009): a run of a search, or a part of one,
 * of queries Q takes
 *     t = c0 + sum over q in Q of (c1 + c2 total_q + c3 shortest_q + c4 second_q + c5 terms_q)
 * seconds, with total_q the postings of q's lists, shortest_q and second_q its shortest and
 * second-shortest list, terms_q its terms (batch_cost_features). c0 is the run's own cost
 * (launches, transfers, waking threads), c1..c5 the queries'. The shortest list leads a
 * conjunctive query on the host, the total bounds a disjunctive one and a device's decoding, so one
 * line fits both kinds of executor; a scheduler keeps one model per executor and mode. An
 * executor that runs `width` queries at once (the host executor's threads) has the queries' terms
 * divided by min(|Q|, width) (the line's postings too): its runs then fit one query's cost on one
 * thread, whether it ran alone or among many.
 *
 * The coefficients are fitted by ridge-regularised least squares over exponentially decayed sums
 * (each run weighs COST_MODEL_DECAY of the one after it), refreshed by every run. Beside it runs
 * the two-parameter line t = fixed + postings / rate (exec_model.h). Each run is first predicted
 * by both, and each model's error, the decayed mean of |predicted - measured| / measured, is kept;
 * predictions come from the one with the smaller error once the features have been fitted on at
 * least COST_MODEL_MIN_RUNS runs, so the model in use is the one that has predicted best lately. */
#ifndef CLS_ENGINE_COST_MODEL_H
#define CLS_ENGINE_COST_MODEL_H

#include <stddef.h>

#include "engine/exec_model.h"
#include "query/batch.h"

#define COST_MODEL_DECAY 0.97
#define COST_MODEL_MIN_RUNS 12
enum { COST_DIMS = 1 + BATCH_COST_FEATURES };

typedef struct cost_model {
    double xx[COST_DIMS][COST_DIMS], xy[COST_DIMS]; /* decayed sums over runs: x x^T, x t (t in ms) */
    double coef[COST_DIMS]; /* the fit, in ms per unit of cost_model_vector's scaled features */
    unsigned runs;          /* runs seen (saturating) */
    exec_model line;        /* fixed + postings / rate */
    double err, err_line;   /* decayed mean relative errors of the two, each run predicted before it was added */
    double err_w;           /* the weight behind them (0: nothing predicted yet) */
    unsigned width;         /* queries it runs at once (0 or 1: one run of the batch) */
} cost_model;

/* A run of the queries whose summed features are f (batch_cost_features) that took `seconds`. */
void cost_model_add(cost_model *m, const double f[BATCH_COST_FEATURES], double seconds);
/* The seconds it predicts for features f: 0 before a run (an executor not yet measured is tried). */
double cost_model_predict(const cost_model *m, const double f[BATCH_COST_FEATURES]);
/* The seconds of a run's own cost in the model in use (c0, or the line's fixed). */
double cost_model_fixed(const cost_model *m);
/* Whether predictions come from the features (1) or the line (0). */
int cost_model_uses_features(const cost_model *m);
/* The relative error of the model in use (0 before two runs). */
double cost_model_error(const cost_model *m);
/* One line: the model in use, its coefficients and both errors (or "not measured"). */
void cost_model_describe(const cost_model *m, char *buf, size_t len);

#endif
