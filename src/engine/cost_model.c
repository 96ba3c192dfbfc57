/* The per-query cost model (cost_model.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/cost_model.h"

/* The regression's inputs: 1 for the run, then the features with postings in millions, so that
 * every column is of order one to thousands and the normal equations stay well conditioned. */
/* The share of a run's queries that one of its lanes carries: 1 / min(queries, width). */
static double lane_share(const cost_model *m, const double f[BATCH_COST_FEATURES])
{
    double at_once = m->width > 1 ? (f[BATCH_COST_QUERIES] < m->width ? f[BATCH_COST_QUERIES] : m->width) : 1;
    return at_once > 1 ? 1 / at_once : 1;
}

static void vector_of(const cost_model *m, const double f[BATCH_COST_FEATURES], double x[COST_DIMS])
{
    double w = lane_share(m, f);
    x[0] = 1;
    x[1 + BATCH_COST_QUERIES] = f[BATCH_COST_QUERIES] * w;
    x[1 + BATCH_COST_POSTINGS] = f[BATCH_COST_POSTINGS] * 1e-6 * w;
    x[1 + BATCH_COST_SHORTEST] = f[BATCH_COST_SHORTEST] * 1e-6 * w;
    x[1 + BATCH_COST_SECOND] = f[BATCH_COST_SECOND] * 1e-6 * w;
    x[1 + BATCH_COST_TERMS] = f[BATCH_COST_TERMS] * w;
}

static double features_ms(const cost_model *m, const double x[COST_DIMS])
{
    double t = 0;
    for (int i = 0; i < COST_DIMS; i++) t += m->coef[i] * x[i];
    return t;
}

/* Solves (xx + ridge) c = xy by Gaussian elimination with partial pivoting; 0 when singular. */
static int solve(const cost_model *m, double c[COST_DIMS])
{
    double a[COST_DIMS][COST_DIMS + 1];
    for (int i = 0; i < COST_DIMS; i++) {
        for (int j = 0; j < COST_DIMS; j++) a[i][j] = m->xx[i][j];
        /* a little ridge: columns that runs never vary (every run of one size) get no weight */
        a[i][i] += 1e-6 * m->xx[i][i] + 1e-12;
        a[i][COST_DIMS] = m->xy[i];
    }
    for (int col = 0; col < COST_DIMS; col++) {
        int piv = col;
        for (int r = col + 1; r < COST_DIMS; r++)
            if (fabs(a[r][col]) > fabs(a[piv][col])) piv = r;
        if (!(fabs(a[piv][col]) > 0)) return 0;
        if (piv != col)
            for (int j = 0; j <= COST_DIMS; j++) {
                double t = a[col][j];
                a[col][j] = a[piv][j];
                a[piv][j] = t;
            }
        for (int r = col + 1; r < COST_DIMS; r++) {
            double g = a[r][col] / a[col][col];
            for (int j = col; j <= COST_DIMS; j++) a[r][j] -= g * a[col][j];
        }
    }
    for (int i = COST_DIMS - 1; i >= 0; i--) {
        double v = a[i][COST_DIMS];
        for (int j = i + 1; j < COST_DIMS; j++) v -= a[i][j] * c[j];
        c[i] = v / a[i][i];
        if (!isfinite(c[i])) return 0;
    }
    return 1;
}

/* The line's postings: those one lane carries, as the features'. */
static uint64_t line_postings(const cost_model *m, const double f[BATCH_COST_FEATURES])
{
    return (uint64_t)(f[BATCH_COST_POSTINGS] * lane_share(m, f));
}

static double line_predict(const cost_model *m, const double f[BATCH_COST_FEATURES])
{
    return exec_model_predict(&m->line, line_postings(m, f));
}

static double fit_predict(const cost_model *m, const double f[BATCH_COST_FEATURES])
{
    double x[COST_DIMS];
    vector_of(m, f, x);
    return features_ms(m, x) * 1e-3;
}

