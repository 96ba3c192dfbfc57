/* The query algorithms, one row each, in cls_mode order (include/clsearch.h): the only place
 * that lists them. src/algo/algo.h says what a row holds and how to add one. */
#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "util/err.h"

extern const query_algo algo_or, algo_and, algo_and_or;

static const query_algo *const table[] = {
    [CLS_MODE_OR] = &algo_or,
    [CLS_MODE_AND] = &algo_and,
    [CLS_MODE_AND_OR] = &algo_and_or,
};
#define NALGO (sizeof table / sizeof table[0])
_Static_assert(NALGO == CLS_NUM_MODES, "one row per cls_mode");

const query_algo *const *query_algos(size_t *n)
{
    *n = NALGO;
    return table;
}

const query_algo *query_algo_for(int mode) { return mode >= 0 && (size_t)mode < NALGO ? table[mode] : NULL; }

size_t query_algo_max_counters(void)
{
    size_t most = 0;
    for (size_t i = 0; i < NALGO; i++) {
        size_t n = 0;
        while (table[i]->counters && table[i]->counters[n]) n++;
        if (n > most) most = n;
    }
    return most;
}

const char *cls_mode_name(cls_mode m)
{
    const query_algo *a = query_algo_for((int)m);
    return a ? a->name : NULL;
}

const char *cls_mode_help(cls_mode m)
{
    const query_algo *a = query_algo_for((int)m);
    return a ? a->help : NULL;
}

cls_status cls_mode_parse(const char *name, cls_mode *out)
{
    char names[256] = "";
    size_t at = 0;
    for (size_t i = 0; i < NALGO; i++) {
        if (name && strcmp(name, table[i]->name) == 0) {
            *out = (cls_mode)i;
            return CLS_OK;
        }
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", table[i]->name);
    }
    return err_set(CLS_E_ARG, "unknown query mode '%s' (%s)", name ? name : "(null)", names);
}
