/* SMART collections (Cranfield's cran.all.1400, MED.ALL, CISI.ALL): records begin with a line
 * ".I n" and hold fields, each introduced by a line "." + letter (.T title, .A authors,
 * .B bibliography, .W words, .X cross-references, ...). The docno is n as written; the text is
 * the .T, .A, .B and .W fields in file order, joined by newlines; .T, .A and .B may also be stored
 * as the fields title, authors and bibliography (white space made single spaces, a repeated
 * marker's text after "; ", absent when the record has no such marker). Other fields are dropped:
 * CISI's .X lists citing documents by number, which would index digits as words. Read a line
 * at a time (plain or .gz, or every entry of a tar/zip archive, each as a file, in archive
 * order: see crp_read_lines_input), one record in memory at a time (a record cannot span two
 * files or entries); malformed input stops the read with its line number, since a skipped
 * record would shift every later internal docID. */
#include <stdlib.h>
#include <string.h>

#include "corpus/corpus.h"
#include "util/err.h"

int crp_smart_marker(const char *line, size_t len, const char **rest)
{
    if (len < 2 || line[0] != '.') return 0;
    char c = line[1];
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    if (c < 'A' || c > 'Z') return 0;
    /* CISI writes some markers with trailing spaces (".T "); ".I 12" carries its number. */
    if (len > 2 && !crp_is_space(line[2])) return 0;
    *rest = line + 2;
    return c;
}

int crp_smart_id(const char *rest, size_t n, const char **id, size_t *id_len)
{
    const char *p = rest, *e = rest + n;
    CRP_TRIM(p, e);
    if (p == e) return 0;
    for (const char *q = p; q < e; q++)
        if (*q < '0' || *q > '9') return 0;
    *id = p;
    *id_len = (size_t)(e - p);
    return 1;
}

/* Fields whose text is indexed: title, authors, bibliography (source), words (abstract). */
static int kept_field(int c) { return c == 'T' || c == 'A' || c == 'B' || c == 'W'; }

/* The fields a SMART record can store, by marker letter. */
static const struct {
    char marker;
    const char *name;
} stored[] = {{'T', "title"}, {'A', "authors"}, {'B', "bibliography"}};
#define NSTORED (sizeof stored / sizeof *stored)

typedef struct smart_state {
    crp_lines *r;
    crp_buf docno, text;
    int open;               /* a record has begun */
    int field;              /* marker letter of the current field, 0 before the first */
    unsigned long rec_line; /* line of the record's ".I", for messages */
    /* stored fields: each one's number (-1 when not asked for), whether the record has its
     * marker, its lines as read, and its value */
    int sf_i[NSTORED];
    int sf_seen[NSTORED];
    crp_buf sf_raw[NSTORED], sf_val[NSTORED];
} smart_state;

/* The stored field of marker m, or -1. */
static int stored_slot(const smart_state *s, int m)
{
    for (size_t k = 0; k < NSTORED; k++)
        if (stored[k].marker == m && s->sf_i[k] >= 0) return (int)k;
    return -1;
}

/* A line of the current field for its stored field, if it is one. */
static cls_status store_line(smart_state *s, const char *p, size_t n)
{
    int k = stored_slot(s, s->field);
    if (k < 0) return CLS_OK;
    cls_status st = crp_buf_add(&s->sf_raw[k], p, n);
    return st == CLS_OK ? crp_buf_add(&s->sf_raw[k], "\n", 1) : st;
}

static cls_status add_line(smart_state *s, const char *p, size_t n)
{
    cls_status st = crp_buf_add(&s->text, p, n);
    if (st == CLS_OK) st = crp_buf_add(&s->text, "\n", 1);
    if (st == CLS_OK && s->text.n > CRP_MAX_DOC_BYTES)
        st = err_set(CLS_E_FORMAT, "%s:%lu: record .I %s is larger than %zu bytes", s->r->path,
                     s->rec_line, s->docno.p, CRP_MAX_DOC_BYTES);
    return st;
}

