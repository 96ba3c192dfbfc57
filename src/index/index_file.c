/* Index files: writing (temporary name, then rename), opening (map, then verify in time
 * proportional to the metadata every section's bounds, every checksum but the postings words'
 * (their chunks on every core, checksum.h) and the metadata's consistency, so a damaged or
 * foreign file is a clear error and never an out-of-bounds read on the host or device), reading
 * blocks with the strict decoders, and cls_index_check (the postings checksum and every stream,
 * on worker threads). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "index/index_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "analysis/an.h"
#include "codec/codec.h"
#include "index/bm25.h"
#include "index/checksum.h"
#include "util/fault.h"
#include "util/err.h"
#include "util/mapwatch.h"
#include "util/tmpfile.h"

#define SECTION_NAME(id)                                                                          \
    ((id) == IDX_S_DOCLEN ? "doclen" : (id) == IDX_S_DOCNO_OFF ? "docno-offsets"                  \
     : (id) == IDX_S_DOCNO_BLOB ? "docnos" : (id) == IDX_S_TERMS ? "terms"                        \
     : (id) == IDX_S_TERM_OFF ? "term-offsets" : (id) == IDX_S_TERM_BLOB ? "term-strings"         \
     : (id) == IDX_S_BLOCKS ? "blocks" : (id) == IDX_S_WORDS ? "postings"                          \
     : (id) == IDX_S_COLLECTION ? "collection" : (id) == IDX_S_FIELD_OFF ? "field-offsets"       \
     : (id) == IDX_S_FIELD_BLOB ? "field-values" : "unknown")

static uint64_t align_up(uint64_t x) { return (x + IDX_ALIGN - 1) & ~(uint64_t)(IDX_ALIGN - 1); }

static int write_all(FILE *f, const void *p, uint64_t n)
{
    if (n && fault_hit(FAULT_WRITE)) { /* CLSEARCH_FAULT's write faults: a full disk */
        errno = ENOSPC;
        return 0;
    }
    return n == 0 || fwrite(p, 1, (size_t)n, f) == n;
}

cls_status idx_file_write(const char *path, const idx_file_parts *p)
{
    /* no collection record given: the empty one (no roots, no fields, format "") */
    static const char no_collection[9];
    if (!p->collection && p->num_fields)
        return err_set(CLS_E_ARG, "writing %s: %u stored fields without their names", path, p->num_fields);
    ck_part sec[IDX_NSECTIONS] = {
        {p->doclen, (uint64_t)p->num_docs * 4},
        {p->docno_off, ((uint64_t)p->num_docs + 1) * 8},
        {p->docno_blob, p->docno_blob_len},
        {p->terms, (uint64_t)p->num_terms * sizeof(idx_term)},
        {p->term_off, ((uint64_t)p->num_terms + 1) * 8},
        {p->term_blob, p->term_blob_len},
        {p->blocks, p->num_blocks * sizeof(idx_block)},
        {p->words, p->num_words * 4},
        {p->collection ? p->collection : no_collection, p->collection ? p->collection_len : sizeof no_collection},
        {p->field_off, (uint64_t)p->num_fields * ((uint64_t)p->num_docs + 1) * 8},
        {p->field_blob, p->num_fields ? p->field_blob_len : 0},
    };
    uint64_t sums[IDX_NSECTIONS];
    cls_status cs = ck_sums(sec, IDX_NSECTIONS, ck_threads(), sums);
    if (cs != CLS_OK) return err_wrap(cs, "writing %s: ", path);
    idx_section_entry table[IDX_NSECTIONS];
    uint64_t at = align_up(sizeof(idx_header) + sizeof table);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) {
        table[i] = (idx_section_entry){.id = i + 1, .offset = at, .size = sec[i].size, .xxh = sums[i]};
        at = align_up(at + sec[i].size);
    }
    idx_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, IDX_MAGIC, 8);
    h.version = IDX_VERSION;
    h.analyzer = p->analyzer;
    h.num_docs = p->num_docs;
    h.num_terms = p->num_terms;
    h.block_size = p->block_size;
    h.codec = (uint32_t)p->codec;
    h.pfor_depth = p->pfor_depth;
    h.score_k1 = IDX_SCORE_K1;
    h.score_b = IDX_SCORE_B;
    h.scoring = (uint32_t)p->scoring;
    h.num_sections = IDX_NSECTIONS;
    h.num_postings = p->num_postings;
    h.num_tokens = p->num_tokens;
    h.shards = p->shards;
    h.shard = p->shard;
    h.doc_base = p->doc_base;
    h.coll_docs = p->coll_docs;
    h.coll_tokens = p->coll_tokens;
    h.table_xxh = XXH64(table, sizeof table, 0);
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);

    /* The file is written beside its final name and renamed over it, so the name must be a
     * regular file or nothing: a link is resolved first (the link stays, its target is
     * replaced) and anything else (a device, a folder) is refused, never renamed over. */
    struct stat st;
    char *real = NULL;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            real = realpath(path, NULL);
            if (!real) return err_set(CLS_E_IO, "%s: a link whose target cannot be resolved: %s", path, strerror(errno));
            path = real;
            if (stat(path, &st) != 0) st.st_mode = S_IFREG; /* resolved but absent: create it */
        }
        if (!S_ISREG(st.st_mode)) {
            cls_status s = err_set(CLS_E_IO, "%s exists and is not a regular file: an index is written only to a file", path);
            free(real);
            return s;
        }
    }
    char *tmp = NULL;
    int fd = tmp_create(path, &tmp); /* 0666 less the umask, removed on SIGINT/SIGTERM/SIGHUP */
    if (fd < 0) {
        cls_status s = err_set(CLS_E_IO, "cannot create a temporary file beside %s: %s", path, strerror(errno));
        free(real);
        return s;
    }
    FILE *f = fdopen(fd, "wb");
    static const char zeros[IDX_ALIGN];
    int ok = f != NULL && write_all(f, &h, sizeof h) && write_all(f, table, sizeof table);
    uint64_t pos = sizeof h + sizeof table;
    for (unsigned i = 0; ok && i < IDX_NSECTIONS; i++) {
        ok = write_all(f, zeros, table[i].offset - pos) && write_all(f, sec[i].data, sec[i].size);
        pos = table[i].offset + sec[i].size;
    }
    ok = ok && write_all(f, zeros, align_up(pos) - pos);
    int saved = errno;
    if (f) {
        if (fflush(f) != 0 || fsync(fileno(f)) != 0) ok = 0, saved = errno;
        if (fclose(f) != 0) ok = 0, saved = errno;
    } else {
        close(fd);
    }
    cls_status s = p->source ? cls_index_intact(p->source) : CLS_OK;
    if (s != CLS_OK) {
        tmp_discard(tmp);
        free(real);
        return s;
    }
    if (ok && rename(tmp, path) != 0) ok = 0, saved = errno;
    if (!ok) {
        tmp_discard(tmp);
        s = err_set(CLS_E_IO, "writing %s: %s", path, strerror(saved));
    } else {
        tmp_release(tmp);
    }
    free(real);
    return s;
}

