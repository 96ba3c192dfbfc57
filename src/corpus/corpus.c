/* Corpus reading: cls_corpus_read() dispatches on the format, and this file holds what every
 * reader shares (see corpus.h): the line reader over plain or gzip files and archive entries,
 * the folder walk that fixes document order, archive opening and iteration, progress
 * reporting, libarchive error mapping and the callback-stop convention. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "corpus/corpus.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "index/index.h" /* idx_field_name_ok: the one rule for field names */
#include "util/err.h"
#include "util/path.h"
#include "util/vec.h"

/* Decompressed bytes fetched from libarchive per call; lines are assembled across chunks. */

/* ---- Small string helpers ---------------------------------------------------------------- */

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
static int ascii_upper(int c) { return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c; }

int crp_has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    if (s > n) return 0;
    for (size_t i = 0; i < s; i++)
        if (ascii_lower((unsigned char)name[n - s + i]) != ascii_lower((unsigned char)suffix[i]))
            return 0;
    return 1;
}

const char *crp_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *crp_find_tag(const char *s, size_t n, const char *tag)
{
    size_t k = strlen(tag);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && ascii_upper((unsigned char)s[i + j]) == (unsigned char)tag[j]) j++;
        if (j == k) return s + i;
    }
    return NULL;
}

cls_status crp_buf_add(crp_buf *b, const char *s, size_t n)
{
    if (n > SIZE_MAX - 1 - b->n) return err_set(CLS_E_NOMEM, "record too long");
    if (!vec_reserve(&b->p, &b->cap, b->n + n + 1, 1))
        return err_set(CLS_E_NOMEM, "out of memory for a record of %zu bytes", b->n + n);
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return CLS_OK;
}

/* "a" + "/" + "b" in fresh memory (NULL when out of memory). */
static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + 1 + lb + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

/* ---- Progress ---------------------------------------------------------------------------- */

/* The state of one cls_corpus_read[_ex] call. The readers cannot see it through their (fn,
 * user) arguments, so the call publishes it in a thread-local pointer while it runs (a read
 * started from inside a callback saves and restores the outer one). */
typedef struct read_state {
    cls_doc_fn fn;            /* the caller's callback (cls_corpus_read[_ex]), or */
    cls_doc_fields_fn xfn;    /* (cls_corpus_read_fields) */
    void *user;
    cls_progress_fn progress; /* NULL: no progress wanted, only the counts are kept */
    void *progress_user;
    uint64_t docs;
    uint64_t total;           /* sum of the input's file sizes (0: unknown) */
    uint64_t base;            /* bytes of the files finished so far */
    uint64_t cur_size;        /* size of the file being read (0: unknown) */
    FILE *f;                  /* the current file's stream, if its reader named one */
    struct archive *a;
    double last;              /* when progress was last called */
    cls_corpus_counts counts;
    const char *const *fields; /* the stored fields asked for, and the next document's values */
    size_t nfields;
    const char *fval[CLS_MAX_FIELDS];
    size_t flen[CLS_MAX_FIELDS];
} read_state;

static _Thread_local read_state *cur_read;
static _Thread_local cls_corpus_counts last_counts;

/* Seconds between two progress calls (besides the first and the last). */
#define CRP_PROGRESS_INTERVAL 0.2

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void crp_progress_source(FILE *f, struct archive *a)
{
    if (!cur_read || !cur_read->progress) return;
    cur_read->f = f;
    cur_read->a = a;
}

void crp_count_skipped_binary(void)
{
    if (cur_read) cur_read->counts.skipped_binary++;
}

void crp_count_truncated(void)
{
    if (cur_read) cur_read->counts.truncated++;
}

void crp_count_skipped_link(void)
{
    if (cur_read) cur_read->counts.skipped_links++;
}

static _Thread_local int follow_links;

void cls_corpus_follow_links(int follow) { follow_links = follow != 0; }

int crp_follow_links_now(void) { return follow_links; }

void cls_corpus_last_counts(cls_corpus_counts *out)
{
    if (out) *out = last_counts;
}

/* Input bytes consumed so far: finished files plus the position in the current one (clamped to
 * its size, so the figure never runs ahead of the total nor backwards at the next file). */
static uint64_t bytes_done(const read_state *r)
{
    uint64_t pos = 0;
    if (r->f) {
        off_t o = ftello(r->f);
        if (o > 0) pos = (uint64_t)o;
    } else if (r->a) {
        la_int64_t o = archive_filter_bytes(r->a, -1);
        if (o > 0) pos = (uint64_t)o;
    }
    if (r->cur_size && pos > r->cur_size) pos = r->cur_size;
    return r->base + pos;
}

/* Calls progress if the interval has passed (or always, if force). */
static void progress_tick(read_state *r, int force)
{
    if (!r->progress) return;
    double t = mono_now();
    if (!force && t - r->last < CRP_PROGRESS_INTERVAL) return;
    r->last = t;
    r->progress(r->progress_user, r->docs, bytes_done(r), r->total);
}

/* The walk's hooks: the input's total is known once its files are listed; each file's size
 * counts as done when the file is. */
static void progress_start(uint64_t total)
{
    if (!cur_read || !cur_read->progress) return;
    cur_read->total += total;
    progress_tick(cur_read, 1);
}

static void progress_file_begin(uint64_t size)
{
    if (!cur_read || !cur_read->progress) return;
    cur_read->cur_size = size;
    cur_read->f = NULL;
    cur_read->a = NULL;
}

static void progress_file_end(void)
{
    if (!cur_read || !cur_read->progress) return;
    cur_read->base += cur_read->cur_size;
    cur_read->cur_size = 0;
    cur_read->f = NULL;
    cur_read->a = NULL;
    progress_tick(cur_read, 0);
}

