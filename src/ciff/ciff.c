/* CIFF import and export (clsearch.h, "Exchange: CIFF"; the schema is ciff.proto, coded by
 * protobuf-c).
 *
 * A CIFF file is a sequence of messages, each prefixed by its size as a base-128 varint: one
 * Header, Header.num_postings_lists PostingsList messages (terms in any order; each list's
 * first posting holds a docid, every later one the gap from the previous docid) and
 * Header.num_docs DocRecord messages (docid = position).
 *
 * Import streams the file (plain or gzip-compressed, through libarchive) one message at a time:
 * a buffer as large as the largest message, and an arena that protobuf-c unpacks each message
 * into and that is dropped before the next. Every field is checked and a fault is CLS_E_FORMAT
 * naming the message, its byte offset and the field. The postings are gathered in memory (8
 * bytes a posting, plus the dictionary), the terms sorted by bytes, and index_write.c encodes
 * them with any codec and writes the index through a temporary name: a failed import leaves
 * no file behind. An index path that is a symbolic link is resolved first, so the rename
 * replaces the file it names, never the link (nor a link in /dev).
 *
 * Export writes every list in index order, decoded block by block, then the documents, to a
 * temporary file beside the target that is renamed when complete; a FIFO or character device
 * (a pipe, /dev/stdout, /dev/null) is written in place, and nothing is ever renamed over a
 * node that is not a regular file.
 *
 * Built with CLSEARCH_CIFF=OFF (no protobuf-c), both calls fail with CLS_E_ARG.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "clsearch.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/tmpfile.h"
#include "util/path.h"

#ifndef CLSEARCH_CIFF

cls_status cls_ciff_import_scored(const char *ciff_path, const cls_analyzer_opts *an, const cls_build_opts *o,
                                  cls_scoring scoring, const char *index_path)
{
    return err_set(CLS_E_ARG, "built without CIFF support (CLSEARCH_CIFF=OFF)");
}

cls_status cls_ciff_import(const char *ciff_path, const cls_analyzer_opts *an, const cls_build_opts *o,
                           const char *index_path)
{
    return cls_ciff_import_scored(ciff_path, an, o, CLS_SCORING_BM25, index_path);
}

cls_status cls_ciff_export(const cls_index *idx, const char *ciff_path, const char *description)
{
    return err_set(CLS_E_ARG, "built without CIFF support (CLSEARCH_CIFF=OFF)");
}

#else

#include <archive.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/an.h"
#include "ciff.pb-c.h"
#include "corpus/corpus.h"
#include "index/index.h"
#include "index/index_write.h"
#include "util/vec.h"

#define CIFF_VERSION 1
/* Largest message accepted. A posting takes 4 to 8 bytes on the wire (and some 70 in memory
 * while protobuf-c holds the unpacked list), so 1 GiB is over 130 million postings in one list;
 * a larger size is taken for a damaged or foreign file and refused before anything is allocated. */
#define CIFF_MAX_MSG ((uint64_t)1 << 30)
#define RD_CHUNK ((size_t)1 << 16)

/* ---- Small helpers ------------------------------------------------------------------------ */

/* s[0..n) for an error message: at most 64 bytes, bytes outside [ -~] (and \ and ') as \xNN.
 * The result lives until the next call in the same thread. */
static const char *show(const void *s, size_t n)
{
    static _Thread_local char out[64 * 4 + 8];
    const unsigned char *p = s;
    size_t k = 0;
    for (size_t i = 0; i < n && i < 64; i++) {
        if (p[i] >= ' ' && p[i] <= '~' && p[i] != '\\' && p[i] != '\'') out[k++] = (char)p[i];
        else k += (size_t)snprintf(out + k, sizeof out - k, "\\x%02x", p[i]);
    }
    if (n > 64) k += (size_t)snprintf(out + k, sizeof out - k, "...");
    out[k] = '\0';
    return out;
}

/* ---- Arena allocator for protobuf-c ------------------------------------------------------- */

/* protobuf-c allocates every repeated sub-message (each Posting) on its own; an arena makes
 * that a pointer bump and the whole message one release. */
typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t cap, used;
    max_align_t data[];
} arena_chunk;

typedef struct arena {
    ProtobufCAllocator pa;
    arena_chunk *head;
    size_t next_cap;
    int oom;
} arena;

