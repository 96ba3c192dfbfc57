/* The index file, at library level: what cls_builder_* puts in comes back out of cls_index_open
 * (statistics, docnos, every posting list decoded block by block with idx_decode_block) and
 * passes cls_index_check; a damaged, truncated, foreign or other-version file is refused with
 * the right status and a message naming the damaged part, never a crash: metadata damage at
 * open, postings damage by cls_index_check and by the engines before they read the postings
 * (the reference engine at creation, the OpenCL engine, on $CLS_TEST_DEVICE, default POCL's CPU
 * device, as it uploads them); and postings forged with consistent checksums, in every codec,
 * are refused by cls_index_check and the reference engine's search, while the device searches
 * them without a fault. Section checksums follow FORMAT.md's chunked definition (written out
 * here, independently of checksum.c), and damage in any chunk of a section several chunks long
 * is found: at open (metadata), by the check and by both engines (postings). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "index/checksum.h"
#include "index/index.h"
#include "index/index_write.h"

#define IDX_BLOCK 128u /* the default block size the fixed-shape tests build with */

/* The layout build_model uses; the defaults except in roundtrip_every_codec. */
static cls_build_opts g_opts = {.codec = CLS_CODEC_BP, .block_size = 128, .pfor_depth = 1};
#include "testutil.h"

/* Analysis without stemming or stopwords: the test controls the terms exactly. */
static const cls_analyzer_opts EXACT = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};

/* Section names as the loader reports them, by section id - 1 (SECTION_NAME in index_file.c). */
static const char *const SECTION[IDX_NSECTIONS] = {"doclen",       "docno-offsets", "docnos",     "terms",
                                                   "term-offsets", "term-strings",  "blocks",     "postings",
                                                   "collection",   "field-offsets", "field-values"};

/* The stored fields every model index keeps (so that no section of the test files is empty;
 * short, since some tests rewrite a file once per byte): doc d's title is absent when d % 7 ==
 * 3, empty when d % 11 == 5, else UTF-8 text naming d (3,000 bytes long for doc 10 of the main
 * model); its url is present when d % 5 == 1. */
static const char *const FIELDS[] = {"title", "url"};
enum { NFIELDS = 2 };
#define MAIN_DOCS 1000u

static const char *model_field(uint32_t ndocs, uint32_t d, uint32_t f, char *buf, size_t cap)
{
    if (f == 0) {
        if (d % 7 == 3) return NULL;
        if (d % 11 == 5) return "";
        if (d == 10 && ndocs == MAIN_DOCS) {
            ck_assert(cap > 3000);
            for (size_t i = 0; i < 3000; i++) buf[i] = (char)('a' + i % 26);
            buf[3000] = '\0';
            return buf;
        }
        snprintf(buf, cap, "\xC3\xAD%u \xE6\x97\xA5", d);
        return buf;
    }
    if (d % 5 != 1) return NULL;
    snprintf(buf, cap, "u/%u?\"", d);
    return buf;
}

/* The folder the test files are written in: the root the model indexes record. */
static const char *model_root(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("x"));
    *strrchr(dir, '/') = '\0';
    return dir;
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* Opens path expecting failure with status want; returns the message (never a handle). */
static const char *open_fails(const char *path, cls_status want, const char *what)
{
    cls_index *idx = (cls_index *)1;
    cls_status s = cls_index_open(path, &idx);
    ck_assert_msg(s == want, "%s: status %d (%s), expected %d; detail: %s", what, (int)s, cls_status_str(s),
                  (int)want, cls_last_error());
    ck_assert_msg(idx == NULL, "%s: failed open left a handle", what);
    ck_assert_msg(*cls_last_error() != '\0', "%s: no detail message", what);
    return cls_last_error();
}

/* Writes data to a fresh path and opens it expecting failure with status want. */
static const char *bytes_fail(const void *data, size_t len, cls_status want, const char *what)
{
    char *path = tu_strdup(tu_tmp_path("bad.idx"));
    tu_write_file(path, data, len);
    static char msg[4096];
    snprintf(msg, sizeof msg, "%s", open_fails(path, want, what));
    remove(path);
    free(path);
    return msg;
}

/* The section table of a file image, parsed the way the loader does. */
static void read_table(const unsigned char *img, size_t len, idx_section_entry t[IDX_NSECTIONS])
{
    ck_assert(len >= sizeof(idx_header) + IDX_NSECTIONS * sizeof(idx_section_entry));
    idx_header h;
    memcpy(&h, img, sizeof h);
    ck_assert_uint_eq(h.num_sections, IDX_NSECTIONS);
    memcpy(t, img + sizeof h, IDX_NSECTIONS * sizeof *t);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) {
        ck_assert_uint_eq(t[i].id, i + 1);
        ck_assert(t[i].offset % IDX_ALIGN == 0);
        ck_assert(t[i].offset + t[i].size <= len);
    }
}

/* Expected content of a test collection: tf[t * ndocs + d] for term t in doc d. */
typedef struct model {
    uint32_t ndocs, nterms;
    const char **terms;
    uint32_t *tf;
    char **docnos;
} model;

static uint32_t mtf(const model *m, uint32_t t, uint32_t d) { return m->tf[(size_t)t * m->ndocs + d]; }

/* Builds the index of m (texts made from the model: each term repeated tf times, terms in an
 * order that differs from doc to doc) at a fresh path, which is returned (caller frees). */
static char *build_model(const model *m)
{
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
    ck_assert_msg(cls_builder_configure(b, &g_opts) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_builder_set_fields(b, FIELDS, NFIELDS) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_builder_add_root(b, CLS_CORPUS_JSONL, model_root()) == CLS_OK, "%s", cls_last_error());
    size_t cap = 1 << 16;
    char *text = malloc(cap);
    ck_assert(text != NULL);
    for (uint32_t d = 0; d < m->ndocs; d++) {
        size_t len = 0;
        for (uint32_t k = 0; k < m->nterms; k++) {
            uint32_t t = (d & 1) ? m->nterms - 1 - k : k;
            for (uint32_t r = 0; r < mtf(m, t, d); r++) {
                /* mixed case and punctuation between tokens: analysis must give the same term */
                const char *w = m->terms[t];
                int n = r % 3 == 2 ? snprintf(text + len, cap - len, "%c%s, ", w[0] - 32, w + 1)
                                   : snprintf(text + len, cap - len, "%s ", w);
                ck_assert(n > 0 && (size_t)n < cap - len);
                len += (size_t)n;
            }
        }
        /* odd documents through cls_builder_add_doc with their fields; even ones too, except
         * those whose fields are all absent, through cls_builder_add */
        char fb[NFIELDS][4096];
        const char *fv[NFIELDS];
        size_t fl[NFIELDS];
        for (uint32_t f = 0; f < NFIELDS; f++) {
            fv[f] = model_field(m->ndocs, d, f, fb[f], sizeof fb[f]);
            fl[f] = fv[f] ? strlen(fv[f]) : 0;
        }
        cls_status s;
        if (!fv[0] && !fv[1] && d % 2 == 0) {
            s = cls_builder_add(b, m->docnos[d], strlen(m->docnos[d]), text, len);
        } else {
            cls_doc doc = {m->docnos[d], strlen(m->docnos[d]), text, len, NFIELDS, fv, fl};
            s = cls_builder_add_doc(b, &doc);
        }
        ck_assert_msg(s == CLS_OK, "doc %u: %s", d, cls_last_error());
    }
    free(text);
    char *path = tu_strdup(tu_tmp_path("model.idx"));
    ck_assert_msg(cls_builder_write(b, path) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b);
    return path;
}

/* Whether the model's index has the stored fields (0: a version 3 file, which has none). */
static int g_fields = 1;

/* What an index with the model's fields says beyond each document's values. */
static void check_model_root(const cls_index *idx)
{
    ck_assert(cls_index_field_name(idx, NFIELDS) == NULL);
    ck_assert(cls_index_field(idx, 0, NFIELDS, NULL) == NULL);
    uint32_t none;
    ck_assert_int_eq(cls_index_field_find(idx, "body", &none), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "body") && strstr(cls_last_error(), "title, url"), "%s", cls_last_error());
    ck_assert_str_eq(cls_index_collection(idx), "jsonl");
    ck_assert_uint_eq(cls_index_root_count(idx), 1);
    char *root = realpath(model_root(), NULL);
    ck_assert(root != NULL);
    ck_assert_str_eq(cls_index_root(idx, 0), root);
    free(root);
    ck_assert(cls_index_root(idx, 1) == NULL);
}

/* Checks an opened index against its model: stats, docnos, stored fields, term dictionary,
 * every block. */
