/* Codec names and dispatch (codec.h). */
#include "codec/codec.h"

#include <string.h>

#include "util/err.h"

static const char *const NAMES[CLS_NUM_CODECS] = {"raw", "bp", "pfor", "optpfd", "rice"};

const char *cls_codec_name(cls_codec c) { return (unsigned)c < CLS_NUM_CODECS ? NAMES[c] : NULL; }

cls_status cls_codec_parse(const char *name, cls_codec *out)
{
    for (unsigned i = 0; name && i < CLS_NUM_CODECS; i++)
        if (strcmp(name, NAMES[i]) == 0) {
            *out = (cls_codec)i;
            return CLS_OK;
        }
    return err_set(CLS_E_ARG, "unknown codec '%s' (raw, bp, pfor, optpfd or rice)", name ? name : "(null)");
}

uint32_t cdc_list_param(cls_codec c, const uint32_t *v, uint64_t n)
{
    return c == CLS_CODEC_PFOR ? cdc_pfor_list_param(v, n) : 0;
}

uint32_t cdc_encode(cls_codec c, const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth,
                    uint32_t *param, uint32_t *out)
{
    switch (c) {
    case CLS_CODEC_RAW: return cdc_raw_encode(v, n, param, out);
    case CLS_CODEC_BP: return cdc_bp_encode(v, n, param, out);
    case CLS_CODEC_PFOR: return cdc_pfor_encode(v, n, list_param, depth, param, out);
    case CLS_CODEC_OPTPFD: return cdc_optpfd_encode(v, n, param, out);
    case CLS_CODEC_RICE: return cdc_rice_encode(v, n, param, out);
    }
    *param = 0;
    return 0;
}

int cdc_decode(cls_codec c, const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth,
               uint32_t *out, uint32_t *used)
{
    if (n > CDC_MAX_N) return -1;
    switch (c) {
    case CLS_CODEC_RAW: return cdc_raw_decode(w, avail, n, param, out, used);
    case CLS_CODEC_BP: return cdc_bp_decode(w, avail, n, param, out, used);
    case CLS_CODEC_PFOR: return cdc_pfor_decode(w, avail, n, param, depth, out, used);
    case CLS_CODEC_OPTPFD: return cdc_optpfd_decode(w, avail, n, param, out, used);
    case CLS_CODEC_RICE: return cdc_rice_decode(w, avail, n, param, out, used);
    }
    return -1;
}
