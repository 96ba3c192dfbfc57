/* libFuzzer target: a tree-ensemble model (src/rank/model.h), LightGBM's text or XGBoost's
 * JSON as the first byte says, read with and without a feature count; a model that loads is
 * walked over rows of every kind of value its splits treat apart (absent, NaN, zero, tiny,
 * infinite), which must end for any tree the checks let through. The same bytes also go to the
 * SVMlight line reader (src/rank/svmlight.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_common.h"
#include "rank/model.h"
#include "rank/svmlight.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (uint32_t nf = 0; nf <= 64; nf += 64) {
        rank_model m;
        if (rank_model_parse(text, size, "fuzz", nf, &m) != CLS_OK) continue;
        float *row = malloc((size_t)m.num_features * sizeof *row);
        static const float values[] = {0.0f, -0.0f, 1e-36f, 0.5f, -1.0f, INFINITY, -INFINITY, NAN};
        for (size_t v = 0; row && v < sizeof values / sizeof values[0]; v++) {
            for (uint32_t i = 0; i < m.num_features; i++) row[i] = i % 2 ? m.absent : values[v];
            (void)rank_model_score(&m, row);
        }
        free(row);
        rank_model_free(&m);
    }
    float line_row[16];
    (void)svm_parse_line(text, size, "fuzz", 1, 16, NAN, line_row);
    free(text);
    return 0;
}
