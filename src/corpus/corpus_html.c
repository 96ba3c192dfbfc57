/* HTML corpora (Anserini's HtmlCollection, e.g. CACM): a folder of .html/.htm files, an
 * archive of them (anything libarchive reads: .tar, .tar.gz, .tgz, .zip, ...), or one file.
 * The docno is the file's base name without its extension; the text is the HTML with markup
 * removed and entities decoded. One document's bytes are in memory at a time. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "corpus/corpus.h"
#include "util/err.h"

/* ---- Markup to text ------------------------------------------------------------------------ */

static int is_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* ASCII case-insensitive: does s[0..n) start with the lowercase word w? */
static int starts_ci(const char *s, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (k > n) return 0;
    for (size_t i = 0; i < k; i++)
        if (((unsigned char)s[i] | (is_alpha((unsigned char)s[i]) ? 0x20 : 0)) != (unsigned char)w[i])
            return 0;
    return 1;
}

static size_t find_byte(const char *s, size_t n, size_t from, char c)
{
    const char *p = from < n ? memchr(s + from, c, n - from) : NULL;
    return p ? (size_t)(p - s) : n;
}

/* Index just past the '>' ending the tag whose attributes start at i (quoted attribute values
 * may contain '>'), or n if the input ends first (HTML drops an unterminated tag). */
static size_t tag_end(const char *s, size_t n, size_t i)
{
    unsigned char prev = 0; /* last non-space character: a quote after '=' opens a value */
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '>') return i + 1;
        if ((c == '"' || c == '\'') && prev == '=') {
            size_t q = find_byte(s, n, i + 1, (char)c);
            if (q == n) return n;
            i = q;
            prev = (unsigned char)c;
            continue;
        }
        if (!is_ws(c)) prev = c;
    }
    return n;
}

/* After a <script> or <style> start tag ending at i: index past its end tag, or n. Their
 * contents are program text, not document text, and may hold '<' freely. */
static size_t raw_text_end(const char *s, size_t n, size_t i, const char *name)
{
    size_t k = strlen(name);
    for (;;) {
        i = find_byte(s, n, i, '<');
        if (i + 1 >= n) return n;
        if (s[i + 1] == '/' && starts_ci(s + i + 2, n - (i + 2), name) &&
            (i + 2 + k == n || is_ws((unsigned char)s[i + 2 + k]) || s[i + 2 + k] == '/' ||
             s[i + 2 + k] == '>'))
            return tag_end(s, n, i + 2 + k);
        i++;
    }
}

/* If a markup construct starts at s[i] == '<', the index just past it; else i ('<' is text).
 * This follows the HTML tokenizer: only '<' before a letter, '/', '!' or '?' opens markup, so
 * text such as "1 <= m <= n" (which occurs in CACM) survives as a browser would show it. */
static size_t markup_end(const char *s, size_t n, size_t i)
{
    if (i + 1 >= n) return i;
    unsigned char c = (unsigned char)s[i + 1];
    if (is_alpha(c)) {
        size_t j = i + 1;
        while (j < n && !is_ws((unsigned char)s[j]) && s[j] != '/' && s[j] != '>') j++;
        size_t name_len = j - (i + 1);
        size_t end = tag_end(s, n, j);
        if (name_len == 6 && starts_ci(s + i + 1, name_len, "script"))
            return raw_text_end(s, n, end, "script");
        if (name_len == 5 && starts_ci(s + i + 1, name_len, "style"))
            return raw_text_end(s, n, end, "style");
        return end;
    }
    if (c == '/') {
        if (i + 2 >= n) return i;                  /* "</" at the very end is text */
        if (s[i + 2] == '>') return i + 3;          /* "</>" vanishes */
        if (is_alpha((unsigned char)s[i + 2])) return tag_end(s, n, i + 2);
        size_t g = find_byte(s, n, i + 2, '>'); /* "</ x>" is a bogus comment */
        return g < n ? g + 1 : n;
    }
    if (c == '!') {
        if (i + 3 < n && s[i + 2] == '-' && s[i + 3] == '-') {
            size_t j = i + 4;
            /* "<!-->" and "<!--->" are complete (empty) comments. */
            if (j < n && s[j] == '>') return j + 1;
            if (j + 1 < n && s[j] == '-' && s[j + 1] == '>') return j + 2;
            for (; j + 2 < n; j++)
                if (s[j] == '-' && s[j + 1] == '-' && s[j + 2] == '>') return j + 3;
            return n;
        }
        size_t g = find_byte(s, n, i + 2, '>'); /* <!DOCTYPE ...>, <![CDATA[ ...]]> */
        return g < n ? g + 1 : n;
    }
    if (c == '?') {
        size_t g = find_byte(s, n, i + 2, '>');
        return g < n ? g + 1 : n;
    }
    return i;
}

