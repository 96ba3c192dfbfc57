/* Guarded output files (outfile.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "util/outfile.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fault.h"
#include "util/tmpfile.h"

static atomic_int force;

void of_set_force(int on) { atomic_store(&force, on != 0); }

int of_forced(void) { return atomic_load(&force); }

/* The path's folder can take a new file, the path is not a folder, and an existing device, pipe
 * or link there is writable itself. */
static cls_status writable(const char *path)
{
    struct stat st;
    if (!*path) return err_set(CLS_E_IO, "the output path is empty");
    if (lstat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return err_set(CLS_E_IO, "cannot write %s: it is a folder", path);
        if (!S_ISREG(st.st_mode)) {
            if (access(path, W_OK) == 0) return CLS_OK;
            return err_set(CLS_E_IO, "cannot write %s: %s", path, strerror(errno));
        }
    }
    /* the output is written as a temporary file in its folder, then renamed over path */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (n == 0) snprintf(dir, sizeof dir, "/");
    else if (n < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)n, path);
    else return err_set(CLS_E_IO, "cannot write %s: the path is too long", path);
    const char *why = NULL;
    if (stat(dir, &st) != 0) why = strerror(errno);
    else if (!S_ISDIR(st.st_mode)) why = strerror(ENOTDIR);
    else if (access(dir, W_OK | X_OK) != 0) why = strerror(errno);
    if (why) return err_set(CLS_E_IO, "cannot write %s: folder %s: %s", path, dir, why);
    return CLS_OK;
}

/* The first non-blank byte of b[0..n), or 0. */
static unsigned char first_byte(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n') return b[i];
    return 0;
}

/* Whether the first n bytes b of a file look like a kind's output (an empty file does). */
static int looks_like(of_kind kind, const unsigned char *b, size_t n)
{
    if (n == 0) return 1;
    switch (kind) {
    case OF_INDEX: return n >= 8 && memcmp(b, "CLSIDX\r\n", 8) == 0;
    case OF_CIFF: {
        /* a length-delimited protobuf Header: a varint length, then field 1..8's tag */
        size_t i = 0;
        while (i < n && i < 5 && (b[i] & 0x80)) i++;
        if (i + 1 >= n || i >= 5) return 0;
        unsigned tag = b[i + 1];
        return (tag >> 3) >= 1 && (tag >> 3) <= 8 && (tag & 7) <= 2;
    }
    case OF_JSONL: return !memchr(b, '\0', n) && first_byte(b, n) == '{';
    case OF_TUNING: {
        /* a JSON object naming its format near its start (bench_tune.c writes it) */
        char head[513];
        size_t m = n < sizeof head - 1 ? n : sizeof head - 1;
        memcpy(head, b, m);
        head[m] = '\0';
        return !memchr(b, '\0', n) && first_byte(b, n) == '{' && strstr(head, "\"clsearch_tuning\"") != NULL;
    }
    case OF_FEATURES: return !memchr(b, '\0', n) && n >= 19 && memcmp(b, "# clsearch features", 19) == 0;
    case OF_SCORES: {
        /* its first line is one number */
        if (memchr(b, '\0', n)) return 0;
        const unsigned char *nl = memchr(b, '\n', n);
        char line[64];
        size_t len = nl ? (size_t)(nl - b) : n;
        if (len == 0 || len >= sizeof line) return 0;
        memcpy(line, b, len);
        line[len] = '\0';
        char *e;
        (void)strtod(line, &e);
        return e != line && *e == '\0';
    }
    case OF_RUN:
    case OF_TOPICS: {
        if (memchr(b, '\0', n)) return 0;
        if (kind == OF_RUN && b[0] == '{') return 1; /* search --json: one object a line */
        const unsigned char *nl = memchr(b, '\n', n);
        size_t len = nl ? (size_t)(nl - b) : n;
        if (kind == OF_TOPICS) return memchr(b, '\t', len) != NULL;
        /* a TREC run line: qid Q0 docno rank score tag */
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), (const char *)b);
        char q0[8];
        int fields = sscanf(line, "%*s %7s %*s %*d %*f %*s", q0);
        return fields == 1 && strcmp(q0, "Q0") == 0;
    }
    }
    return 0;
}