static void *arena_alloc(void *user, size_t size)
{
    arena *a = user;
    const size_t al = sizeof(max_align_t);
    if (size > SIZE_MAX - al) {
        a->oom = 1;
        return NULL;
    }
    size = (size + al - 1) / al * al;
    if (size == 0) size = al;
    arena_chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = a->next_cap ? a->next_cap : (size_t)1 << 16; /* small files stay small */
        if (cap < size) cap = size;
        c = malloc(sizeof *c + cap);
        if (!c) {
            a->oom = 1;
            return NULL;
        }
        c->next = a->head;
        c->cap = cap;
        c->used = 0;
        a->head = c;
        if (cap < ((size_t)1 << 26)) a->next_cap = cap * 2;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

static void arena_free(void *user, void *p) { (void)user, (void)p; }

static void arena_init(arena *a)
{
    memset(a, 0, sizeof *a);
    a->pa.alloc = arena_alloc;
    a->pa.free = arena_free;
    a->pa.allocator_data = a;
}

/* Releases everything allocated so far. */
static void arena_reset(arena *a)
{
    while (a->head) {
        arena_chunk *n = a->head->next;
        free(a->head);
        a->head = n;
    }
    a->next_cap = 0;
    a->oom = 0;
}

/* ---- Reading: bytes, varints and messages from a plain or gzip file ----------------------- */

typedef struct reader {
    const char *path;
    int fd;
    struct archive *a;
    unsigned char *chunk;      /* decompressed bytes not yet consumed */
    size_t chunk_len, chunk_pos;
    int eof;
    uint64_t offset;           /* bytes consumed (of the decompressed stream) */
    unsigned char *msg;        /* the current message */
    size_t msg_cap;
} reader;

static void rd_close(reader *r)
{
    if (r->a) archive_read_free(r->a);
    if (r->fd >= 0) close(r->fd);
    free(r->chunk);
    free(r->msg);
    r->a = NULL;
    r->fd = -1;
    r->chunk = NULL;
    r->msg = NULL;
}

/* libarchive's raw format reads a gzip stream as one unnamed entry and any other file as is; the
 * empty format lets a zero-byte file read as zero bytes. */
static cls_status rd_open(reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->fd = open(path, O_RDONLY);
    if (r->fd < 0) return err_set(CLS_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(r->fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int e = errno;
        rd_close(r);
        if (!S_ISDIR(st.st_mode)) return err_set(CLS_E_IO, "cannot read %s: %s", path, strerror(e));
        return err_set(CLS_E_IO, "%s is a folder, not a CIFF file", path);
    }
    r->chunk = malloc(RD_CHUNK);
    if (!r->chunk) {
        rd_close(r);
        return err_set(CLS_E_NOMEM, "reading %s: out of memory", path);
    }
    /* plain or gzip-compressed alike: the raw format passes uncompressed bytes through */
    cls_status s = crp_gz_open(path, path, NULL, &r->a, &r->eof);
    if (s != CLS_OK) rd_close(r);
    return s;
}

/* Makes at least one unconsumed byte available unless the stream has ended. */
static cls_status rd_fill(reader *r)
{
    while (r->chunk_pos == r->chunk_len && !r->eof) {
        la_ssize_t n = archive_read_data(r->a, r->chunk, RD_CHUNK);
        if (n < 0) return crp_archive_error(r->a, r->path);
        if (n == 0) r->eof = 1;
        r->chunk_len = (size_t)n;
        r->chunk_pos = 0;
    }
    return CLS_OK;
}

/* Copies up to n bytes into dst; *got < n only at the end of the stream. */
static cls_status rd_bytes(reader *r, unsigned char *dst, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        cls_status s = rd_fill(r);
        if (s != CLS_OK) return s;
        if (r->chunk_pos == r->chunk_len) break;
        size_t k = r->chunk_len - r->chunk_pos;
        if (k > n - done) k = n - done;
        memcpy(dst + done, r->chunk + r->chunk_pos, k);
        r->chunk_pos += k;
        done += k;
    }
    r->offset += done;
    *got = done;
    return CLS_OK;
}

/* Reads the size varint and the bytes of the next message (what names it in messages) into
 * r->msg. *got is 0 when the stream ends cleanly before the message. */
static cls_status rd_message(reader *r, const char *what, size_t *len, int *got)
{
    uint64_t v = 0, start = r->offset;
    *got = 0;
    for (unsigned i = 0;; i++) {
        unsigned char c;
        size_t k;
        cls_status s = rd_bytes(r, &c, 1, &k);
        if (s != CLS_OK) return s;
        if (k == 0) {
            if (i == 0) return CLS_OK;
            return err_set(CLS_E_FORMAT, "%s: truncated: the file ends inside the size of %s", r->path, what);
        }
        if (i == 9 && c > 1)
            return err_set(CLS_E_FORMAT, "%s: the size of %s is a varint that overflows 64 bits: not a CIFF file, or damaged",
                           r->path, what);
        v |= (uint64_t)(c & 0x7F) << (7 * i);
        if (!(c & 0x80)) break;
        if (i == 9)
            return err_set(CLS_E_FORMAT, "%s: the size of %s is a varint of more than 10 bytes: not a CIFF file, or "
                           "damaged", r->path, what);
    }
    if (v > CIFF_MAX_MSG)
        return err_set(CLS_E_FORMAT, "%s: %s claims %llu bytes, more than the 1 GiB limit: not a CIFF file, or "
                       "damaged", r->path, what, (unsigned long long)v);
    /* The buffer grows as the bytes arrive, never ahead of them by more than it holds (or
     * RD_CHUNK): a damaged size claim alone cannot reserve a gibibyte. */
    size_t k = 0;
    while (k < v) {
        size_t step = k > RD_CHUNK ? k : RD_CHUNK, got_now;
        if (step > v - k) step = (size_t)v - k;
        if (!vec_reserve(&r->msg, &r->msg_cap, k + step + 1, 1))
            return err_set(CLS_E_NOMEM, "%s: out of memory for %s of %llu bytes", r->path, what,
                           (unsigned long long)v);
        cls_status s = rd_bytes(r, r->msg + k, step, &got_now);
        if (s != CLS_OK) return s;
        k += got_now;
        if (got_now < step) break;
    }
    if (k < v)
        return err_set(CLS_E_FORMAT, "%s: %s: %s needs %llu bytes, the file ends after %zu", r->path,
                       start == 0 ? "not a CIFF file, or truncated" : "truncated", what, (unsigned long long)v, k);
    *len = (size_t)v;
    *got = 1;
    return CLS_OK;
}

/* The failure of a protobuf-c unpack: out of memory, or bytes that are not that message. */
static cls_status unpack_error(const reader *r, const arena *ar, const char *what)
{
    if (ar->oom) return err_set(CLS_E_NOMEM, "%s: out of memory unpacking %s", r->path, what);
    return err_set(CLS_E_FORMAT, "%s: %s is not a valid protobuf message: not a CIFF file, or damaged", r->path,
                   what);
}

/* ---- Import ------------------------------------------------------------------------------- */


/* Everything gathered from the file. */
typedef struct gathered {
    uint32_t num_docs, num_lists;
    char *terms;                 /* term bytes, in file order */
    uint64_t terms_len;
    size_t terms_cap;
    uint64_t *term_off;          /* num_lists + 1 */
    uint64_t *list_start;        /* num_lists + 1 */
    uint32_t *docs, *freqs;
    uint64_t num_postings;
    size_t docs_cap, freqs_cap;
    uint32_t *doclen;
    uint64_t *docno_off;         /* num_docs + 1 */
    char *docnos;
    uint64_t docnos_len;
    size_t docnos_cap;
} gathered;

static void gathered_free(gathered *g)
{
    free(g->terms);
    free(g->term_off);
    free(g->list_start);
    free(g->docs);
    free(g->freqs);
    free(g->doclen);
    free(g->docno_off);
    free(g->docnos);
}

static cls_status read_header(reader *r, arena *ar, gathered *g)
{
    size_t len;
    int got;
    cls_status s = rd_fill(r);
    if (s != CLS_OK) return s;
    if (r->chunk_len - r->chunk_pos >= 8 && memcmp(r->chunk + r->chunk_pos, IDX_MAGIC, 8) == 0)
        return err_set(CLS_E_FORMAT, "%s: a clsearch index, not a CIFF file", r->path);
    if ((s = rd_message(r, "the header", &len, &got)) != CLS_OK) return s;
    if (!got) return err_set(CLS_E_FORMAT, "%s: empty file: not a CIFF file", r->path);
    Ciff__Header *h = ciff__header__unpack(&ar->pa, len, r->msg);
    if (!h) return unpack_error(r, ar, "the header");
    s = CLS_OK;
    if (h->version != CIFF_VERSION)
        s = err_set(CLS_E_FORMAT, "%s: header: version %d, this build reads CIFF version %d (or not a CIFF file)",
                    r->path, (int)h->version, CIFF_VERSION);
    else if (h->num_postings_lists < 0 || h->num_docs < 0 || h->total_postings_lists < h->num_postings_lists ||
             h->total_docs < h->num_docs)
        s = err_set(CLS_E_FORMAT, "%s: header: num_postings_lists %d, num_docs %d, total_postings_lists %d, "
                    "total_docs %d: counts negative or totals below the counts", r->path, (int)h->num_postings_lists,
                    (int)h->num_docs, (int)h->total_postings_lists, (int)h->total_docs);
    else if (h->total_terms_in_collection < 0)
        s = err_set(CLS_E_FORMAT, "%s: header: total_terms_in_collection %lld is negative", r->path,
                    (long long)h->total_terms_in_collection);
    if (s == CLS_OK) {
        g->num_lists = (uint32_t)h->num_postings_lists;
        g->num_docs = (uint32_t)h->num_docs;
    }
    arena_reset(ar);
    return s;
}

/* Postings list i: appends its term and postings to g. */
static cls_status read_list(reader *r, arena *ar, gathered *g, uint32_t i)
{
    char what[96];
    snprintf(what, sizeof what, "postings list %u (message %u, byte %llu)", i, i + 1, (unsigned long long)r->offset);
    size_t len;
    int got;
    cls_status s = rd_message(r, what, &len, &got);
    if (s != CLS_OK) return s;
    if (!got)
        return err_set(CLS_E_FORMAT, "%s: truncated: the file ends after %u of the header's %u postings lists",
                       r->path, i, g->num_lists);
    Ciff__PostingsList *pl = ciff__postings_list__unpack(&ar->pa, len, r->msg);
    if (!pl) return unpack_error(r, ar, what);
    const char *P = r->path;
    size_t tl = pl->term.len, n = pl->n_postings;
    const char *term = show(pl->term.data, tl);
    if (tl == 0) return err_set(CLS_E_FORMAT, "%s: %s: field term is empty", P, what);
    if (n == 0) return err_set(CLS_E_FORMAT, "%s: %s, term '%s': no postings", P, what, term);
    if (pl->df < 0 || (uint64_t)pl->df != n)
        return err_set(CLS_E_FORMAT, "%s: %s, term '%s': field df is %lld but the list holds %zu postings",
                       P, what, term, (long long)pl->df, n);
    if (n > g->num_docs)
        return err_set(CLS_E_FORMAT, "%s: %s, term '%s': %zu postings, more than the header's %u "
                       "documents", P, what, term, n, g->num_docs);
    if (!vec_reserve(&g->terms, &g->terms_cap, g->terms_len + tl, 1) ||
        !vec_reserve(&g->docs, &g->docs_cap, g->num_postings + n, sizeof *g->docs) ||
        !vec_reserve(&g->freqs, &g->freqs_cap, g->num_postings + n, sizeof *g->freqs))
        return err_set(CLS_E_NOMEM, "%s: out of memory for the postings (%llu so far)", P,
                       (unsigned long long)g->num_postings);
    uint32_t *docs = g->docs + g->num_postings, *freqs = g->freqs + g->num_postings;
    int64_t d = -1;
    uint64_t cf = 0;
    for (size_t j = 0; j < n; j++) {
        const Ciff__Posting *p = pl->postings[j];
        if (j == 0 && p->docid < 0)
            return err_set(CLS_E_FORMAT, "%s: %s, term '%s': posting 0: field docid %d is negative", P,
                           what, term, (int)p->docid);
        if (j > 0 && p->docid <= 0)
            return err_set(CLS_E_FORMAT, "%s: %s, term '%s': posting %zu: field docid (a gap) is %d, "
                           "which makes the docids non-increasing", P, what, term, j, (int)p->docid);
        d = j == 0 ? p->docid : d + p->docid;
        if (d >= (int64_t)g->num_docs)
            return err_set(CLS_E_FORMAT, "%s: %s, term '%s': posting %zu: docid %lld is out of range "
                           "(the header declares %u documents)", P, what, term, j, (long long)d, g->num_docs);
        if (p->tf <= 0)
            return err_set(CLS_E_FORMAT, "%s: %s, term '%s': posting %zu: field tf is %d, not positive",
                           P, what, term, j, (int)p->tf);
        docs[j] = (uint32_t)d;
        freqs[j] = (uint32_t)p->tf;
        cf += (uint64_t)p->tf;
    }
    if (pl->cf < 0 || (uint64_t)pl->cf != cf)
        return err_set(CLS_E_FORMAT, "%s: %s, term '%s': field cf is %lld but the tf values add up to "
                       "%llu", P, what, term, (long long)pl->cf, (unsigned long long)cf);
    memcpy(g->terms + g->terms_len, pl->term.data, tl);
    g->term_off[i] = g->terms_len;
    g->terms_len += tl;
    g->term_off[i + 1] = g->terms_len;
    g->list_start[i] = g->num_postings;
    g->num_postings += n;
    g->list_start[i + 1] = g->num_postings;
    arena_reset(ar);
    return CLS_OK;
}

/* Document record d. */
static cls_status read_doc(reader *r, arena *ar, gathered *g, uint32_t d)
{
    char what[96];
    snprintf(what, sizeof what, "document record %u (message %llu, byte %llu)", d, 1ull + g->num_lists + d,
             (unsigned long long)r->offset);
    size_t len;
    int got;
    cls_status s = rd_message(r, what, &len, &got);
    if (s != CLS_OK) return s;
    if (!got)
        return err_set(CLS_E_FORMAT, "%s: truncated: the file ends after %u of the header's %u document records",
                       r->path, d, g->num_docs);
    Ciff__DocRecord *rec = ciff__doc_record__unpack(&ar->pa, len, r->msg);
    if (!rec) return unpack_error(r, ar, what);
    const char *P = r->path;
    const char *no = (const char *)rec->collection_docid.data;
    size_t nl = rec->collection_docid.len;
    if (rec->docid < 0 || (uint32_t)rec->docid != d)
        return err_set(CLS_E_FORMAT, "%s: %s: field docid is %d: records must come in docid order, "
                       "0, 1, 2, ...", P, what, (int)rec->docid);
    /* The same rule as cls_builder_add: run files and tools split on white space. */
    if (nl == 0 || memchr(no, '\0', nl) || memchr(no, '\n', nl) || memchr(no, ' ', nl) || memchr(no, '\t', nl))
        return err_set(CLS_E_FORMAT, "%s: %s: field collection_docid '%s' is empty or holds a space, "
                       "tab, newline or NUL", P, what, show(no, nl));
    if (rec->doclength < 0)
        return err_set(CLS_E_FORMAT, "%s: %s: field doclength %d is negative", P, what,
                       (int)rec->doclength);
    if (!vec_reserve(&g->docnos, &g->docnos_cap, g->docnos_len + nl + 1, 1))
        return err_set(CLS_E_NOMEM, "%s: out of memory for the document names", P);
    memcpy(g->docnos + g->docnos_len, no, nl);
    g->docnos[g->docnos_len + nl] = '\0';
    g->docnos_len += nl + 1;
    g->docno_off[d + 1] = g->docnos_len;
    g->doclen[d] = (uint32_t)rec->doclength;
    arena_reset(ar);
    return CLS_OK;
}

/* Writes the gathered lists, in term byte order, as an index. */
static cls_status write_index(const char *ciff_path, gathered *g, unsigned analyzer, cls_scoring scoring,
                              const cls_build_opts *o, const char *index_path)
{
    const uint32_t T = g->num_lists;
    idx_term_ref *order = malloc(((size_t)T + 1) * sizeof *order);
    if (!order) return err_set(CLS_E_NOMEM, "%s: out of memory sorting the terms", ciff_path);
    int sorted = 1;
    for (uint32_t t = 0; t < T; t++) {
        order[t] = (idx_term_ref){g->terms + g->term_off[t], (uint32_t)(g->term_off[t + 1] - g->term_off[t]), t};
        if (t > 0 && idx_term_ref_cmp(&order[t - 1], &order[t]) >= 0) sorted = 0;
    }
    /* the index records the CIFF file as its root */
    char *root = NULL, *coll = NULL;
    if (path_absolute(ciff_path, &root) != CLS_OK) root = NULL; /* it was read: the name as given then */
    const char *roots[1] = {root ? root : ciff_path};
    uint64_t coll_len = 0;
    cls_status cs = idx_collection_make("ciff", roots, 1, NULL, 0, &coll, &coll_len);
    free(root);
    if (cs != CLS_OK) {
        free(order);
        return cs;
    }
    idx_lists l = {
        .collection = coll,
        .collection_len = coll_len,
        .analyzer = analyzer,
        .scoring = scoring,
        .num_docs = g->num_docs,
        .doclen = g->doclen,
        .docno_off = g->docno_off,
        .docno_blob = g->docnos,
        .docno_blob_len = g->docnos_len,
        .num_terms = T,
        .term_off = g->term_off,
        .term_blob = g->terms,
        .list_start = g->list_start,
        .docs = g->docs,
        .freqs = g->freqs,
    };
    cls_status s = CLS_OK;
    uint64_t *term_off = NULL, *start = NULL;
    char *blob = NULL;
    uint32_t *docs = NULL, *freqs = NULL;
    if (!sorted) {
        /* CIFF leaves the list order free: sort by bytes, then lay the lists out in that order. */
        qsort(order, T, sizeof *order, idx_term_ref_cmp);
        for (uint32_t t = 1; t < T; t++)
            if (idx_term_ref_cmp(&order[t - 1], &order[t]) == 0) {
                s = err_set(CLS_E_FORMAT, "%s: term '%s' has two postings lists (%u and %u)", ciff_path,
                            show(order[t].s, order[t].len), order[t - 1].id < order[t].id ? order[t - 1].id
                            : order[t].id, order[t - 1].id < order[t].id ? order[t].id : order[t - 1].id);
                goto out;
            }
        uint64_t P = g->num_postings;
        term_off = malloc(((size_t)T + 1) * sizeof *term_off);
        start = malloc(((size_t)T + 1) * sizeof *start);
        blob = malloc((size_t)g->terms_len + 1);
        docs = malloc((size_t)P * 4 + 4);
        freqs = malloc((size_t)P * 4 + 4);
        if (!term_off || !start || !blob || !docs || !freqs) {
            s = err_set(CLS_E_NOMEM, "%s: out of memory ordering the postings lists", ciff_path);
            goto out;
        }
        uint64_t tb = 0, pb = 0;
        for (uint32_t t = 0; t < T; t++) {
            uint32_t li = order[t].id;
            uint64_t a = g->list_start[li], n = g->list_start[li + 1] - a;
            term_off[t] = tb;
            start[t] = pb;
            memcpy(blob + tb, order[t].s, order[t].len);
            memcpy(docs + pb, g->docs + a, (size_t)n * 4);
            memcpy(freqs + pb, g->freqs + a, (size_t)n * 4);
            tb += order[t].len;
            pb += n;
        }
        term_off[T] = tb;
        start[T] = pb;
        /* The file-order copies are no longer needed: free them before encoding. */
        free(g->docs);
        free(g->freqs);
        g->docs = g->freqs = NULL;
        g->docs_cap = g->freqs_cap = 0;
        l.term_off = term_off;
        l.term_blob = blob;
        l.list_start = start;
        l.docs = docs;
        l.freqs = freqs;
    }
    s = idx_write_lists(index_path, &l, o);
out:
    free(coll);
    free(order);
    free(term_off);
    free(start);
    free(blob);
    free(docs);
    free(freqs);
    return s;
}

cls_status cls_ciff_import(const char *ciff_path, const cls_analyzer_opts *an, const cls_build_opts *o,
                           const char *index_path)
{
    return cls_ciff_import_scored(ciff_path, an, o, CLS_SCORING_BM25, index_path);
}

/* The tf fields are taken as they are whatever the scoring: an impact index's are its quantized
 * impacts (positive integers, as Anserini and PISA write them). */
cls_status cls_ciff_import_scored(const char *ciff_path, const cls_analyzer_opts *an, const cls_build_opts *o,
                                  cls_scoring scoring, const char *index_path)
{
    if (!ciff_path || !index_path) return err_set(CLS_E_ARG, "cls_ciff_import: NULL path");
    if (!cls_scoring_name(scoring)) return err_set(CLS_E_ARG, "cls_ciff_import: unknown scoring %d", (int)scoring);
    cls_build_opts def;
    if (!o) {
        cls_build_defaults(&def);
        o = &def;
    }
    cls_status s = idx_check_opts(o);
    if (s != CLS_OK) return s;
    cls_analyzer_opts ao;
    if (an) ao = *an; else cls_analyzer_defaults(&ao);
    unsigned flags = an_opts_pack(&ao);
    /* An index path that is a symbolic link is written where the link points: the index writer
     * renames its temporary file over the path it is given, which must never be the link itself
     * (think of /dev/stdout, a link in /dev, with stdout redirected to a file). */
    char *resolved = NULL;
    struct stat ls;
    if (lstat(index_path, &ls) == 0 && S_ISLNK(ls.st_mode) && !(resolved = realpath(index_path, NULL)))
        return err_set(CLS_E_IO, "cannot resolve the symbolic link %s (%s): an index is written only to a file",
                       index_path, strerror(errno));
    if (resolved) index_path = resolved;

    reader r;
    if ((s = rd_open(&r, ciff_path)) != CLS_OK) {
        free(resolved);
        return s;
    }
    arena ar;
    arena_init(&ar);
    gathered g;
    memset(&g, 0, sizeof g);
    if ((s = read_header(&r, &ar, &g)) != CLS_OK) goto out;
    g.term_off = calloc((size_t)g.num_lists + 1, sizeof *g.term_off);
    g.list_start = calloc((size_t)g.num_lists + 1, sizeof *g.list_start);
    g.doclen = calloc((size_t)g.num_docs + 1, sizeof *g.doclen);
    g.docno_off = calloc((size_t)g.num_docs + 1, sizeof *g.docno_off);
    if (!g.term_off || !g.list_start || !g.doclen || !g.docno_off) {
        s = err_set(CLS_E_NOMEM, "%s: out of memory for %u postings lists and %u documents", ciff_path, g.num_lists,
                    g.num_docs);
        goto out;
    }
    for (uint32_t i = 0; i < g.num_lists; i++)
        if ((s = read_list(&r, &ar, &g, i)) != CLS_OK) goto out;
    for (uint32_t d = 0; d < g.num_docs; d++)
        if ((s = read_doc(&r, &ar, &g, d)) != CLS_OK) goto out;
    unsigned char extra;
    size_t k;
    uint64_t end = r.offset;
    if ((s = rd_bytes(&r, &extra, 1, &k)) != CLS_OK) goto out;
    if (k) {
        s = err_set(CLS_E_FORMAT, "%s: data after the last document record (byte %llu): the header's counts (%u "
                    "postings lists, %u documents) do not match the file", ciff_path, (unsigned long long)end,
                    g.num_lists, g.num_docs);
        goto out;
    }
    rd_close(&r);
    arena_reset(&ar);
    s = write_index(ciff_path, &g, flags, scoring, o, index_path);
out:
    rd_close(&r);
    arena_reset(&ar);
    gathered_free(&g);
    free(resolved);
    return s;
}

/* ---- Export ------------------------------------------------------------------------------- */

/* Messages are packed whole into buf (as large as the largest message), then written at once. */
typedef struct writer {
    FILE *f;
    uint8_t *buf;
    size_t cap;
    int err;       /* errno of a failed write, or ENOMEM */
} writer;

/* One length-delimited message. */
static void put_message(writer *w, const ProtobufCMessage *m)
{
    if (w->err) return;
    size_t n = protobuf_c_message_get_packed_size(m), k = 0;
    if (n > SIZE_MAX - 16 || !vec_reserve(&w->buf, &w->cap, n + 10, 1)) {
        w->err = ENOMEM;
        return;
    }
    uint64_t x = n;
    do {
        w->buf[k++] = (uint8_t)((x & 0x7F) | (x > 0x7F ? 0x80 : 0));
        x >>= 7;
    } while (x);
    if (protobuf_c_message_pack(m, w->buf + k) != n) {
        w->err = EINVAL; /* cannot happen: protobuf-c packs what it measured */
        return;
    }
    errno = 0;
    if (fault_hit(FAULT_WRITE)) w->err = ENOSPC; /* CLSEARCH_FAULT's write faults: a full disk */
    else if (fwrite(w->buf, 1, k + n, w->f) != k + n) w->err = errno ? errno : EIO;
}

/* Where to write: a temporary file beside the target (the target itself, or what a symbolic
 * link names), renamed over it at the end; or, for a FIFO or character device, the target in
 * place. Never a rename over anything but a regular file. */
typedef struct out_target {
    char *final;  /* rename to this; NULL when writing in place */
    char *tmp;    /* the temporary file, or NULL */
    FILE *f;
} out_target;

static cls_status out_open(out_target *t, const char *path)
{
    memset(t, 0, sizeof *t);
    struct stat ls, st;
    int have = lstat(path, &ls) == 0;
    if (!have && errno != ENOENT) return err_set(CLS_E_IO, "cannot write %s: %s", path, strerror(errno));
    int in_place = 0;
    if (have && S_ISLNK(ls.st_mode)) {
        if (stat(path, &st) != 0)
            return err_set(CLS_E_IO, "%s is a symbolic link to nothing (%s): not written", path, strerror(errno));
        if (S_ISREG(st.st_mode)) {
            t->final = realpath(path, NULL); /* replace the file the link names, keep the link */
            if (!t->final)
                return err_set(CLS_E_IO, "cannot resolve the symbolic link %s: %s", path, strerror(errno));
        } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
            in_place = 1;
        } else {
            return err_set(CLS_E_IO, "%s names a %s: CIFF is written only to a file, a FIFO or a character device",
                           path, S_ISDIR(st.st_mode) ? "folder" : "block device or socket");
        }
    } else if (have && !S_ISREG(ls.st_mode)) {
        if (S_ISFIFO(ls.st_mode) || S_ISCHR(ls.st_mode)) in_place = 1;
        else
            return err_set(CLS_E_IO, "%s is a %s: CIFF is written only to a file, a FIFO or a character device",
                           path, S_ISDIR(ls.st_mode) ? "folder" : "block device or socket");
    }
    if (in_place) {
        int fd = open(path, O_WRONLY | O_NOCTTY);
        if (fd < 0 || !(t->f = fdopen(fd, "wb"))) {
            cls_status s = err_set(CLS_E_IO, "cannot open %s for writing: %s", path, strerror(errno));
            if (fd >= 0) close(fd);
            return s;
        }
        return CLS_OK;
    }
    if (!t->final && !(t->final = strdup(path))) return err_set(CLS_E_NOMEM, "writing %s: out of memory", path);
    /* 0666 less the umask (a CIFF file is for exchange), removed on SIGINT/SIGTERM/SIGHUP */
    int fd = tmp_create(t->final, &t->tmp);
    if (fd < 0 || !(t->f = fdopen(fd, "wb"))) {
        cls_status s = err_set(CLS_E_IO, "cannot create a temporary file beside %s: %s", t->final, strerror(errno));
        if (fd >= 0) {
            close(fd);
            tmp_discard(t->tmp);
        }
        free(t->final);
        t->tmp = t->final = NULL;
        return s;
    }
    return CLS_OK;
}

