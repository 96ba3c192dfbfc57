/* Text made valid UTF-8 for JSON (utf8.h). */
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80) return 1;
    size_t k = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (k == 0 || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) || (s[0] == 0xF0 && s[1] < 0x90) ||
        (s[0] == 0xF4 && s[1] > 0x8F))
        return 0; /* overlong, a surrogate, or past U+10FFFF */
    return k;
}

const char *utf8_json(const char *v, size_t n, char **buf, size_t *cap)
{
    size_t i = 0, k;
    while (i < n && (k = utf8_seq((const unsigned char *)v + i, n - i)) != 0) i += k;
    if (i == n) return v;
    if (3 * n + 1 > *cap) {
        char *p = realloc(*buf, 3 * n + 1);
        if (!p) return NULL;
        *buf = p;
        *cap = 3 * n + 1;
    }
    size_t o = 0;
    for (i = 0; i < n; i += k ? k : 1) {
        k = utf8_seq((const unsigned char *)v + i, n - i);
        if (k) memcpy(*buf + o, v + i, k), o += k;
        else memcpy(*buf + o, "\xEF\xBF\xBD", 3), o += 3;
    }
    (*buf)[o] = '\0';
    return *buf;
}