static cls_status finish(smart_state *s, cls_doc_fn fn, void *user)
{
    if (!s->open) return CLS_OK;
    s->open = 0;
    for (size_t k = 0; k < NSTORED; k++) {
        if (s->sf_i[k] < 0 || !s->sf_seen[k]) continue; /* no marker: absent */
        cls_status st = crp_field_text(&s->sf_val[k], s->sf_raw[k].p, s->sf_raw[k].n, 0);
        if (st != CLS_OK) return st;
        crp_field_set((size_t)s->sf_i[k], s->sf_val[k].p, s->sf_val[k].n);
    }
    size_t n = s->text.n;
    if (n > 0 && s->text.p[n - 1] == '\n') n--; /* the newline after the last kept line */
    return crp_emit_doc(fn, user, s->docno.p, s->docno.n, n ? s->text.p : "", n);
}

static cls_status handle_line(smart_state *s, const char *line, size_t len, cls_doc_fn fn,
                              void *user)
{
    const char *rest;
    int m = crp_smart_marker(line, len, &rest);
    size_t rest_len = m ? len - (size_t)(rest - line) : 0;
    if (m == 'I') {
        const char *id;
        size_t id_len;
        if (!crp_smart_id(rest, rest_len, &id, &id_len))
            return err_set(CLS_E_FORMAT, "%s:%lu: \".I\" must be followed by a record number",
                           s->r->path, s->r->lineno);
        cls_status st = finish(s, fn, user);
        if (st != CLS_OK) return st;
        s->open = 1;
        s->field = 0;
        s->rec_line = s->r->lineno;
        s->docno.n = 0;
        s->text.n = 0;
        for (size_t k = 0; k < NSTORED; k++) s->sf_seen[k] = 0, s->sf_raw[k].n = 0;
        return crp_buf_add(&s->docno, id, id_len);
    }
    if (!s->open) {
        if (crp_is_blank(line, len)) return CLS_OK;
        return err_set(CLS_E_FORMAT, "%s:%lu: text before the first \".I\" record (not a SMART "
                       "file?)", s->r->path, s->r->lineno);
    }
    if (m) {
        s->field = m;
        int k = stored_slot(s, m);
        if (k >= 0) {
            /* a repeated marker (CISI's one .A per author) continues the field after "; " */
            cls_status st = CLS_OK;
            crp_buf *raw = &s->sf_raw[k];
            while (raw->n > 0 && crp_is_space(raw->p[raw->n - 1])) raw->n--;
            if (s->sf_seen[k] && raw->n > 0) st = crp_buf_add(raw, "; ", 2);
            s->sf_seen[k] = 1;
            if (st == CLS_OK && !crp_is_blank(rest, rest_len)) st = store_line(s, rest, rest_len);
            if (st != CLS_OK) return st;
        }
        /* Text on the marker line itself (".T A title") belongs to the field. */
        if (kept_field(m) && !crp_is_blank(rest, rest_len)) return add_line(s, rest, rest_len);
        return CLS_OK;
    }
    if (!s->field) {
        if (crp_is_blank(line, len)) return CLS_OK;
        return err_set(CLS_E_FORMAT, "%s:%lu: text in record .I %s before any field marker",
                       s->r->path, s->r->lineno, s->docno.p);
    }
    cls_status st = store_line(s, line, len);
    if (st != CLS_OK) return st;
    return kept_field(s->field) ? add_line(s, line, len) : CLS_OK;
}

cls_status crp_read_smart_lines(crp_lines *r, cls_doc_fn fn, void *user)
{
    smart_state s = {.r = r};
    for (size_t k = 0; k < NSTORED; k++) s.sf_i[k] = crp_field_index(stored[k].name);
    cls_status st;
    for (;;) {
        size_t len;
        int got;
        if ((st = crp_lines_next(r, &len, &got)) != CLS_OK || !got) break;
        if ((st = handle_line(&s, r->line, len, fn, user)) != CLS_OK) break;
    }
    if (st == CLS_OK) st = finish(&s, fn, user);
    free(s.docno.p);
    free(s.text.p);
    for (size_t k = 0; k < NSTORED; k++) free(s.sf_raw[k].p), free(s.sf_val[k].p);
    return st;
}
