/* Text made valid UTF-8 for JSON: stored fields hold what the files held (HTML and TREC text
 * in any encoding), and cJSON would write invalid bytes through. `clsearch search --json` and
 * the query server (serve/) both print fields through utf8_json. */
#ifndef CLS_UTIL_UTF8_H
#define CLS_UTIL_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence at s[0..n) (1 to 4), or 0 if none starts there. */
size_t utf8_seq(const unsigned char *s, size_t n);

/* v[0..n) as JSON can hold it, NUL-terminated: v itself when it is valid UTF-8 (v[n] is then
 * NUL, as stored fields are), else a copy in *buf (grown as needed, *cap its size) with U+FFFD
 * for each byte that is not; NULL when out of memory. */
const char *utf8_json(const char *v, size_t n, char **buf, size_t *cap);

#endif
