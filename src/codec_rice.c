/* STUB: replaced by the real rice codec. */
#include "codec.h"
uint32_t cdc_rice_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out) { return cdc_raw_encode(v, n, param, out); }
int cdc_rice_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out, uint32_t *used)
{ return cdc_raw_decode(w, avail, n, param, out, used); }
