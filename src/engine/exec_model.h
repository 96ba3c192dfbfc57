/* A time line: a run of a search (or a part of one) takes
 *     t = fixed + postings / rate
 * seconds, postings those of its queries' lists, fitted by least squares over exponentially
 * decayed sums (each run weighs EXEC_MODEL_DECAY of the one after it), so it follows an executor
 * as its load and the queries change. It is the plain half of an executor's cost model
 * (cost_model.h), which predicts by it (for routing and for a split's shares) where the per-query
 * features predict worse. */
#ifndef CLS_ENGINE_EXEC_MODEL_H
#define CLS_ENGINE_EXEC_MODEL_H

#include <stdint.h>

#define EXEC_MODEL_DECAY 0.9

typedef struct exec_model {
    double w, x, y, xx, xy; /* decayed sums: weight, postings, seconds, postings^2, postings x seconds */
    double rate, fixed;     /* the fit (0 and 0 before a run) */
} exec_model;

/* A run of `postings` that took t seconds. */
void exec_model_add(exec_model *m, uint64_t postings, double t);
/* The seconds it predicts for `postings` (0 before a run: an executor not yet measured is tried). */
double exec_model_predict(const exec_model *m, uint64_t postings);

#endif