/* ---- Opening ------------------------------------------------------------------------------ */

static cls_status corrupt(const char *path, const char *section, const char *what)
{
    if (section) return err_set(CLS_E_CORRUPT, "%s: index file damaged in section '%s': %s", path, section, what);
    return err_set(CLS_E_CORRUPT, "%s: %s", path, what);
}

/* Everything but the postings words, in time proportional to the metadata: the header, the
 * section table, the checksum of every section but the words, and every structural fact of the
 * metadata (document and term offsets, the terms' block ranges, the block records' counts,
 * docIDs and word extents). With these, any block's streams lie inside the words section and
 * its docIDs between its first and last, below num_docs and above the previous block's, whatever
 * its words hold; the words themselves are verified before they are read (index.h). */
static cls_status verify(cls_index *x, const char *path)
{
    const unsigned char *base = x->map;
    idx_header h;
    if (x->map_len >= 8 && memcmp(base, IDX_MAGIC, 8) != 0) return corrupt(path, NULL, "bad magic: not a clsearch index");
    if (x->map_len < sizeof h) return corrupt(path, NULL, "shorter than the header (truncated, or not an index)");
    memcpy(&h, base, sizeof h);
    if (memcmp(h.magic, IDX_MAGIC, 8) != 0) return corrupt(path, NULL, "bad magic: not a clsearch index");
    if (h.header_xxh != XXH64(&h, offsetof(idx_header, header_xxh), 0))
        return corrupt(path, "header", "checksum mismatch");
    /* The header's checksum is XXH64 in every version, so another version is told from damage.
     * Version 2 differs from 3 only in its section checksums (one XXH64 each): reading it would
     * mean hashing its sections on one thread again, so it is refused like any other version.
     * Version 3 is version 4 without sections 9 to 11, so it is read as one without fields. */
    if (h.version != IDX_VERSION && h.version != IDX_VERSION_V3)
        return err_set(CLS_E_VERSION, "%s: index format version %u, this build reads versions %u and %u: rebuild "
                       "the index", path, h.version, IDX_VERSION_V3, IDX_VERSION);
    const unsigned ns = h.version == IDX_VERSION_V3 ? IDX_NSECTIONS_V3 : IDX_NSECTIONS;
    if (h.num_sections != ns) return corrupt(path, "header", "unexpected section count");
    if ((h.block_size != 64 && h.block_size != 128 && h.block_size != 256 && h.block_size != 512) ||
        !cls_codec_name((cls_codec)h.codec) || h.pfor_depth > IDX_MAX_PFOR_DEPTH)
        return corrupt(path, "header", "unknown codec, block size or pfor depth");
    for (size_t i = 0; i < sizeof h.reserved; i++)
        if (h.reserved[i]) return corrupt(path, "header", "reserved bytes are not zero");
    /* The shard fields were reserved bytes before (and are in version 3): a whole index keeps
     * them zero, so a build that does not know shards refuses one rather than score it alone. */
    const int shard_fields = h.shards || h.shard || h.doc_base || h.coll_docs || h.coll_tokens;
    if (h.reserved0 || (h.version == IDX_VERSION_V3 && shard_fields))
        return corrupt(path, "header", "reserved bytes are not zero");
    if (!h.shards && shard_fields) return corrupt(path, "header", "shard fields set in an index that is not a shard");
    if (h.shards > IDX_MAX_SHARDS || (h.shards && h.shard >= h.shards))
        return corrupt(path, "header", "shard number out of range");
    /* a scoring this build does not know would rank by the wrong formula */
    if (h.scoring != CLS_SCORING_BM25 && h.scoring != CLS_SCORING_IMPACT)
        return corrupt(path, "header", "unknown scoring kind");
    /* an analyzer this build does not know would analyse queries unlike the documents */
    if (h.analyzer & ~AN_FLAGS_KNOWN) return corrupt(path, "header", "unknown analyzer bits");
    idx_section_entry t[IDX_NSECTIONS];
    const size_t table_len = ns * sizeof *t;
    if (x->map_len < sizeof h + table_len) return corrupt(path, "section table", "truncated");
    memcpy(t, base + sizeof h, table_len);
    if (h.table_xxh != XXH64(t, table_len, 0)) return corrupt(path, "section table", "checksum mismatch");
    const void *ptr[IDX_NSECTIONS];
    ck_part parts[IDX_NSECTIONS - 1];
    unsigned np = 0, part_id[IDX_NSECTIONS - 1];
    for (unsigned i = 0; i < ns; i++) {
        const char *name = SECTION_NAME(i + 1);
        if (t[i].id != i + 1) return corrupt(path, name, "out of order");
        if (t[i].offset % IDX_ALIGN || t[i].offset > x->map_len || t[i].size > x->map_len - t[i].offset)
            return corrupt(path, name, "extends past the end of the file (truncated?)");
        if (t[i].reserved) return corrupt(path, name, "reserved table field is not zero");
        ptr[i] = base + t[i].offset;
        if (i + 1 != IDX_S_WORDS) part_id[np] = i, parts[np++] = (ck_part){ptr[i], t[i].size};
    }
    /* Every section but the postings words (idx_verify_words) in one pool of chunks over the
     * cores: the metadata of a 25M-document collection is gigabytes. The first mismatch in
     * section order is the one reported. */
    uint64_t sums[IDX_NSECTIONS - 1];
    cls_status s = ck_sums(parts, np, ck_threads(), sums);
    if (s != CLS_OK) return err_wrap(s, "opening %s: ", path);
    for (unsigned k = 0; k < np; k++)
        if (sums[k] != t[part_id[k]].xxh) return corrupt(path, SECTION_NAME(part_id[k] + 1), "checksum mismatch");
    const idx_section_entry *last = &t[ns - 1];
    if (x->map_len != align_up(last->offset + last->size))
        return corrupt(path, NULL, "file size does not match its section table (truncated or extended)");
    /* Sections in order, none overlapping, and every byte between them (after the table, between
     * sections, after the last) zero as written: under 64 bytes a gap in a file laid out as
     * FORMAT.md says, so the scan costs nothing, and no unchecked bytes hide in the file. */
    uint64_t gap_from = sizeof h + table_len;
    for (unsigned i = 0; i <= ns; i++) {
        uint64_t gap_to = i < ns ? t[i].offset : x->map_len;
        if (gap_to < gap_from) return corrupt(path, i < ns ? SECTION_NAME(i + 1) : NULL, "sections overlap");
        for (uint64_t b = gap_from; b < gap_to; b++)
            if (base[b]) return corrupt(path, i < ns ? SECTION_NAME(i + 1) : NULL, "padding before it is not zero");
        if (i < ns) gap_from = t[i].offset + t[i].size;
    }
    uint64_t N = h.num_docs, T = h.num_terms;
    if (t[0].size != N * 4) return corrupt(path, "doclen", "size does not match the document count");
    if (t[1].size != (N + 1) * 8) return corrupt(path, "docno-offsets", "size does not match the document count");
    if (t[3].size != T * sizeof(idx_term)) return corrupt(path, "terms", "size does not match the term count");
    if (t[4].size != (T + 1) * 8) return corrupt(path, "term-offsets", "size does not match the term count");
    if (t[6].size % sizeof(idx_block)) return corrupt(path, "blocks", "size is not a whole number of blocks");
    if (t[7].size % 4 || t[7].size / 4 > UINT32_MAX) return corrupt(path, "postings", "bad size");
    if (h.shards && (uint64_t)h.doc_base + N > h.coll_docs)
        return corrupt(path, "header", "the shard's documents lie outside its collection");

    x->num_docs = h.num_docs;
    x->num_terms = h.num_terms;
    x->block_size = h.block_size;
    x->codec = (cls_codec)h.codec;
    x->pfor_depth = h.pfor_depth;
    x->score_k1 = h.score_k1;
    x->score_b = h.score_b;
    x->scoring = (cls_scoring)h.scoring;
    x->num_postings = h.num_postings;
    x->num_tokens = h.num_tokens;
    x->analyzer = h.analyzer;
    x->shards = h.shards;
    x->shard = h.shard;
    x->doc_base = h.doc_base;
    x->coll_docs = h.shards ? h.coll_docs : h.num_docs;
    x->coll_tokens = h.shards ? h.coll_tokens : h.num_tokens;
    x->doclen = ptr[0];
    x->docno_off = ptr[1];
    x->docno_blob = ptr[2];
    x->terms = ptr[3];
    x->term_off = ptr[4];
    x->term_blob = ptr[5];
    x->blocks = ptr[6];
    x->num_blocks = t[6].size / sizeof(idx_block);
    x->words = ptr[7];
    x->num_words = t[7].size / 4;
    x->words_xxh = t[7].xxh;

    uint64_t tokens = 0;
    for (uint64_t d = 0; d < N; d++) {
        tokens += x->doclen[d];
        uint64_t a = x->docno_off[d], b = x->docno_off[d + 1];
        if (a >= b || b > t[2].size || x->docno_blob[b - 1] != '\0')
            return corrupt(path, "docno-offsets", "offsets out of order or docno not terminated");
    }
    if (x->docno_off[0] != 0 || x->docno_off[N] != t[2].size) return corrupt(path, "docno-offsets", "bad bounds");
    if (tokens != x->num_tokens) return corrupt(path, "doclen", "lengths do not add up to the token count");
    x->avg_doc_len = N ? (double)x->num_tokens / (double)N : 0.0;
    /* a shard's tokens are some of its collection's, all of them where it holds every document */
    if (x->num_tokens > x->coll_tokens || (x->coll_docs == N && x->coll_tokens != x->num_tokens))
        return corrupt(path, "header", "the shard's tokens do not fit its collection's");
    x->coll_avg_doc_len = x->coll_docs ? (double)x->coll_tokens / (double)x->coll_docs : 0.0;
    const uint32_t B = x->block_size;
    uint64_t postings = 0, next_block = 0, next_word = 0;
    for (uint64_t i = 0; i < T; i++) {
        const idx_term *e = &x->terms[i];
        if (x->term_off[i] >= x->term_off[i + 1] || x->term_off[i + 1] > t[5].size)
            return corrupt(path, "term-offsets", "offsets out of order");
        /* a shard's list may be empty (none of its documents holds the term), its cdf the
         * collection's df: at least the list's postings, at most those plus the documents of
         * the collection outside the shard */
        if (e->first_block != next_block || (e->df == 0 && !x->shards) || e->df > N ||
            e->num_blocks != (e->df + B - 1) / B || e->first_block + (uint64_t)e->num_blocks > x->num_blocks)
            return corrupt(path, "terms", "block ranges inconsistent");
        if (x->shards ? e->cdf == 0 || e->cdf < e->df || e->cdf - e->df > x->coll_docs - N : e->cdf != 0)
            return corrupt(path, "terms", x->shards ? "collection df inconsistent with the list" : "reserved field is not zero");
        /* The block records, without their words: counts, extents (each block's words start
         * where the previous block's end, the frequency stream inside them, the last block
         * ending at the end of the words), and docIDs (first <= last with room for the block's
         * n postings between them, below num_docs, each block after the previous one). The
         * streams are decoded by the strict decoders when they are read (idx_decode_block) and by
         * cls_index_check; the device decoders never read outside the words whatever they hold. */
        uint64_t prev = 0;
        for (uint32_t j = 0; j < e->num_blocks; j++) {
            uint64_t bi = (uint64_t)e->first_block + j;
            const idx_block *bl = &x->blocks[bi];
            uint32_t n = idx_info_count(bl->info), fofs = idx_info_fofs(bl->info);
            uint64_t end = bi + 1 < x->num_blocks ? x->blocks[bi + 1].offset : x->num_words;
            if (bl->offset != next_word || end < bl->offset || end > x->num_words || fofs > end - bl->offset ||
                n != (j + 1 < e->num_blocks ? B : e->df - j * B) || bl->reserved)
                return corrupt(path, "blocks", "block header out of range");
            if ((j > 0 && bl->first <= prev) || bl->first >= N) return corrupt(path, "blocks", "first docID out of order");
            if (bl->last < bl->first || bl->last - bl->first < n - 1 || bl->last >= N)
                return corrupt(path, "blocks", "last docID out of range");
            prev = bl->last;
            next_word = end;
        }
        next_block += e->num_blocks;
        postings += e->df;
    }
    if (next_word != x->num_words) return corrupt(path, "postings", "words after the last block");
    if (x->term_off[0] != 0 || x->term_off[T] != t[5].size) return corrupt(path, "term-offsets", "bad bounds");
    if (next_block != x->num_blocks || postings != x->num_postings)
        return corrupt(path, "terms", "postings do not add up");
    x->version = h.version;
    if (ns == IDX_NSECTIONS_V3) {
        x->coll.format = "";
        return CLS_OK;
    }
    /* The collection record, then the fields' bounds, in time proportional to the number of
     * fields: each document's offsets are checked where they are read (cls_index_field) and
     * all of them by cls_index_check (idx_verify_fields). */
    const idx_section_entry *cs = &t[IDX_S_COLLECTION - 1], *fo = &t[IDX_S_FIELD_OFF - 1], *fv = &t[IDX_S_FIELD_BLOB - 1];
    const char *what = idx_collection_read(ptr[IDX_S_COLLECTION - 1], cs->size, &x->coll);
    if (what) return corrupt(path, "collection", what);
    x->coll_raw = ptr[IDX_S_COLLECTION - 1];
    x->coll_raw_len = cs->size;
    const uint64_t F = x->coll.num_fields;
    if (fo->size != F * (N + 1) * 8)
        return corrupt(path, "field-offsets", "size does not match the field and document counts");
    x->field_off = ptr[IDX_S_FIELD_OFF - 1];
    x->field_blob = ptr[IDX_S_FIELD_BLOB - 1];
    x->field_blob_len = fv->size;
    uint64_t end = 0;
    for (uint64_t f = 0; f < F; f++) {
        const uint64_t *o = x->field_off + f * (N + 1);
        if (o[0] != end || o[N] < o[0]) return corrupt(path, "field-offsets", "fields' ranges out of order");
        end = o[N];
    }
    if (end != fv->size) return corrupt(path, "field-offsets", "bad bounds");
    return CLS_OK;
}

