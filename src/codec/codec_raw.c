/* raw: the values as they are, one 32-bit word each; the baseline every codec is measured
 * against (its device decoder is a load and the block's prefix sum). Parameter: 0. */
#include <string.h>

#include "codec/codec.h"

uint32_t cdc_raw_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out)
{
    if (n) memcpy(out, v, (size_t)n * 4);
    *param = 0;
    return n;
}

int cdc_raw_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out, uint32_t *used)
{
    if (param != 0 || avail != n) return -1;
    if (n) memcpy(out, w, (size_t)n * 4);
    *used = n;
    return 0;
}
