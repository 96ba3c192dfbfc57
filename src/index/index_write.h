/* Encoding a whole collection's posting lists with a codec and writing the index file. Both
 * the builder (index_build.c) and the CIFF importer (ciff.c) end here. */
#ifndef CLS_INDEX_WRITE_H
#define CLS_INDEX_WRITE_H

#include "index/index.h"

/* A document-range shard of a collection (index_shard.h): its place, and the collection's
 * statistics that its block maxima and every search score with. */
typedef struct idx_shard {
    uint32_t shard, shards;      /* shard of shards, 1 .. IDX_MAX_SHARDS */
    uint32_t doc_base;           /* the collection's docID of the shard's document 0 */
    uint32_t coll_docs;          /* the collection's documents, at least doc_base + the shard's */
    uint64_t coll_tokens;        /* the collection's tokens, at least the shard's */
    const uint32_t *cdf;         /* per term: the collection's df, at least 1 and the list's postings */
} idx_shard;

/* Where idx_write_lists spent its time, in seconds (monotonic clock). encode: the wall time of
 * the chunks' stage, where each encoder thread fills a chunk's postings (a builder's merge of its
 * runs) and codes it into blocks (gaps, the codec, block maxima); merge and code: the seconds
 * its threads spent in each, summed over the threads (the stage's share of the work, not a wall
 * time); layout: the chunks' words laid out in order, their blocks' offsets moved; write: the
 * file. */
typedef struct idx_write_times {
    double encode, merge, code, layout, write;
    unsigned threads, chunks;
    char device[768]; /* the device that encoded, with its parameters (encode_dev.h); "" for the host */
} idx_write_times;

/* Fills the postings of the lists t0 .. t1 - 1 (dictionary order): docs and freqs from index 0
 * for list_start[t0], as idx_lists' arrays would hold them. Called from several encoder threads
 * at once, each with its own chunk and buffers. */
typedef cls_status (*idx_fill_fn)(void *user, uint32_t t0, uint32_t t1, uint32_t *docs, uint32_t *freqs);

/* A collection, inverted: documents, and per term (in byte order) its postings. */
typedef struct idx_lists {
    unsigned analyzer;          /* an_opts_pack() flags */
    uint32_t num_docs;
    const uint32_t *doclen;     /* num_docs: indexed tokens per document */
    const uint64_t *docno_off;  /* num_docs + 1 offsets into docno_blob */
    const char *docno_blob;     /* NUL-terminated docnos */
    uint64_t docno_blob_len;
    uint32_t num_terms;         /* strictly increasing in memcmp order */
    const uint64_t *term_off;   /* num_terms + 1 offsets into term_blob */
    const char *term_blob;      /* term bytes, not terminated */
    const uint64_t *list_start; /* num_terms + 1: term t's postings are [list_start[t], list_start[t+1]) */
    const uint32_t *docs;       /* docIDs, strictly increasing within a list, < num_docs */
    const uint32_t *freqs;      /* >= 1: term frequencies, or quantized impacts (scoring) */
    /* docs and freqs NULL: fill gives them a chunk at a time (a builder's runs, merged) */
    idx_fill_fn fill;
    void *fill_user;
    uint64_t chunk_postings;    /* postings a chunk aims at (a longer list is a chunk of its own);
                                 * 0: IDX_CHUNK_POSTINGS */
    cls_scoring scoring;        /* how the index scores (0: BM25) */
    /* what the index records besides (idx_file_parts says how): the collection record, NULL
     * for none, and num_fields (the record's count) stored fields */
    const void *collection;
    uint64_t collection_len;
    uint32_t num_fields;
    const uint64_t *field_off;  /* num_fields x (num_docs + 1) */
    const char *field_blob;
    uint64_t field_blob_len;
    const struct cls_index *source; /* idx_file_parts.source */
    /* NULL for a whole index; a shard's lists may be empty (the term is the collection's) */
    const idx_shard *shard;
    idx_write_times *times;     /* NULL, or receives idx_write_lists' stage times */
} idx_lists;