static const char *kind_name(of_kind k)
{
    switch (k) {
    case OF_INDEX: return "a clsearch index";
    case OF_RUN: return "a run";
    case OF_CIFF: return "a CIFF file";
    case OF_TOPICS: return "a topics file";
    case OF_JSONL: return "a JSON-lines file";
    case OF_TUNING: return "a clsearch tuning file";
    case OF_FEATURES: return "a clsearch features file";
    case OF_SCORES: return "a scores file";
    }
    return "?";
}

int of_holds(const char *path, of_kind kind)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 1;
    unsigned char head[4096];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return looks_like(kind, head, n);
}

cls_status of_guard(const char *path, of_kind kind, char *const *inputs, int ninputs)
{
    cls_status s = writable(path);
    if (s != CLS_OK) return s;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return CLS_OK;
    if ((st.st_mode & 0222) == 0 || access(path, W_OK) != 0)
        return err_set(CLS_E_IO, "%s exists and is read-only: not replaced (change its mode or write elsewhere)", path);
    int forced = of_forced();
    for (int i = 0; i < ninputs && !forced; i++) {
        struct stat in;
        if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino)
            return err_set(CLS_E_IO, "the output %s is the input %s: refused (--force to write over it)", path,
                           inputs[i]);
    }
    if (forced || of_holds(path, kind)) return CLS_OK;
    return err_set(CLS_E_IO, "%s exists and is not %s: not replaced (--force to write over it)", path, kind_name(kind));
}

/* Copies the file at path (absent: nothing) to the end of out. */
static int copy_into(FILE *out, const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in) return errno == ENOENT;
    char buf[65536];
    size_t n;
    int ok = 1;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    int e = errno;
    fclose(in);
    errno = e;
    return ok;
}

cls_status of_open(of_file *o, const char *path, int append)
{
    memset(o, 0, sizeof *o);
    struct stat ls, st;
    int have = lstat(path, &ls) == 0;
    if (have && S_ISLNK(ls.st_mode) && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        o->final = realpath(path, NULL); /* replace the file the link names, keep the link */
        if (!o->final) return err_set(CLS_E_IO, "cannot resolve the symbolic link %s: %s", path, strerror(errno));
    } else if (have && !S_ISREG(ls.st_mode)) {
        /* a device, a pipe, a link to one (/dev/null, /dev/stdout, a FIFO): written through;
         * renaming a file over it would replace the node itself */
        if (!(o->final = strdup(path))) return err_set(CLS_E_NOMEM, "writing %s: out of memory", path);
        if (!(o->f = fopen(path, append ? "a" : "w"))) {
            cls_status s = err_set(CLS_E_IO, "cannot open %s for writing: %s", path, strerror(errno));
            free(o->final);
            o->final = NULL;
            return s;
        }
        return CLS_OK;
    } else if (!(o->final = strdup(path))) {
        return err_set(CLS_E_NOMEM, "writing %s: out of memory", path);
    }
    int fd = tmp_create(o->final, &o->tmp);
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        cls_status s = err_set(CLS_E_IO, "cannot create a temporary file beside %s: %s", o->final, strerror(errno));
        if (fd >= 0) close(fd);
        if (o->tmp) tmp_discard(o->tmp);
        free(o->final);
        memset(o, 0, sizeof *o);
        return s;
    }
    if (append && !copy_into(o->f, o->final)) {
        cls_status s = err_set(CLS_E_IO, "copying %s to append to it: %s", o->final, strerror(errno));
        of_discard(o);
        return s;
    }
    return CLS_OK;
}

cls_status of_commit(of_file *o)
{
    int err = 0;
    if (o->f) {
        if (fault_hit(FAULT_WRITE)) err = ENOSPC; /* CLSEARCH_FAULT's write faults: a full disk */
        if (fflush(o->f) != 0 && !err) err = errno;
        if (ferror(o->f) && !err) err = EIO;
        if (!err && o->tmp && fsync(fileno(o->f)) != 0) err = errno;
        if (fclose(o->f) != 0 && !err) err = errno;
        o->f = NULL;
    }
    if (!err && o->tmp && rename(o->tmp, o->final) != 0) err = errno;
    if (err && o->tmp) tmp_discard(o->tmp);
    else tmp_release(o->tmp);
    cls_status s = err ? err_set(CLS_E_IO, "writing %s: %s", o->final, strerror(err)) : CLS_OK;
    free(o->final);
    memset(o, 0, sizeof *o);
    return s;
}

void of_discard(of_file *o)
{
    if (o->f) fclose(o->f);
    tmp_discard(o->tmp);
    free(o->final);
    memset(o, 0, sizeof *o);
}