static size_t utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* HTML maps &#128; .. &#159; through Windows-1252, as old pages meant them (&#146; is a right
 * single quote, not a C1 control). 0 marks the five undefined slots, which stay as they are. */
static const uint16_t cp1252[32] = {
    0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

/* Named entities decoded. &nbsp; becomes a plain space: it separates words exactly like one. */
static const struct {
    const char *name;
    char ch;
} named[] = {{"amp", '&'},  {"lt", '<'},  {"gt", '>'},   {"quot", '"'}, {"apos", '\''},
             {"nbsp", ' '}, {"AMP", '&'}, {"LT", '<'},   {"GT", '>'},   {"QUOT", '"'}};

/* Decodes an entity at s[i] == '&' into out (room for 4 bytes); returns the bytes consumed
 * (0: not an entity, the '&' is text) and sets *out_len. Never writes more than it consumes. */
static size_t entity(const char *s, size_t n, size_t i, char *out, size_t *out_len)
{
    size_t j = i + 1;
    if (j < n && s[j] == '#') {
        int hex = j + 1 < n && (s[j + 1] == 'x' || s[j + 1] == 'X');
        j += hex ? 2 : 1;
        size_t digits = 0;
        uint32_t cp = 0;
        for (; j < n; j++, digits++) {
            unsigned char c = (unsigned char)s[j];
            uint32_t d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
            else break;
            /* Saturate instead of overflowing; anything past U+10FFFF is replaced anyway. */
            if (cp <= 0x10FFFF) cp = cp * (hex ? 16 : 10) + d;
        }
        if (digits == 0) return 0;
        if (j < n && s[j] == ';') j++; /* HTML tolerates a missing ';' after digits */
        if (cp >= 0x80 && cp <= 0x9F && cp1252[cp - 0x80]) cp = cp1252[cp - 0x80];
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
        *out_len = utf8_put(out, cp);
        return j - i;
    }
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        size_t l = strlen(named[k].name);
        if (j + l < n && memcmp(s + j, named[k].name, l) == 0 && s[j + l] == ';') {
            out[0] = named[k].ch;
            *out_len = 1;
            return l + 2;
        }
    }
    return 0;
}

size_t crp_html_to_text(char *s, size_t n)
{
    size_t i = 0, o = 0;
    while (i < n) {
        char c = s[i];
        if (c == '<') {
            size_t end = markup_end(s, n, i);
            if (end != i) {
                s[o++] = ' '; /* "a<br>b" is two words */
                i = end;
                continue;
            }
        } else if (c == '&') {
            char tmp[4];
            size_t tl;
            size_t used = entity(s, n, i, tmp, &tl);
            if (used) {
                /* The whole entity is parsed before writing, and tl <= used, so writing at o
                 * never overtakes unread input. */
                memcpy(s + o, tmp, tl);
                o += tl;
                i += used;
                continue;
            }
        }
        s[o++] = s[i++];
    }
    return o;
}

/* ---- Reading documents ------------------------------------------------------------------------ */

typedef struct html_ctx {
    cls_doc_fn fn;
    void *user;
    char *buf; /* one document, reused: memory is bounded by the largest document */
    size_t cap;
    /* stored fields: their numbers (-1 when not asked for), the input's absolute path for
     * "path", and the values of the document being emitted */
    int title_i, path_i;
    int top_is_dir;
    char *root;
    crp_buf title, path;
} html_ctx;

/* The text of the first <title> element of the HTML in s[0..n) into out; 0 when there is none
 * (or it is never closed: what follows is then not a title). */
