/* Topics (queries): "qid<TAB>text" lines, Anserini's <DOC><DOCNO> qid </DOCNO> text </DOC>
 * blocks (CACM's topics.cacm.txt), TREC <top> blocks (title queries), SMART ".I"/".W" records
 * (Cranfield, MED, CISI) and Million Query "qid:priority:text" lines. All are read a line at a
 * time through the corpus line reader, so a ".gz" topics file works too. Malformed input fails with the line number rather
 * than dropping a topic: a missing query would silently change every evaluation figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus/corpus.h"
#include "util/err.h"

/* The next line of r (*got 0 at the end); a NUL byte in it is a format error: topic text is
 * handed on as C strings, which would end there. */
static cls_status next_line(crp_lines *r, size_t *len, int *got)
{
    cls_status st = crp_lines_next(r, len, got);
    if (st == CLS_OK && *got && memchr(r->line, '\0', *len))
        return err_set(CLS_E_FORMAT, "%s:%lu: NUL byte in line", r->path, r->lineno);
    return st;
}

/* next_line, passing over blank lines. */
static cls_status next_nonblank(crp_lines *r, size_t *len, int *got)
{
    cls_status st;
    while ((st = next_line(r, len, got)) == CLS_OK && *got && crp_is_blank(r->line, *len)) {}
    return st;
}

/* ---- TSV ------------------------------------------------------------------------------------ */

static cls_status read_tsv(crp_lines *r, cls_topic_fn fn, void *user)
{
    for (;;) {
        size_t len;
        int got;
        cls_status st = next_nonblank(r, &len, &got);
        if (st != CLS_OK || !got) return st;
        char *tab = memchr(r->line, '\t', len);
        char *q = r->line, *qe = tab;
        /* Spaces around the qid are layout, not identity ("1 \t..." is query "1"). */
        CRP_TRIM(q, qe);
        if (!tab || qe == q)
            return err_set(CLS_E_FORMAT, "%s:%lu: expected qid<TAB>text", r->path, r->lineno);
        *qe = '\0';
        if ((st = crp_emit_topic(fn, user, q, tab + 1)) != CLS_OK) return st;
    }
}

/* ---- Anserini <DOC> blocks -------------------------------------------------------------------- */

/* Collapses whitespace runs to one space and trims, in place: topic text spans lines and
 * indentation that mean nothing to a query. */