/* Every document of a read passes here on its way to the caller: with the fields the reader set
 * (then cleared for the next one), counted, and progress called now and then. */
static int deliver(void *user, const char *docno, size_t docno_len, const char *text, size_t text_len)
{
    read_state *r = user;
    int stop;
    if (r->xfn) {
        cls_doc d = {docno, docno_len, text, text_len, r->nfields, r->fval, r->flen};
        stop = r->xfn(r->user, &d);
    } else {
        stop = r->fn(r->user, docno, docno_len, text, text_len);
    }
    for (size_t i = 0; i < r->nfields; i++) r->fval[i] = NULL, r->flen[i] = 0;
    if (stop) return 1;
    r->docs++;
    progress_tick(r, 0);
    return 0;
}

/* ---- Stored fields ---------------------------------------------------------------------------- */

size_t crp_field_count(void) { return cur_read ? cur_read->nfields : 0; }

const char *crp_field_name(size_t i) { return cur_read && i < cur_read->nfields ? cur_read->fields[i] : NULL; }

int crp_field_index(const char *name)
{
    for (size_t i = 0; i < crp_field_count(); i++)
        if (strcmp(cur_read->fields[i], name) == 0) return (int)i;
    return -1;
}

void crp_field_set(size_t i, const char *p, size_t n)
{
    if (!cur_read || i >= cur_read->nfields) return;
    cur_read->fval[i] = p;
    cur_read->flen[i] = p ? n : 0;
}

cls_status crp_field_text(crp_buf *out, const char *s, size_t n, int markup)
{
    out->n = 0;
    cls_status st = crp_buf_add(out, s, n);
    if (st != CLS_OK) return st;
    size_t len = markup ? crp_html_to_text(out->p, out->n) : out->n, o = 0;
    int space = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out->p[i];
        if (c <= ' ' || c == 0x7F) {
            space = o > 0;
            continue;
        }
        if (space) out->p[o++] = ' ';
        space = 0;
        out->p[o++] = (char)c;
    }
    out->n = o;
    out->p[o] = '\0';
    return CLS_OK;
}

cls_status crp_field_root(const char *path, char **abs)
{
    *abs = NULL;
    if (crp_field_index("path") < 0) return CLS_OK;
    return path_absolute(path, abs);
}

cls_status crp_field_path(crp_buf *out, size_t i, const char *root, char sep, const char *rel)
{
    out->n = 0;
    cls_status st = crp_buf_add(out, root, strlen(root));
    if (st == CLS_OK && rel) st = crp_buf_add(out, &sep, 1);
    if (st == CLS_OK && rel) st = crp_buf_add(out, rel, strlen(rel));
    if (st == CLS_OK) crp_field_set(i, out->p, out->n);
    return st;
}

cls_status cls_corpus_field_check(cls_corpus_format fmt, const char *name)
{
    if (!name || !idx_field_name_ok(name, strlen(name)))
        return err_set(CLS_E_ARG, "field name '%s': 1 to %u bytes, without control characters, spaces or commas",
                       name ? name : "(null)", IDX_MAX_FIELD_NAME);
    const char *offer = NULL, *reader = NULL;
    switch (fmt) {
    case CLS_CORPUS_JSONL:
    case CLS_CORPUS_BEIR:
        return CLS_OK; /* any key: a record without it has the field absent */
    case CLS_CORPUS_TREC:
        for (const char *p = name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                  *p == '_' || *p == '.' || *p == ':'))
                return err_set(CLS_E_ARG, "the trec reader's fields are elements of a <DOC>, named by letters, "
                               "digits, '-', '_', '.' and ':': not '%s'", name);
        return CLS_OK;
    case CLS_CORPUS_HTML:
        if (strcmp(name, "title") == 0 || strcmp(name, "path") == 0) return CLS_OK;
        reader = "html", offer = "title, path";
        break;
    case CLS_CORPUS_SMART:
        if (strcmp(name, "title") == 0 || strcmp(name, "authors") == 0 || strcmp(name, "bibliography") == 0)
            return CLS_OK;
        reader = "smart", offer = "title (.T), authors (.A), bibliography (.B)";
        break;
    case CLS_CORPUS_FILES:
        if (strcmp(name, "path") == 0) return CLS_OK;
        reader = "files", offer = "path";
        break;
    default:
        return err_set(CLS_E_ARG, "cls_corpus_field_check: unknown corpus format %d", (int)fmt);
    }
    return err_set(CLS_E_ARG, "the %s reader has no field '%s' (it has %s)", reader, name, offer);
}

/* ---- Line reader ------------------------------------------------------------------------- */

cls_status crp_lines_open(crp_lines *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    if (!crp_has_suffix(path, ".gz")) {
        r->f = fopen(path, "rb");
        if (!r->f) return err_set(CLS_E_IO, "open %s: %s", path, strerror(errno));
        return CLS_OK;
    }
    r->chunk = malloc(CRP_CHUNK);
    if (!r->chunk) return err_set(CLS_E_NOMEM, "reading %s: out of memory", path);
    cls_status st = crp_gz_open(path, path, NULL, &r->a, &r->eof);
    if (st != CLS_OK) crp_lines_close(r);
    return st;
}

/* The inner reader of a nested .gz pulls compressed bytes from the outer archive's entry. */
static la_ssize_t nested_read(struct archive *inner, void *client, const void **buf)
{
    crp_gz_nest *n = client;
    la_ssize_t k = archive_read_data(n->outer, n->chunk, CRP_CHUNK);
    if (k < 0) {
        const char *msg = archive_error_string(n->outer);
        archive_set_error(inner, archive_errno(n->outer), "%s", msg ? msg : "read error");
        return -1;
    }
    *buf = n->chunk;
    return k;
}

