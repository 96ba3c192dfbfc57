/* Topics (queries): "qid<TAB>text" lines, or Anserini's <DOC><DOCNO> qid </DOCNO> text </DOC>
 * blocks (CACM's topics.cacm.txt). Both are read a line at a time through the corpus line
 * reader, so a ".gz" topics file works too. Malformed input fails with the line number rather
 * than dropping a topic: a missing query would silently change every evaluation figure. */
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "err.h"

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_space(s[i])) return 0;
    return 1;
}

/* Topic strings go to the caller NUL-terminated, so a NUL inside would cut the query short. */
static cls_status check_nul(const crp_lines *r, size_t len)
{
    if (memchr(r->line, '\0', len))
        return err_set(CLS_E_FORMAT, "%s:%lu: NUL byte in line", r->path, r->lineno);
    return CLS_OK;
}

/* ---- TSV ------------------------------------------------------------------------------------ */

static cls_status read_tsv(crp_lines *r, cls_topic_fn fn, void *user)
{
    for (;;) {
        size_t len;
        int got;
        cls_status st = crp_lines_next(r, &len, &got);
        if (st != CLS_OK || !got) return st;
        if (is_blank(r->line, len)) continue;
        if ((st = check_nul(r, len)) != CLS_OK) return st;
        char *tab = memchr(r->line, '\t', len);
        char *q = r->line, *qe = tab;
        /* Spaces around the qid are layout, not identity ("1 \t..." is query "1"). */
        while (q < qe && is_space(*q)) q++;
        while (qe > q && is_space(qe[-1])) qe--;
        if (!tab || qe == q)
            return err_set(CLS_E_FORMAT, "%s:%lu: expected qid<TAB>text", r->path, r->lineno);
        *qe = '\0';
        if ((st = crp_emit_topic(fn, user, q, tab + 1)) != CLS_OK) return st;
    }
}

/* ---- Anserini <DOC> blocks -------------------------------------------------------------------- */

/* A growable NUL-terminated string. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static cls_status sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return err_set(CLS_E_NOMEM, "reading topics: out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return CLS_OK;
}

/* First ASCII case-insensitive occurrence of the uppercase tag in s[0..n), or NULL. */
static const char *find_tag(const char *s, size_t n, const char *tag)
{
    size_t k = strlen(tag);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && (s[i + j] >= 'a' && s[i + j] <= 'z' ? s[i + j] - 32 : s[i + j]) == tag[j])
            j++;
        if (j == k) return s + i;
    }
    return NULL;
}

/* Collapses whitespace runs to one space and trims, in place: topic text spans lines and
 * indentation that mean nothing to a query. */
static void collapse(sbuf *b)
{
    size_t o = 0;
    int pending = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (is_space(b->p[i])) {
            pending = o > 0;
            continue;
        }
        if (pending) b->p[o++] = ' ';
        pending = 0;
        b->p[o++] = b->p[i];
    }
    b->n = o;
    if (b->p) b->p[o] = '\0';
}

enum { OUTSIDE, IN_DOC, IN_DOCNO, IN_TEXT };

