/* Engines behind cls_engine: the plain-C reference and the OpenCL engine share this face. */
#ifndef CLS_ENGINE_H
#define CLS_ENGINE_H

#include "batch.h"
#include "index.h"

typedef struct ref_engine ref_engine;
cls_status ref_create(const cls_index *idx, ref_engine **out);
void ref_free(ref_engine *e);
cls_status ref_search(ref_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);

typedef struct clx_engine clx_engine;
/* spec: "auto", "gpu", "cpu" or "P:D". desc receives the verbose description. */
cls_status clx_create(const cls_index *idx, const char *spec, clx_engine **out, char *desc, size_t desc_len);
void clx_free(clx_engine *e);
cls_status clx_search(clx_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);
void clx_build_times(const clx_engine *e, double *seconds, int *from_cache);

/* Checks k, k1, b; shared by every engine so they reject the same things. */
cls_status params_check(const cls_search_params *p);

#endif