cls_status cls_index_open(const char *path, cls_index **out)
{
    if (!path || !out) return err_set(CLS_E_ARG, "cls_index_open: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return err_set(CLS_E_IO, "cannot open index %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(CLS_E_IO, "%s: not a regular file", path);
    }
    cls_index *x = fault_calloc(1, sizeof *x);
    if (!x) {
        close(fd);
        return err_set(CLS_E_NOMEM, "opening %s: out of memory", path);
    }
    x->map_len = (size_t)st.st_size;
    x->fd = fd; /* kept: idx_shrunk tells the file's size now from it */
    x->path = strdup(path);
    if (!x->path) {
        cls_index_close(x);
        return err_set(CLS_E_NOMEM, "opening %s: out of memory", path);
    }
    if (x->map_len > 0) {
        x->map = mmap(NULL, x->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (x->map == MAP_FAILED) {
            x->map = NULL;
            cls_status s = err_set(CLS_E_IO, "cannot map %s: %s", path, strerror(errno));
            cls_index_close(x);
            return s;
        }
        /* from here on a read past the end of a file truncated meanwhile sees zeros and sets
         * the flag idx_intact asks, opening's own reads included */
        if (!(x->watch = mw_watch(x->map, x->map_len))) {
            cls_index_close(x);
            return err_set(CLS_E_IO, "cannot open %s: %d indexes are open already in this process", path, MW_MAX);
        }
    }
    cls_status s = idx_intact(x, verify(x, path));
    if (s == CLS_OK) s = cls_index_intact(x);
    if (s != CLS_OK) {
        cls_index_close(x);
        return s;
    }
    *out = x;
    return CLS_OK;
}

void cls_index_close(cls_index *idx)
{
    if (!idx) return;
    mw_unwatch(idx->watch);
    if (idx->map) munmap(idx->map, idx->map_len);
    if (idx->fd >= 0) close(idx->fd);
    idx_collection_free(&idx->coll);
    free(idx->path);
    free(idx);
}

void cls_index_get_stats(const cls_index *x, cls_index_stats *st)
{
    memset(st, 0, sizeof *st);
    st->num_docs = x->num_docs;
    st->num_terms = x->num_terms;
    st->num_postings = x->num_postings;
    st->num_tokens = x->num_tokens;
    st->avg_doc_len = x->avg_doc_len;
    st->block_size = x->block_size;
    st->codec = x->codec;
    st->pfor_depth = x->pfor_depth;
    st->num_blocks = x->num_blocks;
    st->postings_bytes = x->num_words * 4;
    st->meta_bytes = x->num_blocks * sizeof(idx_block);
    for (uint64_t b = 0; b < x->num_blocks; b++) {
        uint64_t fofs = idx_info_fofs(x->blocks[b].info), words = idx_block_words(x, b);
        st->doc_bits += fofs * 32;
        st->freq_bits += (words > fofs ? words - fofs : 0) * 32;
    }
    st->file_bytes = x->map_len;
}

const char *cls_index_docno(const cls_index *x, uint32_t doc)
{
    return doc < x->num_docs ? x->docno_blob + x->docno_off[doc] : NULL;
}

void cls_index_analyzer(const cls_index *x, cls_analyzer_opts *o) { an_opts_unpack(x->analyzer, o); }

const char *idx_term_text(const cls_index *x, uint32_t t, size_t *len)
{
    /* each offset is as opened (within the strings) or, the file shrunk, 0 */
    uint64_t a = x->term_off[t], b = x->term_off[t + 1];
    *len = b > a ? (size_t)(b - a) : 0;
    return x->term_blob + a;
}

uint32_t idx_lookup(const cls_index *x, const char *term, size_t len)
{
    uint32_t lo = 0, hi = x->num_terms;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        size_t n;
        const char *s = idx_term_text(x, mid, &n);
        size_t m = n < len ? n : len;
        int c = memcmp(s, term, m);
        if (c == 0) c = (n > len) - (n < len);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return UINT32_MAX;
}

uint64_t idx_block_words(const cls_index *x, uint64_t b)
{
    uint64_t end = b + 1 < x->num_blocks ? x->blocks[b + 1].offset : x->num_words, start = x->blocks[b].offset;
    return end > start ? end - start : 0;
}

/* ---- A file shrunk under its mapping --------------------------------------------------------- */

cls_status idx_shrunk(const cls_index *x)
{
    struct stat st;
    if (x->fd >= 0 && fstat(x->fd, &st) == 0 && (uint64_t)st.st_size < x->map_len)
        return err_set(CLS_E_IO, "the index file %s shrank while in use, from %zu to %lld bytes (another program "
                       "truncated or rewrote it in place): its contents past the new end are gone, so nothing read "
                       "from it now can be trusted; open it again once it is whole", x->path, x->map_len,
                       (long long)st.st_size);
    return err_set(CLS_E_IO, "the index file %s could not be read through its mapping (a read error, or another "
                   "program truncated it while in use); open it again once it is whole", x->path);
}

/* Whether the file is shorter now than when it was mapped. A cut that does not fall on a page
 * boundary leaves the rest of its page reading as zeros without a fault, so the watch alone
 * does not see every shrink: its size does. */
static int shorter(const cls_index *x)
{
    struct stat st;
    return x->fd >= 0 && fstat(x->fd, &st) == 0 && (uint64_t)st.st_size < x->map_len;
}

cls_status idx_intact(const cls_index *x, cls_status s)
{
    return mw_lost(x->watch) || (s != CLS_OK && shorter(x)) ? idx_shrunk(x) : s;
}

cls_status cls_index_intact(const cls_index *x)
{
    if (!x) return err_set(CLS_E_ARG, "cls_index_intact: NULL index");
    return mw_lost(x->watch) || shorter(x) ? idx_shrunk(x) : CLS_OK;
}

/* ---- Reading the words ---------------------------------------------------------------------- */

cls_status idx_words_corrupt(const cls_index *x)
{
    return idx_intact(x, corrupt(x->path, "postings", "checksum mismatch"));
}

int idx_words_verified(const cls_index *x) { return atomic_load(&((cls_index *)x)->words_ok); }

void idx_words_set_verified(const cls_index *x) { atomic_store(&((cls_index *)x)->words_ok, 1); }

cls_status idx_verify_words(const cls_index *x)
{
    if (idx_words_verified(x)) return CLS_OK;
    ck_part words = {x->words, x->num_words * 4};
    uint64_t sum;
    cls_status s = ck_sums(&words, 1, ck_threads(), &sum);
    if (s != CLS_OK) return err_wrap(s, "verifying the postings of %s: ", x->path);
    if (sum != x->words_xxh) return idx_words_corrupt(x);
    if ((s = cls_index_intact(x)) != CLS_OK) return s; /* zeros past a cut hash to the checksum only by chance */
    idx_words_set_verified(x);
    return CLS_OK;
}

/* The term whose blocks hold block b (terms tile the blocks, cls_index_open checked). */
static uint32_t term_of_block(const cls_index *x, uint64_t b)
{
    uint32_t lo = 0, hi = x->num_terms;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (x->terms[mid].first_block <= b) lo = mid; else hi = mid;
    }
    return lo;
}