cls_status crp_gz_open(const char *where, const char *path, crp_gz_nest *nest, struct archive **out, int *empty)
{
    *empty = 0;
    struct archive *a = archive_read_new();
    *out = NULL;
    if (!a) return err_set(CLS_E_NOMEM, "reading %s: out of memory", where);
    /* Raw format: the gzip stream is one unnamed "entry" of decompressed bytes. The empty
     * format lets a zero-byte input read as nothing instead of an unrecognised archive. */
    archive_read_support_filter_gzip(a);
    archive_read_support_format_raw(a);
    archive_read_support_format_empty(a);
    int rc = nest ? archive_read_open(a, nest, NULL, nested_read, NULL) : archive_read_open_filename(a, path, CRP_CHUNK);
    struct archive_entry *e;
    if (rc == ARCHIVE_OK) rc = archive_read_next_header(a, &e);
    if (rc != ARCHIVE_OK && rc != ARCHIVE_EOF) {
        cls_status st = crp_archive_error(a, where);
        archive_read_free(a);
        return st;
    }
    *empty = rc == ARCHIVE_EOF;
    *out = a;
    return CLS_OK;
}

cls_status crp_lines_open_entry(crp_lines *r, struct archive *a, const char *where)
{
    memset(r, 0, sizeof *r);
    r->path = where;
    r->chunk = malloc(CRP_CHUNK);
    if (!r->chunk) return err_set(CLS_E_NOMEM, "reading %s: out of memory", where);
    if (!crp_has_suffix(where, ".gz")) {
        r->a = a;
        r->borrowed = 1;
        return CLS_OK;
    }
    /* As crp_lines_open reads a .gz file, but over the entry's data. */
    r->nest = malloc(sizeof *r->nest);
    char *zchunk = malloc(CRP_CHUNK);
    if (!r->nest || !zchunk) {
        free(zchunk);
        crp_lines_close(r);
        return err_set(CLS_E_NOMEM, "reading %s: out of memory", where);
    }
    *r->nest = (crp_gz_nest){a, zchunk};
    cls_status st = crp_gz_open(where, NULL, r->nest, &r->a, &r->eof);
    if (st != CLS_OK) crp_lines_close(r);
    return st;
}

/* Appends n bytes to r->line (keeping room for the NUL). */
static cls_status line_append(crp_lines *r, size_t used, const char *p, size_t n)
{
    if (n > SIZE_MAX - 1 - used) return err_set(CLS_E_NOMEM, "%s: line too long", r->path);
    if (!vec_reserve(&r->line, &r->cap, used + n + 1, 1))
        return err_set(CLS_E_NOMEM, "%s:%lu: out of memory for a line of %zu bytes",
                       r->path, r->lineno + 1, used + n);
    memcpy(r->line + used, p, n);
    return CLS_OK;
}

/* The archive path of crp_lines_next: getline's contract over decompressed chunks. */
static cls_status archive_getline(crp_lines *r, size_t *len, int *got)
{
    size_t used = 0;
    *got = 0;
    for (;;) {
        if (r->chunk_pos == r->chunk_len) {
            if (r->eof) break;
            la_ssize_t n = archive_read_data(r->a, r->chunk, CRP_CHUNK);
            if (n < 0) return crp_archive_error(r->a, r->path);
            if (n == 0) {
                r->eof = 1;
                break;
            }
            r->chunk_len = (size_t)n;
            r->chunk_pos = 0;
        }
        const char *start = r->chunk + r->chunk_pos;
        const char *nl = memchr(start, '\n', r->chunk_len - r->chunk_pos);
        size_t take = nl ? (size_t)(nl - start) + 1 : r->chunk_len - r->chunk_pos;
        cls_status st = line_append(r, used, start, take);
        if (st != CLS_OK) return st;
        used += take;
        r->chunk_pos += take;
        *got = 1;
        if (nl) break;
    }
    if (*got) r->line[used] = '\0';
    *len = used;
    return CLS_OK;
}

void crp_lines_again(crp_lines *r, size_t len)
{
    r->again = r->line != NULL;
    r->again_len = len;
}

cls_status crp_lines_next(crp_lines *r, size_t *len, int *got)
{
    size_t n = 0;
    *got = 0;
    *len = 0;
    if (r->again) {
        r->again = 0;
        *len = r->again_len;
        *got = 1;
        return CLS_OK;
    }
    if (r->a) {
        cls_status st = archive_getline(r, &n, got);
        if (st != CLS_OK || !*got) return st;
    } else {
        ssize_t k = getline(&r->line, &r->cap, r->f);
        if (k < 0) {
            if (ferror(r->f)) return err_set(CLS_E_IO, "read %s: %s", r->path, strerror(errno));
            if (!feof(r->f))
                return err_set(CLS_E_NOMEM, "%s:%lu: out of memory reading a line", r->path,
                               r->lineno + 1);
            return CLS_OK;
        }
        n = (size_t)k;
        *got = 1;
    }
    r->lineno++;
    if (n > 0 && r->line[n - 1] == '\n') n--;
    if (n > 0 && r->line[n - 1] == '\r') n--;
    r->line[n] = '\0';
    /* A UTF-8 byte order mark (Windows editors write one) is not part of the first record. */
    if (r->lineno == 1 && n >= 3 && memcmp(r->line, "\xEF\xBB\xBF", 3) == 0) {
        memmove(r->line, r->line + 3, n - 3 + 1);
        n -= 3;
    }
    *len = n;
    return CLS_OK;
}

void crp_lines_close(crp_lines *r)
{
    if (r->f) fclose(r->f);
    if (r->a && !r->borrowed) archive_read_free(r->a);
    free(r->line);
    free(r->chunk);
    if (r->nest) free(r->nest->chunk);
    free(r->nest);
    memset(r, 0, sizeof *r);
}

/* ---- Folder walk -------------------------------------------------------------------------- */