static void check_model(const cls_index *idx, const model *m, const char *path)
{
    uint64_t postings = 0, tokens = 0;
    uint32_t present = 0;
    for (uint32_t t = 0; t < m->nterms; t++) {
        uint32_t df = 0;
        for (uint32_t d = 0; d < m->ndocs; d++) {
            df += mtf(m, t, d) > 0;
            tokens += mtf(m, t, d);
        }
        postings += df;
        present += df > 0;
    }
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_docs, m->ndocs);
    ck_assert_uint_eq(st.num_terms, present);
    ck_assert_uint_eq(st.num_postings, postings);
    ck_assert_uint_eq(st.num_tokens, tokens);
    ck_assert_uint_eq(st.block_size, g_opts.block_size);
    ck_assert_int_eq(st.codec, g_opts.codec);
    ck_assert(st.avg_doc_len == (m->ndocs ? (double)tokens / m->ndocs : 0.0));
    if (path) {
        struct stat sb;
        ck_assert_int_eq(stat(path, &sb), 0);
        ck_assert_uint_eq(st.file_bytes, (uint64_t)sb.st_size);
    }
    cls_analyzer_opts an;
    cls_index_analyzer(idx, &an);
    ck_assert(an.possessive == EXACT.possessive && an.lowercase == EXACT.lowercase &&
              an.stopwords == EXACT.stopwords && an.stem == EXACT.stem);

    for (uint32_t d = 0; d < m->ndocs; d++) {
        const char *dn = cls_index_docno(idx, d);
        ck_assert_msg(dn && strcmp(dn, m->docnos[d]) == 0, "doc %u: docno '%s', expected '%s'", d, dn ? dn : "(null)",
                      m->docnos[d]);
        uint32_t len = 0;
        for (uint32_t t = 0; t < m->nterms; t++) len += mtf(m, t, d);
        ck_assert_uint_eq(idx->doclen[d], len);
    }
    ck_assert(cls_index_docno(idx, m->ndocs) == NULL);
    ck_assert(cls_index_docno(idx, UINT32_MAX) == NULL);

    /* the stored fields and the root (none in a version 3 file) */
    if (!g_fields) {
        ck_assert_uint_eq(cls_index_field_count(idx), 0);
        ck_assert(cls_index_field_name(idx, 0) == NULL);
        ck_assert(cls_index_field(idx, 0, 0, NULL) == NULL);
        ck_assert_str_eq(cls_index_collection(idx), "");
        ck_assert_uint_eq(cls_index_root_count(idx), 0);
        ck_assert(cls_index_root(idx, 0) == NULL);
    }
    for (uint32_t f = 0; g_fields && f < NFIELDS; f++) {
        ck_assert_str_eq(cls_index_field_name(idx, f), FIELDS[f]);
        uint32_t got = 99;
        ck_assert_int_eq(cls_index_field_find(idx, FIELDS[f], &got), CLS_OK);
        ck_assert_uint_eq(got, f);
        for (uint32_t d = 0; d < m->ndocs; d++) {
            char buf[4096];
            const char *want = model_field(m->ndocs, d, f, buf, sizeof buf);
            size_t len = 12345;
            const char *v = cls_index_field(idx, d, f, &len);
            if (!want) {
                ck_assert_msg(v == NULL && len == 0, "doc %u field %s: present, expected absent", d, FIELDS[f]);
                continue;
            }
            ck_assert_msg(v != NULL, "doc %u field %s: absent", d, FIELDS[f]);
            ck_assert_uint_eq(len, strlen(want));
            ck_assert_msg(strcmp(v, want) == 0, "doc %u field %s: '%s', expected '%s'", d, FIELDS[f], v, want);
        }
        ck_assert(cls_index_field(idx, m->ndocs, f, NULL) == NULL);
    }
    if (g_fields) check_model_root(idx);

    /* the dictionary holds exactly the present terms, in memcmp order */
    for (uint32_t i = 0; i + 1 < idx->num_terms; i++) {
        uint64_t a = idx->term_off[i], an_ = idx->term_off[i + 1] - a;
        uint64_t b = idx->term_off[i + 1], bn = idx->term_off[i + 2] - b;
        int c = memcmp(idx->term_blob + a, idx->term_blob + b, an_ < bn ? an_ : bn);
        ck_assert_msg(c < 0 || (c == 0 && an_ < bn), "terms %u and %u out of order", i, i + 1);
    }

    uint32_t docs[IDX_MAX_BLOCK], freqs[IDX_MAX_BLOCK];
    uint64_t blocks_seen = 0;
    for (uint32_t t = 0; t < m->nterms; t++) {
        uint32_t id = idx_lookup(idx, m->terms[t], strlen(m->terms[t]));
        uint32_t df = 0;
        for (uint32_t d = 0; d < m->ndocs; d++) df += mtf(m, t, d) > 0;
        if (df == 0) {
            ck_assert_msg(id == UINT32_MAX, "absent term '%s' found", m->terms[t]);
            continue;
        }
        ck_assert_msg(id != UINT32_MAX, "term '%s' missing", m->terms[t]);
        const idx_term *e = &idx->terms[id];
        ck_assert_uint_eq(e->df, df);
        ck_assert_uint_eq(e->num_blocks, (df + g_opts.block_size - 1) / g_opts.block_size);
        blocks_seen += e->num_blocks;
        uint32_t d = 0, seen = 0; /* walk the model's list alongside the decoded blocks */
        for (uint32_t j = 0; j < e->num_blocks; j++) {
            const idx_block *bl = &idx->blocks[e->first_block + j];
            uint32_t n = idx_info_count(bl->info);
            uint32_t want_n = df - seen < g_opts.block_size ? df - seen : g_opts.block_size;
            ck_assert_msg(n == want_n, "term '%s' block %u: %u postings, expected %u", m->terms[t], j, n, want_n);
            ck_assert_msg(idx_decode_block(idx, e->first_block + j, docs, freqs) == CLS_OK, "%s", cls_last_error());
            for (uint32_t i = 0; i < n; i++) {
                while (d < m->ndocs && mtf(m, t, d) == 0) d++;
                ck_assert(d < m->ndocs);
                ck_assert_msg(docs[i] == d && freqs[i] == mtf(m, t, d),
                              "term '%s' block %u posting %u: (%u, tf %u), expected (%u, tf %u)", m->terms[t], j, i,
                              docs[i], freqs[i], d, mtf(m, t, d));
                if (i > 0) ck_assert(docs[i] > docs[i - 1]);
                d++;
            }
            ck_assert_uint_eq(bl->last, docs[n - 1]);
            seen += n;
        }
        ck_assert_uint_eq(seen, df);
    }
    ck_assert_uint_eq(blocks_seen, idx->num_blocks);
    /* and what opening leaves to first use passes, on one thread and on several */
    ck_assert_msg(cls_index_check(idx, 1) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_index_check(idx, 3) == CLS_OK, "%s", cls_last_error());
}

static void model_free(model *m)
{
    for (uint32_t d = 0; d < m->ndocs; d++) free(m->docnos[d]);
    free(m->docnos);
    free(m->tf);
}

static void model_init(model *m, uint32_t ndocs, const char **terms, uint32_t nterms)
{
    m->ndocs = ndocs;
    m->nterms = nterms;
    m->terms = terms;
    m->tf = calloc((size_t)ndocs * nterms + 1, sizeof *m->tf);
    m->docnos = calloc(ndocs + 1, sizeof *m->docnos);
    ck_assert(m->tf && m->docnos);
    for (uint32_t d = 0; d < ndocs; d++) {
        char buf[64];
        snprintf(buf, sizeof buf, "DOC-%05u_x", d);
        m->docnos[d] = tu_strdup(buf);
    }
}

/* The main collection: lists of every interesting length and shape. */
enum { T_EVERY, T_FULL1, T_FULL2, T_FULLPLUS1, T_SINGLE, T_SPARSE, T_HEAVY, T_RANDOM, T_LAST, T_FIRST, NT };
static const char *MAIN_TERMS[NT] = {"every", "fullone", "fulltwo", "fullplus", "single",
                                     "sparse", "heavy", "random", "lastdoc", "firstdoc"};
/* Documents with no terms at all. Not docID 0: a first document without terms is its own test
 * (empty_documents_first), so that a failure there does not hide everything else. */
static const uint32_t EMPTY_DOCS[] = {1, 2, 500, MAIN_DOCS - 2};

static int is_empty_doc(uint32_t d)
{
    for (size_t i = 0; i < sizeof EMPTY_DOCS / sizeof *EMPTY_DOCS; i++)
        if (EMPTY_DOCS[i] == d) return 1;
    return 0;
}

static void main_model(model *m)
{
    model_init(m, MAIN_DOCS, MAIN_TERMS, NT);
    uint64_t rs = 7;
    uint32_t full1 = 0, full2 = 0, plus1 = 0;
    for (uint32_t d = 0; d < MAIN_DOCS; d++) {
        if (is_empty_doc(d)) continue;
        uint32_t *tf = m->tf;
        tf[T_EVERY * MAIN_DOCS + d] = 1 + d % 3; /* 996 postings: 7 full blocks + a partial one */
        if (d % 3 == 0 && full1 < IDX_BLOCK) tf[T_FULL1 * MAIN_DOCS + d] = 1, full1++;     /* exactly 128 */
        if (d % 2 == 1 && full2 < 2 * IDX_BLOCK) tf[T_FULL2 * MAIN_DOCS + d] = 2, full2++; /* exactly 256 */
        if (d >= 600 && plus1 < IDX_BLOCK + 1) tf[T_FULLPLUS1 * MAIN_DOCS + d] = 1 + d % 2, plus1++; /* 129 */
        if (d == 777) tf[T_SINGLE * MAIN_DOCS + d] = 4;                 /* a one-posting list */
        if (d % 97 == 5) tf[T_SPARSE * MAIN_DOCS + d] = 1;              /* wide docID gaps */
        if (d % 50 == 3) tf[T_HEAVY * MAIN_DOCS + d] = d == 803 ? 300 : 1 + d % 17; /* a wide tf */
        if (tu_rand(&rs) % 4 == 0) tf[T_RANDOM * MAIN_DOCS + d] = 1 + (uint32_t)(tu_rand(&rs) % 6);
        if (d == MAIN_DOCS - 1) tf[T_LAST * MAIN_DOCS + d] = 1;          /* the largest docID */
        if (d == 3) tf[T_FIRST * MAIN_DOCS + d] = 2;                     /* after two empty docs */
    }
    ck_assert_uint_eq(full1, IDX_BLOCK);
    ck_assert_uint_eq(full2, 2 * IDX_BLOCK);
    ck_assert_uint_eq(plus1, IDX_BLOCK + 1);
}

/* Builds the main collection's index at a fresh path (caller removes and frees it). */
static char *main_index(model *m)
{
    main_model(m);
    return build_model(m);
}

/* ---- round trips -------------------------------------------------------------------------- */

START_TEST(roundtrip_blocks_and_stats)
{
    model m;
    char *path = main_index(&m);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    check_model(idx, &m, path);
    /* the shapes the model promises */
    uint32_t id = idx_lookup(idx, "every", 5);
    ck_assert_uint_eq(idx->terms[id].num_blocks, 8);
    ck_assert_uint_eq(idx_info_count(idx->blocks[idx->terms[id].first_block + 7].info), 996 - 7 * IDX_BLOCK);
    ck_assert_uint_eq(idx->terms[idx_lookup(idx, "fullone", 7)].num_blocks, 1);
    ck_assert_uint_eq(idx->terms[idx_lookup(idx, "fulltwo", 7)].num_blocks, 2);
    ck_assert_uint_eq(idx->terms[idx_lookup(idx, "fullplus", 8)].num_blocks, 2);
    ck_assert_uint_eq(idx->terms[idx_lookup(idx, "single", 6)].df, 1);
    ck_assert_uint_eq(idx_lookup(idx, "Every", 5), UINT32_MAX); /* lowercased at index time */
    ck_assert_uint_eq(idx_lookup(idx, "ever", 4), UINT32_MAX);
    ck_assert_uint_eq(idx_lookup(idx, "everyx", 6), UINT32_MAX);
    for (size_t i = 0; i < sizeof EMPTY_DOCS / sizeof *EMPTY_DOCS; i++)
        ck_assert_uint_eq(idx->doclen[EMPTY_DOCS[i]], 0);
    cls_index_close(idx);
    /* opening twice gives two independent handles */
    cls_index *a, *b;
    ck_assert_int_eq(cls_index_open(path, &a), CLS_OK);
    ck_assert_int_eq(cls_index_open(path, &b), CLS_OK);
    cls_index_close(a);
    check_model(b, &m, path);
    cls_index_close(b);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

/* A section's checksum as docs/FORMAT.md defines it, written from the document rather than with
 * checksum.c, so that each checks the other: XXH3_64bits of each 8 MiB chunk, then XXH3_64bits
 * of the chunk digests as consecutive little-endian u64s. */
#define FORMAT_CHUNK ((uint64_t)8 << 20)
static uint64_t format_sum(const void *data, uint64_t size)
{
    uint64_t n = (size + FORMAT_CHUNK - 1) / FORMAT_CHUNK;
    unsigned char *le = malloc((size_t)n * 8 + 1);
    ck_assert(le != NULL);
    for (uint64_t c = 0; c < n; c++) {
        uint64_t at = c * FORMAT_CHUNK, len = size - at < FORMAT_CHUNK ? size - at : FORMAT_CHUNK;
        uint64_t h = XXH3_64bits((const unsigned char *)data + at, (size_t)len);
        for (int b = 0; b < 8; b++) le[c * 8 + b] = (unsigned char)(h >> (8 * b));
    }
    uint64_t sum = XXH3_64bits(le, (size_t)n * 8);
    free(le);
    return sum;
}

/* Every checksum of a file image made consistent with its bytes. */
static void rehash_all(unsigned char *img, size_t len)
{
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) t[i].xxh = format_sum(img + t[i].offset, t[i].size);
    memcpy(img + sizeof(idx_header), t, sizeof t);
    idx_header h;
    memcpy(&h, img, sizeof h);
    h.table_xxh = XXH64(t, sizeof t, 0);
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(img, &h, sizeof h);
}

/* Every term of the main model, as one query. */
static const char *main_query(void)
{
    static char q[256];
    size_t at = 0;
    for (int t = 0; t < NT; t++) at += (size_t)snprintf(q + at, sizeof q - at, "%s ", MAIN_TERMS[t]);
    return q;
}

/* A search of query and of "every fullone" (two lists that start at docID 0, so a forgery that
 * decodes them alike makes AND candidates of its docIDs) in every mode on engine e: its
 * status, the first one that is not CLS_OK. On success every hit is a document of idx. */
