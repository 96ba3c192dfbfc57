/* The index: in-file layout and the loaded, verified view of it.
 *
 * A posting list is cut into blocks of IDX_BLOCK postings (the last may be partial). Each block
 * stores docID gaps and frequencies bit-packed with one width each (codec_bp.h), so a block
 * decodes independently: docID_i = base + inclusive_prefix_sum(x)_i with x_0 = gap_0 and
 * x_i = gap_i + 1, where gap_0 = d_0 - base and gap_i = d_i - d_{i-1} - 1; base is 0 for a
 * list's first block and the previous block's last docID + 1 after that. That prefix sum is
 * what the device runs per work-group (cl/decode.cl). Frequencies are stored minus one.
 *
 * File: a 64-byte header, a section table, then sections aligned to 64 bytes, each with an
 * xxh64 checksum. All integers little-endian. See docs/ARCHITECTURE.md.
 */
#ifndef CLS_INDEX_H
#define CLS_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "clsearch.h"

#define IDX_MAGIC "CLSIDX\r\n" /* the CR-LF catches text-mode mangling */
#define IDX_VERSION 1u
#define IDX_BLOCK 128u
#define IDX_ALIGN 64u

/* Per-block metadata, 16 bytes; uploaded to devices as uint4. */
typedef struct idx_block {
    uint32_t last;   /* last docID of the block */
    uint32_t base;   /* docID the first gap is relative to */
    uint32_t offset; /* first word of the block in the words section */
    uint32_t info;   /* (count-1) | doc bit width << 16 | freq bit width << 24 */
} idx_block;

#define IDX_INFO(count, bwd, bwf) ((uint32_t)((count) - 1) | (uint32_t)(bwd) << 16 | (uint32_t)(bwf) << 24)
static inline uint32_t idx_info_count(uint32_t info) { return (info & 0xFFFFu) + 1; }
static inline unsigned idx_info_bwd(uint32_t info) { return (info >> 16) & 63u; }
static inline unsigned idx_info_bwf(uint32_t info) { return (info >> 24) & 63u; }

/* Per-term entry, 16 bytes; terms are sorted by their bytes (memcmp order). */
typedef struct idx_term {
    uint32_t df;          /* documents containing the term */
    uint32_t first_block; /* index into the blocks section */
    uint32_t num_blocks;
    uint32_t reserved;
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
    IDX_S_COUNT_PLUS_ONE
};
#define IDX_NSECTIONS (IDX_S_COUNT_PLUS_ONE - 1)

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
    uint64_t table_xxh;   /* xxh64 of the section table */
    uint64_t header_xxh;  /* xxh64 of the 56 bytes before this field */
} idx_header;

typedef struct idx_section_entry {
    uint32_t id;
    uint32_t reserved;
    uint64_t offset;
    uint64_t size;
    uint64_t xxh;
} idx_section_entry;

struct cls_index {
    void *map;
    size_t map_len;
    uint32_t num_docs, num_terms, block_size;
    uint64_t num_postings, num_tokens, num_blocks, num_words;
    unsigned analyzer;
    double avg_doc_len;
    const uint32_t *doclen;
    const uint64_t *docno_off;
    const char *docno_blob;
    const idx_term *terms;
    const uint64_t *term_off;
    const char *term_blob;
    const idx_block *blocks;
    const uint32_t *words;
};

/* Term id of term[0..len), or UINT32_MAX when unknown. */
uint32_t idx_lookup(const cls_index *idx, const char *term, size_t len);
/* Reference decoder: block b's postings into docs[] and freqs[] (idx_info_count entries). */
void idx_decode_block(const cls_index *idx, uint64_t b, uint32_t *docs, uint32_t *freqs);
/* Encodes one block of n postings; returns the words written to out (room for 2*n+2). */
uint32_t idx_encode_block(const uint32_t *docs, const uint32_t *freqs, uint32_t n, uint32_t base,
                          idx_block *meta, uint32_t *out, uint32_t *tmp);

/* BM25 as both engines compute it, in float, in this operation order. */
static inline float bm25_contrib(float w, uint32_t tf, float norm)
{
    float f = (float)tf;
    return (w * f) / (f + norm);
}
/* Lucene's idf times the query weight (term count in the query). */
float bm25_weight(const cls_index *idx, uint32_t term, uint32_t qtf);
/* Per-document length normalisation k1 * (1 - b + b * dl / avgdl), for all docs. */
void bm25_norms(const cls_index *idx, float k1, float b, float *out);

#endif
