/* Analysis: text to index terms (tokenize, possessive, lowercase, stopwords, Porter stem).
 * One an_analyzer per thread: the Snowball stemmer and term buffer it holds are not thread-safe. */
#ifndef CLS_AN_H
#define CLS_AN_H

#include <stddef.h>

#include "clsearch.h"

typedef struct an_analyzer an_analyzer;

/* Receives each term in text order; term is NOT NUL-terminated. Nonzero stops the run. */
typedef int (*an_emit_fn)(void *user, const char *term, size_t len);

cls_status an_create(const cls_analyzer_opts *o, an_analyzer **out);
void an_free(an_analyzer *a);
/* Analyses text[0..len) and emits its terms. Returns CLS_E_ARG if emit stopped the run. */
cls_status an_run(an_analyzer *a, const char *text, size_t len, an_emit_fn emit, void *user);

/* Packs/unpacks the options into a flag word stored in the index file. */
unsigned an_opts_pack(const cls_analyzer_opts *o);
/* Every flag an_opts_pack can set: an index's analyzer word with another bit is not ours. */
#define AN_FLAGS_KNOWN 15u
void an_opts_unpack(unsigned flags, cls_analyzer_opts *o);

#endif