cls_status idx_block_corrupt(const cls_index *x, uint64_t b, const char *section, const char *what)
{
    if (mw_lost(x->watch)) return idx_shrunk(x); /* the zeros, not damage */
    uint32_t t = term_of_block(x, b);
    const idx_term *e = &x->terms[t];
    size_t len;
    const char *text = idx_term_text(x, t, &len);
    return idx_intact(x, err_set(CLS_E_CORRUPT, "%s: index file damaged in section '%s': term '%.*s' (id %u), block "
                                 "%llu of %u (block %llu): %s", x->path, section, len > 200 ? 200 : (int)len, text, t,
                                 (unsigned long long)(b - e->first_block + 1), e->num_blocks, (unsigned long long)b,
                                 what));
}

/* Block b with the strict decoders into docs[] and freqs[] (tf - 1, as stored); NULL, or what
 * is wrong and, in *section, where. cls_index_open checked the block record, so the extents lie
 * inside the words and first <= last < num_docs; the docIDs increase by construction, so ending
 * at last puts them all in range. */
/* Block b's docID stream, strictly, into docs. Returns NULL, or what is wrong and *section
 * where. */
static const char *decode_docs_strict(const cls_index *x, uint64_t b, uint32_t *docs, const char **section)
{
    const idx_block *bl = &x->blocks[b];
    uint32_t n = idx_info_count(bl->info), fofs = idx_info_fofs(bl->info), used;
    const uint32_t *w = x->words + bl->offset;
    uint64_t nw = idx_block_words(x, b);
    uint32_t gaps[CDC_MAX_N];
    /* as opened these hold (cls_index_open checked); a shrunk file's zeros need not */
    *section = "blocks";
    if (fofs > nw || n > CDC_MAX_N) return "block header out of range";
    *section = "postings";
    if (cdc_decode(x->codec, w, fofs, n - 1, bl->dparam, x->pfor_depth, gaps, &used) != 0)
        return "malformed docID stream";
    uint64_t d = bl->first;
    docs[0] = (uint32_t)d;
    for (uint32_t i = 1; i < n && d <= bl->last; i++) docs[i] = (uint32_t)(d += (uint64_t)gaps[i - 1] + 1);
    if (d > bl->last) return "docID out of range";
    if (d != bl->last) {
        *section = "blocks";
        return "last docID does not match the postings";
    }
    return NULL;
}

