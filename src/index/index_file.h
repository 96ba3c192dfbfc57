/* Writing and opening index files (layout in index.h). */
#ifndef CLS_INDEX_FILE_H
#define CLS_INDEX_FILE_H

#include "index/index.h"

typedef struct idx_file_parts {
    unsigned analyzer;
    cls_scoring scoring;
    cls_codec codec;
    uint32_t block_size;
    unsigned pfor_depth;
    uint32_t num_docs, num_terms;
    uint64_t num_postings, num_tokens;
    const uint32_t *doclen;
    const uint64_t *docno_off;
    const char *docno_blob;
    uint64_t docno_blob_len;
    const idx_term *terms;
    const uint64_t *term_off;
    const char *term_blob;
    uint64_t term_blob_len;
    const idx_block *blocks;
    uint64_t num_blocks;
    const uint32_t *words;
    uint64_t num_words;
    /* version 4: section 9 as idx_collection_make makes it (NULL: nothing recorded, an empty
     * record), and num_fields fields of num_docs documents: offsets (num_fields x (num_docs +
     * 1)) and values, as sections 10 and 11 hold them; num_fields must match the record's. */
    const void *collection;
    uint64_t collection_len;
    uint32_t num_fields;
    const uint64_t *field_off;
    const char *field_blob;
    uint64_t field_blob_len;
    /* a document-range shard's place (index.h, idx_header), all zero for a whole index; the
     * terms' cdf then hold the collection's df */
    uint32_t shards, shard, doc_base, coll_docs;
    uint64_t coll_tokens;
    /* the open index the parts lie in (recode), or NULL: if its file shrinks before the new one
     * is whole, the parts read since were zeros, and nothing is written (idx_intact) */
    const cls_index *source;
} idx_file_parts;

/* Writes the parts to path through a temporary file in the same folder, renamed at the end. */
cls_status idx_file_write(const char *path, const idx_file_parts *p);

#endif
