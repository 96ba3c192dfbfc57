/* Growable arrays: the one grow-by-doubling helper behind every append-only buffer (query
 * batches, builder arenas and postings, coded words, CIFF messages, corpus lines and records,
 * the generators' and benchmarks' tables). */
#ifndef CLS_VEC_H
#define CLS_VEC_H

#include <stddef.h>

/* The first capacity of an empty array, in bytes (at least one element). */
#define VEC_MIN_BYTES 64u

/* vec_reserve's growing part (need > *cap), out of line. */
int vec_grow(void *pp, size_t *cap, size_t need, size_t elem_size);

/* Makes the array at *pp hold at least need elements of elem_size (> 0) bytes. pp is the
 * address of the array's pointer, of any object type (a T **; the pointer NULL and *cap 0 while
 * empty), and *cap counts the elements allocated. When need exceeds *cap the capacity doubles
 * (from VEC_MIN_BYTES' worth of elements when empty) until it holds need (need itself where
 * doubling would pass SIZE_MAX bytes) and the block is realloc'ed: pointers into it go stale.
 * Returns 1 on success (at once when need <= *cap), 0 when need elements would pass SIZE_MAX
 * bytes or realloc fails; then the array and *cap are unchanged and still valid. Sets no error
 * message: the caller says what ran out. */
static inline int vec_reserve(void *pp, size_t *cap, size_t need, size_t elem_size)
{
    return need <= *cap || vec_grow(pp, cap, need, elem_size);
}

#endif
