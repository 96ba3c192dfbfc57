/* shard: an index cut into N document-range shards, OUT.0 .. OUT.<N-1> (include/clsearch.h,
 * "Document-range shards"), the ranges balanced by postings (cls_index_shard_bounds), each
 * shard keeping the whole collection's statistics so that it scores its documents as the index.
 *
 * The shards are a set: each is written to a temporary file beside its name, and only when all
 * are whole are they renamed, one after another, so a failure (a full disk at the last shard)
 * leaves every OUT.i as it was, and no partial set. `index --shards` writes its set through the
 * same two calls (shard_set_names, shard_set_write), so its shards are these, byte for byte. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* The files of the set: of_open's temporary files, each holding its shard once written. */
static void discard_all(of_file *f, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) of_discard(&f[i]);
}

/* Writes shard i of n of idx, documents [lo, hi), into the set's file f (opened, its temporary
 * file replaced by the shard's through the library's own temporary name). 0, or 1 after the
 * message. */
static int write_one(const cls_index *idx, uint32_t i, uint32_t n, uint32_t lo, uint32_t hi, of_file *f)
{
    /* the library writes the file itself: the stream of_open opened on it is not used */
    fclose(f->f);
    f->f = NULL;
    cls_status s = cls_index_shard_write(idx, i, n, lo, hi, f->tmp);
    if (s != CLS_OK) {
        char what[64];
        snprintf(what, sizeof what, "writing shard %u of %u", i, n);
        return fail(s, what);
    }
    return 0;
}

/* The names OUT.0 .. OUT.<n-1>, cap bytes apart in one buffer (freed by the caller), each
 * checked before any work as one output is: the folder, the inputs, a read-only file, a file
 * that is not an index (unless --force), anything but a file. NULL after the message. */
char *shard_set_names(const char *what, const char *out, uint32_t n, char *const *inputs, int ninputs, size_t *cap)
{
    *cap = strlen(out) + 16;
    char *names = malloc((size_t)n * *cap);
    if (!names) {
        fail(CLS_E_NOMEM, what);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        char *name = names + (size_t)i * *cap;
        snprintf(name, *cap, "%s.%u", out, i);
        struct stat st;
        int bad = 0;
        if (stat(name, &st) == 0 && !S_ISREG(st.st_mode)) {
            fprintf(stderr, "%s: %s: %s exists and is not a regular file: a shard is written only to a file\n",
                    prog, what, name);
            bad = 1;
        } else {
            bad = guard_output(what, name, OF_INDEX, inputs, ninputs);
        }
        if (bad) {
            free(names);
            return NULL;
        }
    }
    return names;
}

int shard_set_write(const cls_index *idx, const char *what, const char *names, size_t cap, uint32_t N, int verbose)
{
    uint32_t *bounds = malloc(((size_t)N + 1) * sizeof *bounds);
    of_file *files = calloc(N, sizeof *files);
    int rc = bounds && files ? 0 : fail(CLS_E_NOMEM, what);
    cls_status s;
    if (rc == 0 && (s = cls_index_shard_bounds(idx, N, bounds)) != CLS_OK) rc = fail_reading(idx, s, "cutting the index");
    uint32_t opened = 0;
    for (; rc == 0 && opened < N; opened++) {
        if ((s = of_open(&files[opened], names + (size_t)opened * cap, 0)) != CLS_OK) {
            rc = fail(s, what);
            break;
        }
        rc = write_one(idx, opened, N, bounds[opened], bounds[opened + 1], &files[opened]);
    }
    if (rc != 0) {
        discard_all(files, opened);
    } else {
        uint32_t i = 0;
        for (; rc == 0 && i < N; i++)
            if ((s = of_commit(&files[i])) != CLS_OK) rc = fail(s, what);
        discard_all(files + i, N - i);
    }
    if (rc == 0 && verbose) {
        cls_index_stats st;
        cls_index_get_stats(idx, &st);
        for (uint32_t i = 0; i < N; i++) {
            const char *name = names + (size_t)i * cap;
            if (bounds[i + 1] > bounds[i])
                fprintf(stderr, "%s: documents %u..%u of %u\n", name, bounds[i], bounds[i + 1] - 1, st.num_docs);
            else
                fprintf(stderr, "%s: no documents (an empty range at %u of %u)\n", name, bounds[i], st.num_docs);
        }
    }
    free(bounds), free(files);
    return rc;
}

int cmd_shard(int argc, char **argv)
{
    static const char *use = "shard: usage: clsearch shard INDEX -n N -o OUT [-v]%s";
    static const struct option lo[] = {{"shards", required_argument, 0, 'n'}, {"output", required_argument, 0, 'o'},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    const char *out = NULL;
    unsigned long long n = 0;
    int verbose = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":n:o:v", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!parse_u64(optarg, 1, CLS_MAX_SHARDS, &n))
                return usage_error("shard: -n takes a number of shards from 1 to 1024, not '%s'", optarg);
            break;
        case 'o': out = optarg; break;
        case 'v': verbose = 1; break;
        default: return bad_option(argc, argv, c);
        }
    }
    if (!out || !n || optind != argc - 1) return usage_error(use, "");
    const char *path = argv[optind];
    size_t cap;
    char *names = shard_set_names("shard", out, (uint32_t)n, argv + optind, 1, &cap);
    if (!names) return 1;
    cls_index *idx = NULL;
    cls_status s = cls_index_open(path, &idx);
    int rc = s == CLS_OK ? 0 : fail(s, "opening the index");
    uint32_t shard, shards;
    if (rc == 0 && cls_index_shard_info(idx, NULL, NULL, &shard, &shards)) {
        fprintf(stderr, "%s: shard: %s is shard %u of %u already: cut the whole index\n", prog, path, shard, shards);
        rc = 1;
    }
    if (rc == 0) rc = shard_set_write(idx, "shard", names, cap, (uint32_t)n, verbose);
    cls_index_close(idx);
    free(names);
    return rc;
}
