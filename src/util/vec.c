/* Growable arrays (vec.h). */
#include "util/vec.h"

#include "util/fault.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int vec_grow(void *pp, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap) return 1;
    if (fault_hit(FAULT_HOST_ALLOC)) return 0;
    if (elem_size == 0 || need > SIZE_MAX / elem_size) return 0;
    const size_t max = SIZE_MAX / elem_size; /* elements that fit in SIZE_MAX bytes */
    size_t c = *cap ? *cap : VEC_MIN_BYTES / elem_size;
    if (c == 0) c = 1;
    while (c < need) c = c > max / 2 ? need : 2 * c;
    /* The caller's pointer is a T *: read and written as bytes (every object pointer has void *'s
     * representation on the platforms clsearch builds for), so no aliasing rule is bent. */
    void *p;
    memcpy(&p, pp, sizeof p);
    void *q = realloc(p, c * elem_size);
    if (!q) return 0;
    memcpy(pp, &q, sizeof q);
    *cap = c;
    return 1;
}