/* A relative path and the size of the file it names (for progress). */
typedef struct walk_file {
    char *rel;
    uint64_t size;
} walk_file;

typedef struct pathvec {
    walk_file *v;
    size_t n, cap;
} pathvec;

static cls_status pathvec_push(pathvec *pv, char *p, uint64_t size)
{
    if (!vec_reserve(&pv->v, &pv->cap, pv->n + 1, sizeof *pv->v))
        return err_set(CLS_E_NOMEM, "folder walk: out of memory");
    pv->v[pv->n].rel = p;
    pv->v[pv->n].size = size;
    pv->n++;
    return CLS_OK;
}

static void pathvec_free(pathvec *pv)
{
    for (size_t i = 0; i < pv->n; i++) free(pv->v[i].rel);
    free(pv->v);
}

/* strcmp compares as unsigned char: the byte order the documents promise, whatever the locale
 * or the order readdir happens to return. */
static int cmp_paths(const void *a, const void *b)
{
    return strcmp(((const walk_file *)a)->rel, ((const walk_file *)b)->rel);
}

/* One folder walk: where it starts, and the folders it has read (by device and inode), so that
 * a followed link to a folder already read (a loop, or a second way in) is not read again. */
typedef struct walk {
    const char *root; /* as given, for the paths handed over */
    char *real;       /* realpath of root: a link's target is inside when it is below this */
    int (*want)(const char *);
    pathvec pv;
    dev_t *dev;
    ino_t *ino;
    size_t ndirs, cap_dev, cap_ino;
} walk;

/* Whether the folder sb is new to the walk; records it (0 and an error in *st if out of memory). */
static int walk_new_dir(walk *w, const struct stat *sb, cls_status *st)
{
    for (size_t i = 0; i < w->ndirs; i++)
        if (w->dev[i] == sb->st_dev && w->ino[i] == sb->st_ino) return 0;
    if (!vec_reserve(&w->dev, &w->cap_dev, w->ndirs + 1, sizeof *w->dev) ||
        !vec_reserve(&w->ino, &w->cap_ino, w->ndirs + 1, sizeof *w->ino)) {
        *st = err_set(CLS_E_NOMEM, "folder walk: out of memory");
        return 0;
    }
    w->dev[w->ndirs] = sb->st_dev;
    w->ino[w->ndirs++] = sb->st_ino;
    return 1;
}

/* Whether the link at full leads to a place below the walk's root: its target with every link
 * resolved, compared by whole path components ("/data/ab" is not below "/data/a"). */
static int link_inside(const walk *w, const char *full)
{
    char *t = realpath(full, NULL);
    if (!t) return 0;
    size_t n = strlen(w->real);
    int inside = strcmp(w->real, "/") == 0 || (strncmp(t, w->real, n) == 0 && (t[n] == '/' || t[n] == '\0'));
    free(t);
    return inside;
}

/* Adds the wanted regular files below root/rel (rel NULL: root itself) to the walk's list, as
 * paths relative to root. */
static cls_status collect(walk *w, const char *rel)
{
    const char *root = w->root;
    char *dirpath = rel ? path_join(root, rel) : strdup(root);
    if (!dirpath) return err_set(CLS_E_NOMEM, "folder walk: out of memory");
    DIR *d = opendir(dirpath);
    if (!d) {
        cls_status st = err_set(CLS_E_IO, "open folder %s: %s", dirpath, strerror(errno));
        free(dirpath);
        return st;
    }
    cls_status st = CLS_OK;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) st = err_set(CLS_E_IO, "read folder %s: %s", dirpath, strerror(errno));
            break;
        }
        /* Hidden names (".", "..", ".DS_Store", editor and VCS droppings) are not documents. */
        if (de->d_name[0] == '.') continue;
        char *sub = rel ? path_join(rel, de->d_name) : strdup(de->d_name);
        char *full = sub ? path_join(root, sub) : NULL;
        if (!full) {
            free(sub);
            st = err_set(CLS_E_NOMEM, "folder walk: out of memory");
            break;
        }
        struct stat sb;
        if (lstat(full, &sb) != 0) {
            st = err_set(CLS_E_IO, "stat %s: %s", full, strerror(errno));
        } else if (S_ISDIR(sb.st_mode)) {
            if (walk_new_dir(w, &sb, &st)) st = collect(w, sub);
        } else if (S_ISLNK(sb.st_mode)) {
            /* A link is read as what it leads to, when that is inside the input folder (a link out
             * of it, to /etc/passwd, say, reads a file the collection does not hold) or the reader
             * follows links; it leads to a folder: only then, each folder once. A dangling link
             * is no file at all. */
            int follow = crp_follow_links_now();
            if (stat(full, &sb) != 0) {
                /* dangling */
            } else if (!follow && !link_inside(w, full)) {
                if (S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) crp_count_skipped_link();
            } else if (S_ISDIR(sb.st_mode)) {
                if (follow && walk_new_dir(w, &sb, &st)) st = collect(w, sub);
            } else if (S_ISREG(sb.st_mode) && (!w->want || w->want(de->d_name))) {
                st = pathvec_push(&w->pv, sub, sb.st_size > 0 ? (uint64_t)sb.st_size : 0);
                if (st == CLS_OK) sub = NULL; /* owned by pv now */
            }
        } else if (S_ISREG(sb.st_mode) && (!w->want || w->want(de->d_name))) {
            st = pathvec_push(&w->pv, sub, sb.st_size > 0 ? (uint64_t)sb.st_size : 0);
            if (st == CLS_OK) sub = NULL; /* owned by pv now */
        }
        free(sub);
        free(full);
        if (st != CLS_OK) break;
    }
    closedir(d);
    free(dirpath);
    return st;
}

