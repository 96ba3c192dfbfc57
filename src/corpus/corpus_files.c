/* Plain-file trees (CLS_CORPUS_FILES): a source tree, a documentation tree, one document per
 * file.
 *
 * Input: a folder (walked recursively by crp_walk, in byte order of the relative path; hidden
 * names starting with '.' are skipped, a link is read as the file it leads to when that lies in
 * the folder, links to folders are not followed, links out of the folder are skipped and counted,
 * all as cls_corpus_follow_links says); an archive (.tar, .tar.gz, .tgz, .tar.bz2,
 * .tbz2, .tar.xz, .txz, .tar.zst, .zip, .7z, .cpio: anything libarchive reads, in archive order,
 * with the same hidden-name rule applied to every component of an entry's path); or a single
 * file, whose docno is its base name. Only the top-level input is opened as an archive: an
 * archive inside a folder is a file like any other (and, being binary, skipped).
 *
 * A file named *.gz (in a folder, in an archive, or given alone) is decompressed and its text
 * is the decompressed bytes; its docno keeps the ".gz", so that a docno is always the real
 * relative path of a file (and "a.txt" beside "a.txt.gz" cannot make two equal docnos).
 *
 * Docno: the path relative to the root (for an archive: the entry's path without a leading
 * "./" or "/"), with every byte outside '!'..'~' and every '%' written as %XX (uppercase hex), so
 * "my notes/é.txt" is "my%20notes/%C3%A9.txt" and a docno never holds white space.
 *
 * Skipped, and counted (cls_corpus_last_counts): files with a NUL byte in their first 8 KiB
 * (binary: images, object files, archives, UTF-16 text). Reading stops at the first 8 KiB of
 * such a file. An empty file is a document with no text. Hard-link entries of an archive
 * without data of their own (their content is stored under the name they link to) are
 * skipped without counting.
 *
 * Memory: one file at a time. A file longer than CRP_FILES_MAX_DOC (64 MiB) is indexed up to
 * that many bytes and counted as truncated; no text file of a source or documentation tree comes
 * near it, so this only guards against a huge log or data file taking the whole memory.
 *
 * Failures are never skipped: a file that cannot be opened or read, or a damaged archive or gzip
 * stream, stops the read with its path. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "corpus/corpus.h"
#include "util/err.h"
#include "util/vec.h"

#define SNIFF_BYTES 8192u        /* a NUL byte in this prefix marks a file as binary */
#define CHUNK (64u * 1024u)      /* libarchive block size, and the first read of a file */

typedef struct files_ctx {
    cls_doc_fn fn;
    void *user;
    int top_is_dir;     /* the input is a folder (else a single file or an archive) */
    char *buf;          /* the document being read, reused: at most CRP_FILES_MAX_DOC + 1 */
    size_t cap;
    crp_buf docno;      /* the encoded docno */
    char *chunk;        /* gzip inside an archive: compressed bytes handed to the inner reader */
    int path_i;         /* the stored field "path": its number (-1 when not asked for), */
    char *root;         /* the input's absolute path, */
    crp_buf path;       /* and the value for the file being read */
} files_ctx;

/* ---- Sources: a plain file, or the data of a libarchive handle ------------------------------ */

typedef struct src {
    FILE *f;
    struct archive *a;
} src;

/* Bytes read (0 at the end) or -1 on error (errno for f, the archive's error for a). A source
 * with neither is empty. */
static long long src_read(src *s, char *dst, size_t n)
{
    if (!s->a && !s->f) return 0;
    if (s->f) {
        size_t k = fread(dst, 1, n, s->f);
        if (k == 0 && ferror(s->f)) return -1;
        return (long long)k;
    }
    la_ssize_t k = archive_read_data(s->a, dst, n);
    return k < 0 ? -1 : (long long)k;
}

static cls_status src_error(src *s, const char *where)
{
    if (s->f) return err_set(CLS_E_IO, "read %s: %s", where, strerror(errno));
    return crp_archive_error(s->a, where);
}

/* ---- One document --------------------------------------------------------------------------- */

