/* TREC relevance judgements (features.h): the labels of the feature lines. A judgement is found
 * by its (qid, docno) pair, kept as "qid docno" in a string set (neither holds white space). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank/features.h"
#include "util/err.h"
#include "util/strset.h"
#include "util/vec.h"

struct feat_qrels {
    strset pairs;   /* "qid docno", numbered in order of reading */
    int *rel;       /* rel[i]: pair i's relevance */
    size_t rel_cap;
    uint64_t *line; /* where pair i was read, for the message of a repeat */
    size_t line_cap;
    char *key;      /* a lookup's "qid docno" */
    size_t key_cap;
};

void feat_qrels_free(feat_qrels *q)
{
    if (!q) return;
    strset_free(&q->pairs);
    free(q->rel);
    free(q->line);
    free(q->key);
    free(q);
}

size_t feat_qrels_count(const feat_qrels *q) { return q->pairs.n; }

/* The next white-space separated field of *p (NUL-terminated in place), or NULL. */
static char *field(char **p)
{
    char *s = *p + strspn(*p, " \t\r\n");
    if (!*s) return NULL;
    char *e = s + strcspn(s, " \t\r\n");
    if (*e) *e++ = '\0';
    *p = e;
    return s;
}

static int whole_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno == ERANGE || v < INT_MIN || v > INT_MAX) return 0;
    *out = (int)v;
    return 1;
}

/* "qid docno" into q->key; 0 when out of memory. */
static int make_key(feat_qrels *q, const char *qid, const char *docno, size_t *len)
{
    size_t a = strlen(qid), b = strlen(docno);
    if (!vec_reserve(&q->key, &q->key_cap, a + b + 2, 1)) return 0;
    memcpy(q->key, qid, a);
    q->key[a] = ' ';
    memcpy(q->key + a + 1, docno, b + 1);
    *len = a + b + 1;
    return 1;
}

static cls_status read_lines(FILE *f, const char *path, feat_qrels *q)
{
    char *buf = NULL;
    size_t cap = 0;
    uint64_t ln = 0;
    cls_status s = CLS_OK;
    ssize_t got;
    while (s == CLS_OK && (got = getline(&buf, &cap, f)) >= 0) {
        ln++;
        char *p = buf, *qid = field(&p);
        if (!qid) continue; /* a blank line */
        char *iter = field(&p), *docno = field(&p), *rel = field(&p), *extra = field(&p);
        int r;
        size_t klen;
        uint32_t first;
        if (!iter || !rel || extra || !whole_int(rel, &r)) {
            s = err_set(CLS_E_FORMAT, "%s:%llu: not a TREC judgement 'qid iteration docno relevance' (a whole number)",
                        path, (unsigned long long)ln);
        } else if (!make_key(q, qid, docno, &klen) || !vec_reserve(&q->rel, &q->rel_cap, q->pairs.n + 1, sizeof *q->rel) ||
                   !vec_reserve(&q->line, &q->line_cap, q->pairs.n + 1, sizeof *q->line)) {
            s = err_set(CLS_E_NOMEM, "reading %s: out of memory", path);
        } else {
            int added = strset_add(&q->pairs, q->key, klen, &first);
            if (added < 0) s = err_set(CLS_E_NOMEM, "reading %s: out of memory", path);
            else if (added == 0)
                s = err_set(CLS_E_FORMAT, "%s:%llu: query %s judges %s again (first on line %llu)", path,
                            (unsigned long long)ln, qid, docno, (unsigned long long)q->line[first]);
            else {
                q->rel[q->pairs.n - 1] = r;
                q->line[q->pairs.n - 1] = ln;
            }
        }
    }
    if (s == CLS_OK && ferror(f)) s = err_set(CLS_E_IO, "reading %s: %s", path, strerror(errno));
    if (s == CLS_OK && q->pairs.n == 0) s = err_set(CLS_E_FORMAT, "%s holds no judgement", path);
    free(buf);
    return s;
}

cls_status feat_qrels_read(const char *path, feat_qrels **out)
{
    if (!path || !out) return err_set(CLS_E_ARG, "feat_qrels_read: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return err_set(CLS_E_IO, "opening %s: %s", path, strerror(errno));
    feat_qrels *q = calloc(1, sizeof *q);
    cls_status s = q ? read_lines(f, path, q) : err_set(CLS_E_NOMEM, "reading %s: out of memory", path);
    fclose(f);
    if (s != CLS_OK) {
        feat_qrels_free(q);
        return s;
    }
    *out = q;
    return CLS_OK;
}

cls_status feat_qrels_label(feat_qrels *q, const char *qid, const char *docno, int *label, int *judged)
{
    size_t len;
    uint32_t i;
    if (!make_key(q, qid, docno, &len)) return err_set(CLS_E_NOMEM, "looking up a judgement: out of memory");
    int found = strset_find(&q->pairs, q->key, len, &i);
    if (judged) *judged = found;
    *label = found ? q->rel[i] : 0;
    return CLS_OK;
}