cls_status crp_walk(const char *path, int (*want)(const char *name), crp_file_fn fn, void *user)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return err_set(CLS_E_IO, "%s: %s", path, strerror(errno));
    /* Anything but a folder is read as one file, so pipes and /dev/stdin work too. */
    if (!S_ISDIR(sb.st_mode)) {
        uint64_t size = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
        progress_start(size);
        progress_file_begin(size);
        cls_status st = fn(user, path, crp_basename(path));
        if (st == CLS_OK) progress_file_end();
        return st;
    }

    /* "corpus/" and "corpus" name the same documents; keep messages free of "//". */
    char *root = strdup(path);
    if (!root) return err_set(CLS_E_NOMEM, "folder walk: out of memory");
    for (size_t n = strlen(root); n > 1 && root[n - 1] == '/'; n--) root[n - 1] = '\0';

    walk w = {0};
    w.root = root;
    w.want = want;
    cls_status st = CLS_OK;
    if (!(w.real = realpath(root, NULL))) st = err_set(CLS_E_IO, "%s: %s", root, strerror(errno));
    if (st == CLS_OK && walk_new_dir(&w, &sb, &st)) st = collect(&w, NULL);
    pathvec pv = w.pv;
    if (st == CLS_OK) {
        if (pv.n > 1) qsort(pv.v, pv.n, sizeof *pv.v, cmp_paths);
        uint64_t total = 0;
        for (size_t i = 0; i < pv.n; i++) total += pv.v[i].size;
        progress_start(total);
        for (size_t i = 0; i < pv.n && st == CLS_OK; i++) {
            const char *rel = pv.v[i].rel;
            char *full = strcmp(root, "/") == 0 ? path_join("", rel) : path_join(root, rel);
            if (!full) {
                st = err_set(CLS_E_NOMEM, "folder walk: out of memory");
                break;
            }
            progress_file_begin(pv.v[i].size);
            st = fn(user, full, rel);
            if (st == CLS_OK) progress_file_end();
            free(full);
        }
    }
    pathvec_free(&pv);
    free(w.real);
    free(w.dev);
    free(w.ino);
    free(root);
    return st;
}

/* ---- libarchive ---------------------------------------------------------------------------- */

cls_status crp_archive_error(struct archive *a, const char *path)
{
    int e = archive_errno(a);
    const char *msg = archive_error_string(a);
    if (!msg) msg = "unknown libarchive error";
    if (e == ENOMEM) return err_set(CLS_E_NOMEM, "%s: %s", path, msg);
    /* libarchive reports bad data as EILSEQ (its ARCHIVE_ERRNO_FILE_FORMAT), misuse as EINVAL
     * and other trouble as -1; any other positive errno came from the operating system. */
    if (e > 0 && e != EILSEQ && e != EINVAL)
        return err_set(CLS_E_IO, "%s: %s: %s", path, msg, strerror(e));
    return err_set(CLS_E_FORMAT, "%s: %s", path, msg);
}