int cost_model_uses_features(const cost_model *m)
{
    return m->runs >= COST_MODEL_MIN_RUNS && m->err_w > 0 && m->err < m->err_line;
}

double cost_model_predict(const cost_model *m, const double f[BATCH_COST_FEATURES])
{
    double line = line_predict(m, f);
    if (!cost_model_uses_features(m)) return line;
    double t = fit_predict(m, f);
    return t > 0 ? t : line; /* a fit below zero (far outside the runs it has seen): the line */
}

double cost_model_fixed(const cost_model *m)
{
    if (!cost_model_uses_features(m)) return m->line.fixed;
    return m->coef[0] > 0 ? m->coef[0] * 1e-3 : 0;
}

double cost_model_error(const cost_model *m)
{
    if (m->err_w <= 0) return 0;
    return (cost_model_uses_features(m) ? m->err : m->err_line) / m->err_w;
}

void cost_model_add(cost_model *m, const double f[BATCH_COST_FEATURES], double seconds)
{
    if (!(seconds > 0) || !(f[BATCH_COST_QUERIES] > 0)) return;
    /* each model's error on this run, predicted before it is added */
    if (m->runs >= COST_MODEL_MIN_RUNS && m->line.rate > 0) {
        double pf = fit_predict(m, f), pl = line_predict(m, f);
        m->err = COST_MODEL_DECAY * m->err + fabs(pf - seconds) / seconds;
        m->err_line = COST_MODEL_DECAY * m->err_line + fabs(pl - seconds) / seconds;
        m->err_w = COST_MODEL_DECAY * m->err_w + 1;
    }
    exec_model_add(&m->line, line_postings(m, f), seconds);
    double x[COST_DIMS], t = seconds * 1e3;
    vector_of(m, f, x);
    for (int i = 0; i < COST_DIMS; i++) {
        for (int j = 0; j < COST_DIMS; j++) m->xx[i][j] = COST_MODEL_DECAY * m->xx[i][j] + x[i] * x[j];
        m->xy[i] = COST_MODEL_DECAY * m->xy[i] + x[i] * t;
    }
    if (m->runs < 1000000) m->runs++;
    double c[COST_DIMS];
    if (solve(m, c)) memcpy(m->coef, c, sizeof c);
}

void cost_model_describe(const cost_model *m, char *buf, size_t len)
{
    if (m->line.rate <= 0) {
        snprintf(buf, len, "not measured");
        return;
    }
    double e = m->err_w > 0 ? 100 * m->err / m->err_w : -1, el = m->err_w > 0 ? 100 * m->err_line / m->err_w : -1;
    char errs[96];
    if (e < 0) snprintf(errs, sizeof errs, "error not yet measured");
    else snprintf(errs, sizeof errs, "error %.1f%% (features), %.1f%% (line)", e, el);
    if (m->runs < COST_MODEL_MIN_RUNS) {
        snprintf(buf, len, "line: t = %.4g ms + postings / %.4g M/s; features after %u runs (%u so far)",
                 m->line.fixed * 1e3, m->line.rate * 1e-6, COST_MODEL_MIN_RUNS, m->runs);
        return;
    }
    snprintf(buf, len,
             "%s in use; features: t/ms = %.4g + %.4g/query + %.4g/M postings + %.4g/M shortest + %.4g/M second + "
             "%.4g/term; line: t = %.4g ms + postings / %.4g M/s; %s; %u runs",
             cost_model_uses_features(m) ? "features" : "line", m->coef[0], m->coef[1 + BATCH_COST_QUERIES],
             m->coef[1 + BATCH_COST_POSTINGS], m->coef[1 + BATCH_COST_SHORTEST], m->coef[1 + BATCH_COST_SECOND],
             m->coef[1 + BATCH_COST_TERMS], m->line.fixed * 1e3, m->line.rate * 1e-6, errs, m->runs);
}