/* Block b's frequency stream, strictly, as tf - 1 values. */
static const char *decode_freqs_strict(const cls_index *x, uint64_t b, uint32_t *freqs, const char **section)
{
    const idx_block *bl = &x->blocks[b];
    uint32_t n = idx_info_count(bl->info), fofs = idx_info_fofs(bl->info), used;
    uint64_t nw = idx_block_words(x, b);
    *section = "blocks";
    if (fofs > nw || n > CDC_MAX_N) return "block header out of range";
    *section = "postings";
    if (cdc_decode(x->codec, x->words + bl->offset + fofs, (uint32_t)(nw - fofs), n, bl->fparam, x->pfor_depth, freqs,
                   &used) != 0)
        return "malformed frequency stream";
    for (uint32_t i = 0; i < n; i++)
        if (freqs[i] == UINT32_MAX) return "frequency out of range";
    return NULL;
}

static const char *decode_strict(const cls_index *x, uint64_t b, uint32_t *docs, uint32_t *freqs, const char **section)
{
    const char *what = decode_docs_strict(x, b, docs, section);
    return what ? what : decode_freqs_strict(x, b, freqs, section);
}

cls_status idx_decode_block(const cls_index *x, uint64_t b, uint32_t *docs, uint32_t *freqs)
{
    const char *section, *what = decode_strict(x, b, docs, freqs, &section);
    if (what) return idx_block_corrupt(x, b, section, what);
    for (uint32_t i = 0, n = idx_info_count(x->blocks[b].info); i < n; i++) freqs[i] += 1;
    return idx_intact(x, CLS_OK);
}