static cls_status search_all_modes(cls_engine *e, const cls_index *idx, const char *query)
{
    cls_batch *bt;
    cls_results *r;
    ck_assert_int_eq(cls_batch_create(idx, &bt), CLS_OK);
    ck_assert_int_eq(cls_batch_add(bt, "q1", query), CLS_OK);
    ck_assert_int_eq(cls_batch_add(bt, "q2", "every fullone"), CLS_OK);
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    cls_status s = CLS_OK;
    for (int m = 0; m < CLS_NUM_MODES && s == CLS_OK; m++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 50;
        p.mode = (cls_mode)m;
        s = cls_engine_search(e, bt, &p, r);
        if (s != CLS_OK) break;
        for (size_t q = 0; q < 2; q++) {
            size_t n;
            const uint32_t *docs;
            const float *scores;
            cls_results_get(r, q, &n, &docs, &scores);
            ck_assert_uint_le(n, p.k);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(docs[i] < idx->num_docs, "query %zu hit %zu: docID %u", q + 1, i, docs[i]);
        }
    }
    cls_results_free(r);
    cls_batch_free(bt);
    return s;
}

/* An image whose postings words or block parameter words were forged, with every checksum made
 * consistent: it opens (nothing structural changed), cls_index_check refuses it naming the
 * section, term and block, the reference engine starts (the checksum agrees) and its search
 * fails cleanly with CLS_E_CORRUPT; with dev, the OpenCL engine refuses to start with
 * CLS_E_CORRUPT and the check's very message (check_blocks ran every block on the device). */
static void forged_contained(const unsigned char *img, size_t len, const char *what, const char *dev)
{
    char *path = tu_strdup(tu_tmp_path("forged.idx"));
    tu_write_file(path, img, len);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s: open: %s", what, cls_last_error());
    cls_status s = cls_index_check(idx, 2);
    ck_assert_msg(s == CLS_E_CORRUPT, "%s: check: status %d", what, (int)s);
    const char *msg = cls_last_error();
    ck_assert_msg((strstr(msg, "section 'postings'") || strstr(msg, "section 'blocks'")) && strstr(msg, "term '") &&
                  strstr(msg, "block "), "%s: check: '%s'", what, msg);
    char *check_msg = tu_strdup(msg);
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, "ref", &e) == CLS_OK, "%s: ref: %s", what, cls_last_error());
    s = search_all_modes(e, idx, main_query());
    ck_assert_msg(s == CLS_E_CORRUPT, "%s: ref search: status %d", what, (int)s);
    ck_assert_msg(strstr(cls_last_error(), "term '") && strstr(cls_last_error(), "block "), "%s: ref search: '%s'",
                  what, cls_last_error());
    cls_engine_free(e);
    for (int cached = 0; dev && cached < 2; cached++) { /* the whole index on the device, then lists cached */
        cls_engine_opts o;
        cls_engine_opts_init(&o);
        o.device = dev;
        uint64_t lists = idx->num_words * 4 + idx->num_blocks * sizeof(idx_block);
        if (cached) o.device_mem = 2 * (((uint64_t)idx->num_docs + 1) * 4 + lists / 3) + (32 << 10);
        s = cls_engine_create_opts(idx, &o, &e);
        ck_assert_msg(s == CLS_E_CORRUPT, "%s: %s%s: status %d: %s", what, dev, cached ? " (lists cached)" : "", (int)s,
                      cls_last_error());
        ck_assert_msg(strcmp(cls_last_error(), check_msg) == 0, "%s: %s%s: '%s', the check said '%s'", what, dev,
                      cached ? " (lists cached)" : "", cls_last_error(), check_msg);
    }
    free(check_msg);
    cls_index_close(idx);
    remove(path);
    free(path);
}

/* The main model in every codec and block size (and pfor depth): the same postings decode
 * back and pass cls_index_check, and a block parameter word forged with consistent checksums
 * opens but is refused by the check and the reference engine's search. */
START_TEST(roundtrip_every_codec)
{
    static const uint32_t sizes[] = {64, 128, 256, 512};
    model m;
    main_model(&m);
    for (int c = 0; c < CLS_NUM_CODECS; c++)
        for (unsigned k = 0; k < 4 + (c == CLS_CODEC_PFOR ? 3 : 0); k++) {
            g_opts = (cls_build_opts){.codec = (cls_codec)c, .block_size = k < 4 ? sizes[k] : 128,
                                      .pfor_depth = k < 4 ? 1 : k - 4 + (k > 4)};
            char *path = build_model(&m);
            cls_index *idx;
            ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s B=%u: %s", cls_codec_name((cls_codec)c),
                          g_opts.block_size, cls_last_error());
            check_model(idx, &m, path);
            /* forge block 3's docID parameter word, checksums made consistent */
            uint64_t at = (const unsigned char *)&idx->blocks[3].dparam - (const unsigned char *)idx->map;
            cls_index_close(idx);
            size_t len;
            unsigned char *img = tu_read_file(path, &len);
            uint32_t forged = c == CLS_CODEC_RAW ? 1 : 0xFFFFFFFFu;
            memcpy(img + at, &forged, 4);
            rehash_all(img, len);
            forged_contained(img, len, "a forged parameter word", NULL);
            free(img);
            remove(path);
            free(path);
        }
    g_opts = (cls_build_opts){.codec = CLS_CODEC_BP, .block_size = 128, .pfor_depth = 1};
    model_free(&m);
}
END_TEST

/* cls_index_check reports the first problem in file order whatever the thread count: the
 * postings checksum before any block, else the lowest bad block; a max_score forged with
 * consistent checksums is found by the check and by a device engine's start (its pruning relies
 * on max_score), while the reference engine, which never reads it, searches. */
START_TEST(check_reports_the_first_problem)
{
    model m;
    char *path = main_index(&m);
    size_t len;
    unsigned char *good = tu_read_file(path, &len);
    unsigned char *img = malloc(len);
    ck_assert(img != NULL);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(good, len, t);
    const idx_section_entry *bs = &t[IDX_S_BLOCKS - 1], *ws = &t[IDX_S_WORDS - 1];
    ck_assert_uint_ge(bs->size / sizeof(idx_block), 12);
    for (int k = 0; k < 3; k++) {
        memcpy(img, good, len);
        uint32_t bad = 0xFFFFFFFFu;
        float big = 1e30f;
        /* k 0: blocks 9 and 4 forged (parameter word, max_score); 1: and a word flipped; 2: block 7's max_score */
        if (k < 2) {
            memcpy(img + bs->offset + 9 * sizeof(idx_block) + offsetof(idx_block, dparam), &bad, 4);
            memcpy(img + bs->offset + 4 * sizeof(idx_block) + offsetof(idx_block, max_score), &big, 4);
        } else {
            memcpy(img + bs->offset + 7 * sizeof(idx_block) + offsetof(idx_block, max_score), &big, 4);
        }
        rehash_all(img, len);
        if (k == 1) img[ws->offset + ws->size - 1] ^= 0x20; /* after the rehash: the checksum disagrees */
        char *p = tu_strdup(tu_tmp_path("first.idx"));
        tu_write_file(p, img, len);
        cls_index *idx;
        ck_assert_msg(cls_index_open(p, &idx) == CLS_OK, "%s", cls_last_error());
        const char *want = k == 0 ? "(block 4): max_score does not match" : k == 1 ? "'postings': checksum mismatch"
                                                                              : "(block 7): max_score does not match";
        for (unsigned th = 1; th <= 8; th *= 2)
            for (int rep = 0; rep < 3; rep++) {
                ck_assert_int_eq(cls_index_check(idx, th), CLS_E_CORRUPT);
                ck_assert_msg(strstr(cls_last_error(), want), "case %d, %u threads: '%s', expected '%s'", k, th,
                              cls_last_error(), want);
            }
        cls_engine *e;
        if (k == 2) {
            ck_assert_int_eq(cls_engine_create(idx, "ref", &e), CLS_OK);
            ck_assert_int_eq(search_all_modes(e, idx, main_query()), CLS_OK);
            cls_engine_free(e);
        }
        if (k != 1) { /* the device's check names the block the host's names */
            ck_assert_int_eq(cls_engine_create(idx, tu_device(), &e), CLS_E_CORRUPT);
            ck_assert_msg(strstr(cls_last_error(), want), "case %d on %s: '%s', expected '%s'", k, tu_device(),
                          cls_last_error(), want);
        }
        cls_index_close(idx);
        remove(p);
        free(p);
    }
    free(img);
    free(good);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

/* Postings forged with consistent checksums, in every codec (and pfor's deepest and shallowest
 * trees, and small blocks): random words, all-ones words, every parameter word all ones (the
 * widest widths, most exceptions, longest unary part), random parameter words over random
 * words, every word 1000 (raw: docIDs past num_docs, alike in lists that start alike). Each opens, is refused by cls_index_check and the reference engine's search, and the
 * device decodes and searches it without reading or writing out of bounds (under ASan too). */
START_TEST(forged_postings_every_codec)
{
    static const struct { cls_codec c; uint32_t B; unsigned depth; } lay[] = {
        {CLS_CODEC_RAW, 128, 1}, {CLS_CODEC_BP, 128, 1},  {CLS_CODEC_PFOR, 128, 1},  {CLS_CODEC_OPTPFD, 128, 1},
        {CLS_CODEC_RICE, 128, 1}, {CLS_CODEC_PFOR, 128, 0}, {CLS_CODEC_PFOR, 64, 3}, {CLS_CODEC_RICE, 64, 1}};
    model m;
    main_model(&m);
    for (size_t l = 0; l < sizeof lay / sizeof *lay; l++) {
        g_opts = (cls_build_opts){.codec = lay[l].c, .block_size = lay[l].B, .pfor_depth = lay[l].depth};
        char *path = build_model(&m);
        size_t len;
        unsigned char *good = tu_read_file(path, &len);
        unsigned char *img = malloc(len);
        ck_assert(img != NULL);
        idx_section_entry t[IDX_NSECTIONS];
        read_table(good, len, t);
        const idx_section_entry *ws = &t[IDX_S_WORDS - 1], *bs = &t[IDX_S_BLOCKS - 1];
        ck_assert(ws->size >= 64);
        uint64_t rs = 1234 + l;
        for (int f = 0; f < 5; f++) {
            memcpy(img, good, len);
            for (uint64_t i = 0; i < ws->size / 4 && f != 2; i++) {
                uint32_t v = f == 1 ? 0xFFFFFFFFu : f == 4 ? 1000 : (uint32_t)tu_rand(&rs);
                memcpy(img + ws->offset + 4 * i, &v, 4);
            }
            for (uint64_t b = 0; b < bs->size / sizeof(idx_block) && (f == 2 || f == 3); b++)
                for (int p = 0; p < 2; p++) {
                    uint32_t v = f == 2 ? 0xFFFFFFFFu : (uint32_t)tu_rand(&rs);
                    memcpy(img + bs->offset + b * sizeof(idx_block) + offsetof(idx_block, dparam) + 4 * p, &v, 4);
                }
            rehash_all(img, len);
            static const char *const kinds[] = {"random words", "all-ones words", "all-ones parameter words",
                                                "random parameter words and words", "every word 1000"};
            char what[128];
            snprintf(what, sizeof what, "%s B=%u depth %u: %s", cls_codec_name(lay[l].c), lay[l].B, lay[l].depth,
                     kinds[f]);
            forged_contained(img, len, what, tu_device());
        }
        free(img);
        free(good);
        remove(path);
        free(path);
    }
    g_opts = (cls_build_opts){.codec = CLS_CODEC_BP, .block_size = 128, .pfor_depth = 1};
    model_free(&m);
}
END_TEST

/* ---- Forgeries against the device's check ------------------------------------------------
 *
 * Images forged with every checksum made consistent, in every codec layout: each field of four
 * blocks' records, postings words, the header's codec and pfor depth. For each, what opening,
 * cls_index_check, the reference engine (a query a term, and all of them, in every mode) and the
 * device engine do. The device must refuse exactly what the check refuses, with its message (it
 * checks every block before any search), refuse at least what the reference refuses, and where
 * nothing refuses return the reference's results bit for bit. Every case is run and counted
 * before anything is asserted, so the counts also describe an engine that fails. */
typedef struct forge_counts {
    unsigned forged, open_refused, check_refused, ref_refused, dev_refused, dev_accepted_refused, dev_accepted_ref;
    unsigned dev_differs;
    unsigned violations;
    char first[512]; /* the first violation */
} forge_counts;

/* Every mode's top 50 of every query of bt into one digest; *st the first failure. */
static uint64_t results_digest(cls_engine *e, cls_batch *bt, cls_status *st)
{
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    XXH64_state_t *h = XXH64_createState();
    ck_assert(h != NULL);
    XXH64_reset(h, 0);
    *st = CLS_OK;
    for (int m = 0; m < CLS_NUM_MODES && *st == CLS_OK; m++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 50;
        p.mode = (cls_mode)m;
        if ((*st = cls_engine_search(e, bt, &p, r)) != CLS_OK) break;
        for (size_t q = 0; q < cls_batch_count(bt); q++) {
            size_t n;
            const uint32_t *docs;
            const float *scores;
            cls_results_get(r, q, &n, &docs, &scores);
            XXH64_update(h, &n, sizeof n);
            XXH64_update(h, docs, n * 4);
            XXH64_update(h, scores, n * 4);
        }
    }
    uint64_t d = XXH64_digest(h);
    XXH64_freeState(h);
    cls_results_free(r);
    return d;
}

static void forge_violation(forge_counts *c, const char *what, const char *fmt, const char *a, const char *b)
{
    if (c->violations++ == 0) {
        int n = snprintf(c->first, sizeof c->first, "%s: ", what);
        snprintf(c->first + n, sizeof c->first - (size_t)n, fmt, a, b);
    }
}

static void forge_case(const unsigned char *img, size_t len, const char *what, forge_counts *c)
{
    char *path = tu_strdup(tu_tmp_path("forge.idx"));
    tu_write_file(path, img, len);
    c->forged++;
    cls_index *idx;
    if (cls_index_open(path, &idx) != CLS_OK) { /* the same open for every engine */
        c->open_refused++;
        remove(path);
        free(path);
        return;
    }
    cls_status cs = cls_index_check(idx, 2);
    ck_assert_msg(cs == CLS_OK || cs == CLS_E_CORRUPT, "%s: check: %s", what, cls_last_error());
    char *check_msg = tu_strdup(cs == CLS_OK ? "" : cls_last_error());
    c->check_refused += cs != CLS_OK;
    cls_batch *bt;
    ck_assert_int_eq(cls_batch_create(idx, &bt), CLS_OK);
    for (int t = 0; t < NT; t++) ck_assert_int_eq(cls_batch_add(bt, MAIN_TERMS[t], MAIN_TERMS[t]), CLS_OK);
    ck_assert_int_eq(cls_batch_add(bt, "all", main_query()), CLS_OK);
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, "ref", &e) == CLS_OK, "%s: ref: %s", what, cls_last_error());
    cls_status rs;
    uint64_t rd = results_digest(e, bt, &rs);
    cls_engine_free(e);
    ck_assert_msg(rs == CLS_OK || rs == CLS_E_CORRUPT, "%s: ref: %s", what, cls_last_error());
    c->ref_refused += rs != CLS_OK;
    cls_status ds = cls_engine_create(idx, tu_device(), &e);
    char *dev_msg = tu_strdup(ds == CLS_OK ? "" : cls_last_error());
    uint64_t dd = 0;
    if (ds == CLS_OK) {
        dd = results_digest(e, bt, &ds);
        cls_engine_free(e);
    }
    ck_assert_msg(ds == CLS_OK || ds == CLS_E_CORRUPT, "%s: %s: %s", what, tu_device(), cls_last_error());
    c->dev_refused += ds != CLS_OK;
    if (ds == CLS_OK && (cs != CLS_OK || rs != CLS_OK)) c->dev_accepted_refused++;
    if (ds == CLS_OK && rs != CLS_OK) c->dev_accepted_ref++;
    if (ds == CLS_OK && cs == CLS_OK && rs == CLS_OK && dd != rd) c->dev_differs++;
    if ((ds != CLS_OK) != (cs != CLS_OK))
        forge_violation(c, what, "the device %s, the check %s", ds != CLS_OK ? "refused" : "accepted",
                        cs != CLS_OK ? check_msg : "accepted");
    else if (ds != CLS_OK && strcmp(dev_msg, check_msg) != 0)
        forge_violation(c, what, "the device said '%s', the check '%s'", dev_msg, check_msg);
    else if (rs != CLS_OK && cs == CLS_OK)
        forge_violation(c, what, "the reference refused what the check accepts%s%s", "", "");
    else if (ds == CLS_OK && rs == CLS_OK && dd != rd)
        forge_violation(c, what, "the device's results differ from the reference's%s%s", "", "");
    free(dev_msg);
    free(check_msg);
    cls_batch_free(bt);
    cls_index_close(idx);
    remove(path);
    free(path);
}

