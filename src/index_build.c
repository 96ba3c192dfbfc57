/* Index construction: analyse documents, invert in memory, encode blocks, write the file.
 *
 * Inversion keeps one (term, doc, tf) triple per posting, appended in docID order, so memory
 * grows with the index (12 bytes a posting plus the dictionary), never with the raw text. At
 * write time the terms are sorted by bytes and the triples counting-sorted by term (stable, so
 * each list stays in docID order); index_write.c then encodes the lists and writes the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an.h"
#include "err.h"
#include "index.h"
#include "index_write.h"

struct cls_builder {
    an_analyzer *an;
    cls_build_opts opts;
    unsigned an_flags;
    /* dictionary: term bytes in an arena, open-addressing hash of term ids (id + 1; 0 = empty) */
    char *arena;
    uint64_t arena_len, arena_cap;
    uint64_t *term_pos;
    uint32_t *term_len;
    uint32_t num_terms;
    uint64_t term_pos_cap, term_len_cap;
    uint32_t *table;
    size_t table_cap;
    /* the document being added */
    uint32_t *doc_terms;
    uint64_t doc_nterms, doc_cap;
    /* postings, in docID order */
    uint32_t *p_term, *p_doc, *p_tf;
    uint64_t num_postings, p_term_cap, p_doc_cap, p_tf_cap;
    /* documents */
    uint32_t *doclen;
    uint64_t *docno_off; /* num_docs + 1 entries */
    uint32_t num_docs;
    uint64_t doclen_cap, docno_off_cap;
    char *docno;
    uint64_t docno_len, docno_cap;
    uint64_t num_tokens;
    cls_status failed; /* a failure inside the analyser callback */
};

/* Grows *p (elements of size sz) to hold at least need elements; capacity doubles. */
static int grow(void **p, uint64_t *cap, uint64_t need, size_t sz)
{
    if (need <= *cap) return 1;
    uint64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)(c * sz));
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a: terms are short, this is plenty */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static int rehash(cls_builder *b, size_t cap)
{
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return 0;
    for (uint32_t id = 0; id < b->num_terms; id++) {
        size_t h = hash_bytes(b->arena + b->term_pos[id], b->term_len[id]) & (cap - 1);
        while (t[h]) h = (h + 1) & (cap - 1);
        t[h] = id + 1;
    }
    free(b->table);
    b->table = t;
    b->table_cap = cap;
    return 1;
}

/* Term id of term, adding it when new; UINT32_MAX on allocation failure. */
static uint32_t term_id(cls_builder *b, const char *term, size_t len)
{
    size_t h = hash_bytes(term, len) & (b->table_cap - 1);
    for (uint32_t e; (e = b->table[h]) != 0; h = (h + 1) & (b->table_cap - 1)) {
        uint32_t id = e - 1;
        if (b->term_len[id] == len && memcmp(b->arena + b->term_pos[id], term, len) == 0) return id;
    }
    if (b->num_terms == UINT32_MAX - 1) return UINT32_MAX;
    if (!grow((void **)&b->arena, &b->arena_cap, b->arena_len + len, 1) ||
        !grow((void **)&b->term_pos, &b->term_pos_cap, (uint64_t)b->num_terms + 1, sizeof *b->term_pos) ||
        !grow((void **)&b->term_len, &b->term_len_cap, (uint64_t)b->num_terms + 1, sizeof *b->term_len))
        return UINT32_MAX;
    memcpy(b->arena + b->arena_len, term, len);
    uint32_t id = b->num_terms++;
    b->term_pos[id] = b->arena_len;
    b->term_len[id] = (uint32_t)len;
    b->arena_len += len;
    b->table[h] = id + 1;
    if ((uint64_t)b->num_terms * 2 > b->table_cap && !rehash(b, b->table_cap * 2)) return UINT32_MAX;
    return id;
}

