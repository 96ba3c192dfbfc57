/* String set with insertion order (strset.h). */
#include "util/strset.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/vec.h"

static int grow(strset *set)
{
    uint32_t cap = set->mask ? (set->mask + 1) * 2 : 64;
    if (cap == 0) return 0;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return 0;
    for (uint32_t i = 0; i < set->n; i++) {
        uint64_t h = XXH3_64bits(set->arena + set->off[i], (size_t)(set->off[i + 1] - set->off[i]));
        uint32_t j = (uint32_t)h & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = i + 1;
    }
    free(set->slot);
    set->slot = slot;
    set->mask = cap - 1;
    return 1;
}

int strset_find(const strset *set, const char *s, size_t len, uint32_t *first)
{
    if (!set->n) return 0;
    uint64_t h = XXH3_64bits(s, len);
    for (uint32_t j = (uint32_t)h & set->mask; set->slot[j]; j = (j + 1) & set->mask) {
        uint32_t i = set->slot[j] - 1;
        if (set->off[i + 1] - set->off[i] == len && memcmp(set->arena + set->off[i], s, len) == 0) {
            if (first) *first = i;
            return 1;
        }
    }
    return 0;
}

int strset_add(strset *set, const char *s, size_t len, uint32_t *first)
{
    if (set->n == UINT32_MAX - 1) return -1;
    /* at most half full, so probes stay short */
    if ((uint64_t)(set->n + 1) * 2 > (uint64_t)set->mask + 1 && !grow(set)) return -1;
    uint64_t h = XXH3_64bits(s, len);
    uint32_t j = (uint32_t)h & set->mask;
    for (; set->slot[j]; j = (j + 1) & set->mask) {
        uint32_t i = set->slot[j] - 1;
        if (set->off[i + 1] - set->off[i] == len && memcmp(set->arena + set->off[i], s, len) == 0) {
            if (first) *first = i;
            return 0;
        }
    }
    if (!vec_reserve(&set->off, &set->off_cap, (size_t)set->n + 2, sizeof *set->off) ||
        !vec_reserve(&set->arena, &set->arena_cap, set->arena_len + len + 1, 1))
        return -1;
    set->off[0] = 0;
    if (len) memcpy(set->arena + set->arena_len, s, len);
    set->arena_len += len;
    set->off[set->n + 1] = set->arena_len;
    set->slot[j] = ++set->n;
    return 1;
}

void strset_clear(strset *set)
{
    if (set->slot) memset(set->slot, 0, ((size_t)set->mask + 1) * sizeof *set->slot);
    set->n = 0;
    set->arena_len = 0;
}

void strset_free(strset *set)
{
    free(set->slot);
    free(set->off);
    free(set->arena);
    memset(set, 0, sizeof *set);
}