START_TEST(forged_device_refuses_as_check)
{
    static const struct { cls_codec c; uint32_t B; unsigned depth; } lay[] = {
        {CLS_CODEC_RAW, 128, 1}, {CLS_CODEC_BP, 128, 1},  {CLS_CODEC_PFOR, 128, 1},  {CLS_CODEC_OPTPFD, 128, 1},
        {CLS_CODEC_RICE, 128, 1}, {CLS_CODEC_PFOR, 128, 0}, {CLS_CODEC_PFOR, 64, 3}, {CLS_CODEC_RICE, 64, 1}};
    static const char *const FIELD[8] = {"first", "last", "offset", "info", "dparam", "fparam", "max_score", "reserved"};
    forge_counts c = {0};
    model m;
    main_model(&m);
    for (size_t l = 0; l < sizeof lay / sizeof *lay; l++) {
        g_opts = (cls_build_opts){.codec = lay[l].c, .block_size = lay[l].B, .pfor_depth = lay[l].depth};
        char *path = build_model(&m);
        size_t len;
        unsigned char *good = tu_read_file(path, &len), *img = malloc(len);
        ck_assert(img != NULL);
        idx_section_entry t[IDX_NSECTIONS];
        read_table(good, len, t);
        const idx_section_entry *ws = &t[IDX_S_WORDS - 1], *bs = &t[IDX_S_BLOCKS - 1];
        const uint64_t nb = bs->size / sizeof(idx_block), nw = ws->size / 4;
        ck_assert(nb >= 4 && nw >= 16);
        char what[160];
        uint64_t rs = 99 + l;
        /* the header's codec, every other one, and pfor depth */
        for (uint32_t v = 0; v < CLS_NUM_CODECS + 2; v++) {
            idx_header h;
            memcpy(img, good, len);
            memcpy(&h, img, sizeof h);
            if (v < CLS_NUM_CODECS) {
                if (v == h.codec) continue;
                h.codec = v;
            } else {
                h.pfor_depth = (h.pfor_depth + (v == CLS_NUM_CODECS ? 1 : 3)) % 4;
            }
            memcpy(img, &h, sizeof h);
            rehash_all(img, len);
            snprintf(what, sizeof what, "%s B=%u depth %u: header %s %u", cls_codec_name(lay[l].c), lay[l].B,
                     lay[l].depth, v < CLS_NUM_CODECS ? "codec" : "pfor depth", v < CLS_NUM_CODECS ? v : h.pfor_depth);
            forge_case(img, len, what, &c);
        }
        /* each field of four blocks' records (the stream parameters and max_score, which opening
         * cannot judge, of the first and the last): one bit, a larger value, all ones */
        const uint64_t blocks[4] = {0, nb - 1, 1, nb / 2};
        for (int k = 0; k < 4; k++)
            for (int f = 0; f < 8; f++)
                for (int v = 0; v < 3 && (k < 2 || f < 4 || f == 7); v++) {
                    memcpy(img, good, len);
                    size_t at = bs->offset + blocks[k] * sizeof(idx_block) + 4 * (size_t)f;
                    uint32_t x;
                    memcpy(&x, img + at, 4);
                    x = v == 0 ? x ^ 1u : v == 1 ? x + (f == 6 ? 0x00800000u : 0x100u) : 0xFFFFFFFFu;
                    memcpy(img + at, &x, 4);
                    rehash_all(img, len);
                    snprintf(what, sizeof what, "%s B=%u depth %u: block %llu %s = 0x%08x", cls_codec_name(lay[l].c),
                             lay[l].B, lay[l].depth, (unsigned long long)blocks[k], FIELD[f], x);
                    forge_case(img, len, what, &c);
                }
        /* postings words: one bit, a random word */
        for (int k = 0; k < 10; k++) {
            memcpy(img, good, len);
            uint64_t i = tu_rand(&rs) % nw;
            size_t at = ws->offset + 4 * i;
            uint32_t x;
            memcpy(&x, img + at, 4);
            x = k % 2 ? (uint32_t)tu_rand(&rs) : x ^ (1u << (tu_rand(&rs) % 32));
            memcpy(img + at, &x, 4);
            rehash_all(img, len);
            snprintf(what, sizeof what, "%s B=%u depth %u: word %llu = 0x%08x", cls_codec_name(lay[l].c), lay[l].B,
                     lay[l].depth, (unsigned long long)i, x);
            forge_case(img, len, what, &c);
        }
        free(img);
        free(good);
        remove(path);
        free(path);
    }
    g_opts = (cls_build_opts){.codec = CLS_CODEC_BP, .block_size = 128, .pfor_depth = 1};
    model_free(&m);
    printf("forged %u indexes (checksums consistent): %u refused at open; of the rest, the check refused %u, the "
           "reference's searches %u, %s %u; %s accepted %u that the check or the reference refuses (%u that the "
           "reference refuses), and returned other results than the reference's for %u\n", c.forged, c.open_refused,
           c.check_refused, c.ref_refused, tu_device(), c.dev_refused, tu_device(), c.dev_accepted_refused, c.dev_accepted_ref,
           c.dev_differs);
    fflush(stdout);
    ck_assert_msg(c.violations == 0, "%u forgeries where %s and the check disagree; the first: %s", c.violations,
                  tu_device(), c.first);
}
END_TEST

START_TEST(roundtrip_small_shapes)
{
    /* one document, one term, one posting */
    static const char *one[] = {"hello"};
    model m;
    model_init(&m, 1, one, 1);
    m.tf[0] = 1;
    char *path = build_model(&m);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    check_model(idx, &m, path);
    ck_assert_uint_eq(idx->num_blocks, 1);
    cls_index_close(idx);
    remove(path);
    free(path);
    model_free(&m);

    /* 128 documents of one term: a list that fills exactly one block, then 129 */
    for (uint32_t n = IDX_BLOCK; n <= IDX_BLOCK + 1; n++) {
        model_init(&m, n, one, 1);
        for (uint32_t d = 0; d < n; d++) m.tf[d] = 1 + d % 5;
        path = build_model(&m);
        ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
        check_model(idx, &m, path);
        ck_assert_uint_eq(idx->num_blocks, n == IDX_BLOCK ? 1 : 2);
        cls_index_close(idx);
        remove(path);
        free(path);
        model_free(&m);
    }
}
END_TEST

