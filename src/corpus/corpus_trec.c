/* TREC SGML corpora (the TREC disks, Robust04, AQUAINT, ...): files of
 * <DOC> <DOCNO> id </DOCNO> ... </DOC> elements, many per file. The docno is the DOCNO
 * element's content, trimmed; a stored field is the text of the first element of its name; the
 * text is everything else inside <DOC>, with tags removed and entities decoded by the HTML helper (the inner tags, <TEXT>, <HEADLINE>, <P>, ..., differ per
 * collection, and all of them are markup). Files are read a line at a time (plain or .gz, or
 * every entry of a tar/zip archive, each as a file, in archive order: see crp_read_lines_input)
 * and one document is held in memory at a time; a <DOC> cannot span two files or entries. Anything malformed stops the read with the line
 * where the document began or went wrong: a dropped document would shift every later docID. */
#include <stdlib.h>
#include <string.h>

#include "corpus/corpus.h"
#include "util/err.h"

/* "</" + the longest field name + NUL */
#define TREC_TAG_MAX 260

typedef struct trec_state {
    crp_lines *r;
    crp_buf body;           /* raw content of the open <DOC>, lines joined by "\n" */
    crp_buf docno;
    int in_doc;
    unsigned long doc_line; /* line of the open <DOC>, for messages */
    crp_buf field[CLS_MAX_FIELDS]; /* the stored fields' values for the document being emitted */
} trec_state;

/* The content of the first element called name (its tag "<NAME" in uppercase, ASCII
 * case-insensitive, attributes allowed) in b[0..n): up to its "</NAME"; NULL when there is none
 * or it is never closed. */
static const char *element(const char *b, size_t n, const char *open, const char *close, size_t *len)
{
    size_t k = strlen(open);
    for (size_t i = 0; i < n;) {
        const char *t = crp_find_tag(b + i, n - i, open);
        if (!t) return NULL;
        size_t at = (size_t)(t - b) + k;
        if (at < n && (b[at] == '>' || crp_is_space(b[at]))) {
            const char *gt = memchr(b + at, '>', n - at);
            if (!gt) return NULL;
            const char *start = gt + 1, *end = crp_find_tag(start, n - (size_t)(start - b), close);
            if (!end) return NULL;
            *len = (size_t)(end - start);
            return start;
        }
        i = at; /* <HEADLINES> is not <HEADLINE> */
    }
    return NULL;
}

/* The stored fields asked for: each the text of the first element of its name. */
static cls_status set_fields(trec_state *s, const char *b, size_t n)
{
    for (size_t i = 0, nf = crp_field_count(); i < nf; i++) {
        const char *name = crp_field_name(i);
        char open[TREC_TAG_MAX], close[TREC_TAG_MAX];
        size_t k = strlen(name);
        open[0] = close[0] = '<';
        close[1] = '/';
        for (size_t j = 0; j < k; j++) {
            char c = name[j];
            open[1 + j] = close[2 + j] = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
        }
        open[1 + k] = close[2 + k] = '\0';
        size_t len;
        const char *v = element(b, n, open, close, &len);
        if (!v) continue;
        cls_status st = crp_field_text(&s->field[i], v, len, 1);
        if (st != CLS_OK) return st;
        crp_field_set(i, s->field[i].p, s->field[i].n);
    }
    return CLS_OK;
}

/* The open document is complete in s->body: splits off the DOCNO element and emits the rest as
 * text. */