cls_status idx_decode_docs(const cls_index *x, uint64_t b, uint32_t *docs)
{
    const char *section, *what = decode_docs_strict(x, b, docs, &section);
    return what ? idx_block_corrupt(x, b, section, what) : idx_intact(x, CLS_OK);
}

cls_status idx_decode_freqs(const cls_index *x, uint64_t b, uint32_t *freqs)
{
    const char *section, *what = decode_freqs_strict(x, b, freqs, &section);
    if (what) return idx_block_corrupt(x, b, section, what);
    for (uint32_t i = 0, n = idx_info_count(x->blocks[b].info); i < n; i++) freqs[i] += 1;
    return idx_intact(x, CLS_OK);
}

cls_status idx_decode_list(const cls_index *x, uint32_t term, uint32_t *docs, uint32_t *freqs, uint32_t *n)
{
    const idx_term *e = &x->terms[term];
    uint32_t at = 0;
    for (uint32_t j = 0; j < e->num_blocks; j++) {
        uint64_t b = (uint64_t)e->first_block + j;
        const char *section, *what = decode_strict(x, b, docs + at, freqs + at, &section);
        if (what) return idx_block_corrupt(x, b, section, what);
        uint32_t c = idx_info_count(x->blocks[b].info);
        for (uint32_t i = 0; i < c; i++) freqs[at + i] += 1;
        at += c;
    }
    *n = at;
    return idx_intact(x, CLS_OK);
}