int crp_is_archive_name(const char *name)
{
    static const char *const suffixes[] = {".tar",  ".tar.gz", ".tgz",     ".tar.bz2", ".tbz2",
                                           ".tbz",  ".tar.xz", ".txz",     ".tar.zst", ".tzst",
                                           ".tar.lz", ".tar.lzma", ".zip", ".7z",      ".cpio"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (crp_has_suffix(name, suffixes[i])) return 1;
    return 0;
}

/* The formats of archive_read_support_format_all but its zip readers, which are chosen apart: a
 * zip is read through its central directory (the seekable reader), never by scanning its local
 * headers (the streaming reader), which takes a zip stored inside another, or an archive cut
 * short between two entries, for the outer one's end. */
static void support_formats(struct archive *a)
{
    archive_read_support_format_ar(a);
    archive_read_support_format_cpio(a);
    archive_read_support_format_empty(a);
    archive_read_support_format_lha(a);
    archive_read_support_format_mtree(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_xar(a);
    archive_read_support_format_warc(a);
    archive_read_support_format_7zip(a);
    archive_read_support_format_cab(a);
    archive_read_support_format_rar(a);
    archive_read_support_format_rar5(a);
    archive_read_support_format_iso9660(a);
}

/* A compressed archive, or one read from a pipe: libarchive decompresses it (filters, raw format)
 * and the format reader takes the bytes through stream_read. libarchive shows a format reader's
 * position in its input but not the bytes there, and a tar's end is told by its bytes; the last
 * STREAM_KEEP bytes handed over are kept for that. The format reader asks for more only when it
 * has used what it had, so its position is never more than a block and a tar header behind. */
#define STREAM_KEEP (4u * CRP_CHUNK)
typedef struct crp_stream {
    struct archive *raw;
    const char *blk;   /* what is left of raw's current block */
    size_t blk_len;
    la_int64_t handed; /* bytes handed to the format reader */
    int eof;           /* raw has no more */
    unsigned char *keep; /* byte i of the stream at keep[i % STREAM_KEEP] while still kept */
} crp_stream;

static la_ssize_t stream_read(struct archive *fmt, void *client, const void **buf)
{
    crp_stream *s = client;
    while (s->blk_len == 0) {
        if (s->eof) return 0;
        const void *p;
        size_t n;
        la_int64_t off;
        int rc = archive_read_data_block(s->raw, &p, &n, &off);
        if (rc == ARCHIVE_EOF) {
            s->eof = 1;
            return 0;
        }
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            const char *msg = archive_error_string(s->raw);
            archive_set_error(fmt, archive_errno(s->raw), "%s", msg ? msg : "read error");
            return -1;
        }
        s->blk = p;
        s->blk_len = n;
    }
    size_t n = s->blk_len < CRP_CHUNK ? s->blk_len : CRP_CHUNK;
    for (size_t done = 0; done < n;) {
        size_t at = (size_t)(s->handed % STREAM_KEEP), k = n - done;
        if (k > STREAM_KEEP - at) k = STREAM_KEEP - at;
        memcpy(s->keep + at, s->blk + done, k);
        done += k;
        s->handed += (la_int64_t)k;
    }
    *buf = s->blk;
    s->blk += n;
    s->blk_len -= n;
    return (la_ssize_t)n;
}

/* A zip's entries come from its central directory. A file cut short has none, and libarchive's
 * seekable reader does not recognise it; one cut right after a zip stored in it ends with that
 * zip's central directory, which libarchive takes for this one's (it allows data before the
 * first entry, as self-extracting archives have). The streaming reader reads the entry at the
 * file's start: both readers must find that entry's data at the same offset. Not a zip at its
 * first byte: nothing to check, *is_zip 0. */
static cls_status zip_check(const char *path, int *is_zip)
{
    *is_zip = 0;
    struct archive *s = archive_read_new(), *z = archive_read_new();
    cls_status st = CLS_OK;
    if (!s || !z) {
        st = err_set(CLS_E_NOMEM, "%s: out of memory", path);
        goto done;
    }
    archive_read_support_format_zip_streamable(s);
    archive_read_support_format_zip_seekable(z);
    if (archive_read_open_filename(s, path, CRP_CHUNK) != ARCHIVE_OK) goto done;
    *is_zip = 1;
    if (archive_read_open_filename(z, path, CRP_CHUNK) != ARCHIVE_OK) {
        int en = archive_errno(z); /* the operating system's failure, or libarchive's "not a zip" */
        if (en == ENOMEM || (en > 0 && en != EILSEQ && en != EINVAL)) st = crp_archive_error(z, path);
        else st = err_set(CLS_E_FORMAT, "%s: a zip archive without its central directory, the list of its entries "
                          "at its end (cut short?)", path);
        goto done;
    }
    struct archive_entry *e;
    int rs = archive_read_next_header(s, &e);
    la_int64_t ds = archive_filter_bytes(s, 0);
    int rz = archive_read_next_header(z, &e);
    if (rz != ARCHIVE_OK && rz != ARCHIVE_WARN && rz != ARCHIVE_EOF) {
        st = crp_archive_error(z, path);
        goto done;
    }
    int s_entry = rs == ARCHIVE_OK || rs == ARCHIVE_WARN, z_entry = rz != ARCHIVE_EOF;
    if (s_entry != z_entry || (s_entry && ds != archive_filter_bytes(z, 0)))
        st = err_set(CLS_E_FORMAT, "%s: the central directory at the end of this zip archive does not list the "
                     "entry at its start (the central directory of a zip stored in it, the archive cut short?)", path);
done:
    if (s) archive_read_free(s);
    if (z) archive_read_free(z);
    return st;
}

void crp_archive_close(crp_archive *h)
{
    if (!h) return;
    if (h->a) archive_read_free(h->a);
    if (h->stream) {
        if (h->stream->raw) archive_read_free(h->stream->raw);
        free(h->stream->keep);
        free(h->stream);
    }
    free(h);
}

/* The format reader over a stream of decompressed bytes (see crp_stream); takes raw, open. */
static cls_status stream_open(crp_archive *h, struct archive *raw)
{
    struct archive_entry *e;
    int rc = archive_read_next_header(raw, &e);
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN && rc != ARCHIVE_EOF) {
        cls_status st = crp_archive_error(raw, h->path);
        archive_read_free(raw);
        return st;
    }
    if (!(h->stream = calloc(1, sizeof *h->stream))) {
        archive_read_free(raw);
        return err_set(CLS_E_NOMEM, "%s: out of memory", h->path);
    }
    h->stream->raw = raw; /* freed with h from here on */
    h->counted = raw;
    if (!(h->stream->keep = malloc(STREAM_KEEP)) || !(h->a = archive_read_new()))
        return err_set(CLS_E_NOMEM, "%s: out of memory", h->path);
    h->stream->eof = rc == ARCHIVE_EOF; /* a zero-byte input: no data to ask raw for */
    support_formats(h->a);
    /* a zip is recognised only to be refused by name (crp_archive_header) */
    archive_read_support_format_zip_streamable(h->a);
    if (archive_read_open(h->a, h->stream, NULL, stream_read, NULL) != ARCHIVE_OK)
        return crp_archive_error(h->a, h->path);
    return CLS_OK;
}

cls_status crp_archive_open(const char *path, crp_archive **out)
{
    *out = NULL;
    crp_archive *h = calloc(1, sizeof *h);
    if (!h) return err_set(CLS_E_NOMEM, "%s: out of memory", path);
    h->path = path;
    struct stat sb;
    int regular = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    cls_status st = CLS_OK;
    /* The file's compression first: a plain file is read by the format readers themselves, which
     * may seek (a zip's central directory, a 7-Zip header at the end); anything else through a
     * stream, which cannot. */
    struct archive *raw = archive_read_new();
    if (!raw) st = err_set(CLS_E_NOMEM, "%s: out of memory", path);
    if (st == CLS_OK) {
        archive_read_support_filter_all(raw);
        archive_read_support_format_raw(raw);
        archive_read_support_format_empty(raw);
        if (archive_read_open_filename(raw, path, CRP_CHUNK) != ARCHIVE_OK) {
            st = crp_archive_error(raw, path);
            archive_read_free(raw);
        } else if (regular && archive_filter_count(raw) == 1) {
            archive_read_free(raw);
            if ((st = zip_check(path, &h->zip_checked)) == CLS_OK) {
                if (!(h->a = archive_read_new())) st = err_set(CLS_E_NOMEM, "%s: out of memory", path);
            }
            if (st == CLS_OK) {
                archive_read_support_filter_all(h->a);
                support_formats(h->a);
                archive_read_support_format_zip_seekable(h->a);
                if (archive_read_open_filename(h->a, path, CRP_CHUNK) != ARCHIVE_OK) st = crp_archive_error(h->a, path);
                h->counted = h->a;
            }
        } else {
            st = stream_open(h, raw);
        }
    }
    if (st != CLS_OK) {
        crp_archive_close(h);
        return st;
    }
    crp_progress_source(NULL, h->counted);
    *out = h;
    return CLS_OK;
}