static int find_title(html_ctx *c, const char *s, size_t n, cls_status *st)
{
    *st = CLS_OK;
    for (size_t i = 0; i < n;) {
        const char *t = crp_find_tag(s + i, n - i, "<TITLE");
        if (!t) return 0;
        size_t at = (size_t)(t - s) + 6;
        if (at < n && (s[at] == '>' || is_ws((unsigned char)s[at]) || s[at] == '/')) {
            size_t start = tag_end(s, n, at);
            const char *close = crp_find_tag(s + start, n - start, "</TITLE");
            if (!close) return 0;
            *st = crp_field_text(&c->title, s + start, (size_t)(close - (s + start)), 1);
            return *st == CLS_OK;
        }
        i = at; /* <titles>, <titlebar>: not the element */
    }
    return 0;
}

/* Returns bytes read (0 at the end) or -1 on error (the source sets the detail). */
typedef long long (*read_fn)(void *src, char *dst, size_t n);

static long long read_file_src(void *src, char *dst, size_t n)
{
    FILE *f = src;
    size_t k = fread(dst, 1, n, f);
    if (k == 0 && ferror(f)) return -1;
    return (long long)k;
}

static long long read_archive_src(void *src, char *dst, size_t n)
{
    la_ssize_t k = archive_read_data(src, dst, n);
    return k < 0 ? -1 : (long long)k;
}

/* Reads a whole document into c->buf; hint is its announced size (0: unknown). Returns the
 * length, or sets the status: over CRP_MAX_DOC_BYTES is CLS_E_FORMAT, since holding it would
 * defeat the memory bound. */
static cls_status read_doc(html_ctx *c, read_fn rd, void *src, size_t hint, const char *what,
                           size_t *len, int *read_failed)
{
    size_t n = 0;
    size_t want = (hint ? hint : 64 * 1024) + 1; /* +1: the final 0-byte read needs room */
    *read_failed = 0;
    for (;;) {
        if (want > c->cap) {
            char *p = realloc(c->buf, want);
            if (!p) return err_set(CLS_E_NOMEM, "%s: out of memory for %zu bytes", what, want);
            c->buf = p;
            c->cap = want;
        }
        long long k = rd(src, c->buf + n, c->cap - n);
        if (k < 0) {
            *read_failed = 1;
            return CLS_E_IO;
        }
        if (k == 0) break;
        n += (size_t)k;
        if (n > CRP_MAX_DOC_BYTES)
            return err_set(CLS_E_FORMAT, "%s: document larger than %zu bytes", what,
                           CRP_MAX_DOC_BYTES);
        if (n == c->cap) want = c->cap > CRP_MAX_DOC_BYTES / 2 ? CRP_MAX_DOC_BYTES + 1 : c->cap * 2;
    }
    *len = n;
    return CLS_OK;
}

static int want_html(const char *name)
{
    return crp_has_suffix(name, ".html") || crp_has_suffix(name, ".htm");
}

/* Strips markup from the document in c->buf and hands it to the caller under the name's stem,
 * with its stored fields ("path" already in c->path). */
static cls_status emit_html(html_ctx *c, const char *name, size_t len, const char *where)
{
    const char *base = crp_basename(name);
    const char *dot = strrchr(base, '.');
    size_t docno_len = dot ? (size_t)(dot - base) : strlen(base);
    if (docno_len == 0) return err_set(CLS_E_FORMAT, "%s: empty document name", where);
    if (c->title_i >= 0) {
        cls_status st;
        if (find_title(c, c->buf, len, &st)) crp_field_set((size_t)c->title_i, c->title.p, c->title.n);
        if (st != CLS_OK) return st;
    }
    if (c->path_i >= 0) crp_field_set((size_t)c->path_i, c->path.p, c->path.n);
    size_t text_len = crp_html_to_text(c->buf, len);
    return crp_emit_doc(c->fn, c->user, base, docno_len, c->buf, text_len);
}

/* "path" of a file of the walk (rel: its path in the folder, or its name when alone), or of an
 * archive's entry (entry: its name as stored), into c->path. */
