/* The index: in-file layout and the loaded view of it (metadata verified at open).
 *
 * A posting list is cut into blocks of block_size postings (64..512; the last may be partial).
 * Each block stores its first and last docID in its metadata and two streams coded by the
 * index's codec (codec.h): the docID gaps and the frequencies. A block decodes independently:
 * docID_i = first + inclusive_prefix_sum(x)_i, x_0 = 0, x_i = d_i - d_{i-1} (the stream holds
 * x_i - 1). That prefix sum is what the device runs per work-group (cl/decode.cl).
 *
 * File: a 128-byte header, a section table, then sections aligned to 64 bytes, each with a
 * checksum over its IDX_CHUNK-byte chunks (checksum.h), so a section verifies on many threads.
 * All integers little-endian. docs/FORMAT.md specifies it byte by byte.
 */
#ifndef CLS_INDEX_H
#define CLS_INDEX_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cl/abi.h"
#include "clsearch.h"

#define IDX_MAGIC "CLSIDX\r\n" /* the CR-LF catches text-mode mangling */
#define IDX_VERSION 4u    /* what the writer writes */
#define IDX_VERSION_V3 3u /* still read: sections 1 to 8 only, no collection record, no fields */
#define IDX_ALIGN 64u
/* Sections are checksummed in chunks of this many bytes (checksum.h): large enough that a chunk
 * digest costs little to keep and a chunk is a worthwhile unit for a thread or a device upload,
 * small enough that a 10 GB section is a thousand units. */
#define IDX_CHUNK ((uint64_t)8 << 20)
#define IDX_MIN_BLOCK 64u
#define IDX_MAX_BLOCK 512u
#define IDX_MAX_PFOR_DEPTH 3u
#define IDX_MAX_SHARDS CLS_MAX_SHARDS /* the most document-range shards a collection is cut into */

/* Per-block metadata (idx_block): defined with every other host/device layout in cl/abi.h. */

#define IDX_INFO(count, fofs) ((uint32_t)((count) - 1) | (uint32_t)(fofs) << 10)
#define IDX_MAX_FOFS ((1u << 22) - 1)
static inline uint32_t idx_info_count(uint32_t info) { return IDX_INFO_COUNT(info); }
static inline uint32_t idx_info_fofs(uint32_t info) { return IDX_INFO_FOFS(info); }

/* Per-term entry, 16 bytes; terms are sorted by their bytes (memcmp order). */
typedef struct idx_term {
    uint32_t df;          /* documents of this file containing the term: its list's postings */
    uint32_t first_block; /* index into the blocks section */
    uint32_t num_blocks;
    uint32_t cdf;         /* a shard: the collection's df, which BM25 scores with (idx_coll_df); else 0 */
} idx_term;

enum idx_section {
    IDX_S_DOCLEN = 1,    /* uint32 per doc: tokens indexed */
    IDX_S_DOCNO_OFF,     /* uint64 per doc + 1: offsets into DOCNO_BLOB */
    IDX_S_DOCNO_BLOB,    /* NUL-terminated docnos */
    IDX_S_TERMS,         /* idx_term per term */
    IDX_S_TERM_OFF,      /* uint64 per term + 1: offsets into TERM_BLOB */
    IDX_S_TERM_BLOB,     /* term bytes, not terminated */
    IDX_S_BLOCKS,        /* idx_block per block */
    IDX_S_WORDS,         /* uint32 packed postings */
    IDX_S_COLLECTION,    /* version 4: the collection's format, roots and field names */
    IDX_S_FIELD_OFF,     /* version 4: uint64 per field and doc, plus one per field: offsets into FIELD_BLOB */
    IDX_S_FIELD_BLOB,    /* version 4: field values, each followed by a NUL; an absent one takes no byte */
    IDX_S_COUNT_PLUS_ONE
};
#define IDX_NSECTIONS (IDX_S_COUNT_PLUS_ONE - 1)
#define IDX_NSECTIONS_V3 IDX_S_WORDS
/* The longest field name: short enough for a column head, long enough for any JSON key in use. */
#define IDX_MAX_FIELD_NAME 255u

