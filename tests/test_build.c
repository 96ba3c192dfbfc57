/* The pipelined builder (src/index/index_build.c, index_runs.c, index_write.c's chunks): the
 * index file is the same bytes whatever the threads and the memory budget, spills included, for
 * every codec and block size; a spill that cannot be written fails the build with a clear error
 * and leaves no file, named or not; `index --memory` through the command. The data part does
 * the same on CACM. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/index_write.h"
#include "testutil.h"
#include "util/fault.h"

/* A generated collection: a Zipf-like vocabulary, so that some lists span many blocks of every
 * size and most are short; a few empty documents. */
typedef struct coll {
    char **docno, **text;
    size_t n;
} coll;

static void coll_make(coll *c, size_t n, uint64_t seed)
{
    enum { VOCAB = 3000 };
    static char words[VOCAB][12];
    for (int w = 0; w < VOCAB; w++) {
        uint64_t x = (uint64_t)w * 2654435761u + 7;
        int len = 3 + w % 7;
        for (int i = 0; i < len; i++, x /= 23) words[w][i] = (char)('a' + x % 23);
        words[w][len] = '\0';
    }
    c->n = n;
    c->docno = calloc(n, sizeof *c->docno);
    c->text = calloc(n, sizeof *c->text);
    ck_assert(c->docno && c->text);
    uint64_t st = seed;
    for (size_t d = 0; d < n; d++) {
        char id[32];
        snprintf(id, sizeof id, "d%zu", d);
        c->docno[d] = tu_strdup(id);
        size_t len = d % 97 == 5 ? 0 : 1 + tu_rand(&st) % 80, at = 0;
        char *t = malloc(len * 13 + 1);
        ck_assert(t);
        for (size_t i = 0; i < len; i++) {
            /* the product of two uniforms leans to the small ids: a few very frequent words */
            uint64_t a = tu_rand(&st) % VOCAB, b = tu_rand(&st) % VOCAB;
            const char *w = words[a * b / VOCAB];
            size_t wl = strlen(w);
            memcpy(t + at, w, wl);
            at += wl;
            t[at++] = ' ';
        }
        t[at] = '\0';
        c->text[d] = t;
    }
}

static void coll_free(coll *c)
{
    for (size_t d = 0; d < c->n; d++) {
        free(c->docno[d]);
        free(c->text[d]);
    }
    free(c->docno);
    free(c->text);
}

/* Builds c with the layout o, threads and budget (0: the default) at path; the build's status
 * (the first failing call's), and its times in *t when not NULL. */
static cls_status build(const coll *c, const cls_build_opts *lay, unsigned threads, uint64_t memory, const char *path,
                        idx_build_times *t)
{
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(NULL, &b), CLS_OK);
    cls_build_opts o = *lay;
    o.threads = threads;
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    ck_assert_int_eq(cls_builder_set_memory(b, memory), CLS_OK);
    cls_status st = CLS_OK;
    for (size_t d = 0; d < c->n && st == CLS_OK; d++)
        st = cls_builder_add(b, c->docno[d], strlen(c->docno[d]), c->text[d], strlen(c->text[d]));
    if (st == CLS_OK) st = cls_builder_write(b, path);
    if (t) idx_builder_times(b, t);
    cls_builder_free(b);
    return st;
}

static void assert_same_file(const char *a, const char *b, const char *what)
{
    size_t na, nb;
    unsigned char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s: %s (%zu bytes) differs from %s (%zu bytes)", what, b, nb, a,
                  na);
    free(x);
    free(y);
}

/* The variants every layout is built with, against one thread and the default budget. */
static const struct {
    unsigned threads;
    uint64_t memory;
    int spills;  /* the budget is small enough that runs must be spilled */
} variants[] = {
    {1, 16 << 10, 1}, {3, 16 << 10, 1}, {2, 300 << 10, 1}, {3, 0, 0}, {1, 1, 1},
    {12, 40 << 10, 1}, /* three sealing threads at once */
};