static cls_status grow_buf(files_ctx *c, size_t want, const char *where)
{
    if (want <= c->cap) return CLS_OK;
    char *p = realloc(c->buf, want);
    if (!p) return err_set(CLS_E_NOMEM, "%s: out of memory for %zu bytes", where, want);
    c->buf = p;
    c->cap = want;
    return CLS_OK;
}

/* Reads the stream into c->buf: its first SNIFF_BYTES, which decide whether it is binary (then
 * reading stops, *binary is set), then the rest, up to CRP_FILES_MAX_DOC bytes (more sets
 * *truncated and is not read). hint: the expected size (0: unknown), to size the buffer once. */
static cls_status read_doc(files_ctx *c, src *s, uint64_t hint, const char *where, size_t *len,
                           int *binary, int *truncated)
{
    const size_t limit = CRP_FILES_MAX_DOC + 1; /* one byte past the cap tells of truncation */
    size_t n = 0;
    *binary = *truncated = 0;
    cls_status st = grow_buf(c, CHUNK, where);
    if (st != CLS_OK) return st;
    /* The sniffed prefix. */
    while (n < SNIFF_BYTES) {
        long long k = src_read(s, c->buf + n, SNIFF_BYTES - n);
        if (k < 0) return src_error(s, where);
        if (k == 0) break;
        n += (size_t)k;
    }
    if (memchr(c->buf, '\0', n)) {
        *binary = 1;
        *len = 0;
        return CLS_OK;
    }
    if (n == SNIFF_BYTES) {
        /* The rest, into a buffer sized from the hint (+1: the final empty read needs room),
         * then doubled as needed; the buffer never grows past limit. */
        if (hint && (st = grow_buf(c, hint < limit - 1 ? (size_t)hint + 1 : limit, where)) != CLS_OK)
            return st;
        for (;;) {
            if (n == c->cap) {
                if (c->cap >= limit) break; /* limit bytes read: more than the cap */
                st = grow_buf(c, c->cap > limit / 2 ? limit : c->cap * 2, where);
                if (st != CLS_OK) return st;
            }
            long long k = src_read(s, c->buf + n, c->cap - n);
            if (k < 0) return src_error(s, where);
            if (k == 0) break;
            n += (size_t)k;
        }
    }
    if (n > CRP_FILES_MAX_DOC) {
        n = CRP_FILES_MAX_DOC;
        *truncated = 1;
    }
    *len = n;
    return CLS_OK;
}

/* rel with bytes outside '!'..'~' and '%' percent-encoded, into c->docno. */
static cls_status encode_docno(files_ctx *c, const char *rel)
{
    static const char hex[] = "0123456789ABCDEF";
    c->docno.n = 0;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        int plain = *p >= '!' && *p <= '~' && *p != '%';
        cls_status st = plain ? crp_buf_add(&c->docno, (const char *)p, 1)
                              : crp_buf_add(&c->docno, esc, 3);
        if (st != CLS_OK) return st;
    }
    return CLS_OK;
}

/* Reads one file's text from s and hands it to the caller under rel, or counts it skipped. */
static cls_status emit_from(files_ctx *c, src *s, uint64_t hint, const char *rel,
                            const char *where)
{
    size_t len = 0;
    int binary, truncated;
    cls_status st = read_doc(c, s, hint, where, &len, &binary, &truncated);
    if (st != CLS_OK) return st;
    if (binary) {
        crp_count_skipped_binary();
        return CLS_OK;
    }
    if (truncated) crp_count_truncated();
    if ((st = encode_docno(c, rel)) != CLS_OK) return st;
    if (c->docno.n == 0) return err_set(CLS_E_FORMAT, "%s: empty document name", where);
    if (c->path_i >= 0) crp_field_set((size_t)c->path_i, c->path.p, c->path.n);
    return crp_emit_doc(c->fn, c->user, c->docno.p, c->docno.n, c->buf, len);
}

/* ---- Files and archives ---------------------------------------------------------------------- */