/* Documents without terms before any document with terms (the builder has seen no term yet when
 * it sorts the first document's terms), and an index of nothing but such documents. */
START_TEST(empty_documents_first)
{
    static const char *terms[] = {"hello", "world"};
    model m;
    model_init(&m, 4, terms, 2);
    m.tf[0 * 4 + 2] = 1; /* docs 0 and 1 empty, then hello in 2, world in 2 and 3 */
    m.tf[1 * 4 + 2] = 2;
    m.tf[1 * 4 + 3] = 1;
    char *path = build_model(&m);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    check_model(idx, &m, path);
    cls_index_close(idx);
    remove(path);
    free(path);
    model_free(&m);

    /* only documents without terms (one of them only punctuation) */
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "e1", 2, "", 0), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "e2", 2, NULL, 0), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "e3", 2, " ,.;- ", 6), CLS_OK);
    path = tu_strdup(tu_tmp_path("noterms.idx"));
    ck_assert_msg(cls_builder_write(b, path) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b);
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_docs, 3);
    ck_assert_uint_eq(st.num_terms, 0);
    ck_assert_uint_eq(st.num_postings, 0);
    ck_assert_uint_eq(st.num_tokens, 0);
    ck_assert(st.avg_doc_len == 0.0);
    ck_assert_uint_eq(st.postings_bytes, 0);
    ck_assert_str_eq(cls_index_docno(idx, 0), "e1");
    ck_assert_str_eq(cls_index_docno(idx, 2), "e3");
    ck_assert(cls_index_docno(idx, 3) == NULL);
    for (uint32_t d = 0; d < 3; d++) ck_assert_uint_eq(idx->doclen[d], 0);
    cls_index_close(idx);
    remove(path);
    free(path);
}
END_TEST

START_TEST(roundtrip_zero_documents)
{
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
    char *path = tu_strdup(tu_tmp_path("empty.idx"));
    ck_assert_msg(cls_builder_write(b, path) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_docs, 0);
    ck_assert_uint_eq(st.num_terms, 0);
    ck_assert_uint_eq(st.num_postings, 0);
    ck_assert_uint_eq(st.num_tokens, 0);
    ck_assert(st.avg_doc_len == 0.0);
    ck_assert_uint_eq(st.block_size, IDX_BLOCK);
    ck_assert(st.file_bytes >= sizeof(idx_header) + IDX_NSECTIONS * sizeof(idx_section_entry));
    ck_assert(cls_index_docno(idx, 0) == NULL);
    ck_assert_uint_eq(idx_lookup(idx, "x", 1), UINT32_MAX);
    ck_assert_uint_eq(idx_lookup(idx, "", 0), UINT32_MAX);
    cls_index_close(idx);
    remove(path);
    free(path);
}
END_TEST

START_TEST(builder_rejects_bad_docnos)
{
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
    static const struct { const char *s; size_t n; } bad[] = {
        {"", 0}, {"a b", 3}, {" ", 1}, {"ab ", 3}, {"a\tb", 3}, {"a\nb", 3}, {"a\0b", 3}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cls_status s = cls_builder_add(b, bad[i].s, bad[i].n, "text", 4);
        ck_assert_msg(s == CLS_E_FORMAT, "docno %zu: status %d, expected CLS_E_FORMAT", i, (int)s);
        ck_assert(strstr(cls_last_error(), "docno") != NULL);
    }
    /* the rejected documents left nothing behind: the next one is docID 0 */
    ck_assert_int_eq(cls_builder_add(b, "good", 4, "alpha beta", 10), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "a b", 3, "gamma", 5), CLS_E_FORMAT);
    ck_assert_int_eq(cls_builder_add(b, "also-good", 9, "alpha", 5), CLS_OK);
    char *path = tu_strdup(tu_tmp_path("docnos.idx"));
    ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
    cls_builder_free(b);
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(path, &idx), CLS_OK);
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_docs, 2);
    ck_assert_uint_eq(st.num_terms, 2); /* gamma never made it in */
    ck_assert_uint_eq(st.num_tokens, 3);
    ck_assert_str_eq(cls_index_docno(idx, 0), "good");
    ck_assert_str_eq(cls_index_docno(idx, 1), "also-good");
    ck_assert_uint_eq(idx_lookup(idx, "gamma", 5), UINT32_MAX);
    cls_index_close(idx);
    remove(path);
    free(path);
}
END_TEST

/* A document id given twice: refused by default, naming both documents, for one thread and
 * many; allowed, the first is kept and the rest counted. */
START_TEST(builder_duplicate_ids)
{
    for (unsigned threads = 1; threads <= 3; threads += 2) {
        cls_build_opts o;
        cls_build_defaults(&o);
        o.threads = threads;
        cls_builder *b;
        ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
        ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d1", 2, "alpha", 5), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d2", 2, "beta", 4), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d1", 2, "gamma", 5), CLS_E_FORMAT);
        ck_assert_msg(strstr(cls_last_error(), "'d1' was already given to document 1") != NULL, "%s", cls_last_error());
        ck_assert_int_eq(cls_builder_allow_duplicate_ids(b, 1), CLS_E_ARG); /* after the first document */
        ck_assert_int_eq(cls_builder_add(b, "d3", 2, "delta", 5), CLS_OK); /* still usable */
        cls_builder_free(b);

        ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
        ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
        ck_assert_int_eq(cls_builder_allow_duplicate_ids(b, 1), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d1", 2, "alpha", 5), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d1", 2, "gamma", 5), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d1", 2, "gamma", 5), CLS_OK);
        ck_assert_int_eq(cls_builder_add(b, "d2", 2, "beta", 4), CLS_OK);
        ck_assert_uint_eq(cls_builder_duplicates(b), 2);
        char *path = tu_strdup(tu_tmp_path("dups.idx"));
        ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
        cls_builder_free(b);
        cls_index *idx;
        ck_assert_int_eq(cls_index_open(path, &idx), CLS_OK);
        cls_index_stats st;
        cls_index_get_stats(idx, &st);
        ck_assert_uint_eq(st.num_docs, 2);
        ck_assert_uint_eq(idx_lookup(idx, "gamma", 5), UINT32_MAX); /* the skipped documents' text */
        cls_batch *bt;
        ck_assert_int_eq(cls_batch_create(idx, &bt), CLS_OK);
        ck_assert_int_eq(cls_batch_add(bt, "q1", "alpha"), CLS_OK);
        ck_assert_int_eq(cls_batch_add(bt, "q2", "beta"), CLS_OK);
        cls_batch_free(bt);
        cls_index_close(idx);
        remove(path);
        free(path);
    }
}
END_TEST

/* Lists the names in dir that contain needle. */
static int count_names(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    ck_assert(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += strstr(e->d_name, needle) != NULL;
    closedir(d);
    return n;
}

START_TEST(write_failures_leave_nothing)
{
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "d1", 2, "some words", 10), CLS_OK);
    /* a missing folder */
    char *dir = tu_strdup(tu_tmp_path("nofolder"));
    char path[4200];
    snprintf(path, sizeof path, "%s/out.idx", dir);
    ck_assert_int_eq(cls_builder_write(b, path), CLS_E_IO);
    ck_assert(strstr(cls_last_error(), dir) != NULL);
    ck_assert(!tu_exists(path));
    ck_assert(!tu_exists(dir));
    /* the target is a folder: the rename fails, and the temporary file is removed */
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/target", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_eq(cls_builder_write(b, path), CLS_E_IO);
    ck_assert_int_eq(count_names(dir, ".tmp."), 0);
    ck_assert_int_eq(rmdir(path), 0);
    /* and the builder still writes fine afterwards */
    ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
    ck_assert_int_eq(count_names(dir, ".tmp."), 0);
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(path, &idx), CLS_OK);
    cls_index_close(idx);
    remove(path);
    rmdir(dir);
    cls_builder_free(b);
    free(dir);
}
END_TEST

/* ---- a file that shrinks while in use ------------------------------------------------------- */

/* A call on an index whose file another program cut: CLS_OK (it read nothing past the cut) or
 * CLS_E_IO saying the file shrank, never another error or a crash; 1 for CLS_E_IO. */
static int shrink_says(cls_status s, const char *what, size_t cut)
{
    ck_assert_msg(s == CLS_OK || s == CLS_E_IO, "cut at %zu: %s: status %d (%s): %s", cut, what, (int)s,
                  cls_status_str(s), cls_last_error());
    if (s == CLS_OK) return 0;
    ck_assert_msg(strstr(cls_last_error(), "shrank while in use"), "cut at %zu: %s: %s", cut, what, cls_last_error());
    return 1;
}

/* The main index's file cut while it is open (at the middle of each section, at its last byte, to
 * nothing), as another program's truncate would: every reader of the mapping goes on without a
 * SIGBUS. Engines made before the cut and after, on the reference engine and on the device; the
 * check; statistics, docnos and stored fields; codec statistics,
 * recode and CIFF export: each either never read past the cut (CLS_OK) or fails with CLS_E_IO
 * naming the shrink, and a failed write leaves no file, not even a temporary one. What reads the
 * whole file (the check, recode) always fails, and cls_index_intact says the file shrank. */
START_TEST(shrunk_while_in_use)
{
    model m;
    char *orig = main_index(&m);
    size_t len;
    unsigned char *img = tu_read_file(orig, &len);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    size_t cuts[IDX_NSECTIONS + 2];
    size_t ncuts = 0;
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) cuts[ncuts++] = (size_t)(t[i].offset + t[i].size / 2);
    cuts[ncuts++] = (size_t)(t[IDX_NSECTIONS - 1].offset + t[IDX_NSECTIONS - 1].size - 1);
    cuts[ncuts++] = 0;
    char *dir = tu_strdup(tu_tmp_path("shrunk"));
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    char path[4200], out[4200];
    snprintf(path, sizeof path, "%s/in.idx", dir);
    for (size_t c = 0; c < ncuts; c++) {
        size_t cut = cuts[c];
        tu_write_file(path, img, len);
        cls_index *idx;
        ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
        ck_assert_int_eq(cls_index_intact(idx), CLS_OK);
        cls_engine *before[2];
        ck_assert_msg(cls_engine_create(idx, "ref", &before[0]) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(cls_engine_create(idx, tu_device(), &before[1]) == CLS_OK, "%s", cls_last_error());

        ck_assert_int_eq(truncate(path, (off_t)cut), 0);
        /* engines made before the cut search (the reference engine reads the postings now) */
        for (int k = 0; k < 2; k++) {
            shrink_says(search_all_modes(before[k], idx, main_query()), k ? "device search" : "reference search", cut);
            cls_engine_free(before[k]);
        }
        /* what returns values rather than a status: whatever the zeros give, no fault */
        cls_index_stats st;
        cls_index_get_stats(idx, &st);
        for (uint32_t d = 0; d < m.ndocs; d++) {
            const char *no = cls_index_docno(idx, d);
            ck_assert(no != NULL && strlen(no) <= strlen(m.docnos[d]));
            for (uint32_t f = 0; f < NFIELDS; f++) {
                size_t n;
                const char *v = cls_index_field(idx, d, f, &n);
                ck_assert(!v || strlen(v) <= n);
            }
        }
        uint32_t every = idx_lookup(idx, "every", 5);
        ck_assert(every == UINT32_MAX || every < idx->num_terms);
        ck_assert_int_eq(cls_index_check(idx, 2), CLS_E_IO);
        shrink_says(CLS_E_IO, "check", cut);
        /* engines made after the cut */
        cls_engine *after;
        cls_status s = cls_engine_create(idx, "ref", &after);
        if (!shrink_says(s, "reference engine", cut)) {
            shrink_says(search_all_modes(after, idx, main_query()), "reference search", cut);
            cls_engine_free(after);
        }
        s = cls_engine_create(idx, tu_device(), &after);
        if (!shrink_says(s, "device engine", cut)) {
            shrink_says(search_all_modes(after, idx, main_query()), "device search", cut);
            cls_engine_free(after);
        }
        /* writers that read the mapping as they go: no file unless all they read was whole */
        shrink_says(cls_index_codec_stats(idx, CLS_CODEC_RAW, 64, 0, &st), "codec statistics", cut);
        cls_build_opts bo;
        cls_build_defaults(&bo);
        snprintf(out, sizeof out, "%s/out.idx", dir);
        ck_assert_int_eq(cls_index_recode(idx, &bo, out), CLS_E_IO);
        shrink_says(CLS_E_IO, "recode", cut);
        ck_assert(!tu_exists(out));
        snprintf(out, sizeof out, "%s/out.ciff", dir);
        s = cls_ciff_export(idx, out, "shrunk");
        if (s != CLS_E_ARG || !strstr(cls_last_error(), "without CIFF")) /* built without: nothing to see */
            ck_assert_int_eq(tu_exists(out), !shrink_says(s, "CIFF export", cut));
        remove(out);
        ck_assert_int_eq(count_names(dir, ".tmp."), 0);
        ck_assert_int_eq(cls_index_intact(idx), CLS_E_IO);
        char want[128];
        snprintf(want, sizeof want, "from %zu to %zu bytes", len, cut);
        ck_assert_msg(strstr(cls_last_error(), want), "cut at %zu: %s", cut, cls_last_error());
        cls_index_close(idx);
    }
    remove(path);
    rmdir(dir);
    free(dir);
    free(img);
    remove(orig);
    free(orig);
    model_free(&m);
}
END_TEST