static int on_term(void *user, const char *term, size_t len)
{
    cls_builder *b = user;
    uint32_t id = term_id(b, term, len);
    if (id == UINT32_MAX || !grow((void **)&b->doc_terms, &b->doc_cap, b->doc_nterms + 1, sizeof(uint32_t))) {
        b->failed = err_set(CLS_E_NOMEM, "indexing: out of memory for the term dictionary");
        return 1;
    }
    b->doc_terms[b->doc_nterms++] = id;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

cls_status cls_builder_create(const cls_analyzer_opts *an, cls_builder **out)
{
    cls_analyzer_opts o;
    if (an) o = *an; else cls_analyzer_defaults(&o);
    if (!out) return err_set(CLS_E_ARG, "cls_builder_create: out is NULL");
    *out = NULL;
    cls_builder *b = calloc(1, sizeof *b);
    if (!b) return err_set(CLS_E_NOMEM, "cls_builder_create: out of memory");
    b->an_flags = an_opts_pack(&o);
    cls_build_defaults(&b->opts);
    cls_status s = an_create(&o, &b->an);
    if (s != CLS_OK || !rehash(b, 1 << 16)) {
        cls_builder_free(b);
        return s != CLS_OK ? s : err_set(CLS_E_NOMEM, "cls_builder_create: out of memory");
    }
    *out = b;
    return CLS_OK;
}

cls_status cls_builder_configure(cls_builder *b, const cls_build_opts *o)
{
    if (!b) return err_set(CLS_E_ARG, "cls_builder_configure: builder is NULL");
    cls_status s = idx_check_opts(o);
    if (s != CLS_OK) return s;
    if (b->num_docs) return err_set(CLS_E_ARG, "cls_builder_configure: documents were already added");
    b->opts = *o;
    return CLS_OK;
}

cls_status cls_builder_add(cls_builder *b, const char *docno, size_t docno_len, const char *text,
                           size_t text_len)
{
    if (!b || !docno || (!text && text_len)) return err_set(CLS_E_ARG, "cls_builder_add: NULL argument");
    if (docno_len == 0 || memchr(docno, '\0', docno_len) || memchr(docno, '\n', docno_len) ||
        memchr(docno, ' ', docno_len) || memchr(docno, '\t', docno_len))
        return err_set(CLS_E_FORMAT, "document %u: docno is empty or holds a space, tab, newline or NUL",
                       b->num_docs + 1);
    if (b->num_docs == UINT32_MAX - 1)
        return err_set(CLS_E_ARG, "too many documents for 32-bit docIDs");
    b->doc_nterms = 0;
    b->failed = CLS_OK;
    cls_status s = an_run(b->an, text ? text : "", text_len, on_term, b);
    if (b->failed != CLS_OK) return b->failed;
    if (s != CLS_OK) return s;

    if (!grow((void **)&b->doclen, &b->doclen_cap, (uint64_t)b->num_docs + 1, sizeof *b->doclen) ||
        !grow((void **)&b->docno_off, &b->docno_off_cap, (uint64_t)b->num_docs + 2, sizeof *b->docno_off) ||
        !grow((void **)&b->docno, &b->docno_cap, b->docno_len + docno_len + 1, 1))
        return err_set(CLS_E_NOMEM, "indexing: out of memory for document data");

    /* Sort the document's term ids and turn runs into (term, tf) postings. */
    if (b->doc_nterms > 1) qsort(b->doc_terms, b->doc_nterms, sizeof *b->doc_terms, cmp_u32);
    uint32_t doc = b->num_docs;
    for (size_t i = 0; i < b->doc_nterms;) {
        size_t j = i;
        while (j < b->doc_nterms && b->doc_terms[j] == b->doc_terms[i]) j++;
        if (!grow((void **)&b->p_term, &b->p_term_cap, b->num_postings + 1, 4) ||
            !grow((void **)&b->p_doc, &b->p_doc_cap, b->num_postings + 1, 4) ||
            !grow((void **)&b->p_tf, &b->p_tf_cap, b->num_postings + 1, 4))
            return err_set(CLS_E_NOMEM, "indexing: out of memory for postings");
        b->p_term[b->num_postings] = b->doc_terms[i];
        b->p_doc[b->num_postings] = doc;
        b->p_tf[b->num_postings] = (uint32_t)(j - i);
        b->num_postings++;
        i = j;
    }
    b->docno_off[0] = 0;
    memcpy(b->docno + b->docno_len, docno, docno_len);
    b->docno[b->docno_len + docno_len] = '\0';
    b->docno_len += docno_len + 1;
    b->docno_off[doc + 1] = b->docno_len;
    b->doclen[doc] = b->doc_nterms > UINT32_MAX ? UINT32_MAX : (uint32_t)b->doc_nterms;
    b->num_tokens += b->doc_nterms;
    b->num_docs++;
    return CLS_OK;
}

typedef struct term_ref {
    const char *s;
    uint32_t len, id;
} term_ref;

static int cmp_term(const void *a, const void *b)
{
    const term_ref *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

cls_status cls_builder_write(cls_builder *b, const char *path)
{
    if (!b || !path) return err_set(CLS_E_ARG, "cls_builder_write: NULL argument");
    cls_status st = CLS_E_NOMEM;
    uint32_t T = b->num_terms;
    uint64_t P = b->num_postings;
    term_ref *order = malloc(((size_t)T + 1) * sizeof *order);
    uint32_t *rank = malloc(((size_t)T + 1) * sizeof *rank);
    uint64_t *start = calloc((size_t)T + 2, sizeof *start);
    uint64_t *fill = malloc(((size_t)T + 1) * sizeof *fill);
    uint32_t *sdoc = malloc((size_t)(P + 1) * 4), *stf = malloc((size_t)(P + 1) * 4);
    uint64_t *term_off = malloc(((size_t)T + 1) * sizeof *term_off);
    char *term_blob = malloc(b->arena_len + 1);
    if (!order || !rank || !start || !fill || !sdoc || !stf || !term_off || !term_blob) {
        st = err_set(CLS_E_NOMEM, "writing the index: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < T; i++)
        order[i] = (term_ref){b->arena + b->term_pos[i], b->term_len[i], i};
    qsort(order, T, sizeof *order, cmp_term);
    uint64_t blob = 0;
    for (uint32_t r = 0; r < T; r++) {
        rank[order[r].id] = r;
        term_off[r] = blob;
        memcpy(term_blob + blob, order[r].s, order[r].len);
        blob += order[r].len;
    }
    term_off[T] = blob;

    /* Counting sort by term rank; stable, so every list stays in docID order. */
    for (uint64_t i = 0; i < P; i++) start[rank[b->p_term[i]] + 1]++;
    for (uint32_t r = 0; r < T; r++) start[r + 1] += start[r];
    memcpy(fill, start, (size_t)T * sizeof *fill);
    for (uint64_t i = 0; i < P; i++) {
        uint64_t at = fill[rank[b->p_term[i]]]++;
        sdoc[at] = b->p_doc[i];
        stf[at] = b->p_tf[i];
    }
    uint64_t zero = 0;
    idx_lists l = {
        .analyzer = b->an_flags,
        .num_docs = b->num_docs,
        .doclen = b->doclen,
        .docno_off = b->num_docs ? b->docno_off : &zero,
        .docno_blob = b->docno,
        .docno_blob_len = b->num_docs ? b->docno_len : 0,
        .num_terms = T,
        .term_off = term_off,
        .term_blob = term_blob,
        .list_start = start,
        .docs = sdoc,
        .freqs = stf,
    };
    st = idx_write_lists(path, &l, &b->opts);
out:
    free(order);
    free(rank);
    free(start);
    free(fill);
    free(sdoc);
    free(stf);
    free(term_off);
    free(term_blob);
    return st;
}

void cls_builder_free(cls_builder *b)
{
    if (!b) return;
    an_free(b->an);
    free(b->arena);
    free(b->term_pos);
    free(b->term_len);
    free(b->table);
    free(b->doc_terms);
    free(b->p_term);
    free(b->p_doc);
    free(b->p_tf);
    free(b->doclen);
    free(b->docno_off);
    free(b->docno);
    free(b);
}
