/* The device's list cache (list_cache.h). */
#include "engine/list_cache.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/vec.h"

static cls_status arena_init(lc_arena *a, uint64_t size)
{
    memset(a, 0, sizeof *a);
    a->size = size;
    if (!vec_reserve(&a->holes, &a->cap, 1, sizeof *a->holes)) return err_set(CLS_E_NOMEM, "out of memory for the list cache");
    a->holes[0] = (lc_hole){0, size};
    a->nholes = 1;
    return CLS_OK;
}

static void arena_clear(lc_arena *a)
{
    a->holes[0] = (lc_hole){0, a->size};
    a->nholes = 1;
}

/* First fit: the start of len free units, or UINT64_MAX. */
static uint64_t arena_alloc(lc_arena *a, uint64_t len)
{
    if (len == 0) return 0; /* an empty range needs no room (a list has blocks, but be total) */
    for (size_t i = 0; i < a->nholes; i++) {
        lc_hole *h = &a->holes[i];
        if (h->len < len) continue;
        uint64_t at = h->at;
        h->at += len;
        h->len -= len;
        if (h->len == 0) {
            memmove(h, h + 1, (a->nholes - i - 1) * sizeof *h);
            a->nholes--;
        }
        return at;
    }
    return UINT64_MAX;
}

/* Frees [at, at + len), merging it with the holes beside it. Needs room for one more hole
 * (arena_room) when it merges with neither. */
static void arena_release(lc_arena *a, uint64_t at, uint64_t len)
{
    if (len == 0) return;
    size_t lo = 0, hi = a->nholes; /* the first hole after at */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->holes[mid].at < at) lo = mid + 1;
        else hi = mid;
    }
    int left = lo > 0 && a->holes[lo - 1].at + a->holes[lo - 1].len == at;
    int right = lo < a->nholes && at + len == a->holes[lo].at;
    assert(!(lo > 0 && a->holes[lo - 1].at + a->holes[lo - 1].len > at) && "released range overlaps a hole");
    if (left && right) {
        a->holes[lo - 1].len += len + a->holes[lo].len;
        memmove(&a->holes[lo], &a->holes[lo + 1], (a->nholes - lo - 1) * sizeof *a->holes);
        a->nholes--;
    } else if (left) {
        a->holes[lo - 1].len += len;
    } else if (right) {
        a->holes[lo].at = at;
        a->holes[lo].len += len;
    } else {
        assert(a->nholes < a->cap);
        memmove(&a->holes[lo + 1], &a->holes[lo], (a->nholes - lo) * sizeof *a->holes);
        a->holes[lo] = (lc_hole){at, len};
        a->nholes++;
    }
}

/* Room for the hole a release may add. */
static int arena_room(lc_arena *a) { return vec_reserve(&a->holes, &a->cap, a->nholes + 1, sizeof *a->holes); }

void lc_list_words(const cls_index *idx, uint32_t term, uint64_t *first, uint64_t *count)
{
    const idx_term *t = &idx->terms[term];
    uint64_t end_block = (uint64_t)t->first_block + t->num_blocks;
    *first = t->num_blocks ? idx->blocks[t->first_block].offset : 0;
    uint64_t end = end_block < idx->num_blocks ? idx->blocks[end_block].offset : idx->num_words;
    *count = t->num_blocks ? end - *first : 0;
}

cls_status lc_init(list_cache *c, const cls_index *idx, uint64_t words, uint64_t blocks)
{
    memset(c, 0, sizeof *c);
    c->idx = idx;
    c->lru = c->mru = LC_NONE;
    c->e = malloc(((size_t)idx->num_terms + 1) * sizeof *c->e);
    cls_status s = c->e ? CLS_OK : err_set(CLS_E_NOMEM, "out of memory for the list cache (%u terms)", idx->num_terms);
    if (s == CLS_OK) s = arena_init(&c->words, words ? words : 1);
    if (s == CLS_OK) s = arena_init(&c->blocks, blocks ? blocks : 1);
    if (s != CLS_OK) {
        lc_free(c);
        return s;
    }
    lc_reset(c);
    return CLS_OK;
}

void lc_free(list_cache *c)
{
    free(c->e);
    free(c->words.holes);
    free(c->blocks.holes);
    free(c->loads);
    memset(c, 0, sizeof *c);
}

void lc_reset(list_cache *c)
{
    for (uint32_t t = 0; t < c->idx->num_terms; t++)
        c->e[t] = (lc_entry){.block_pos = LC_NONE, .prev = LC_NONE, .next = LC_NONE};
    c->lru = c->mru = LC_NONE;
    arena_clear(&c->words);
    arena_clear(&c->blocks);
    c->nloads = 0;
    c->load_words = c->load_blocks = 0;
}