/* A term's bytes and the caller's number for it; idx_term_ref_cmp sorts them into the
 * dictionary's order (memcmp, the shorter first on a shared prefix), for qsort. */
typedef struct idx_term_ref {
    const char *s;
    uint32_t len, id;
} idx_term_ref;
int idx_term_ref_cmp(const void *a, const void *b);

/* A growing array of postings words. */
typedef struct idx_words {
    uint32_t *w;
    uint64_t n;
    size_t cap;
} idx_words;

/* Cuts one list (df postings) into blocks of o->block_size and codes them as the file stores
 * them: ceil(df / B) entries into blocks, words appended to wb (offsets count from wb's
 * start). w (bm25_block_weight) and norm (per-document BM25 norms) give each block's max_score,
 * the largest score_contrib(scoring, ...); norm NULL leaves it 0. vals: room for df values
 * (pfor's list-wide width is chosen over them). */
cls_status idx_encode_list(const cls_build_opts *o, const uint32_t *docs, const uint32_t *freqs, uint32_t df,
                           cls_scoring scoring, float w, const float *norm, uint32_t *vals, idx_block *blocks,
                           idx_words *wb);

/* A run of consecutive lists (in the dictionary's order) to encode together: the unit that the
 * builder's encoders (on host threads or a device) take. List i's postings are
 * docs[list_start[i] - list_start[0] .. list_start[i + 1] - list_start[0]), and so for freqs;
 * weight[i] is its bm25_block_weight. */
typedef struct idx_chunk {
    uint32_t num_lists;
    const uint64_t *list_start; /* num_lists + 1 */
    const uint32_t *docs, *freqs;
    const float *weight;
} idx_chunk;

/* Encodes every list of c as idx_encode_list does, one after another: blocks receives
 * sum(ceil(df / B)) entries, words are appended to wb. vals: room for the longest list's df. */
cls_status idx_encode_chunk(const cls_build_opts *o, const idx_chunk *c, cls_scoring scoring, const float *norm,
                            uint32_t *vals, idx_block *blocks, idx_words *wb);

#define IDX_CHUNK_POSTINGS ((uint64_t)1 << 20)

/* Checks l (CLS_E_FORMAT naming the first fault), encodes every list with o's codec and block
 * size, and writes the file at path through a temporary name. The dictionary is cut into chunks
 * of consecutive lists (l->chunk_postings), which o->threads encoder threads (0: every core)
 * fill and encode concurrently, each into words of its own; the chunks' words are then laid out
 * in order and their blocks' offsets moved, so the file is the same bytes for any threads and
 * chunk size. */
cls_status idx_write_lists(const char *path, const idx_lists *l, const cls_build_opts *o);
/* Seconds on the monotonic clock, for the stage times. */
double idx_clock(void);

/* The builder's stages, in seconds, as cls_builder_write measured them (all 0 before it):
 * finishing the analysis still in flight (drain), then inverting what is still in memory (the
 * dictionary sorted, the last run sorted by term), then idx_write_lists' stages (the runs merged
 * chunk by chunk as the chunks are encoded). Sealing runs overlaps the analysis: spill is the
 * seconds the sealing thread worked (sorting, laying out, writing spilled runs), runs the runs it
 * sealed, spills those it wrote to temporary files, spill_bytes their bytes, and spill_wait how
 * long adding documents waited for a seal still running. The reading and analysis before
 * cls_builder_write run as the caller feeds documents, and the caller times them. */
typedef struct idx_build_times {
    double drain, invert, spill, spill_wait;
    uint64_t runs, spills, spill_bytes, memory_budget;
    idx_write_times w;
} idx_build_times;
void idx_builder_times(const cls_builder *b, idx_build_times *t);
/* The tokens of the documents inverted so far (with threads, those still being analysed are not
 * counted yet); every document's once cls_builder_write has run. */
uint64_t idx_builder_tokens(const cls_builder *b);

/* CLS_E_ARG unless o is a valid layout (codec, block size, pfor depth). */
cls_status idx_check_opts(const cls_build_opts *o);

#endif