/* 128 bytes. */
typedef struct idx_header {
    char magic[8];
    uint32_t version;
    uint32_t analyzer;    /* an_opts_pack() flags */
    uint32_t num_docs;
    uint32_t num_terms;
    uint32_t block_size;
    uint32_t num_sections;
    uint64_t num_postings;
    uint64_t num_tokens;
    uint32_t codec;       /* cls_codec */
    uint32_t pfor_depth;
    float score_k1, score_b; /* the BM25 parameters of the blocks' max_score */
    uint32_t scoring;     /* cls_scoring: 0 BM25 (so files from before it read as BM25), 1 impact */
    /* A document-range shard's place in its collection (index_shard.h), all zero in a whole
     * index: shard `shard` of `shards` (1 .. IDX_MAX_SHARDS), its document 0 the collection's
     * doc_base, and the collection's document and token counts, which BM25 scores with. */
    uint32_t shards, shard, doc_base, coll_docs;
    uint32_t reserved0;   /* zero */
    uint64_t coll_tokens;
    uint8_t reserved[16]; /* zero */
    uint64_t table_xxh;   /* XXH64 of the section table */
    uint64_t header_xxh;  /* XXH64 of the 120 bytes before this field, in every version */
} idx_header;

typedef struct idx_section_entry {
    uint32_t id;
    uint32_t reserved;
    uint64_t offset;
    uint64_t size;
    uint64_t xxh;         /* the section's chunked checksum (checksum.h) */
} idx_section_entry;

/* The file's records are read in place from the mapping (index_file.c), so their sizes are the
 * format's (docs/FORMAT.md); idx_block's is checked in cl/abi.h. */
_Static_assert(sizeof(idx_term) == 16, "idx_term is the file's 16-byte term record");
_Static_assert(sizeof(idx_header) == 128 && offsetof(idx_header, table_xxh) == 112, "idx_header is 128 bytes");
_Static_assert(offsetof(idx_header, shards) == 68 && offsetof(idx_header, coll_tokens) == 88,
               "the shard fields lie where docs/FORMAT.md puts them");
_Static_assert(sizeof(idx_section_entry) == 32, "idx_section_entry is 32 bytes");

/* Section 9, the collection record (docs/FORMAT.md): u32 num_roots R, u32 num_fields F, then
 * 1 + R + F NUL-terminated strings: the collection's format name ("" when not recorded), the
 * roots, the field names. */
typedef struct idx_collection {
    const char *format;
    uint32_t num_roots, num_fields;
    const char **roots;       /* into the record's bytes; roots and names share one allocation */
    const char **names;
} idx_collection;

/* Whether name[0..len) may name a field: 1 to IDX_MAX_FIELD_NAME bytes, none a control
 * character (below 0x20, or 0x7F), a space or a comma (field lists are comma-separated). */
int idx_field_name_ok(const char *name, size_t len);
/* The record of section 9 for these (R + F strings; names valid and distinct, checked by the
 * caller): *out (malloc, caller frees) and its length. */
cls_status idx_collection_make(const char *format, const char *const *roots, uint32_t num_roots,
                               const char *const *names, uint32_t num_fields, char **out, uint64_t *len);
/* Parses a record of section 9 into c (c->roots allocated: idx_collection_free); NULL, or what
 * is wrong with it (then nothing is allocated). */
const char *idx_collection_read(const void *data, uint64_t size, idx_collection *c);
void idx_collection_free(idx_collection *c);
/* What is wrong with F stored fields of N documents (offsets and values as sections 10 and 11
 * hold them), or NULL: the bounds of each field's range, each document's offsets in order,
 * each value ending in its only NUL. *field and *doc say where (doc N: the field's bounds),
 * *section which section holds the fault ("field-offsets" or "field-values"). */