/* n bytes of the decompressed input from offset at, into buf: 0 when they are not there. */
static int input_bytes(crp_archive *h, la_int64_t at, unsigned char *buf, size_t n)
{
    crp_stream *s = h->stream;
    if (s) {
        if (at < 0 || at + (la_int64_t)n > s->handed || s->handed - at > (la_int64_t)STREAM_KEEP) return 0;
        for (size_t i = 0; i < n; i++) buf[i] = s->keep[(size_t)((at + (la_int64_t)i) % STREAM_KEEP)];
        return 1;
    }
    FILE *f = fopen(h->path, "rb");
    if (!f) return 0;
    int ok = fseeko(f, (off_t)at, SEEK_SET) == 0 && fread(buf, 1, n, f) == n;
    fclose(f);
    return ok;
}

/* At the end libarchive reports: a tar ends with two blocks of zeros, which libarchive reads but
 * does not require (it also ends where the input does at a header's place, and after a global
 * pax header with nothing behind it). The last two blocks it read for this end must be those. */
static cls_status archive_end(crp_archive *h)
{
    struct archive *a = h->a;
    if ((archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR) return CLS_OK;
    la_int64_t start = archive_read_header_position(a), end = archive_filter_bytes(a, 0);
    unsigned char tail[1024];
    int whole = start >= 0 && end - start >= (la_int64_t)sizeof tail &&
                input_bytes(h, end - (la_int64_t)sizeof tail, tail, sizeof tail);
    for (size_t i = 0; whole && i < sizeof tail; i++) whole = tail[i] == 0;
    if (!whole)
        return err_set(CLS_E_FORMAT, "%s: the tar archive ends without its two end-of-archive blocks of zeros (cut "
                       "short?)", h->path);
    return CLS_OK;
}

cls_status crp_archive_header(crp_archive *h, struct archive_entry **e, int *got)
{
    *got = 0;
    int rc = archive_read_next_header(h->a, e);
    if (rc == ARCHIVE_EOF) return archive_end(h);
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) return crp_archive_error(h->a, h->path);
    if ((archive_format(h->a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP && !h->zip_checked)
        return err_set(CLS_E_FORMAT, "%s: a zip archive %s: its entries are listed at its end, which is read only "
                       "from the zip file itself", h->path,
                       h->stream ? "compressed or read from a pipe" : "with data before its first entry");
    *got = 1;
    return CLS_OK;
}

/* The entry path without leading "/" and "./", or NULL if any component is hidden. */
static const char *entry_rel(const char *name)
{
    for (;;) {
        if (name[0] == '/') name++;
        else if (name[0] == '.' && name[1] == '/') name += 2;
        else break;
    }
    for (const char *p = name; *p;) {
        if (*p == '.') return NULL;
        const char *slash = strchr(p, '/');
        if (!slash) break;
        p = slash + 1;
    }
    return name;
}

cls_status crp_archive_next(crp_archive *h, struct archive_entry **e, const char **name, const char **rel, int *got)
{
    for (;;) {
        cls_status st = crp_archive_header(h, e, got);
        if (st != CLS_OK || !*got) return st;
        *got = 0;
        if (archive_entry_filetype(*e) != AE_IFREG) continue;
        /* A hard link stores no data (tar): its content is under the name it links to. (pax
         * may store data with one; then it is a file like any other.) */
        int has_data = archive_entry_size_is_set(*e) && archive_entry_size(*e) > 0;
        if (archive_entry_hardlink(*e) && !has_data) continue;
        *name = archive_entry_pathname(*e);
        if (!*name) *name = archive_entry_pathname_utf8(*e);
        if (!*name) return err_set(CLS_E_FORMAT, "%s: an entry has an unreadable name", h->path);
        *rel = entry_rel(*name);
        if (!*rel || !**rel) continue;
        *got = 1;
        return CLS_OK;
    }
}

/* ---- Line-oriented inputs ------------------------------------------------------------------- */

/* Every entry of the archive at path through fn, each as lines named "path:entry". */
static cls_status read_lines_archive(const char *path, crp_lines_fn fn, void *user)
{
    crp_archive *h;
    cls_status st = crp_archive_open(path, &h); /* progress follows its bytes across all entries */
    if (st != CLS_OK) return st;
    crp_buf where = {0};
    for (;;) {
        struct archive_entry *e;
        const char *name, *rel;
        int got;
        if ((st = crp_archive_next(h, &e, &name, &rel, &got)) != CLS_OK || !got) break;
        where.n = 0;
        if ((st = crp_buf_add(&where, path, strlen(path))) != CLS_OK ||
            (st = crp_buf_add(&where, ":", 1)) != CLS_OK ||
            (st = crp_buf_add(&where, name, strlen(name))) != CLS_OK)
            break;
        crp_lines r;
        if ((st = crp_lines_open_entry(&r, h->a, where.p)) != CLS_OK) break;
        st = fn(user, &r);
        crp_lines_close(&r);
        if (st != CLS_OK) break;
    }
    crp_progress_source(NULL, NULL);
    free(where.p);
    crp_archive_close(h);
    return st;
}

cls_status crp_read_lines_input(const char *path, crp_lines_fn fn, void *user)
{
    if (crp_is_archive_name(path)) return read_lines_archive(path, fn, user);
    crp_lines r;
    cls_status st = crp_lines_open(&r, path);
    if (st != CLS_OK) return st;
    crp_progress_source(r.f, r.a);
    st = fn(user, &r);
    crp_progress_source(NULL, NULL);
    crp_lines_close(&r);
    return st;
}

/* ---- Callbacks ------------------------------------------------------------------------------ */

/* The detail is cleared before each call so that an empty one afterwards means the callback
 * stopped without saying why, rather than showing a stale message from an earlier failure. */
cls_status crp_emit_doc(cls_doc_fn fn, void *user, const char *docno, size_t docno_len,
                        const char *text, size_t text_len)
{
    err_clear();
    if (fn(user, docno, docno_len, text, text_len) == 0) return CLS_OK;
    if (cls_last_error()[0] == '\0') return err_set(CLS_E_ARG, "stopped by caller");
    return CLS_E_ARG;
}

cls_status crp_emit_topic(cls_topic_fn fn, void *user, const char *qid, const char *text)
{
    err_clear();
    if (fn(user, qid, text) == 0) return CLS_OK;
    if (cls_last_error()[0] == '\0') return err_set(CLS_E_ARG, "stopped by caller");
    return CLS_E_ARG;
}

/* ---- Dispatch -------------------------------------------------------------------------------- */

/* The line-oriented formats (JSONL, BEIR, TREC, SMART) read a file or every file of a folder,
 * one file at a time; a file named as an archive (crp_is_archive_name), given alone or met in
 * the folder, is read entry by entry in archive order. */
typedef struct file_walk {
    cls_corpus_format fmt;
    cls_doc_fn fn;
    void *user;
} file_walk;

static cls_status lines_visit(void *user, crp_lines *r)
{
    const file_walk *w = user;
    if (w->fmt == CLS_CORPUS_TREC) return crp_read_trec_lines(r, w->fn, w->user);
    if (w->fmt == CLS_CORPUS_SMART) return crp_read_smart_lines(r, w->fn, w->user);
    return crp_read_jsonl_lines(w->fmt, r, w->fn, w->user);
}

static cls_status file_visit(void *user, const char *full, const char *rel)
{
    (void)rel;
    return crp_read_lines_input(full, lines_visit, user);
}

static cls_status dispatch(cls_corpus_format fmt, const char *path, cls_doc_fn fn, void *user)
{
    switch (fmt) {
    case CLS_CORPUS_JSONL:
    case CLS_CORPUS_BEIR:
    case CLS_CORPUS_TREC:
    case CLS_CORPUS_SMART: {
        file_walk w = {fmt, fn, user};
        return crp_walk(path, NULL, file_visit, &w);
    }
    case CLS_CORPUS_HTML:
        return crp_read_html(path, fn, user);
    case CLS_CORPUS_FILES:
        return crp_read_files(path, fn, user);
    }
    return err_set(CLS_E_ARG, "cls_corpus_read: unknown corpus format %d", (int)fmt);
}

cls_status cls_corpus_read(cls_corpus_format fmt, const char *path, cls_doc_fn fn, void *user)
{
    return cls_corpus_read_ex(fmt, path, fn, user, NULL, NULL);
}

/* Progress is called once when the input's files are listed (0 documents), then after a
 * document or a file whenever CRP_PROGRESS_INTERVAL seconds have passed since the last call,
 * and once at the end of a successful read with every document counted and bytes_done equal
 * to bytes_total (when the total is known). */
static cls_status read_any(cls_corpus_format fmt, const char *path, cls_doc_fn fn, cls_doc_fields_fn xfn,
                           void *user, const char *const *fields, size_t nfields, cls_progress_fn progress,
                           void *progress_user)
{
    memset(&last_counts, 0, sizeof last_counts);
    if (!path || !*path || (!fn && !xfn))
        return err_set(CLS_E_ARG, "cls_corpus_read: a path and a callback are required");
    read_state r = {0};
    r.fn = fn;
    r.xfn = xfn;
    r.user = user;
    r.fields = fields;
    r.nfields = nfields;
    r.progress = progress;
    r.progress_user = progress_user;
    r.last = mono_now();
    read_state *outer = cur_read;
    cur_read = &r;
    cls_status st = dispatch(fmt, path, deliver, &r);
    cur_read = outer;
    last_counts = r.counts;
    if (st == CLS_OK && progress) {
        r.f = NULL;
        r.a = NULL;
        r.cur_size = 0;
        progress(progress_user, r.docs, r.base > r.total ? r.base : r.total, r.total);
    }
    return st;
}

cls_status cls_corpus_read_ex(cls_corpus_format fmt, const char *path, cls_doc_fn fn, void *user,
                              cls_progress_fn progress, void *progress_user)
{
    return read_any(fmt, path, fn, NULL, user, NULL, 0, progress, progress_user);
}

cls_status cls_corpus_read_fields(cls_corpus_format fmt, const char *path, const char *const *fields,
                                  size_t num_fields, cls_doc_fields_fn fn, void *user, cls_progress_fn progress,
                                  void *progress_user)
{
    memset(&last_counts, 0, sizeof last_counts);
    if (!fn || (num_fields && !fields)) return err_set(CLS_E_ARG, "cls_corpus_read_fields: NULL argument");
    if (num_fields > CLS_MAX_FIELDS)
        return err_set(CLS_E_ARG, "%zu fields asked for: at most %u", num_fields, CLS_MAX_FIELDS);
    for (size_t i = 0; i < num_fields; i++) {
        cls_status st = cls_corpus_field_check(fmt, fields[i]);
        if (st != CLS_OK) return st;
        for (size_t j = 0; j < i; j++)
            if (strcmp(fields[i], fields[j]) == 0) return err_set(CLS_E_ARG, "field '%s' asked for twice", fields[i]);
    }
    return read_any(fmt, path, NULL, fn, user, fields, num_fields, progress, progress_user);
}