/* Finishes the write and releases t. prior: the export's status so far (not CLS_OK: abandon the
 * write and return it); write_err: errno of a failed write, or 0. The temporary file is removed
 * on any failure. */
static cls_status out_close(out_target *t, const char *path, cls_status prior, int write_err)
{
    int err = write_err;
    if (t->f) {
        if (fflush(t->f) != 0 && !err) err = errno;
        if (!err && prior == CLS_OK && t->tmp && fsync(fileno(t->f)) != 0) err = errno;
        if (fclose(t->f) != 0 && !err) err = errno;
    }
    if (!err && prior == CLS_OK && t->tmp) {
        struct stat ls;
        /* The target may have changed since out_open: still never rename over a non-file. */
        if (lstat(t->final, &ls) == 0 && !S_ISREG(ls.st_mode)) err = EEXIST;
        else if (rename(t->tmp, t->final) != 0) err = errno;
    }
    if ((err || prior != CLS_OK) && t->tmp) tmp_discard(t->tmp);
    else tmp_release(t->tmp);
    free(t->final);
    memset(t, 0, sizeof *t);
    if (prior != CLS_OK) return prior;
    if (err == EEXIST) return err_set(CLS_E_IO, "writing %s: it was replaced by something that is not a file", path);
    return err ? err_set(CLS_E_IO, "writing %s: %s", path, strerror(err)) : CLS_OK;
}