/* A file of the tree (or the single input file): plain, or gzip if named *.gz. */
static cls_status files_file(files_ctx *c, const char *full, const char *rel)
{
    if (c->path_i >= 0) { /* the file's absolute path: the root's, then the path in the folder */
        cls_status st = crp_field_path(&c->path, (size_t)c->path_i, c->root, '/', c->top_is_dir ? rel : NULL);
        if (st != CLS_OK) return st;
    }
    if (crp_has_suffix(full, ".gz")) {
        struct archive *a;
        int empty;
        cls_status st = crp_gz_open(full, full, NULL, &a, &empty);
        if (st != CLS_OK) return st;
        src s = {NULL, empty ? NULL : a};
        crp_progress_source(NULL, a);
        st = emit_from(c, &s, 0, rel, full);
        crp_progress_source(NULL, NULL);
        archive_read_free(a);
        return st;
    }
    FILE *f = fopen(full, "rb");
    if (!f) return err_set(CLS_E_IO, "open %s: %s", full, strerror(errno));
    struct stat sb;
    uint64_t hint = 0;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0)
        hint = (uint64_t)sb.st_size;
    src s = {f, NULL};
    cls_status st = emit_from(c, &s, hint, rel, full);
    fclose(f);
    return st;
}

static cls_status files_archive(files_ctx *c, const char *path)
{
    crp_archive *h;
    cls_status st = crp_archive_open(path, &h);
    if (st != CLS_OK) return st;
    struct archive *a = h->a;
    char *where = NULL;
    size_t where_cap = 0;
    for (;;) {
        struct archive_entry *e;
        const char *name, *rel;
        int got;
        if ((st = crp_archive_next(h, &e, &name, &rel, &got)) != CLS_OK || !got) break;
        /* "archive:entry" locates a failure inside the archive. */
        size_t wl = strlen(path) + 1 + strlen(name) + 1;
        if (!vec_reserve(&where, &where_cap, wl, 1)) {
            st = err_set(CLS_E_NOMEM, "%s: out of memory", path);
            break;
        }
        snprintf(where, wl, "%s:%s", path, name);
        /* the entry's "path": the archive's absolute path, ':', its name as stored */
        if (c->path_i >= 0 && (st = crp_field_path(&c->path, (size_t)c->path_i, c->root, ':', name)) != CLS_OK) break;
        uint64_t hint = 0;
        if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
            hint = (uint64_t)archive_entry_size(e);

        if (!crp_has_suffix(rel, ".gz")) {
            src s = {NULL, a};
            st = emit_from(c, &s, hint, rel, where);
        } else {
            /* A gzip file inside the archive: a second reader over the entry's data. */
            if (!c->chunk && !(c->chunk = malloc(CRP_CHUNK))) {
                st = err_set(CLS_E_NOMEM, "%s: out of memory", where);
                break;
            }
            crp_gz_nest nn = {a, c->chunk};
            struct archive *in;
            int empty;
            if ((st = crp_gz_open(where, NULL, &nn, &in, &empty)) == CLS_OK) {
                src s = {NULL, empty ? NULL : in};
                st = emit_from(c, &s, 0, rel, where);
                archive_read_free(in);
            }
        }
        if (st != CLS_OK) break;
    }
    crp_progress_source(NULL, NULL);
    free(where);
    crp_archive_close(h);
    return st;
}

/* One file of the walk: a file of the folder, or the single input (an archive if so named). */
static cls_status files_visit(void *user, const char *full, const char *rel)
{
    files_ctx *c = user;
    if (!c->top_is_dir && crp_is_archive_name(full)) return files_archive(c, full);
    return files_file(c, full, rel);
}

cls_status crp_read_files(const char *path, cls_doc_fn fn, void *user)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return err_set(CLS_E_IO, "%s: %s", path, strerror(errno));
    files_ctx c = {0};
    c.fn = fn;
    c.user = user;
    c.top_is_dir = S_ISDIR(sb.st_mode);
    c.path_i = crp_field_index("path");
    cls_status st = crp_field_root(path, &c.root);
    if (st == CLS_OK) st = crp_walk(path, NULL, files_visit, &c);
    free(c.buf);
    free(c.docno.p);
    free(c.chunk);
    free(c.root);
    free(c.path.p);
    return st;
}