static cls_status set_path(html_ctx *c, const char *rel, const char *entry)
{
    if (c->path_i < 0) return CLS_OK;
    cls_status st = crp_field_path(&c->path, (size_t)c->path_i, c->root, '/', c->top_is_dir ? rel : NULL);
    if (st == CLS_OK && entry) {
        char colon = ':';
        if ((st = crp_buf_add(&c->path, &colon, 1)) == CLS_OK) st = crp_buf_add(&c->path, entry, strlen(entry));
    }
    return st;
}

static cls_status html_file(void *user, const char *full, const char *rel)
{
    html_ctx *c = user;
    FILE *f = fopen(full, "rb");
    if (!f) return err_set(CLS_E_IO, "open %s: %s", full, strerror(errno));
    struct stat sb;
    size_t hint = 0;
    cls_status st = CLS_OK;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode)) {
        if ((unsigned long long)sb.st_size > CRP_MAX_DOC_BYTES)
            st = err_set(CLS_E_FORMAT, "%s: document of %lld bytes is over the %zu-byte limit",
                         full, (long long)sb.st_size, CRP_MAX_DOC_BYTES);
        hint = (size_t)sb.st_size;
    }
    size_t len = 0;
    int failed = 0;
    if (st == CLS_OK) st = read_doc(c, read_file_src, f, hint, full, &len, &failed);
    if (failed) st = err_set(CLS_E_IO, "read %s: %s", full, strerror(errno));
    fclose(f);
    if (st == CLS_OK) st = set_path(c, rel, NULL);
    if (st != CLS_OK) return st;
    return emit_html(c, rel, len, full);
}

static cls_status html_archive(html_ctx *c, const char *path, const char *rel)
{
    crp_archive *h;
    cls_status st = crp_archive_open(path, &h);
    if (st != CLS_OK) return st;
    struct archive *a = h->a;
    for (;;) {
        struct archive_entry *e;
        int got;
        if ((st = crp_archive_header(h, &e, &got)) != CLS_OK || !got) break;
        if (archive_entry_filetype(e) != AE_IFREG) continue;
        const char *name = archive_entry_pathname(e);
        if (!name) name = archive_entry_pathname_utf8(e);
        if (!name) {
            st = err_set(CLS_E_FORMAT, "%s: an entry has an unreadable name", path);
            break;
        }
        const char *base = crp_basename(name);
        /* Hidden names include macOS "._X.html" resource forks, which are not documents. */
        if (base[0] == '.' || !want_html(base)) continue;

        /* "archive:entry" locates a failure inside the archive. Names are short; the limit
         * only shortens the message, never the data. */
        char where[1024];
        snprintf(where, sizeof where, "%s:%s", path, name);
        size_t hint = 0;
        if (archive_entry_size_is_set(e)) {
            la_int64_t sz = archive_entry_size(e);
            if (sz < 0 || (unsigned long long)sz > CRP_MAX_DOC_BYTES) {
                st = err_set(CLS_E_FORMAT, "%s: entry of %lld bytes is over the %zu-byte limit",
                             where, (long long)sz, CRP_MAX_DOC_BYTES);
                break;
            }
            hint = (size_t)sz;
        }
        size_t len = 0;
        int failed = 0;
        st = read_doc(c, read_archive_src, a, hint, where, &len, &failed);
        if (failed) st = crp_archive_error(a, where);
        if (st == CLS_OK) st = set_path(c, rel, name);
        if (st == CLS_OK) st = emit_html(c, name, len, where);
        if (st != CLS_OK) break;
    }
    crp_progress_source(NULL, NULL);
    crp_archive_close(h);
    return st;
}

/* One file of the walk: an HTML file (any file of a folder, which the walk filtered), or an
 * archive of them (a single input not named .html or .htm). */
static cls_status html_visit(void *user, const char *full, const char *rel)
{
    if (want_html(full)) return html_file(user, full, rel);
    return html_archive(user, full, rel);
}

cls_status crp_read_html(const char *path, cls_doc_fn fn, void *user)
{
    html_ctx c = {fn, user, NULL, 0, crp_field_index("title"), crp_field_index("path"), 0, NULL, {0}, {0}};
    struct stat sb;
    c.top_is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    cls_status st = crp_field_root(path, &c.root);
    if (st == CLS_OK) st = crp_walk(path, want_html, html_visit, &c);
    free(c.buf);
    free(c.root);
    free(c.title.p);
    free(c.path.p);
    return st;
}