/* ---- damaged and foreign files ---------------------------------------------------------------- */

/* Every cut below the end of the last section: CLS_E_CORRUPT, never a crash. */
START_TEST(truncated_files)
{
    model m;
    char *path = main_index(&m);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    const size_t H = sizeof(idx_header), TBL = IDX_NSECTIONS * sizeof(idx_section_entry);
    size_t cuts[64], nc = 0;
    cuts[nc++] = 0;
    cuts[nc++] = 1;
    cuts[nc++] = 7;
    cuts[nc++] = 63;
    cuts[nc++] = H;
    cuts[nc++] = H + 1;
    cuts[nc++] = H + TBL / 2;
    cuts[nc++] = H + TBL - 1;
    cuts[nc++] = H + TBL;
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) {
        ck_assert_msg(t[i].size > 0, "section %s is empty in the test index", SECTION[i]);
        cuts[nc++] = t[i].offset;
        cuts[nc++] = t[i].offset + t[i].size / 2;
        cuts[nc++] = t[i].offset + t[i].size - 1;
    }
    uint64_t end = t[IDX_NSECTIONS - 1].offset + t[IDX_NSECTIONS - 1].size;
    cuts[nc++] = end - 1;
    for (size_t i = 0; i < nc; i++) {
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cuts[i], len);
        const char *msg = bytes_fail(img, cuts[i], CLS_E_CORRUPT, what);
        /* a cut inside a section names it (the earliest one that no longer fits) */
        for (unsigned s = 0; s < IDX_NSECTIONS; s++) {
            if (cuts[i] >= H + TBL && t[s].offset + t[s].size > cuts[i]) {
                char name[64];
                snprintf(name, sizeof name, "'%s'", SECTION[s]);
                ck_assert_msg(strstr(msg, name) != NULL, "%s: message '%s' does not name %s", what, msg, name);
                break;
            }
        }
    }
    /* a sweep over many more lengths: corrupt every time, whatever the cut */
    for (size_t cut = 0; cut < end; cut += 37) bytes_fail(img, cut, CLS_E_CORRUPT, "sweep");
    free(img);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

/* The file length must be the one the section table implies: a copy one byte short (whose last
 * byte may be only the padding after the postings section) and a copy with bytes appended are
 * both refused. */
START_TEST(file_size_must_match_table)
{
    model m;
    char *path = main_index(&m);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    ck_assert(len % IDX_ALIGN == 0);
    const char *msg = bytes_fail(img, len - 1, CLS_E_CORRUPT, "one byte short");
    ck_assert_msg(strstr(msg, "truncated") != NULL, "'%s'", msg);
    unsigned char *big = calloc(len + IDX_ALIGN, 1);
    ck_assert(big != NULL);
    memcpy(big, img, len);
    bytes_fail(big, len + 1, CLS_E_CORRUPT, "one byte appended");
    bytes_fail(big, len + IDX_ALIGN, CLS_E_CORRUPT, "an aligned block of zeros appended");
    free(big);
    free(img);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

static void flip(unsigned char *img, size_t at) { img[at] ^= 0x5A; }

/* A flipped byte in a metadata section is refused at open, naming the section and its
 * checksum. One in the postings words opens (open does not hash them), and is found before
 * anything reads them: cls_index_check, the reference engine's creation and the OpenCL engine's
 * upload each refuse it as a postings checksum mismatch. */
START_TEST(flipped_byte_in_each_section)
{
    model m;
    char *path = main_index(&m);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) {
        ck_assert(t[i].size > 0);
        uint64_t at[3] = {t[i].offset, t[i].offset + t[i].size / 2, t[i].offset + t[i].size - 1};
        for (int j = 0; j < 3; j++) {
            flip(img, at[j]);
            char what[96], name[64];
            snprintf(what, sizeof what, "byte %llu flipped in section %s", (unsigned long long)at[j], SECTION[i]);
            snprintf(name, sizeof name, "section '%s'", SECTION[i]);
            if (i + 1 != IDX_S_WORDS) {
                const char *msg = bytes_fail(img, len, CLS_E_CORRUPT, what);
                ck_assert_msg(strstr(msg, name) != NULL, "%s: message '%s' does not name it", what, msg);
                ck_assert_msg(strstr(msg, "checksum") != NULL, "%s: message '%s'", what, msg);
            } else {
                char *p = tu_strdup(tu_tmp_path("words.idx"));
                tu_write_file(p, img, len);
                cls_index *idx;
                ck_assert_msg(cls_index_open(p, &idx) == CLS_OK, "%s: open: %s", what, cls_last_error());
                const char *engines[] = {"check", "ref", tu_device(), "host:2"};
                for (int k = 0; k < 4; k++) {
                    cls_engine *e = NULL;
                    cls_status s = k == 0 ? cls_index_check(idx, 2) : cls_engine_create(idx, engines[k], &e);
                    ck_assert_msg(s == CLS_E_CORRUPT && e == NULL, "%s: %s: status %d", what, engines[k], (int)s);
                    const char *msg = cls_last_error();
                    ck_assert_msg(strstr(msg, name) && strstr(msg, "checksum") && strstr(msg, p), "%s: %s: '%s'", what,
                                  engines[k], msg);
                }
                cls_index_close(idx);
                remove(p);
                free(p);
            }
            flip(img, at[j]);
        }
    }
    /* undamaged after all the flips back */
    char *again = tu_strdup(tu_tmp_path("again.idx"));
    tu_write_file(again, img, len);
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(again, &idx), CLS_OK);
    check_model(idx, &m, NULL);
    cls_index_close(idx);
    remove(again);
    free(again);
    free(img);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

START_TEST(flipped_byte_in_header_and_table)
{
    model m;
    char *path = main_index(&m);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    const size_t H = sizeof(idx_header), TBL = IDX_NSECTIONS * sizeof(idx_section_entry);
    for (size_t at = 0; at < H + TBL; at++) {
        flip(img, at);
        char what[64];
        snprintf(what, sizeof what, "byte %zu flipped (%s)", at, at < H ? "header" : "section table");
        const char *msg = bytes_fail(img, len, CLS_E_CORRUPT, what);
        if (at < 8) ck_assert_msg(strstr(msg, "magic") != NULL, "%s: '%s'", what, msg);
        else if (at < H) ck_assert_msg(strstr(msg, "'header'") != NULL, "%s: '%s'", what, msg);
        else ck_assert_msg(strstr(msg, "'section table'") != NULL, "%s: '%s'", what, msg);
        flip(img, at);
    }
    free(img);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

/* Any single flipped byte anywhere: refused as CLS_E_CORRUPT at open, the padding between
 * sections too (no checksum covers it; open checks it is zero); in the postings words, opened
 * and refused by cls_index_check. An unknown analyzer bit is refused as well. */
START_TEST(flipped_byte_anywhere)
{
    static const char *terms[] = {"alpha", "beta", "gamma", "delta"};
    model m;
    model_init(&m, 300, terms, 4);
    for (uint32_t d = 0; d < 300; d++)
        for (uint32_t t = 0; t < 4; t++) m.tf[t * 300 + d] = (d * (t + 3) + 1) % (t + 2); /* doc 0 has terms */
    char *path = build_model(&m);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    char *p = tu_strdup(tu_tmp_path("flip.idx"));
    size_t padding = 0;
    for (size_t at = 0; at < len; at += 3) {
        flip(img, at);
        tu_write_file(p, img, len);
        cls_index *idx = NULL;
        cls_status s = cls_index_open(p, &idx);
        int in_section = at < sizeof(idx_header) + sizeof t;
        for (unsigned i = 0; i < IDX_NSECTIONS; i++) in_section |= at >= t[i].offset && at < t[i].offset + t[i].size;
        const idx_section_entry *ws = &t[IDX_S_WORDS - 1];
        if (at >= ws->offset && at < ws->offset + ws->size) {
            ck_assert_msg(s == CLS_OK, "byte %zu (postings): status %d", at, (int)s);
            ck_assert_msg(cls_index_check(idx, 1) == CLS_E_CORRUPT, "byte %zu (postings): check passed", at);
            cls_index_close(idx);
        } else if (in_section) {
            ck_assert_msg(s == CLS_E_CORRUPT, "byte %zu: status %d", at, (int)s);
        } else {
            /* the padding between sections is zero by the format, and checked at open */
            ck_assert_msg(s == CLS_E_CORRUPT, "byte %zu (padding): status %d", at, (int)s);
            padding++;
        }
        flip(img, at);
    }
    ck_assert(padding > 0); /* some padding was hit, or the test proves less than it says */
    /* an analyzer bit this build does not know (bit 4), with the header checksum made good */
    idx_header h;
    memcpy(&h, img, sizeof h);
    h.analyzer |= 16u;
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(img, &h, sizeof h);
    tu_write_file(p, img, len);
    cls_index *bad = NULL;
    ck_assert_int_eq(cls_index_open(p, &bad), CLS_E_CORRUPT);
    ck_assert_msg(strstr(cls_last_error(), "unknown analyzer bits") != NULL, "%s", cls_last_error());
    remove(p);
    free(p);
    free(img);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

/* A header for another format version, with a valid header checksum. */
static void set_version(unsigned char *img, uint32_t v)
{
    idx_header h;
    memcpy(&h, img, sizeof h);
    h.version = v;
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(img, &h, sizeof h);
}

START_TEST(other_version)
{
    model m;
    char *path = main_index(&m);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    const uint32_t versions[] = {0, 1, 2, IDX_VERSION + 1, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        set_version(img, versions[i]);
        char what[64], num[32];
        snprintf(what, sizeof what, "version %u", versions[i]);
        const char *msg = bytes_fail(img, len, CLS_E_VERSION, what);
        snprintf(num, sizeof num, "version %u", versions[i]);
        ck_assert_msg(strstr(msg, num) != NULL, "message '%s' does not say %s", msg, num);
        /* cut to the header alone: still a version error, not a table or section complaint */
        bytes_fail(img, sizeof(idx_header), CLS_E_VERSION, "other version, header only");
    }
    set_version(img, IDX_VERSION); /* the same bytes as before: opens */
    char *p = tu_strdup(tu_tmp_path("v1.idx"));
    tu_write_file(p, img, len);
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(p, &idx), CLS_OK);
    cls_index_close(idx);
    remove(p);
    free(p);
    /* a whole version-2 file: this layout with one XXH64 (seed 0) per section, as version 2
     * wrote it: refused as another version, with what to do, not as damage */
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) t[i].xxh = XXH64(img + t[i].offset, (size_t)t[i].size, 0);
    memcpy(img + sizeof(idx_header), t, sizeof t);
    idx_header h;
    memcpy(&h, img, sizeof h);
    h.table_xxh = XXH64(t, sizeof t, 0);
    memcpy(img, &h, sizeof h);
    set_version(img, 2);
    const char *msg = bytes_fail(img, len, CLS_E_VERSION, "a version-2 file");
    ck_assert_msg(strstr(msg, "index format version 2, this build reads versions 3 and 4") && strstr(msg, "rebuild"),
                  "'%s'", msg);
    free(img);
    remove(path);
    free(path);
    model_free(&m);
}
END_TEST