static cls_status finish_doc(trec_state *s, cls_doc_fn fn, void *user)
{
    char *b = s->body.p;
    size_t n = s->body.n;
    const char *open = b ? crp_find_tag(b, n, "<DOCNO>") : NULL;
    if (!open)
        return err_set(CLS_E_FORMAT, "%s:%lu: <DOC> without <DOCNO>", s->r->path, s->doc_line);
    const char *id = open + 7;
    const char *close = crp_find_tag(id, n - (size_t)(id - b), "</DOCNO>");
    if (!close)
        return err_set(CLS_E_FORMAT, "%s:%lu: <DOCNO> of the <DOC> here has no </DOCNO>",
                       s->r->path, s->doc_line);
    const char *after = close + 8;
    if (crp_find_tag(after, n - (size_t)(after - b), "<DOCNO>"))
        return err_set(CLS_E_FORMAT, "%s:%lu: <DOC> with two <DOCNO> elements", s->r->path,
                       s->doc_line);
    const char *ide = close;
    CRP_TRIM(id, ide);
    if (id == ide)
        return err_set(CLS_E_FORMAT, "%s:%lu: empty <DOCNO>", s->r->path, s->doc_line);
    s->docno.n = 0;
    cls_status st = crp_buf_add(&s->docno, id, (size_t)(ide - id));
    if (st == CLS_OK) st = set_fields(s, b, n);
    if (st != CLS_OK) return st;

    /* The element becomes one space, so the words on either side stay apart, and the rest is
     * shifted down over it; the HTML helper then strips the remaining tags in place. */
    size_t at = (size_t)(open - b), tail = n - (size_t)(after - b);
    b[at] = ' ';
    memmove(b + at + 1, after, tail);
    n = at + 1 + tail;
    n = crp_html_to_text(b, n);
    return crp_emit_doc(fn, user, s->docno.p, s->docno.n, b, n);
}

static cls_status handle_line(trec_state *s, const char *line, size_t len, cls_doc_fn fn,
                              void *user)
{
    const char *p = line, *end = line + len;
    /* Tags may share a line ("</DOC><DOC>"), so the line is consumed piece by piece. */
    while (p < end) {
        size_t rest = (size_t)(end - p);
        if (!s->in_doc) {
            const char *t = crp_find_tag(p, rest, "<DOC>");
            if (!crp_is_blank(p, t ? (size_t)(t - p) : rest))
                return err_set(CLS_E_FORMAT, "%s:%lu: text outside <DOC> ... </DOC>", s->r->path,
                               s->r->lineno);
            if (!t) return CLS_OK;
            s->in_doc = 1;
            s->doc_line = s->r->lineno;
            s->body.n = 0;
            p = t + 5;
            continue;
        }
        const char *close = crp_find_tag(p, rest, "</DOC>");
        if (crp_find_tag(p, close ? (size_t)(close - p) : rest, "<DOC>"))
            return err_set(CLS_E_FORMAT, "%s:%lu: <DOC> inside the <DOC> opened at line %lu "
                           "(missing </DOC>?)", s->r->path, s->r->lineno, s->doc_line);
        cls_status st = crp_buf_add(&s->body, p, close ? (size_t)(close - p) : rest);
        if (st == CLS_OK && !close) st = crp_buf_add(&s->body, "\n", 1);
        if (st != CLS_OK) return st;
        if (s->body.n > CRP_MAX_DOC_BYTES)
            return err_set(CLS_E_FORMAT, "%s:%lu: <DOC> larger than %zu bytes (missing </DOC>?)",
                           s->r->path, s->doc_line, CRP_MAX_DOC_BYTES);
        if (!close) return CLS_OK;
        s->in_doc = 0;
        if ((st = finish_doc(s, fn, user)) != CLS_OK) return st;
        p = close + 6;
    }
    /* A line ending inside a document still separates words. */
    if (s->in_doc) return crp_buf_add(&s->body, "\n", 1);
    return CLS_OK;
}

cls_status crp_read_trec_lines(crp_lines *r, cls_doc_fn fn, void *user)
{
    trec_state s = {.r = r};
    cls_status st;
    for (;;) {
        size_t len;
        int got;
        if ((st = crp_lines_next(r, &len, &got)) != CLS_OK || !got) break;
        if ((st = handle_line(&s, r->line, len, fn, user)) != CLS_OK) break;
    }
    if (st == CLS_OK && s.in_doc)
        st = err_set(CLS_E_FORMAT, "%s:%lu: <DOC> has no </DOC> (file ends at line %lu)", r->path,
                     s.doc_line, r->lineno);
    free(s.body.p);
    free(s.docno.p);
    for (size_t i = 0; i < CLS_MAX_FIELDS; i++) free(s.field[i].p);
    return st;
}