void lc_begin(list_cache *c)
{
    c->epoch++;
    c->nloads = 0;
    c->load_words = c->load_blocks = 0;
}

static void unlink_entry(list_cache *c, uint32_t t)
{
    lc_entry *x = &c->e[t];
    if (x->prev != LC_NONE) c->e[x->prev].next = x->next;
    else c->lru = x->next;
    if (x->next != LC_NONE) c->e[x->next].prev = x->prev;
    else c->mru = x->prev;
    x->prev = x->next = LC_NONE;
}

static void push_mru(list_cache *c, uint32_t t)
{
    lc_entry *x = &c->e[t];
    x->prev = c->mru;
    x->next = LC_NONE;
    if (c->mru != LC_NONE) c->e[c->mru].next = t;
    else c->lru = t;
    c->mru = t;
}

/* Takes term t's list off the device: its room is free again. */
static void drop(list_cache *c, uint32_t t)
{
    const idx_term *te = &c->idx->terms[t];
    uint64_t w0, nw;
    lc_list_words(c->idx, t, &w0, &nw);
    arena_release(&c->words, c->e[t].word_pos, nw);
    arena_release(&c->blocks, c->e[t].block_pos, te->num_blocks);
    unlink_entry(c, t);
    c->e[t].block_pos = LC_NONE;
}

cls_status lc_pin(list_cache *c, uint32_t term, uint32_t *block_pos, int *fits)
{
    assert(term < c->idx->num_terms);
    lc_entry *x = &c->e[term];
    *fits = 1;
    if (x->block_pos != LC_NONE) { /* resident: now the most recently used */
        if (x->epoch != c->epoch) c->hits++;
        x->epoch = c->epoch;
        unlink_entry(c, term);
        push_mru(c, term);
        *block_pos = x->block_pos;
        return CLS_OK;
    }
    const idx_term *te = &c->idx->terms[term];
    uint64_t w0, nw;
    lc_list_words(c->idx, term, &w0, &nw);
    if (nw > c->words.size || te->num_blocks > c->blocks.size) {
        *fits = 0;
        return CLS_OK;
    }
    if (!vec_reserve(&c->loads, &c->loads_cap, c->nloads + 1, sizeof *c->loads) || !arena_room(&c->words) ||
        !arena_room(&c->blocks))
        return err_set(CLS_E_NOMEM, "out of memory for the list cache");
    for (;;) {
        uint64_t wp = arena_alloc(&c->words, nw);
        if (wp != UINT64_MAX) {
            uint64_t bp = arena_alloc(&c->blocks, te->num_blocks);
            if (bp != UINT64_MAX) {
                x->word_pos = wp;
                x->block_pos = (uint32_t)bp;
                x->epoch = c->epoch;
                push_mru(c, term);
                c->loads[c->nloads++] = (lc_load){.term = term, .block_pos = (uint32_t)bp, .word_pos = wp};
                c->load_words += nw;
                c->load_blocks += te->num_blocks;
                c->misses++;
                c->words_loaded += nw;
                c->blocks_loaded += te->num_blocks;
                *block_pos = (uint32_t)bp;
                return CLS_OK;
            }
            arena_release(&c->words, wp, nw);
        }
        /* No room: the least recently used list goes, unless the batch pinned it, in which case
         * so did it every list after it (pinning moves a list to the end). */
        uint32_t victim = c->lru;
        if (victim == LC_NONE || c->e[victim].epoch == c->epoch) {
            *fits = 0;
            return CLS_OK;
        }
        if (!arena_room(&c->words) || !arena_room(&c->blocks)) return err_set(CLS_E_NOMEM, "out of memory for the list cache");
        drop(c, victim);
        c->evictions++;
    }
}

cls_status lc_rollback(list_cache *c, size_t nloads)
{
    while (c->nloads > nloads) {
        if (!arena_room(&c->words) || !arena_room(&c->blocks)) return err_set(CLS_E_NOMEM, "out of memory for the list cache");
        const lc_load *l = &c->loads[--c->nloads];
        uint64_t w0, nw;
        lc_list_words(c->idx, l->term, &w0, &nw);
        c->load_words -= nw;
        c->load_blocks -= c->idx->terms[l->term].num_blocks;
        c->misses--;
        c->words_loaded -= nw;
        c->blocks_loaded -= c->idx->terms[l->term].num_blocks;
        drop(c, l->term);
    }
    return CLS_OK;
}