/* The version 3 file of the same index as the version 4 image img: its sections 1 to 8 laid out
 * after an 8-entry table, as version 3 writes them (the sections' bytes, hence their checksums,
 * unchanged); *out_len its length. */
static unsigned char *as_version_3(const unsigned char *img, size_t len, size_t *out_len)
{
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    idx_section_entry t3[IDX_NSECTIONS_V3];
    uint64_t at = 384; /* 128 + 8 x 32, a multiple of 64 */
    for (unsigned i = 0; i < IDX_NSECTIONS_V3; i++) {
        t3[i] = t[i];
        t3[i].offset = at;
        at = (at + t[i].size + 63) / 64 * 64;
    }
    unsigned char *v3 = calloc((size_t)at, 1);
    ck_assert(v3 != NULL);
    for (unsigned i = 0; i < IDX_NSECTIONS_V3; i++) memcpy(v3 + t3[i].offset, img + t[i].offset, (size_t)t[i].size);
    memcpy(v3 + sizeof(idx_header), t3, sizeof t3);
    idx_header h;
    memcpy(&h, img, sizeof h);
    h.version = 3;
    h.num_sections = IDX_NSECTIONS_V3;
    h.table_xxh = XXH64(t3, sizeof t3, 0);
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(v3, &h, sizeof h);
    *out_len = (size_t)at;
    return v3;
}

/* Version 3 (no sections 9 to 11) still opens, as an index without fields or roots: the same
 * documents and postings, the check passes, the reference engine searches it, and recode
 * writes it as version 4 without fields. A version 4 file claiming version 3 (11 sections), or
 * a version 3 file claiming 4, is damaged. */
START_TEST(version_3_still_reads)
{
    model m;
    char *path = main_index(&m);
    size_t len, len3;
    unsigned char *img = tu_read_file(path, &len);
    unsigned char *v3 = as_version_3(img, len, &len3);
    char *p3 = tu_strdup(tu_tmp_path("v3.idx"));
    tu_write_file(p3, v3, len3);
    cls_index *idx;
    ck_assert_msg(cls_index_open(p3, &idx) == CLS_OK, "%s", cls_last_error());
    g_fields = 0;
    check_model(idx, &m, p3);
    cls_engine *e;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &e), CLS_OK);
    ck_assert_int_eq(search_all_modes(e, idx, main_query()), CLS_OK);
    cls_engine_free(e);
    char *pr = tu_strdup(tu_tmp_path("v3-recoded.idx"));
    cls_build_opts o = g_opts;
    ck_assert_msg(cls_index_recode(idx, &o, pr) == CLS_OK, "%s", cls_last_error());
    cls_index_close(idx);
    ck_assert_msg(cls_index_open(pr, &idx) == CLS_OK, "%s", cls_last_error());
    idx_header h;
    memcpy(&h, idx->map, sizeof h);
    ck_assert_uint_eq(h.version, IDX_VERSION);
    check_model(idx, &m, pr);
    cls_index_close(idx);
    g_fields = 1;

    set_version(img, 3);
    const char *msg = bytes_fail(img, len, CLS_E_CORRUPT, "version 4 file marked 3");
    ck_assert_msg(strstr(msg, "section count"), "'%s'", msg);
    set_version(v3, 4);
    msg = bytes_fail(v3, len3, CLS_E_CORRUPT, "version 3 file marked 4");
    ck_assert_msg(strstr(msg, "section count"), "'%s'", msg);
    remove(pr), remove(p3), remove(path);
    free(pr), free(p3), free(path), free(v3), free(img);
    model_free(&m);
}
END_TEST

/* ---- chunked checksums ------------------------------------------------------------------------ */

/* checksum.c against FORMAT.md's definition (format_sum): sizes around the chunk size, empty
 * included, on any number of threads, one part or many hashed as one pool. */
START_TEST(checksum_definition)
{
    ck_assert_uint_eq(IDX_CHUNK, FORMAT_CHUNK);
    const uint64_t C = IDX_CHUNK;
    const uint64_t sizes[] = {0, 1, 4095, C - 1, C, C + 1, 2 * C, 3 * C + 5};
    enum { NS = sizeof sizes / sizeof *sizes };
    unsigned char *buf = malloc((size_t)(3 * C + 5));
    ck_assert(buf != NULL);
    uint64_t rs = 7;
    for (size_t i = 0; i < 3 * C + 5; i += 8) {
        uint64_t r = tu_rand(&rs);
        memcpy(buf + i, &r, i + 8 <= 3 * C + 5 ? 8 : 3 * C + 5 - i);
    }
    uint64_t want[NS];
    ck_part parts[NS];
    for (size_t i = 0; i < NS; i++) {
        parts[i] = (ck_part){buf + i, sizes[i]}; /* unaligned starts too */
        want[i] = format_sum(buf + i, sizes[i]);
        ck_assert_uint_eq(ck_nchunks(sizes[i]), (sizes[i] + C - 1) / C);
    }
    ck_assert_uint_eq(want[0], 0x2D06800538D394C2ull); /* an empty section: no chunk (FORMAT.md) */
    const unsigned threads[] = {1, 2, 3, 16};
    for (size_t k = 0; k < 4; k++) {
        uint64_t got[NS];
        for (size_t i = 0; i < NS; i++) {
            ck_assert_int_eq(ck_sums(&parts[i], 1, threads[k], &got[i]), CLS_OK);
            ck_assert_msg(got[i] == want[i], "size %llu, %u threads", (unsigned long long)sizes[i], threads[k]);
        }
        memset(got, 0, sizeof got);
        ck_assert_int_eq(ck_sums(parts, NS, threads[k], got), CLS_OK);
        for (size_t i = 0; i < NS; i++)
            ck_assert_msg(got[i] == want[i], "pool: size %llu, %u threads", (unsigned long long)sizes[i], threads[k]);
    }
    /* a byte in the middle chunk matters */
    buf[C + C / 2] ^= 1;
    uint64_t got;
    ck_assert_int_eq(ck_sums(&parts[NS - 1], 1, 2, &got), CLS_OK);
    ck_assert(got != want[NS - 1]);
    free(buf);
}
END_TEST

/* An index with sections several chunks long, written by idx_write_lists straight from lists:
 * N documents with 40-byte docnos (the docnos section), T terms in every document, raw codec (the
 * postings: about 8 T N bytes). Frequencies and lengths vary so scores differ. */
static char *big_index(uint32_t N, uint32_t T)
{
    uint32_t *doclen = malloc((size_t)N * 4), *docs = malloc((size_t)N * T * 4), *freqs = malloc((size_t)N * T * 4);
    uint64_t *docno_off = malloc(((size_t)N + 1) * 8), *term_off = malloc(((size_t)T + 1) * 8);
    uint64_t *list_start = malloc(((size_t)T + 1) * 8);
    char *docnos = malloc((size_t)N * 41), *terms = malloc((size_t)T * 3 + 1);
    ck_assert(doclen && docs && freqs && docno_off && term_off && list_start && docnos && terms);
    for (uint32_t d = 0; d < N; d++) {
        char name[64]; /* 40 characters for d < 10^7 */
        ck_assert_int_eq(snprintf(name, sizeof name, "doc-%07u-abcdefghijklmnopqrstuvwxyz01", d), 40);
        memcpy(docnos + (size_t)d * 41, name, 41);
        docno_off[d] = (uint64_t)d * 41;
        doclen[d] = d % 17;
    }
    docno_off[N] = (uint64_t)N * 41;
    for (uint32_t t = 0; t < T; t++) {
        char name[16]; /* 3 characters for t < 100 */
        ck_assert_int_eq(snprintf(name, sizeof name, "t%02u", t), 3);
        memcpy(terms + t * 3, name, 3);
        term_off[t] = t * 3;
        list_start[t] = (uint64_t)t * N;
        for (uint32_t d = 0; d < N; d++) {
            uint32_t tf = 1 + ((d * 2654435761u) ^ (t * 40503u)) % 7 % 5;
            docs[(size_t)t * N + d] = d;
            freqs[(size_t)t * N + d] = tf;
            doclen[d] += tf;
        }
    }
    term_off[T] = (uint64_t)T * 3;
    list_start[T] = (uint64_t)T * N;
    idx_lists l = {.analyzer = 0, .num_docs = N, .doclen = doclen, .docno_off = docno_off, .docno_blob = docnos,
                   .docno_blob_len = docno_off[N], .num_terms = T, .term_off = term_off, .term_blob = terms,
                   .list_start = list_start, .docs = docs, .freqs = freqs};
    cls_build_opts o = {.codec = CLS_CODEC_RAW, .block_size = 128, .pfor_depth = 0};
    char *path = tu_strdup(tu_tmp_path("big.idx"));
    ck_assert_msg(idx_write_lists(path, &l, &o) == CLS_OK, "%s", cls_last_error());
    free(doclen), free(docs), free(freqs), free(docno_off), free(term_off), free(list_start), free(docnos), free(terms);
    return path;
}

/* The same searches on the reference engine and on dev give the same documents and scores bit
 * for bit (as test_query asserts for every algorithm), hits required. */
static void same_as_ref(cls_index *idx, const char *dev)
{
    static const char *queries[] = {"t00 t05 t13 t26", "t26", "t01 t02 t03 t04 t20 t21 t22 t23 t24 t25"};
    cls_batch *bt;
    ck_assert_int_eq(cls_batch_create(idx, &bt), CLS_OK);
    static const char *qids[] = {"q1", "q2", "q3"};
    for (int q = 0; q < 3; q++) ck_assert_int_eq(cls_batch_add(bt, qids[q], queries[q]), CLS_OK);
    cls_engine *e[2];
    ck_assert_msg(cls_engine_create(idx, "ref", &e[0]) == CLS_OK, "ref: %s", cls_last_error());
    ck_assert_msg(cls_engine_create(idx, dev, &e[1]) == CLS_OK, "%s: %s", dev, cls_last_error());
    cls_results *r[2];
    ck_assert_int_eq(cls_results_create(&r[0]), CLS_OK);
    ck_assert_int_eq(cls_results_create(&r[1]), CLS_OK);
    for (int m = 0; m < CLS_NUM_MODES; m++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 100;
        p.mode = (cls_mode)m;
        for (int k = 0; k < 2; k++) ck_assert_msg(cls_engine_search(e[k], bt, &p, r[k]) == CLS_OK, "%s", cls_last_error());
        for (size_t q = 0; q < 3; q++) {
            size_t n[2];
            const uint32_t *docs[2];
            const float *scores[2];
            for (int k = 0; k < 2; k++) cls_results_get(r[k], q, &n[k], &docs[k], &scores[k]);
            ck_assert_uint_eq(n[0], 100);
            ck_assert_uint_eq(n[1], n[0]);
            ck_assert_msg(memcmp(docs[0], docs[1], n[0] * 4) == 0 && memcmp(scores[0], scores[1], n[0] * 4) == 0,
                          "mode %d, query %zu: the device's results differ from the reference's", m, q + 1);
        }
    }
    for (int k = 0; k < 2; k++) cls_results_free(r[k]), cls_engine_free(e[k]);
    cls_batch_free(bt);
}