const char *idx_fields_problem(const uint64_t *off, const char *blob, uint64_t blob_len, uint32_t N, uint32_t F,
                               uint32_t *field, uint32_t *doc, const char **section);

/* An opened index: cls_index_open has checked the header, the section table, every section's
 * checksum but the postings words', and everything structural about the metadata (index_file.c
 * says what). The words are verified before anything reads them: against words_xxh by whoever
 * reads them whole (idx_verify_words, the device engine's upload), and stream by stream by the
 * strict decoders (idx_decode_block); cls_index_check does both for every block. */
struct cls_index {
    void *map;
    size_t map_len;
    /* Another program may truncate the file while it is mapped: the mapping is watched
     * (util/mapwatch.h), so a read past the file's new end sees zeros instead of ending the
     * process with SIGBUS, and every reader copes with zeros wherever the file held data: the
     * offsets it reads are bounded where they are used (idx_block_words, idx_term_text) and the
     * streams decode strictly or clamped. A call that read the mapping ends with idx_intact, so
     * it fails with CLS_E_IO (idx_shrunk) rather than return what the zeros gave. */
    int watch;              /* mw_watch's number, 0 when nothing is mapped */
    int fd;                 /* the file, kept open to tell its size now in idx_shrunk's message */
    char *path;             /* as opened, for messages (owned) */
    uint32_t num_docs, num_terms, block_size;
    cls_codec codec;
    unsigned pfor_depth;
    float score_k1, score_b;
    cls_scoring scoring;    /* from the header: how postings score (bm25.h: score_contrib) */
    uint64_t words_xxh;     /* the postings words' checksum, from the section table (checksum.h) */
    _Atomic int words_ok;   /* 1 once the words matched words_xxh: later readers need not hash them
                             * again (idx_verify_words, idx_words_verified) */
    uint64_t num_postings, num_tokens, num_blocks, num_words;
    unsigned analyzer;
    double avg_doc_len;
    /* The collection BM25 scores against: a shard's from its header, a whole index's own counts
     * (so every scorer reads these, never num_docs and num_tokens). coll_avg_doc_len is
     * coll_tokens / coll_docs, 0 for an empty collection. */
    uint32_t coll_docs;
    uint64_t coll_tokens;
    double coll_avg_doc_len;
    /* A shard's place (index_shard.h): shard of shards, its document 0 the collection's doc_base;
     * shards 0 in a whole index. */
    uint32_t shards, shard, doc_base;
    const uint32_t *doclen;
    const uint64_t *docno_off;
    const char *docno_blob;
    const idx_term *terms;
    const uint64_t *term_off;
    const char *term_blob;
    const idx_block *blocks;
    const uint32_t *words;
    unsigned version;       /* 3 or 4 */
    /* version 4's collection record (section 9) and stored fields; empty for version 3 */
    const void *coll_raw;   /* section 9's bytes, NULL for version 3 (recode copies them) */
    uint64_t coll_raw_len;
    idx_collection coll;    /* section 9 parsed (its string table owned) */
    const uint64_t *field_off; /* num_fields x (num_docs + 1) */
    const char *field_blob;
    uint64_t field_blob_len;
};

/* The collection's df of term t, which BM25's idf is computed from: a shard's term entry keeps
 * it beside the df of its own list. */
static inline uint32_t idx_coll_df(const cls_index *x, uint32_t t)
{
    return x->shards ? x->terms[t].cdf : x->terms[t].df;
}

/* The error of a read that found the index file shorter than when it was opened (CLS_E_IO,
 * naming the file and its sizes then and now). */
cls_status idx_shrunk(const cls_index *idx);
/* s, unless a read of idx's mapping found the file shrunk, or s is an error and the file is
 * shorter now: then idx_shrunk, whatever s was (a damaged block or a checksum mismatch seen in
 * the zeros is not the file's fault). Every call that reads the mapping and returns a status
 * passes it through here: a flag's load when all went well (the hot path), the file's size as
 * well when something failed. A call that reads much (check, recode, an engine's start) ends
 * with cls_index_intact instead, which always asks the size: the rest of the page where a cut
 * falls reads as zeros without a fault. */
