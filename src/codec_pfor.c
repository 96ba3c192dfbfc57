/* STUB: replaced by the real pfor codec. */
#include "codec.h"
uint32_t cdc_pfor_list_param(const uint32_t *v, uint64_t n) { (void)v; (void)n; return 0; }
uint32_t cdc_pfor_encode(const uint32_t *v, uint32_t n, uint32_t list_width, unsigned depth, uint32_t *param, uint32_t *out)
{ (void)list_width; (void)depth; return cdc_raw_encode(v, n, param, out); }
int cdc_pfor_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out, uint32_t *used)
{ (void)depth; return cdc_raw_decode(w, avail, n, param, out, used); }
