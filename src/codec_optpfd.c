/* STUB: replaced by the real optpfd codec. */
#include "codec.h"
uint32_t cdc_optpfd_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out) { return cdc_raw_encode(v, n, param, out); }
int cdc_optpfd_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out, uint32_t *used)
{ return cdc_raw_decode(w, avail, n, param, out, used); }