cls_status cls_ciff_export(const cls_index *idx, const char *ciff_path, const char *description)
{
    if (!idx || !ciff_path) return err_set(CLS_E_ARG, "cls_ciff_export: NULL argument");
    if (crp_has_suffix(ciff_path, ".gz"))
        return err_set(CLS_E_ARG, "%s: export writes plain CIFF, not gzip (write to /dev/stdout and pipe it through "
                       "gzip)", ciff_path);
    /* CIFF would take its counts for the collection's, and has no list of no posting */
    if (idx->shards)
        return err_set(CLS_E_ARG, "%s is shard %u of %u of a collection: CIFF has no place for the collection's "
                       "statistics its scores use; export the whole index", idx->path, idx->shard, idx->shards);
    const uint32_t N = idx->num_docs, T = idx->num_terms;
    if (N > INT32_MAX || T > INT32_MAX)
        return err_set(CLS_E_ARG, "%u documents and %u terms: CIFF counts both in 31 bits", N, T);
    if (idx->num_tokens > INT64_MAX) return err_set(CLS_E_ARG, "token count too large for CIFF");
    cls_status vs = idx_verify_words(idx); /* never carry damaged postings into another format */
    if (vs != CLS_OK) return vs;
    for (uint32_t d = 0; d < N; d++)
        if (idx->doclen[d] > INT32_MAX)
            return err_set(CLS_E_ARG, "document %u: length %u does not fit CIFF's 31 bits", d, idx->doclen[d]);
    uint32_t max_df = 0;
    for (uint32_t t = 0; t < T; t++)
        if (idx->terms[t].df > max_df) max_df = idx->terms[t].df;
    Ciff__Posting *post = malloc(((size_t)max_df + 1) * sizeof *post);
    Ciff__Posting **ptrs = malloc(((size_t)max_df + 1) * sizeof *ptrs);
    if (!post || !ptrs) {
        free(post);
        free(ptrs);
        return err_set(CLS_E_NOMEM, "exporting CIFF: out of memory for a list of %u postings", max_df);
    }
    for (uint32_t i = 0; i < max_df; i++) {
        ciff__posting__init(&post[i]);
        ptrs[i] = &post[i];
    }
    out_target t;
    cls_status s = out_open(&t, ciff_path);
    if (s != CLS_OK) {
        free(post);
        free(ptrs);
        return s;
    }
    writer w = {t.f, NULL, 0, 0};

    Ciff__Header h = CIFF__HEADER__INIT;
    h.version = CIFF_VERSION;
    h.num_postings_lists = h.total_postings_lists = (int32_t)T;
    h.num_docs = h.total_docs = (int32_t)N;
    h.total_terms_in_collection = (int64_t)idx->num_tokens;
    h.average_doclength = idx->avg_doc_len;
    h.description = (char *)(description ? description : "");
    put_message(&w, &h.base);

    uint32_t docs[IDX_MAX_BLOCK], freqs[IDX_MAX_BLOCK];
    for (uint32_t ti = 0; ti < T && !w.err && s == CLS_OK; ti++) {
        const idx_term *e = &idx->terms[ti];
        uint64_t cf = 0;
        uint32_t n = 0, prev = 0;
        for (uint32_t j = 0; j < e->num_blocks && s == CLS_OK; j++) {
            uint64_t b = (uint64_t)e->first_block + j;
            uint32_t c = idx_info_count(idx->blocks[b].info);
            if ((s = idx_decode_block(idx, b, docs, freqs)) != CLS_OK) break;
            for (uint32_t k = 0; k < c; k++, n++) {
                if (freqs[k] > INT32_MAX) {
                    s = err_set(CLS_E_ARG, "term %u: a frequency of %u does not fit CIFF's 31 bits", ti, freqs[k]);
                    break;
                }
                post[n].docid = (int32_t)(n == 0 ? docs[k] : docs[k] - prev);
                post[n].tf = (int32_t)freqs[k];
                prev = docs[k];
                cf += freqs[k];
            }
        }
        if (s != CLS_OK) break;
        Ciff__PostingsList pl = CIFF__POSTINGS_LIST__INIT;
        pl.term.data = (uint8_t *)(uintptr_t)idx_term_text(idx, ti, &pl.term.len);
        pl.df = (int64_t)n;
        pl.cf = (int64_t)cf;
        pl.n_postings = n;
        pl.postings = ptrs;
        put_message(&w, &pl.base);
    }
    for (uint32_t d = 0; d < N && !w.err && s == CLS_OK; d++) {
        Ciff__DocRecord rec = CIFF__DOC_RECORD__INIT;
        const char *no = idx->docno_blob + idx->docno_off[d];
        rec.docid = (int32_t)d;
        rec.collection_docid.len = strlen(no);
        rec.collection_docid.data = (uint8_t *)(uintptr_t)no;
        rec.doclength = (int32_t)idx->doclen[d];
        put_message(&w, &rec.base);
    }
    free(post);
    free(ptrs);
    free(w.buf);
    if (s == CLS_OK && w.err == ENOMEM) s = err_set(CLS_E_NOMEM, "exporting CIFF: out of memory for a message");
    /* read from the mapping as written: no file if the index file shrank meanwhile */
    return out_close(&t, ciff_path, s == CLS_OK ? cls_index_intact(idx) : idx_intact(idx, s), w.err);
}

#endif /* CLSEARCH_CIFF */