static cls_status read_anserini(crp_lines *r, cls_topic_fn fn, void *user)
{
    sbuf qid = {0}, text = {0};
    int state = OUTSIDE;
    unsigned long doc_line = 0; /* where the open <DOC> began, for "no </DOC>" */
    size_t count = 0;
    cls_status st = CLS_OK;
    for (;;) {
        size_t len;
        int got;
        if ((st = crp_lines_next(r, &len, &got)) != CLS_OK || !got) break;
        if ((st = check_nul(r, len)) != CLS_OK) break;
        const char *p = r->line, *end = r->line + len;
        /* Several tags may share a line ("<DOC><DOCNO> 1 </DOCNO>"), so each line is consumed
         * piece by piece until nothing is left. */
        while (p < end && st == CLS_OK) {
            size_t rest = (size_t)(end - p);
            if (state == OUTSIDE) {
                const char *t = find_tag(p, rest, "<DOC>");
                if (!is_blank(p, t ? (size_t)(t - p) : rest)) {
                    st = err_set(CLS_E_FORMAT, "%s:%lu: text outside <DOC> ... </DOC>", r->path,
                                 r->lineno);
                } else if (t) {
                    state = IN_DOC;
                    doc_line = r->lineno;
                    p = t + 5;
                } else {
                    p = end;
                }
            } else if (state == IN_DOC) {
                while (p < end && is_space(*p)) p++;
                if (p == end) break;
                if (find_tag(p, (size_t)(end - p), "<DOCNO>") != p) {
                    st = err_set(CLS_E_FORMAT, "%s:%lu: missing <DOCNO> after <DOC>", r->path,
                                 r->lineno);
                } else {
                    state = IN_DOCNO;
                    qid.n = 0;
                    p += 7;
                }
            } else if (state == IN_DOCNO) {
                const char *t = find_tag(p, rest, "</DOCNO>");
                st = sb_add(&qid, p, t ? (size_t)(t - p) : rest);
                if (st == CLS_OK && !t) st = sb_add(&qid, " ", 1);
                p = t ? t + 8 : end;
                if (t) {
                    state = IN_TEXT;
                    text.n = 0;
                    collapse(&qid);
                    if (st == CLS_OK && qid.n == 0)
                        st = err_set(CLS_E_FORMAT, "%s:%lu: empty <DOCNO>", r->path, r->lineno);
                }
            } else { /* IN_TEXT */
                const char *close = find_tag(p, rest, "</DOC>");
                const char *open = find_tag(p, close ? (size_t)(close - p) : rest, "<DOC>");
                if (open) {
                    st = err_set(CLS_E_FORMAT,
                                 "%s:%lu: <DOC> before the </DOC> of topic %s (opened at line "
                                 "%lu)",
                                 r->path, r->lineno, qid.p, doc_line);
                    break;
                }
                st = sb_add(&text, p, close ? (size_t)(close - p) : rest);
                if (st == CLS_OK && !close) st = sb_add(&text, "\n", 1);
                p = close ? close + 6 : end;
                if (close && st == CLS_OK) {
                    collapse(&text);
                    st = crp_emit_topic(fn, user, qid.p, text.p ? text.p : "");
                    count++;
                    state = OUTSIDE;
                }
            }
        }
        if (st != CLS_OK) break;
    }
    if (st == CLS_OK) {
        unsigned long at = r->lineno ? r->lineno : 1;
        if (state == IN_DOC || state == IN_DOCNO)
            st = err_set(CLS_E_FORMAT, "%s:%lu: <DOC> without a complete <DOCNO> ... </DOCNO>",
                         r->path, doc_line);
        else if (state == IN_TEXT)
            st = err_set(CLS_E_FORMAT, "%s:%lu: <DOC> of topic %s has no </DOC> (file ends at "
                         "line %lu)", r->path, doc_line, qid.p, at);
        else if (count == 0)
            st = err_set(CLS_E_FORMAT, "%s:%lu: no <DOC> topics found", r->path, at);
    }
    free(qid.p);
    free(text.p);
    return st;
}

cls_status cls_topics_read(cls_topics_format fmt, const char *path, cls_topic_fn fn, void *user)
{
    if (!path || !*path || !fn)
        return err_set(CLS_E_ARG, "cls_topics_read: a path and a callback are required");
    if (fmt != CLS_TOPICS_TSV && fmt != CLS_TOPICS_ANSERINI)
        return err_set(CLS_E_ARG, "cls_topics_read: unknown topics format %d", (int)fmt);
    crp_lines r;
    cls_status st = crp_lines_open(&r, path);
    if (st != CLS_OK) return st;
    st = fmt == CLS_TOPICS_TSV ? read_tsv(&r, fn, user) : read_anserini(&r, fn, user);
    crp_lines_close(&r);
    return st;
}