/* Sections several chunks long: the writer's checksums are FORMAT.md's; the intact file opens,
 * passes the check, and uploads in several chunks to a device that answers as the reference
 * does. A flipped byte anywhere in a multi-chunk docnos section (a chunk's middle, just past a
 * chunk boundary, the last byte) is refused at open; in the postings (a middle chunk's middle,
 * a chunk's first byte, the last byte) by the check, the reference engine and the device upload. */
START_TEST(multi_chunk_sections)
{
    char *path = big_index(250000, 27);
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    const idx_section_entry *ds = &t[IDX_S_DOCNO_BLOB - 1], *ws = &t[IDX_S_WORDS - 1];
    ck_assert_uint_ge(ck_nchunks(ds->size), 2);
    ck_assert_uint_ge(ck_nchunks(ws->size), 6); /* more than a 2-core host's staging buffers: they are reused */
    for (unsigned i = 0; i < IDX_NSECTIONS; i++)
        ck_assert_msg(t[i].xxh == format_sum(img + t[i].offset, t[i].size), "section %s", SECTION[i]);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_index_check(idx, 3) == CLS_OK, "%s", cls_last_error());
    same_as_ref(idx, tu_device());
    cls_index_close(idx);

    const uint64_t at_d[] = {ds->offset + IDX_CHUNK / 2, ds->offset + IDX_CHUNK, ds->offset + ds->size - 1};
    for (int j = 0; j < 3; j++) {
        flip(img, at_d[j]);
        char what[96];
        snprintf(what, sizeof what, "docnos byte %llu flipped", (unsigned long long)(at_d[j] - ds->offset));
        const char *msg = bytes_fail(img, len, CLS_E_CORRUPT, what);
        ck_assert_msg(strstr(msg, "section 'docnos': checksum mismatch"), "%s: '%s'", what, msg);
        flip(img, at_d[j]);
    }
    const uint64_t at_w[] = {ws->offset + 2 * IDX_CHUNK + IDX_CHUNK / 2 + 3, ws->offset + IDX_CHUNK,
                             ws->offset + ws->size - 1};
    char *p = tu_strdup(tu_tmp_path("bigwords.idx"));
    for (int j = 0; j < 3; j++) {
        flip(img, at_w[j]);
        tu_write_file(p, img, len);
        ck_assert_msg(cls_index_open(p, &idx) == CLS_OK, "%s", cls_last_error());
        const char *engines[] = {"check", "ref", tu_device()};
        for (int k = 0; k < 3; k++) {
            cls_engine *e = NULL;
            cls_status s = k == 0 ? cls_index_check(idx, 3) : cls_engine_create(idx, engines[k], &e);
            ck_assert_msg(s == CLS_E_CORRUPT && e == NULL, "postings byte %llu: %s: status %d",
                          (unsigned long long)(at_w[j] - ws->offset), engines[k], (int)s);
            ck_assert_msg(strstr(cls_last_error(), "section 'postings': checksum mismatch"), "%s: '%s'", engines[k],
                          cls_last_error());
        }
        cls_index_close(idx);
        flip(img, at_w[j]);
    }
    remove(p);
    free(p);
    free(img);
    remove(path);
    free(path);
}
END_TEST

START_TEST(foreign_and_missing_files)
{
    const char *json = "{\"id\": \"d1\", \"contents\": \"not an index at all, just some JSON text\"}\n";
    const char *msg = bytes_fail(json, strlen(json), CLS_E_CORRUPT, "a JSON text");
    ck_assert_msg(strstr(msg, "not a clsearch index") != NULL, "'%s'", msg);
    bytes_fail("", 0, CLS_E_CORRUPT, "an empty file");
    bytes_fail(IDX_MAGIC, 8, CLS_E_CORRUPT, "the magic alone");
    /* random bytes, at several lengths, some starting with the magic */
    uint64_t rs = 42;
    unsigned char buf[8192];
    const size_t lens[] = {1, 63, 64, 65, 319, 320, 1000, 8192};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        for (size_t j = 0; j < lens[i]; j++) buf[j] = (unsigned char)tu_rand(&rs);
        bytes_fail(buf, lens[i], CLS_E_CORRUPT, "random bytes");
        if (lens[i] >= 8) {
            memcpy(buf, IDX_MAGIC, 8);
            bytes_fail(buf, lens[i], CLS_E_CORRUPT, "magic then random bytes");
        }
    }
    /* the magic with a zeroed rest, and a text-mode mangled magic (CR-LF turned into LF) */
    memset(buf, 0, sizeof buf);
    memcpy(buf, IDX_MAGIC, 8);
    bytes_fail(buf, 4096, CLS_E_CORRUPT, "magic then zeros");
    memcpy(buf, "CLSIDX\n", 7);
    bytes_fail(buf, 4096, CLS_E_CORRUPT, "mangled magic");

    /* missing paths, and a folder */
    char *missing = tu_strdup(tu_tmp_path("missing.idx"));
    msg = open_fails(missing, CLS_E_IO, "a missing file");
    ck_assert_msg(strstr(msg, missing) != NULL, "'%s' does not name the path", msg);
    char deep[4200];
    snprintf(deep, sizeof deep, "%s/sub/x.idx", missing);
    open_fails(deep, CLS_E_IO, "a missing folder");
    ck_assert_int_eq(mkdir(missing, 0755), 0);
    open_fails(missing, CLS_E_IO, "a folder");
    rmdir(missing);
    free(missing);
    /* NULL arguments */
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(NULL, &idx), CLS_E_ARG);
    ck_assert_int_eq(cls_index_open("x", NULL), CLS_E_ARG);
}
END_TEST

/* The device's list cache loads lists from the mapping at every search: with the file cut under
 * it (in the dictionary, the block records, the postings), the search and the reference engine's
 * go on without a SIGBUS, the reference's CLS_OK or CLS_E_IO naming the shrink, and
 * cls_index_intact says the file shrank. big_index's lists are large enough for the cache. */
START_TEST(shrunk_under_the_list_cache)
{
    char *orig = big_index(20000, 27);
    size_t len;
    unsigned char *img = tu_read_file(orig, &len);
    idx_section_entry t[IDX_NSECTIONS];
    read_table(img, len, t);
    const unsigned cut_in[] = {IDX_S_TERMS, IDX_S_BLOCKS, IDX_S_WORDS};
    char *path = tu_strdup(tu_tmp_path("shrunk-cache.idx"));
    for (size_t c = 0; c < sizeof cut_in / sizeof *cut_in; c++) {
        const idx_section_entry *e = &t[cut_in[c] - 1];
        size_t cut = (size_t)(e->offset + e->size / 2);
        tu_write_file(path, img, len);
        cls_index *idx;
        ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
        cls_engine *eng[2];
        cls_engine_opts o;
        cls_engine_opts_init(&o);
        o.device = tu_device();
        uint64_t lists = idx->num_words * 4 + idx->num_blocks * sizeof(idx_block), norms = ((uint64_t)idx->num_docs + 1) * 4;
        o.device_mem = 2 * (norms + lists / 3) + (32 << 10); /* room for a third of the lists */
        ck_assert_msg(cls_engine_create_opts(idx, &o, &eng[0]) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(strstr(cls_engine_describe(eng[0]), "lists: cached on the device"), "%s",
                      cls_engine_describe(eng[0]));
        ck_assert_msg(cls_engine_create(idx, "ref", &eng[1]) == CLS_OK, "%s", cls_last_error());
        const char *query = "t00 t05 t13 t26";
        ck_assert_msg(search_all_modes(eng[0], idx, query) == CLS_OK, "%s", cls_last_error());
        ck_assert_int_eq(truncate(path, (off_t)cut), 0);
        shrink_says(search_all_modes(eng[1], idx, query), "reference search", cut);
        /* the cache sizes lists from the block records: zeros past the cut can make a list seem
         * too long for it (CLS_E_DEVMEM), and then cls_index_intact says why */
        cls_status s = search_all_modes(eng[0], idx, query);
        if (s != CLS_OK && s != CLS_E_IO) {
            char was[512];
            snprintf(was, sizeof was, "%s", cls_last_error());
            ck_assert_msg(cls_index_intact(idx) == CLS_E_IO, "cut at %zu: %s", cut, was);
        } else {
            shrink_says(s, "device search under the list cache", cut);
        }
        for (int k = 0; k < 2; k++) cls_engine_free(eng[k]);
        ck_assert_int_eq(cls_index_intact(idx), CLS_E_IO);
        ck_assert_msg(strstr(cls_last_error(), "shrank while in use"), "%s", cls_last_error());
        cls_index_close(idx);
    }
    remove(path);
    free(path);
    free(img);
    remove(orig);
    free(orig);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("index");
    TCase *tc = tcase_create("roundtrip");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, roundtrip_blocks_and_stats);
    tcase_add_test(tc, roundtrip_small_shapes);
    tcase_add_test(tc, roundtrip_every_codec);
    tcase_add_test(tc, roundtrip_zero_documents);
    tcase_add_test(tc, empty_documents_first);
    tcase_add_test(tc, builder_rejects_bad_docnos);
    tcase_add_test(tc, builder_duplicate_ids);
    tcase_add_test(tc, write_failures_leave_nothing);
    suite_add_tcase(s, tc);
    TCase *tb = tcase_create("damaged");
    tcase_set_timeout(tb, 1200); /* every codec compiles OR's partition kernels on POCL (tens of seconds each) */
    tcase_add_test(tb, truncated_files);
    tcase_add_test(tb, file_size_must_match_table);
    tcase_add_test(tb, flipped_byte_in_each_section);
    tcase_add_test(tb, flipped_byte_in_header_and_table);
    tcase_add_test(tb, flipped_byte_anywhere);
    tcase_add_test(tb, forged_postings_every_codec);
    tcase_add_test(tb, check_reports_the_first_problem);
    tcase_add_test(tb, other_version);
    tcase_add_test(tb, version_3_still_reads);
    tcase_add_test(tb, checksum_definition);
    tcase_add_test(tb, multi_chunk_sections);
    tcase_add_test(tb, foreign_and_missing_files);
    suite_add_tcase(s, tb);
    TCase *tf = tcase_create("forged");
    tcase_set_timeout(tf, 1200); /* hundreds of device engines, each checking the index at its start */
    tcase_add_test(tf, forged_device_refuses_as_check);
    suite_add_tcase(s, tf);
    TCase *ts = tcase_create("shrunk");
    tcase_set_timeout(ts, 600);
    tcase_add_test(ts, shrunk_while_in_use);
    tcase_add_test(ts, shrunk_under_the_list_cache);
    suite_add_tcase(s, ts);
    return s;
}

int main(void) { return tu_run_suite(suite()); }