/* small: a collection too small for the larger budgets to spill (only those under 64 KiB must) */
static void same_bytes(const coll *c, const cls_build_opts *lay, const char *what, int small)
{
    const char *ref = tu_tmp_path("ref");
    char refp[4096];
    snprintf(refp, sizeof refp, "%s", ref);
    ck_assert_msg(build(c, lay, 1, 0, refp, NULL) == CLS_OK, "%s", cls_last_error());
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        const char *p = tu_tmp_path("variant");
        idx_build_times t;
        ck_assert_msg(build(c, lay, variants[v].threads, variants[v].memory, p, &t) == CLS_OK, "%s", cls_last_error());
        char w[256];
        snprintf(w, sizeof w, "%s, %u threads, budget %llu", what, variants[v].threads,
                 (unsigned long long)variants[v].memory);
        if (variants[v].spills && (!small || variants[v].memory < 64 << 10))
            ck_assert_msg(t.spills > 1, "%s: %llu spills", w, (unsigned long long)t.spills);
        else if (!variants[v].spills)
            ck_assert_msg(t.spills == 0, "%s: %llu spills", w, (unsigned long long)t.spills);
        ck_assert_msg(t.memory_budget == (variants[v].memory ? variants[v].memory : t.memory_budget), "%s", w);
        assert_same_file(refp, p, w);
        unlink(p);
    }
    unlink(refp);
}

START_TEST(same_bytes_every_codec_threads_budget)
{
    coll c;
    coll_make(&c, 2500, 42);
    for (int k = 0; cls_codec_name((cls_codec)k); k++) {
        cls_build_opts lay;
        cls_build_defaults(&lay);
        lay.codec = (cls_codec)k;
        same_bytes(&c, &lay, cls_codec_name((cls_codec)k), 0);
    }
    static const uint32_t blocks[] = {64, 256, 512};
    for (size_t k = 0; k < 3; k++) {
        cls_build_opts lay;
        cls_build_defaults(&lay);
        lay.block_size = blocks[k];
        char what[64];
        snprintf(what, sizeof what, "bp, block %u", blocks[k]);
        same_bytes(&c, &lay, what, 0);
    }
    coll_free(&c);
}
END_TEST

/* Zero documents, and documents without a term, through a spilling build. */
START_TEST(empty_collections_spill)
{
    coll c = {0};
    cls_build_opts lay;
    cls_build_defaults(&lay);
    const char *a = tu_tmp_path("empty-a");
    char ap[4096];
    snprintf(ap, sizeof ap, "%s", a);
    ck_assert_msg(build(&c, &lay, 1, 0, ap, NULL) == CLS_OK, "%s", cls_last_error());
    const char *b = tu_tmp_path("empty-b");
    ck_assert_msg(build(&c, &lay, 3, 1, b, NULL) == CLS_OK, "%s", cls_last_error());
    assert_same_file(ap, b, "no documents");
    char *docno[] = {"a", "b", "c"}, *text[] = {"", "the of and", ""};
    coll e = {docno, text, 3};
    ck_assert_msg(build(&e, &lay, 1, 0, ap, NULL) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(build(&e, &lay, 2, 1, b, NULL) == CLS_OK, "%s", cls_last_error());
    assert_same_file(ap, b, "stopwords only");
    unlink(ap);
    unlink(b);
}
END_TEST

/* Terms of the longest length a token has (255 bytes: the dictionary's slot cannot tell their
 * lengths apart and reads them) beside shorter ones that share their first bytes: each its own
 * term, found again in every document that holds it, the same bytes through a spilling build. */
START_TEST(longest_terms)
{
    char w[6][300];
    memset(w, 'k', sizeof w);
    w[0][254] = '\0';                                  /* 254 bytes */
    w[1][254] = 'q', w[1][255] = '\0';                 /* 255, the last byte differs */
    w[2][254] = 'x', w[2][255] = '\0';
    w[3][253] = 'q', w[3][254] = 'z', w[3][255] = '\0'; /* 255, the last two differ */
    w[4][256] = '\0';                                  /* 256: cut into 255 and 1 */
    w[5][255] = '\0';                                  /* 255 */
    enum { NDOCS = 1500 };
    char **docno = calloc(NDOCS, sizeof *docno), **text = calloc(NDOCS, sizeof *text);
    ck_assert(docno && text);
    for (int d = 0; d < NDOCS; d++) {
        char id[16], t[2048] = "";
        snprintf(id, sizeof id, "L%d", d);
        for (int k = 0; k < 6; k++)
            if ((d + k) % 3 != 0) snprintf(t + strlen(t), sizeof t - strlen(t), "%s ", w[k]);
        docno[d] = tu_strdup(id);
        text[d] = tu_strdup(t);
    }
    coll c = {docno, text, NDOCS};
    cls_build_opts lay;
    cls_build_defaults(&lay);
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(NULL, &b), CLS_OK);
    for (int d = 0; d < NDOCS; d++)
        ck_assert_int_eq(cls_builder_add(b, docno[d], strlen(docno[d]), text[d], strlen(text[d])), CLS_OK);
    cls_index *idx = tu_builder_open(b, "long");
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_terms, 6); /* the five words and the 1-byte piece of the 256 */
    cls_index_close(idx);
    same_bytes(&c, &lay, "255-byte terms", 1);
    coll_free(&c);
}
END_TEST