static void collapse(crp_buf *b)
{
    size_t o = 0;
    int pending = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (crp_is_space(b->p[i])) {
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
    crp_buf qid = {0}, text = {0};
    int state = OUTSIDE;
    unsigned long doc_line = 0; /* where the open <DOC> began, for "no </DOC>" */
    size_t count = 0;
    cls_status st = CLS_OK;
    for (;;) {
        size_t len;
        int got;
        if ((st = next_line(r, &len, &got)) != CLS_OK || !got) break;
        const char *p = r->line, *end = r->line + len;
        /* Several tags may share a line ("<DOC><DOCNO> 1 </DOCNO>"), so each line is consumed
         * piece by piece until nothing is left. */
        while (p < end && st == CLS_OK) {
            size_t rest = (size_t)(end - p);
            if (state == OUTSIDE) {
                const char *t = crp_find_tag(p, rest, "<DOC>");
                if (!crp_is_blank(p, t ? (size_t)(t - p) : rest)) {
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
                while (p < end && crp_is_space(*p)) p++;
                if (p == end) break;
                if (crp_find_tag(p, (size_t)(end - p), "<DOCNO>") != p) {
                    st = err_set(CLS_E_FORMAT, "%s:%lu: missing <DOCNO> after <DOC>", r->path,
                                 r->lineno);
                } else {
                    state = IN_DOCNO;
                    qid.n = 0;
                    p += 7;
                }
            } else if (state == IN_DOCNO) {
                const char *t = crp_find_tag(p, rest, "</DOCNO>");
                st = crp_buf_add(&qid, p, t ? (size_t)(t - p) : rest);
                if (st == CLS_OK && !t) st = crp_buf_add(&qid, " ", 1);
                p = t ? t + 8 : end;
                if (t) {
                    state = IN_TEXT;
                    text.n = 0;
                    collapse(&qid);
                    if (st == CLS_OK && qid.n == 0)
                        st = err_set(CLS_E_FORMAT, "%s:%lu: empty <DOCNO>", r->path, r->lineno);
                }
            } else { /* IN_TEXT */
                const char *close = crp_find_tag(p, rest, "</DOC>");
                const char *open = crp_find_tag(p, close ? (size_t)(close - p) : rest, "<DOC>");
                if (open) {
                    st = err_set(CLS_E_FORMAT,
                                 "%s:%lu: <DOC> before the </DOC> of topic %s (opened at line "
                                 "%lu)",
                                 r->path, r->lineno, qid.p, doc_line);
                    break;
                }
                st = crp_buf_add(&text, p, close ? (size_t)(close - p) : rest);
                if (st == CLS_OK && !close) st = crp_buf_add(&text, "\n", 1);
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

/* ---- TREC <top> blocks ----------------------------------------------------------------------- */

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Removes a leading label ("Number:", "Topic:") from collapsed text, ASCII case-insensitively. */
static void strip_label(crp_buf *b, const char *label)
{
    size_t k = strlen(label);
    if (b->n < k) return;
    for (size_t i = 0; i < k; i++) {
        char c = b->p[i];
        if ((c >= 'a' && c <= 'z' ? (char)(c - 32) : c) != label[i]) return;
    }
    size_t from = k;
    while (from < b->n && crp_is_space(b->p[from])) from++;
    memmove(b->p, b->p + from, b->n - from + 1);
    b->n -= from;
}

/* The field that starts after tag in block[0..n): its text up to the next tag ('<' before a
 * letter or '/') or the block's end, whitespace collapsed, into out. *found is 0 if the tag is
 * absent. TREC topics leave their fields unclosed: <title> ends where <desc> begins. */
static cls_status trec_field(const char *block, size_t n, const char *tag, crp_buf *out,
                             int *found)
{
    out->n = 0;
    const char *t = crp_find_tag(block, n, tag);
    *found = t != NULL;
    const char *p = t ? t + strlen(tag) : block, *end = block + n, *q = p;
    if (t)
        while (q < end && !(q[0] == '<' && q + 1 < end && (is_alpha(q[1]) || q[1] == '/'))) q++;
    cls_status st = crp_buf_add(out, p, (size_t)(q - p));
    if (st == CLS_OK) collapse(out);
    return st;
}

/* One complete <top> block: qid from <num>, text from <title>. */
static cls_status trec_topic(const crp_lines *r, const crp_buf *block, unsigned long top_line,
                             crp_buf *qid, crp_buf *text, cls_topic_fn fn, void *user)
{
    const char *b = block->p ? block->p : "";
    int found;
    cls_status st = trec_field(b, block->n, "<NUM>", qid, &found);
    if (st != CLS_OK) return st;
    if (!found)
        return err_set(CLS_E_FORMAT, "%s:%lu: <top> without <num>", r->path, top_line);
    strip_label(qid, "NUMBER:");
    /* Qrels write topic 51 as "51" even where the topic file says "Number: 051". */
    size_t z = 0;
    while (z + 1 < qid->n && qid->p[z] == '0' && qid->p[z + 1] >= '0' && qid->p[z + 1] <= '9') z++;
    int digits = qid->n > 0;
    for (size_t i = 0; i < qid->n; i++)
        if (qid->p[i] < '0' || qid->p[i] > '9') digits = 0;
    if (digits && z) {
        memmove(qid->p, qid->p + z, qid->n - z + 1);
        qid->n -= z;
    }
    if (qid->n == 0 || memchr(qid->p, ' ', qid->n))
        return err_set(CLS_E_FORMAT, "%s:%lu: <num> of this <top> is not one topic number",
                       r->path, top_line);
    if ((st = trec_field(b, block->n, "<TITLE>", text, &found)) != CLS_OK) return st;
    if (!found)
        return err_set(CLS_E_FORMAT, "%s:%lu: <top> of topic %s has no <title>", r->path,
                       top_line, qid->p);
    /* TREC 1-3 titles read "<title> Topic: Antitrust Cases Pending". */
    strip_label(text, "TOPIC:");
    return crp_emit_topic(fn, user, qid->p, text->p);
}

static cls_status read_trec(crp_lines *r, cls_topic_fn fn, void *user)
{
    crp_buf block = {0}, qid = {0}, text = {0};
    int in_top = 0;
    unsigned long top_line = 0;
    size_t count = 0;
    cls_status st = CLS_OK;
    for (;;) {
        size_t len;
        int got;
        if ((st = next_line(r, &len, &got)) != CLS_OK || !got) break;
        const char *p = r->line, *end = r->line + len;
        while (p < end && st == CLS_OK) {
            size_t rest = (size_t)(end - p);
            if (!in_top) {
                const char *t = crp_find_tag(p, rest, "<TOP>");
                if (!crp_is_blank(p, t ? (size_t)(t - p) : rest)) {
                    st = err_set(CLS_E_FORMAT, "%s:%lu: text outside <top> ... </top>", r->path,
                                 r->lineno);
                } else if (t) {
                    in_top = 1;
                    top_line = r->lineno;
                    block.n = 0;
                    p = t + 5;
                } else {
                    p = end;
                }
                continue;
            }
            const char *close = crp_find_tag(p, rest, "</TOP>");
            if (crp_find_tag(p, close ? (size_t)(close - p) : rest, "<TOP>")) {
                st = err_set(CLS_E_FORMAT, "%s:%lu: <top> inside the <top> opened at line %lu",
                             r->path, r->lineno, top_line);
                break;
            }
            st = crp_buf_add(&block, p, close ? (size_t)(close - p) : rest);
            if (st == CLS_OK && !close) st = crp_buf_add(&block, "\n", 1);
            p = close ? close + 6 : end;
            if (close && st == CLS_OK) {
                in_top = 0;
                st = trec_topic(r, &block, top_line, &qid, &text, fn, user);
                count++;
            }
        }
        if (st != CLS_OK) break;
        if (in_top && len == 0 && (st = crp_buf_add(&block, "\n", 1)) != CLS_OK) break;
    }
    if (st == CLS_OK) {
        if (in_top)
            st = err_set(CLS_E_FORMAT, "%s:%lu: <top> has no </top> (file ends at line %lu)",
                         r->path, top_line, r->lineno);
        else if (count == 0)
            st = err_set(CLS_E_FORMAT, "%s:%lu: no <top> topics found", r->path,
                         r->lineno ? r->lineno : 1);
    }
    free(block.p);
    free(qid.p);
    free(text.p);
    return st;
}

/* ---- SMART .I / .W records --------------------------------------------------------------------- */

/* The qid is the record's ordinal position (1-based), not its ".I" number: cran.qry numbers its
 * 225 queries 001 ... 365 with gaps, while cranqrel numbers them 1 ... 225 in file order. In
 * MED.QRY (1 ... 30) and CISI.QRY (1 ... 112) the ".I" numbers equal the ordinals, so the
 * ordinal is right for all three. The text is the .W field; other fields (CISI.QRY gives some
 * queries .T, .A and .B as well) are not part of the query. */
static cls_status smart_emit(const crp_lines *r, size_t ordinal, unsigned long rec_line,
                             int has_w, crp_buf *text, cls_topic_fn fn, void *user)
{
    if (!has_w)
        return err_set(CLS_E_FORMAT, "%s:%lu: query %zu has no .W field", r->path, rec_line,
                       ordinal);
    char qid[32];
    snprintf(qid, sizeof qid, "%zu", ordinal);
    collapse(text);
    return crp_emit_topic(fn, user, qid, text->p ? text->p : "");
}

static cls_status read_smart(crp_lines *r, cls_topic_fn fn, void *user)
{
    crp_buf text = {0};
    size_t count = 0;
    int field = 0, has_w = 0;
    unsigned long rec_line = 0;
    cls_status st = CLS_OK;
    for (;;) {
        size_t len;
        int got;
        if ((st = next_line(r, &len, &got)) != CLS_OK || !got) break;
        const char *rest, *id;
        size_t id_len;
        int m = crp_smart_marker(r->line, len, &rest);
        size_t rest_len = m ? len - (size_t)(rest - r->line) : 0;
        if (m == 'I') {
            if (!crp_smart_id(rest, rest_len, &id, &id_len)) {
                st = err_set(CLS_E_FORMAT, "%s:%lu: \".I\" must be followed by a query number",
                             r->path, r->lineno);
                break;
            }
            if (count && (st = smart_emit(r, count, rec_line, has_w, &text, fn, user)) != CLS_OK)
                break;
            count++;
            rec_line = r->lineno;
            field = has_w = 0;
            text.n = 0;
        } else if (!count || (!m && !field)) {
            if (!crp_is_blank(r->line, len)) {
                st = err_set(CLS_E_FORMAT, "%s:%lu: text %s", r->path, r->lineno,
                             count ? "before any field marker" : "before the first \".I\" query");
                break;
            }
        } else if (m) {
            field = m;
            if (m == 'W') {
                has_w = 1;
                st = crp_buf_add(&text, rest, rest_len);
                if (st == CLS_OK) st = crp_buf_add(&text, "\n", 1);
            }
        } else if (field == 'W') {
            st = crp_buf_add(&text, r->line, len);
            if (st == CLS_OK) st = crp_buf_add(&text, "\n", 1);
        }
        if (st != CLS_OK) break;
    }
    if (st == CLS_OK) {
        if (count)
            st = smart_emit(r, count, rec_line, has_w, &text, fn, user);
        else
            st = err_set(CLS_E_FORMAT, "%s:%lu: no \".I\" queries found", r->path,
                         r->lineno ? r->lineno : 1);
    }
    free(text.p);
    return st;
}

/* ---- Million Query lines ------------------------------------------------------------------------ */

/* "20001:1:obama family tree": the qid, a priority (digits, unused here) and the query, which
 * may itself hold colons. */
static cls_status read_mq(crp_lines *r, cls_topic_fn fn, void *user)
{
    for (;;) {
        size_t len;
        int got;
        cls_status st = next_nonblank(r, &len, &got);
        if (st != CLS_OK || !got) return st;
        char *c1 = memchr(r->line, ':', len);
        char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - r->line)) : NULL;
        char *q = r->line, *qe = c1;
        CRP_TRIM(q, qe);
        int ok = c2 && qe > q && c2 > c1 + 1;
        for (char *d = c1 ? c1 + 1 : NULL; ok && d < c2; d++)
            if (*d < '0' || *d > '9') ok = 0;
        if (!ok)
            return err_set(CLS_E_FORMAT, "%s:%lu: expected qid:priority:query", r->path,
                           r->lineno);
        *qe = '\0';
        if ((st = crp_emit_topic(fn, user, q, c2 + 1)) != CLS_OK) return st;
    }
}

/* ---- Format detection ---------------------------------------------------------------------- */

/* The format a first non-blank line announces: "<DOC" Anserini, "<top>" TREC, ".I" SMART,
 * "digits:digits:" Million Query, anything else TSV. */
static cls_topics_format sniff(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    char buf[64] = {0};
    size_t n = len - i < sizeof buf - 1 ? len - i : sizeof buf - 1;
    memcpy(buf, line + i, n);
    if (strncmp(buf, "<DOC", 4) == 0) return CLS_TOPICS_ANSERINI;
    int top = 1; /* "<top>" in either case */
    for (int j = 0; j < 5; j++) {
        char c = buf[j] >= 'A' && buf[j] <= 'Z' ? (char)(buf[j] - 'A' + 'a') : buf[j];
        if (c != "<top>"[j]) top = 0;
    }
    if (top) return CLS_TOPICS_TREC;
    if (buf[0] == '.' && buf[1] == 'I' && (buf[2] == '\0' || buf[2] == ' ' || buf[2] == '\t' || buf[2] == '\r'))
        return CLS_TOPICS_SMART;
    i = 0;
    while (buf[i] >= '0' && buf[i] <= '9') i++;
    if (i > 0 && buf[i] == ':') {
        size_t d = ++i;
        while (buf[i] >= '0' && buf[i] <= '9') i++;
        if (i > d && buf[i] == ':') return CLS_TOPICS_MQ;
    }
    return CLS_TOPICS_TSV;
}

/* Reads up to the first non-blank line of r, returns the format it announces (TSV for a file of
 * blank lines) and leaves that line to be read again, so nothing is lost from a pipe: the
 * blank lines before it are nothing to any of the readers. */
static cls_status sniff_lines(crp_lines *r, cls_topics_format *fmt)
{
    *fmt = CLS_TOPICS_TSV;
    for (;;) {
        size_t len;
        int got;
        cls_status st = crp_lines_next(r, &len, &got);
        if (st != CLS_OK || !got) return st;
        if (crp_is_blank(r->line, len)) continue;
        *fmt = sniff(r->line, len);
        crp_lines_again(r, len);
        return CLS_OK;
    }
}

cls_status cls_topics_read(cls_topics_format fmt, const char *path, cls_topic_fn fn, void *user)
{
    if (!path || !*path || !fn)
        return err_set(CLS_E_ARG, "cls_topics_read: a path and a callback are required");
    if ((int)fmt < (int)CLS_TOPICS_TSV || (int)fmt > (int)CLS_TOPICS_AUTO)
        return err_set(CLS_E_ARG, "cls_topics_read: unknown topics format %d", (int)fmt);
    crp_lines r;
    cls_status st = crp_lines_open(&r, path);
    if (st != CLS_OK) return st;
    if (fmt == CLS_TOPICS_AUTO) st = sniff_lines(&r, &fmt);
    cls_status (*read)(crp_lines *, cls_topic_fn, void *) = NULL;
    switch (fmt) {
    case CLS_TOPICS_TSV: read = read_tsv; break;
    case CLS_TOPICS_ANSERINI: read = read_anserini; break;
    case CLS_TOPICS_TREC: read = read_trec; break;
    case CLS_TOPICS_SMART: read = read_smart; break;
    case CLS_TOPICS_MQ: read = read_mq; break;
    case CLS_TOPICS_AUTO: break; /* sniff_lines never leaves it */
    }
    if (st == CLS_OK) st = read(&r, fn, user);
    crp_lines_close(&r);
    return st;
}

cls_topics_format cls_topics_detect(const char *path)
{
    crp_lines r;
    cls_topics_format fmt = CLS_TOPICS_TSV; /* unreadable: the reader reports the error */
    if (!path || crp_lines_open(&r, path) != CLS_OK) return fmt;
    sniff_lines(&r, &fmt);
    crp_lines_close(&r);
    return fmt;
}
