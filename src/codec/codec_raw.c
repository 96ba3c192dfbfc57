/* raw: the values as they are, one 32-bit word each; the baseline every codec is measured
 * against (its device decoder is a load and the block's prefix sum). Parameter: 0. */
#include <string.h>

#include "codec/codec.h"

static uint32_t raw_encode(const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth, uint32_t *param,
                           uint32_t *out)
{
    if (n) memcpy(out, v, (size_t)n * 4);
    *param = 0;
    return n;
}

static int raw_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out,
                      uint32_t *used)
{
    if (param != 0 || avail != n) return -1;
    if (n) memcpy(out, w, (size_t)n * 4);
    *used = n;
    return 0;
}

const cdc_codec cdc_codec_raw = {
    .name = "raw",
    .help = "uncompressed 32-bit values: the baseline",
    .encode = raw_encode,
    .decode = raw_decode,
    .list_param = NULL,
    .uses_depth = 0,
    .kernel = "codec_raw.cl",
};
