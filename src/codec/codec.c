/* The codec table: names and dispatch (codec.h).
 *
 * Adding a codec:
 *   1. src/codec/codec_<name>.c: its encoder and strict decoder (static, of the types
 *      cdc_encode_fn and cdc_decode_fn) and its descriptor `const cdc_codec cdc_codec_<name>`
 *      (name, one-line help, encoder, decoder, list-wide parameter function or NULL, whether
 *      it uses the pfor depth, "codec_<name>.cl");
 *   2. cl/codec_<name>.cl: its device decoder, DECODE_SCRATCH and decode_stream() as the
 *      header of cl/decode.cl specifies (cl/ is embedded whole, src/ compiled whole: no build
 *      change);
 *   3. the enum value in include/clsearch.h (at the end: the values are stored in index files)
 *      and CLS_NUM_CODECS;
 *   4. one row, X(<name>), at the end of CODEC_ROWS below;
 *   5. its layout in docs/FORMAT.md.
 * Nothing else names codecs: the index writer, the engines, the command's --codec parsing and
 * help, and the tests that loop over CLS_NUM_CODECS take it from here. */
#include "codec/codec.h"

#include <stdio.h>
#include <string.h>

#include "util/err.h"

/* The table: one row per codec, in cls_codec order (row c is codec c). Each row names the
 * descriptor cdc_codec_<name> that codec_<name>.c defines. */
#define CODEC_ROWS(X) \
    X(raw)    /* CLS_CODEC_RAW */ \
    X(bp)     /* CLS_CODEC_BP */ \
    X(pfor)   /* CLS_CODEC_PFOR */ \
    X(optpfd) /* CLS_CODEC_OPTPFD */ \
    X(rice)   /* CLS_CODEC_RICE */

#define DECLARE(name) extern const cdc_codec cdc_codec_##name;
CODEC_ROWS(DECLARE)
#define ROW(name) &cdc_codec_##name,
static const cdc_codec *const CODECS[] = {CODEC_ROWS(ROW)};
_Static_assert(sizeof CODECS / sizeof CODECS[0] == CLS_NUM_CODECS, "one row of CODECS per cls_codec value");

const cdc_codec *cdc_get(cls_codec c) { return (unsigned)c < CLS_NUM_CODECS ? CODECS[c] : NULL; }

const char *cdc_kernel_file(cls_codec c)
{
    const cdc_codec *d = cdc_get(c);
    return d ? d->kernel : NULL;
}

const char *cls_codec_name(cls_codec c)
{
    const cdc_codec *d = cdc_get(c);
    return d ? d->name : NULL;
}

cls_status cls_codec_parse(const char *name, cls_codec *out)
{
    for (unsigned i = 0; name && i < CLS_NUM_CODECS; i++)
        if (strcmp(name, CODECS[i]->name) == 0) {
            *out = (cls_codec)i;
            return CLS_OK;
        }
    /* "raw, bp, pfor, optpfd or rice" */
    char valid[256];
    size_t at = 0;
    valid[0] = '\0';
    for (unsigned i = 0; i < CLS_NUM_CODECS && at < sizeof valid; i++) {
        const char *sep = i == 0 ? "" : i + 1 < CLS_NUM_CODECS ? ", " : " or ";
        int k = snprintf(valid + at, sizeof valid - at, "%s%s", sep, CODECS[i]->name);
        if (k < 0) break;
        at += (size_t)k;
    }
    return err_set(CLS_E_ARG, "unknown codec '%s' (%s)", name ? name : "(null)", valid);
}

uint32_t cdc_list_param(cls_codec c, const uint32_t *v, uint64_t n)
{
    const cdc_codec *d = cdc_get(c);
    return d && d->list_param ? d->list_param(v, n) : 0;
}

uint32_t cdc_encode(cls_codec c, const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth,
                    uint32_t *param, uint32_t *out)
{
    const cdc_codec *d = cdc_get(c);
    if (!d) {
        *param = 0;
        return 0;
    }
    return d->encode(v, n, list_param, depth, param, out);
}

int cdc_decode(cls_codec c, const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth,
               uint32_t *out, uint32_t *used)
{
    const cdc_codec *d = cdc_get(c);
    if (n > CDC_MAX_N || !d) return -1;
    return d->decode(w, avail, n, param, depth, out, used);
}
