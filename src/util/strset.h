/* A set of byte strings that remembers the order they came in: for telling a repeated document
 * id or query id from a new one. Open addressing on xxHash; the strings are copied into one
 * growing arena, so adding costs amortized constant time and no allocation of its own. */
#ifndef CLS_STRSET_H
#define CLS_STRSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct strset {
    uint32_t *slot;  /* 0 empty, else 1 + the string's number */
    uint32_t mask;   /* slots - 1 (a power of two), or 0 before the first add */
    uint32_t n;      /* strings held */
    uint64_t *off;   /* string i at arena + off[i], off[i + 1] - off[i] bytes */
    size_t off_cap;
    char *arena;
    size_t arena_len, arena_cap;
} strset;

/* Adds s[0..len); 1 when new, 0 when already held (*first: the number of the earlier one, in
 * order of adding from 0), -1 when out of memory (the set is unchanged). */
int strset_add(strset *set, const char *s, size_t len, uint32_t *first);
/* 1 when s[0..len) is held (*first: its number), else 0. */
int strset_find(const strset *set, const char *s, size_t len, uint32_t *first);
/* Empties the set, keeping its memory. */
void strset_clear(strset *set);
void strset_free(strset *set);

#endif
