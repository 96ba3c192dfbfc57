/* Documents for a tree ensemble from SVMlight / LETOR lines, "label [qid:Q] idx:val ... [# comment]",
 * read a batch at a time into dense rows (so memory stays bounded whatever the input's length).
 *
 * A feature id is the index as written (column k is "k:"), as LightGBM's and XGBoost's own text
 * readers take it. Ids must increase along a line. Values are read as doubles and rounded to
 * float (what the libraries see from a float64 matrix); "nan" is a missing value. A feature the
 * line does not name is the model's absent value (0.0 for LightGBM, NaN for XGBoost: model.h).
 * Ids at or past the row's width are read and checked, and not kept: no tree reads them. Blank
 * and comment-only lines are not documents. */
#ifndef CLS_RANK_SVMLIGHT_H
#define CLS_RANK_SVMLIGHT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clsearch.h"

typedef struct svm_reader {
    FILE *f;
    const char *name; /* the input, for errors */
    unsigned long long line;
    char *buf;
    size_t cap;
    uint32_t width; /* floats a row */
    float absent;
} svm_reader;

void svm_open(svm_reader *r, FILE *f, const char *name, uint32_t width, float absent);
/* Up to max documents into rows (max x width floats); *n of them were read, fewer than max only
 * at the input's end. CLS_E_FORMAT naming the input and the line for a malformed line, CLS_E_IO
 * for a failed read. */
cls_status svm_read(svm_reader *r, float *rows, size_t max, size_t *n);
/* One line (without its newline, NUL-terminated at len) into row; 0 when it holds no document
 * (blank or a comment), 1 when it does; -1 and the error (naming name and lineno) when malformed. */
int svm_parse_line(const char *line, size_t len, const char *name, unsigned long long lineno, uint32_t width,
                   float absent, float *row);
void svm_close(svm_reader *r);

#endif