/* ---- cls_index_check ------------------------------------------------------------------------
 *
 * Work units handed out in order through one counter: units 0 .. wchunks - 1 hash the words'
 * chunks (checksum.h), so the checksum is done on every thread first and known before most
 * blocks are; the unit that digests the last chunk combines the digests. Unit wchunks + v checks
 * blocks v * per onwards, per of them (a long list is shared out too; per is a few units per
 * thread, at most CHECK_UNIT_BLOCKS), decoded strictly with their max_score recomputed. A unit
 * stops at the first bad block, and no unit starts past the lowest bad block found so far (nor at
 * all once the checksum disagrees), so the work after a problem is bounded; the problem reported
 * is the checksum's, else the lowest bad block's (re-checked on the calling thread for its
 * message), whatever the threads' timing. */
#define CHECK_UNIT_BLOCKS 4096u

typedef struct check_job {
    const cls_index *x;
    const float *norms;       /* bm25_norm per document at the header's k1, b */
    uint64_t per;             /* blocks per unit */
    uint64_t wchunks, nunits; /* units hashing the words' chunks (the first ones); all units */
    uint64_t *digests;        /* wchunks: the words' chunk digests */
    atomic_uint_fast64_t next;
    atomic_uint_fast64_t hashed; /* chunks digested: whoever digests the last one combines them */
    atomic_uint_fast64_t bad; /* lowest bad block so far, UINT64_MAX when none */
    atomic_int words_bad;     /* the checksum disagrees: reported first, so the rest stops */
} check_job;

