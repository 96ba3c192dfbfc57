/* The executors' time model (exec_model.h). */
#include "engine/exec_model.h"

void exec_model_add(exec_model *m, uint64_t postings, double t)
{
    if (!(t > 0) || postings == 0) return;
    double x = (double)postings, d = EXEC_MODEL_DECAY;
    m->w = d * m->w + 1;
    m->x = d * m->x + x;
    m->y = d * m->y + t;
    m->xx = d * m->xx + x * x;
    m->xy = d * m->xy + x * t;
    double mx = m->x / m->w, my = m->y / m->w;
    double var = m->xx / m->w - mx * mx, cov = m->xy / m->w - mx * my;
    /* runs of one size (or too alike to tell a slope from noise): the line through the origin */
    double slope = var > 1e-6 * mx * mx && cov > 0 ? cov / var : m->xy / m->xx;
    double fixed = my - slope * mx;
    if (fixed < 0) { /* no negative fixed cost: the line through the origin */
        slope = m->xy / m->xx;
        fixed = 0;
    }
    m->rate = slope > 0 ? 1.0 / slope : 0;
    m->fixed = fixed;
}

double exec_model_predict(const exec_model *m, uint64_t postings)
{
    return m->rate > 0 ? m->fixed + (double)postings / m->rate : 0;
}