cls_status idx_intact(const cls_index *idx, cls_status s);
/* Term t's bytes and their count. */
const char *idx_term_text(const cls_index *idx, uint32_t t, size_t *len);
/* Term id of term[0..len), or UINT32_MAX when unknown. */
uint32_t idx_lookup(const cls_index *idx, const char *term, size_t len);
/* Reference decoder: block b's postings into docs[] and freqs[] (idx_info_count entries), with
 * the strict decoders: both streams well-formed and exactly as long as their extents, the
 * docIDs ending at the block's last, every frequency representable. A stream that is not is
 * CLS_E_CORRUPT naming the term and block (then docs and freqs are undefined). It does not
 * hash the words: damage that still decodes is found by idx_verify_words or cls_index_check. */
cls_status idx_decode_block(const cls_index *idx, uint64_t b, uint32_t *docs, uint32_t *freqs);
/* idx_decode_block's two halves, for a reader that needs a block's frequencies only where it
 * scores a posting: the docIDs (their stream and the block's last checked), the frequencies. */
cls_status idx_decode_docs(const cls_index *idx, uint64_t b, uint32_t *docs);
cls_status idx_decode_freqs(const cls_index *idx, uint64_t b, uint32_t *freqs);
/* Reference decoder for term's whole list: its df postings into docs[] and freqs[], which
 * have room for df + block_size entries (a block decodes whole); *n receives df. Fails as
 * idx_decode_block does. */
cls_status idx_decode_list(const cls_index *idx, uint32_t term, uint32_t *docs, uint32_t *freqs, uint32_t *n);
/* Hashes the postings words (their chunks on every core, checksum.h): CLS_OK when they match
 * the section table's checksum, else CLS_E_CORRUPT naming section 'postings'. For readers of
 * the whole words section. */
cls_status idx_verify_words(const cls_index *idx);
/* Whether the words already matched their checksum in this process; idx_words_set_verified
 * records that they did (an index is made by cls_index_open only, so never a const object). */
int idx_words_verified(const cls_index *idx);
void idx_words_set_verified(const cls_index *idx);
/* The error of a postings checksum mismatch (the same message wherever it is found). */
cls_status idx_words_corrupt(const cls_index *idx);
/* CLS_E_CORRUPT for block b: names the section, the block's term, its place in the list. */
cls_status idx_block_corrupt(const cls_index *idx, uint64_t b, const char *section, const char *what);
/* Block b against everything cls_index_check tests (the strict decoders, max_score at the norms
 * norms[], bm25_norms at the header's k1 and b): CLS_OK, or CLS_E_CORRUPT with the check's
 * message. The device engines ask it for the message of a block their own check refused. */
cls_status idx_check_block(const cls_index *idx, const float *norms, uint64_t b);
/* Every document's stored fields (idx_fields_problem): CLS_OK or CLS_E_CORRUPT naming the
 * section, field and document. cls_index_check and recode run it; opening checks only bounds. */
cls_status idx_verify_fields(const cls_index *idx);
/* Words of block b (both streams): blocks[b+1].offset - blocks[b].offset, or to the end (0
 * where a shrunk file's zeros would make that negative). */
uint64_t idx_block_words(const cls_index *idx, uint64_t b);
/* Whether the blocks' max_score bound the scores of a search at k1 and b, so that block-max
 * pruning may skip blocks: for a BM25 index when k1 and b are the header's score_k1 and
 * score_b, for an impact index always (its max_score is the block's largest impact). */
int idx_bounds_valid(const cls_index *idx, float k1, float b);
/* The kernel build option that makes the device's bm25_contrib score as idx does (cl/common.cl):
 * " -DSCORE_IMPACT=1" for an impact index, "" for BM25; for both programs' options. */
const char *idx_score_option(const cls_index *idx);

#endif