/* Entries of dir (0 when it cannot be read). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Every write of a spilling build failing in turn (CLSEARCH_FAULT=write:N): the build either
 * succeeds with the clean bytes or fails with CLS_E_IO naming what it was writing, and leaves
 * neither the index nor any temporary file (spills go to the test's own $TMPDIR here). */
START_TEST(failed_spill_write_leaves_nothing)
{
    coll c;
    coll_make(&c, 600, 7);
    cls_build_opts lay;
    cls_build_defaults(&lay);
    const char *dir = tu_tmp_path("spilldir");
    char dirp[4096], clean[4096], outdir[4096], out[4200];
    snprintf(dirp, sizeof dirp, "%s", dir);
    ck_assert_int_eq(mkdir(dirp, 0777), 0);
    snprintf(outdir, sizeof outdir, "%s", tu_tmp_path("spillout"));
    ck_assert_int_eq(mkdir(outdir, 0777), 0);
    snprintf(out, sizeof out, "%s/x.idx", outdir);
    snprintf(clean, sizeof clean, "%s", tu_tmp_path("spillclean"));
    const char *old_tmp = getenv("TMPDIR");
    char saved[4096] = "";
    if (old_tmp) snprintf(saved, sizeof saved, "%s", old_tmp);
    setenv("TMPDIR", dirp, 1);
    ck_assert_msg(build(&c, &lay, 1, 0, clean, NULL) == CLS_OK, "%s", cls_last_error());
    int spill_failures = 0;
    for (unsigned threads = 1; threads <= 3; threads += 2)
        for (int n = 1; n <= 40; n++) {
            char f[32];
            snprintf(f, sizeof f, "write:%d", n);
            setenv("CLSEARCH_FAULT", f, 1);
            fault_reload();
            cls_status st = build(&c, &lay, threads, 4 << 10, out, NULL);
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", cls_last_error());
            unsetenv("CLSEARCH_FAULT");
            fault_reload();
            if (st == CLS_OK) {
                assert_same_file(clean, out, f);
                unlink(out);
                break; /* past the last write */
            }
            ck_assert_msg(st == CLS_E_IO, "%s, %u threads: status %d: %s", f, threads, (int)st, msg);
            ck_assert_msg(strstr(msg, "No space left"), "%s: '%s'", f, msg);
            spill_failures += strstr(msg, "spilling a run") != NULL;
            ck_assert_msg(!tu_exists(out), "%s: %s exists", f, out);
            ck_assert_msg(entries(outdir) == 0 && entries(dirp) == 0, "%s: a file was left behind", f);
        }
    ck_assert_msg(spill_failures >= 2, "only %d of the failures were spills", spill_failures);
    if (*saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    unlink(clean);
    rmdir(dirp);
    rmdir(outdir);
    coll_free(&c);
}
END_TEST

/* A spill folder that cannot take files: a clear error naming it, nothing written. */
START_TEST(spill_folder_missing)
{
    coll c;
    coll_make(&c, 300, 9);
    cls_build_opts lay;
    cls_build_defaults(&lay);
    const char *old_tmp = getenv("TMPDIR");
    char saved[4096] = "";
    if (old_tmp) snprintf(saved, sizeof saved, "%s", old_tmp);
    setenv("TMPDIR", "/nonexistent-clsearch-spill", 1);
    const char *out = tu_tmp_path("nospill");
    cls_status st = build(&c, &lay, 2, 4 << 10, out, NULL);
    ck_assert_int_eq(st, CLS_E_IO);
    ck_assert_msg(strstr(cls_last_error(), "spilling a run to /nonexistent-clsearch-spill"), "%s", cls_last_error());
    ck_assert(!tu_exists(out));
    if (*saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    coll_free(&c);
}
END_TEST

/* `clsearch index --memory` on a generated JSONL collection: the same bytes as without, -v tells
 * the spills; a budget that is not a number of megabytes is refused. */
START_TEST(command_memory_option)
{
    const char *err;
    char dir[4096], a[4200], b[4200];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("gen"));
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    ck_assert_msg(tu_cli(NULL, NULL, &err, "generate -o %s --docs 3000", dir) == 0, "%s", err);
    snprintf(a, sizeof a, "%s/a.idx", dir);
    snprintf(b, sizeof b, "%s/b.idx", dir);
    ck_assert_msg(tu_cli(NULL, NULL, &err, "index -q -c jsonl --threads 1 -o %s %s/corpus.jsonl", a, dir) == 0, "%s",
                  err);
    for (unsigned threads = 1; threads <= 2; threads++) {
        ck_assert_msg(tu_cli(NULL, NULL, &err, "index -v -c jsonl --threads %u --memory 1 -o %s %s/corpus.jsonl",
                             threads, b, dir) == 0, "%s", err);
        const char *line = strstr(err, "stage sorting runs (overlapping the analysis; budget 1 MB): ");
        unsigned long long runs = 0, spilled = 0;
        ck_assert_msg(line && sscanf(strchr(line, ')') + 3, "%llu runs, %llu spilled", &runs, &spilled) == 2 &&
                      spilled > 1 && runs > spilled, "%s", err);
        ck_assert_msg(strstr(err, "stage merging and encoding"), "%s", err);
        assert_same_file(a, b, "--memory 1");
    }
    ck_assert_int_ne(tu_cli(NULL, NULL, &err, "index -q -c jsonl --memory 0 -o %s %s/corpus.jsonl", b, dir), 0);
    ck_assert_msg(strstr(err, "--memory takes megabytes"), "%s", err);
    ck_assert_int_ne(tu_cli(NULL, NULL, &err, "index -q -c jsonl --memory 1x -o %s %s/corpus.jsonl", b, dir), 0);
    ck_assert_msg(strstr(err, "--memory takes megabytes"), "%s", err);
    unlink(a);
    unlink(b);
    char p[4200];
    snprintf(p, sizeof p, "%s/corpus.jsonl", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/topics.tsv", dir);
    unlink(p);
    rmdir(dir);
}
END_TEST

/* ---- CACM (data part) ------------------------------------------------------------------------ */

static int on_doc(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    coll *c = user;
    c->docno = realloc(c->docno, (c->n + 1) * sizeof *c->docno);
    c->text = realloc(c->text, (c->n + 1) * sizeof *c->text);
    ck_assert(c->docno && c->text);
    c->docno[c->n] = strndup(docno, dl);
    c->text[c->n] = strndup(text, tl);
    ck_assert(c->docno[c->n] && c->text[c->n]);
    c->n++;
    return 0;
}

START_TEST(cacm_same_bytes)
{
    coll c = {0};
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_HTML, tu_data_path("cacm/cacm.tar.gz"), on_doc, &c) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(c.n, 3204);
    cls_build_opts lay;
    cls_build_defaults(&lay);
    same_bytes(&c, &lay, "CACM, bp", 0);
    lay.codec = CLS_CODEC_PFOR;
    lay.block_size = 64;
    same_bytes(&c, &lay, "CACM, pfor, block 64", 0);
    coll_free(&c);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("build");
    TCase *tc = tcase_create("build");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, same_bytes_every_codec_threads_budget);
    tcase_add_test(tc, empty_collections_spill);
    tcase_add_test(tc, longest_terms);
    tcase_add_test(tc, failed_spill_write_leaves_nothing);
    tcase_add_test(tc, spill_folder_missing);
    tcase_add_test(tc, command_memory_option);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("build_data");
    TCase *tc = tcase_create("cacm");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cacm_same_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cacm/cacm.tar.gz", NULL};
    return tu_main(argc, argv, plain_suite, data_suite, needs);
}
