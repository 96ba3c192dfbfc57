/* SVMlight / LETOR lines into rows (svmlight.h). */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "rank/svmlight.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

void svm_open(svm_reader *r, FILE *f, const char *name, uint32_t width, float absent)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->name = name;
    r->width = width;
    r->absent = absent;
}

void svm_close(svm_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A whole number token [p, end) as a double; 0 when it is not one. */
static int token_double(const char *p, const char *end, double *out)
{
    char *e;
    if (p == end) return 0;
    *out = strtod(p, &e);
    return e == end;
}

int svm_parse_line(const char *line, size_t len, const char *name, unsigned long long lineno, uint32_t width,
                   float absent, float *row)
{
    if (strlen(line) != len) return err_set(CLS_E_FORMAT, "%s: line %llu: a NUL byte", name, lineno), -1;
    const char *hash = memchr(line, '#', len), *end = hash ? hash : line + len, *p = line;
    int tok = 0;
    long long prev = -1;
    while (1) {
        while (p < end && is_space(*p)) p++;
        if (p >= end) break;
        const char *t = p;
        while (p < end && !is_space(*p)) p++;
        double v;
        if (tok++ == 0) {
            if (!token_double(t, p, &v))
                return err_set(CLS_E_FORMAT, "%s: line %llu: the label \"%.*s\" is not a number", name, lineno,
                               (int)(p - t > 40 ? 40 : p - t), t), -1;
            for (uint32_t i = 0; i < width; i++) row[i] = absent;
            continue;
        }
        const char *colon = memchr(t, ':', (size_t)(p - t));
        if (!colon || colon == t)
            return err_set(CLS_E_FORMAT, "%s: line %llu: \"%.*s\" is not idx:value", name, lineno,
                           (int)(p - t > 40 ? 40 : p - t), t), -1;
        if (tok == 2 && colon - t == 3 && memcmp(t, "qid", 3) == 0) {
            const char *q = colon + 1;
            while (q < p && *q >= '0' && *q <= '9') q++;
            if (q == colon + 1 || q != p)
                return err_set(CLS_E_FORMAT, "%s: line %llu: \"%.*s\" is not qid:NUMBER", name, lineno,
                               (int)(p - t > 40 ? 40 : p - t), t), -1;
            continue;
        }
        long long idx = 0;
        for (const char *q = t; q < colon; q++) {
            if (*q < '0' || *q > '9' || idx > 0xFFFFFFFFLL)
                return err_set(CLS_E_FORMAT, "%s: line %llu: the feature id \"%.*s\" is not a number below 2^32",
                               name, lineno, (int)(colon - t > 40 ? 40 : colon - t), t), -1;
            idx = idx * 10 + (*q - '0');
        }
        if (idx > 0xFFFFFFFFLL)
            return err_set(CLS_E_FORMAT, "%s: line %llu: the feature id %lld is not below 2^32", name, lineno, idx), -1;
        if (idx <= prev)
            return err_set(CLS_E_FORMAT, "%s: line %llu: feature %lld after feature %lld (ids must increase)", name,
                           lineno, idx, prev), -1;
        prev = idx;
        if (!token_double(colon + 1, p, &v))
            return err_set(CLS_E_FORMAT, "%s: line %llu: the value of feature %lld, \"%.*s\", is not a number", name,
                           lineno, idx, (int)(p - colon - 1 > 40 ? 40 : p - colon - 1), colon + 1), -1;
        if (idx < width) row[idx] = (float)v;
    }
    return tok > 0;
}

cls_status svm_read(svm_reader *r, float *rows, size_t max, size_t *n)
{
    *n = 0;
    while (*n < max) {
        errno = 0;
        ssize_t got = getline(&r->buf, &r->cap, r->f);
        if (got < 0) {
            if (ferror(r->f)) return err_set(CLS_E_IO, "%s: reading line %llu: %s", r->name, r->line + 1, strerror(errno));
            return CLS_OK;
        }
        r->line++;
        size_t len = (size_t)got;
        if (len && r->buf[len - 1] == '\n') r->buf[--len] = 0;
        int d = svm_parse_line(r->buf, len, r->name, r->line, r->width, r->absent, rows + *n * r->width);
        if (d < 0) return CLS_E_FORMAT;
        *n += (size_t)d;
    }
    return CLS_OK;
}