/* Block b of term t against everything: NULL or what is wrong and, in *section, where. */
static const char *check_block(const cls_index *x, const float *norms, uint32_t t, uint64_t b, const char **section)
{
    uint32_t docs[CDC_MAX_N], freqs[CDC_MAX_N];
    const char *what = decode_strict(x, b, docs, freqs, section);
    if (what) return what;
    const idx_block *bl = &x->blocks[b];
    float w = bm25_block_weight(x->scoring, x->coll_docs, idx_coll_df(x, t)), best = 0.0f;
    for (uint32_t i = 0, n = idx_info_count(bl->info); i < n; i++) {
        float c = score_contrib(x->scoring, w, freqs[i] + 1, norms[docs[i]]);
        if (c > best) best = c;
    }
    if (memcmp(&best, &bl->max_score, sizeof best) != 0) {
        *section = "blocks";
        return "max_score does not match the postings";
    }
    return NULL;
}

cls_status idx_check_block(const cls_index *x, const float *norms, uint64_t b)
{
    const char *section, *what = check_block(x, norms, term_of_block(x, b), b, &section);
    return what ? idx_block_corrupt(x, b, section, what) : idx_intact(x, CLS_OK);
}

static void *check_worker(void *arg)
{
    check_job *j = arg;
    const cls_index *x = j->x;
    uint64_t u;
    /* a shrunk file stops the work: what is left would be checked against zeros */
    while ((u = atomic_fetch_add(&j->next, 1)) < j->nunits && !atomic_load(&j->words_bad) && !mw_lost(x->watch)) {
        if (u < j->wchunks) {
            j->digests[u] = ck_chunk(x->words, x->num_words * 4, u);
            /* the counter orders every digest's store before the last increment */
            if (atomic_fetch_add(&j->hashed, 1) + 1 == j->wchunks)
                atomic_store(&j->words_bad, ck_combine(j->digests, j->wchunks) != x->words_xxh);
            continue;
        }
        uint64_t b = (u - j->wchunks) * j->per, end = b + j->per;
        if (end > x->num_blocks) end = x->num_blocks;
        for (uint32_t t = term_of_block(x, b); b < end && b < atomic_load(&j->bad); b++) {
            const char *section;
            while (t + 1 < x->num_terms && b >= (uint64_t)x->terms[t].first_block + x->terms[t].num_blocks) t++;
            if (check_block(x, j->norms, t, b, &section)) {
                uint_fast64_t cur = atomic_load(&j->bad);
                while (b < cur && !atomic_compare_exchange_weak(&j->bad, &cur, b)) {}
                break; /* the rest of the unit lies past it */
            }
        }
    }
    return NULL;
}

cls_status cls_index_check(const cls_index *x, unsigned threads)
{
    if (!x) return err_set(CLS_E_ARG, "cls_index_check: NULL index");
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    if (threads > 1024) threads = 1024;
    const uint64_t N = x->num_docs;
    const uint64_t wchunks = ck_nchunks(x->num_words * 4);
    float *norms = fault_malloc(((size_t)N + 1) * sizeof *norms);
    pthread_t *th = fault_calloc(threads, sizeof *th);
    uint64_t *digests = fault_malloc(((size_t)wchunks + 1) * sizeof *digests);
    if (!norms || !th || !digests) {
        free(norms), free(th), free(digests);
        return err_set(CLS_E_NOMEM, "checking %s: out of memory for %llu document norms", x->path,
                       (unsigned long long)N);
    }
    bm25_norms(x, x->score_k1, x->score_b, norms);
    uint64_t per = x->num_blocks / ((uint64_t)threads * 8);
    per = per < 1 ? 1 : per > CHECK_UNIT_BLOCKS ? CHECK_UNIT_BLOCKS : per;
    check_job j = {.x = x, .norms = norms, .per = per, .wchunks = wchunks,
                   .nunits = wchunks + (x->num_blocks + per - 1) / per, .digests = digests};
    atomic_init(&j.next, 0);
    atomic_init(&j.hashed, 0);
    atomic_init(&j.bad, UINT64_MAX);
    /* no words, no chunk: the checksum is the empty combination's */
    atomic_init(&j.words_bad, wchunks == 0 && ck_combine(digests, 0) != x->words_xxh);
    unsigned started = 0;
    for (; started + 1 < threads; started++)
        if (pthread_create(&th[started], NULL, check_worker, &j) != 0) break;
    check_worker(&j); /* the calling thread works too */
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    cls_status s = CLS_OK;
    uint64_t bad = atomic_load(&j.bad);
    if (mw_lost(x->watch)) { /* the work stopped part way: nothing below is known */
        s = idx_shrunk(x);
    } else if (atomic_load(&j.words_bad)) {
        s = idx_words_corrupt(x);
    } else {
        idx_words_set_verified(x); /* an engine created later need not hash them again */
        if (bad != UINT64_MAX) {
            const char *section, *what = check_block(x, norms, term_of_block(x, bad), bad, &section);
            s = idx_block_corrupt(x, bad, section, what ? what : "damaged (and not on a second reading)");
        } else {
            s = idx_verify_fields(x); /* sections 10 and 11 follow the postings */
        }
    }
    free(norms), free(th), free(digests);
    return s == CLS_OK ? cls_index_intact(x) : idx_intact(x, s);
}
