/* The device's list cache (Huang et al.'s GPU list cache): which posting lists are on the device
 * and where, for an index that does not fit there whole (or an engine given less device memory
 * than the index takes: --device-mem).
 *
 * The device then holds two arenas instead of the index's sections: one of postings words and
 * one of block records. A cached list occupies a contiguous range of each, its block records
 * copied with their word offsets moved to where its words lie in the arena, so the kernels need
 * not know: they find a list's blocks where the planner's descriptors say (abi_list and
 * abi_skip's first_block) and each block's words where its record says, as with the whole
 * index resident.
 *
 * The batch planner pins the lists of each query it adds (lc_pin); a list that is not resident
 * is given room, evicting the least recently used lists not pinned by the batch (LRU by bytes),
 * and noted as a load, which the device engine uploads before the batch's first kernel. A
 * query whose lists cannot all be pinned beside the batch's others closes the batch (the
 * planner undoes its loads with lc_rollback); alone, it is an error naming the bytes it needs.
 *
 * Room is found first fit among the arena's holes, which merge with their neighbours when
 * freed, so a scan costs the number of holes: at most the number of resident lists, plus one.
 *
 * Plain C, no OpenCL: the tests drive it without a device. */
#ifndef CLS_QUERY_LIST_CACHE_H
#define CLS_QUERY_LIST_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "index/index.h"

/* Free ranges of an arena, in address order, none adjacent to another. */
typedef struct lc_hole {
    uint64_t at, len;
} lc_hole;

typedef struct lc_arena {
    uint64_t size;
    lc_hole *holes;
    size_t nholes, cap;
} lc_arena;

/* A list to upload: its words go to word_pos of the words arena, its block records (offsets
 * moved by word_pos - the list's first word) to block_pos of the blocks arena. */
typedef struct lc_load {
    uint32_t term;
    uint32_t block_pos;
    uint64_t word_pos;
} lc_load;

#define LC_NONE UINT32_MAX

typedef struct lc_entry {
    uint64_t word_pos;
    uint32_t block_pos; /* LC_NONE: not resident */
    uint32_t prev, next; /* LRU order among resident lists (LC_NONE ends it) */
    uint64_t epoch;      /* the batch that last pinned it */
} lc_entry;

typedef struct list_cache {
    const cls_index *idx;
    lc_arena words, blocks;
    lc_entry *e;               /* per term */
    uint32_t lru, mru;         /* least and most recently used resident lists, LC_NONE when none */
    uint64_t epoch;            /* the batch being planned */
    lc_load *loads;            /* the batch's loads, in the order they were pinned */
    size_t nloads, loads_cap;
    uint64_t load_words, load_blocks; /* their sizes together */
    /* counted over the cache's life */
    uint64_t hits, misses, evictions, words_loaded, blocks_loaded;
} list_cache;

/* A cache of `words` postings words and `blocks` block records (each at least 1) for idx.
 * Nothing is resident at first. */
cls_status lc_init(list_cache *c, const cls_index *idx, uint64_t words, uint64_t blocks);
void lc_free(list_cache *c);
/* Forgets every list (after a failed batch, whose loads may not have happened). */
void lc_reset(list_cache *c);
/* A new batch: nothing pinned, no loads. */
void lc_begin(list_cache *c);
/* Pins term's list for the batch: *block_pos receives where its block records are (or will be,
 * once the batch's loads are uploaded) and *fits 1; *fits 0 when it cannot get room beside the
 * lists the batch already pinned. Fails only when out of host memory. */
cls_status lc_pin(list_cache *c, uint32_t term, uint32_t *block_pos, int *fits);
/* Undoes the loads after the first nloads (a query that did not fit): their room is freed.
 * Fails only when out of host memory. */
cls_status lc_rollback(list_cache *c, size_t nloads);
/* The words of term's list: [*first, *first + *count) of the index's words section. */
void lc_list_words(const cls_index *idx, uint32_t term, uint64_t *first, uint64_t *count);

#endif
