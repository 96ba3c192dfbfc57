/* Generated collections: determinism, file shapes, the query-length and term-frequency models,
 * option checking and failure cleanup; and the same collection generated straight into an index
 * (equal to the text path's index, the scales, thread-count independence, the command). */
#include "clsearch.h"
#include "generate.h"
#include "testutil.h"

#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const STOPWORDS[] = {
    "a",    "an",   "and",   "are",  "as",    "at",    "be",   "but",   "by",
    "for",  "if",   "in",    "into", "is",    "it",    "no",   "not",   "of",
    "on",   "or",   "such",  "that", "the",   "their", "then", "there", "these",
    "they", "this", "to",    "was",  "will",  "with"};

/* Small options so each case runs in milliseconds. */
static void small_opts(gen_opts *o)
{
    gen_defaults(o);
    o->num_docs = 500;
    o->num_queries = 200;
    o->vocab_size = 2000;
    o->mean_doc_len = 40;
}


static char *file_in(const char *dir, const char *name)
{
    static char buf[4][4096];
    static int slot;
    char *p = buf[slot++ & 3];
    int n = snprintf(p, 4096, "%s/%s", dir, name);
    ck_assert(n > 0 && n < 4096);
    return p;
}

/* Entries of dir other than . and ..; -1 if dir is absent. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* Removes the files of a flat folder, then the folder. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            remove(file_in(dir, e->d_name));
    closedir(d);
    rmdir(dir);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void gen_ok(const gen_opts *o, const char *dir)
{
    cls_status st = gen_corpus(o, dir);
    ck_assert_msg(st == CLS_OK, "gen_corpus: %s: %s", cls_status_str(st), cls_last_error());
}

START_TEST(defaults)
{
    gen_opts o;
    memset(&o, 0xff, sizeof o);
    gen_defaults(&o);
    ck_assert_uint_eq(o.seed, 42);
    ck_assert_uint_eq(o.num_docs, 20000);
    ck_assert_uint_eq(o.num_queries, 1000);
    ck_assert_uint_eq(o.vocab_size, 50000);
    ck_assert(o.zipf_s == 1.0);
    ck_assert(o.mean_doc_len == 150.0);
}
END_TEST

START_TEST(deterministic)
{
    gen_opts o;
    small_opts(&o);
    const char *a = tu_tmp_path("gen_a"), *b = tu_tmp_path("gen_b"), *c = tu_tmp_path("gen_c");
    gen_ok(&o, a);
    gen_ok(&o, b);
    o.seed = 43;
    gen_ok(&o, c);
    const char *names[] = {"corpus.jsonl", "topics.tsv"};
    for (int i = 0; i < 2; i++) {
        size_t la, lb, lc;
        char *fa = (char *)tu_read_file(file_in(a, names[i]), &la);
        char *fb = (char *)tu_read_file(file_in(b, names[i]), &lb);
        char *fc = (char *)tu_read_file(file_in(c, names[i]), &lc);
        ck_assert_msg(la > 0, "%s is empty: nothing to compare", names[i]);
        ck_assert_msg(la == lb && memcmp(fa, fb, la) == 0, "%s differs for one seed", names[i]);
        ck_assert_msg(la != lc || memcmp(fa, fc, la) != 0, "%s same for two seeds", names[i]);
        free(fa);
        free(fb);
        free(fc);
    }
    /* Exactly the two outputs: no temporaries left behind. */
    ck_assert_int_eq(count_entries(a), 2);
    remove_dir(a);
    remove_dir(b);
    remove_dir(c);
}
END_TEST

/* Separate PRNG streams: more queries leave the corpus alone, and the first queries stay. */
START_TEST(independent_streams)
{
    gen_opts o;
    small_opts(&o);
    const char *a = tu_tmp_path("gen_a"), *b = tu_tmp_path("gen_b");
    gen_ok(&o, a);
    o.num_queries *= 2;
    gen_ok(&o, b);
    char *ca = (char *)tu_read_file(file_in(a, "corpus.jsonl"), NULL);
    char *cb = (char *)tu_read_file(file_in(b, "corpus.jsonl"), NULL);
    ck_assert_uint_gt(strlen(ca), 0);
    ck_assert_str_eq(ca, cb);
    char *ta = (char *)tu_read_file(file_in(a, "topics.tsv"), NULL);
    char *tb = (char *)tu_read_file(file_in(b, "topics.tsv"), NULL);
    /* a's topics are a proper prefix of b's: as many lines as asked for, b has more */
    ck_assert_uint_eq(count_lines(ta), o.num_queries / 2);
    ck_assert_uint_eq(count_lines(tb), o.num_queries);
    ck_assert(strncmp(ta, tb, strlen(ta)) == 0);
    free(ca);
    free(cb);
    free(ta);
    free(tb);
    remove_dir(a);
    remove_dir(b);
}
END_TEST

static int valid_word(const char *w, size_t n)
{
    if (n < 2 || n > 12) return 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] < 'a' || w[i] > 'z') return 0;
    for (size_t i = 0; i < sizeof STOPWORDS / sizeof STOPWORDS[0]; i++)
        if (strlen(STOPWORDS[i]) == n && memcmp(w, STOPWORDS[i], n) == 0) return 0;
    return 1;
}

/* Checks every word of a space-separated text; returns the number of words. */
static size_t check_words(const char *s, const char *where)
{
    size_t n = 0;
    while (*s) {
        const char *e = strchr(s, ' ');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        ck_assert_msg(valid_word(s, len), "%s: bad word '%.*s'", where, (int)len, s);
        n++;
        s += len;
        if (*s) s++;
    }
    return n;
}

START_TEST(corpus_shape)
{
    gen_opts o;
    small_opts(&o);
    o.num_docs = 2000;
    o.mean_doc_len = 60;
    const char *dir = tu_tmp_path("gen_shape");
    gen_ok(&o, dir);
    char *corpus = (char *)tu_read_file(file_in(dir, "corpus.jsonl"), NULL);
    ck_assert_uint_eq(count_lines(corpus), o.num_docs);
    size_t tokens = 0, min_len = SIZE_MAX, max_len = 0;
    unsigned d = 0;
    char *save_c = NULL;
    for (char *line = strtok_r(corpus, "\n", &save_c); line;
         line = strtok_r(NULL, "\n", &save_c), d++) {
        cJSON *j = cJSON_Parse(line);
        ck_assert_msg(j != NULL, "line %u is not JSON: %.80s", d + 1, line);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *contents = cJSON_GetObjectItemCaseSensitive(j, "contents");
        ck_assert(cJSON_IsString(id) && cJSON_IsString(contents));
        char want[32];
        snprintf(want, sizeof want, "G%08u", d);
        ck_assert_str_eq(id->valuestring, want);
        size_t n = check_words(contents->valuestring, want);
        ck_assert_uint_ge(n, 1);
        ck_assert_uint_le(n, (size_t)(20 * o.mean_doc_len));
        tokens += n;
        if (n < min_len) min_len = n;
        if (n > max_len) max_len = n;
        cJSON_Delete(j);
    }
    ck_assert_uint_eq(d, o.num_docs);
    /* Log-normal with sigma 0.6: mean within 5% (standard error ~1.4%), and a real spread. */
    double mean = (double)tokens / o.num_docs;
    ck_assert_msg(fabs(mean - o.mean_doc_len) < 0.05 * o.mean_doc_len, "mean length %.2f", mean);
    ck_assert_uint_lt(min_len, 25);
    ck_assert_uint_gt(max_len, 150);
    free(corpus);

    char *topics = (char *)tu_read_file(file_in(dir, "topics.tsv"), NULL);
    ck_assert_uint_eq(count_lines(topics), o.num_queries);
    unsigned q = 0;
    char *save = NULL;
    for (char *line = strtok_r(topics, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char want[32];
        snprintf(want, sizeof want, "q%u\t", ++q);
        ck_assert_msg(strncmp(line, want, strlen(want)) == 0, "bad qid in '%s'", line);
        size_t n = check_words(line + strlen(want), want);
        ck_assert(n >= 1 && n <= 8);
    }
    ck_assert_uint_eq(q, o.num_queries);
    free(topics);
    remove_dir(dir);
}
END_TEST

/* Query lengths follow the TREC 2009 Million Query table; terms within a query are distinct. */
START_TEST(query_lengths)
{
    static const double want[8] = {0.1863, 0.3684, 0.2699, 0.1161, 0.0398, 0.0130, 0.0037, 0.0027};
    gen_opts o;
    small_opts(&o);
    o.num_docs = 1;
    o.num_queries = 5000;
    const char *dir = tu_tmp_path("gen_qlen");
    gen_ok(&o, dir);
    char *topics = (char *)tu_read_file(file_in(dir, "topics.tsv"), NULL);
    unsigned hist[9] = {0}, total = 0;
    char *save = NULL;
    for (char *line = strtok_r(topics, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *text = strchr(line, '\t');
        ck_assert(text != NULL);
        text++;
        char *terms[9];
        unsigned n = 0;
        char *s2 = NULL;
        for (char *t = strtok_r(text, " ", &s2); t; t = strtok_r(NULL, " ", &s2)) {
            ck_assert_uint_lt(n, 8);
            for (unsigned j = 0; j < n; j++)
                ck_assert_msg(strcmp(terms[j], t) != 0, "repeated term %s", t);
            terms[n++] = t;
        }
        ck_assert(n >= 1 && n <= 8);
        hist[n]++;
        total++;
    }
    ck_assert_uint_eq(total, 5000);
    for (int i = 0; i < 8; i++) {
        double got = (double)hist[i + 1] / total;
        /* Binomial standard error is at most 0.7 points at n = 5000: 3 points is > 4 sigma. */
        ck_assert_msg(fabs(got - want[i]) < 0.03, "%d-term queries: %.4f, want %.4f", i + 1, got,
                      want[i]);
    }
    free(topics);
    remove_dir(dir);
}
END_TEST

/* Term frequencies are Zipf: with s = 1 the top word takes 1/H(V) of the tokens, and the
 * frequency of rank r falls like 1/r. */
START_TEST(zipf_frequencies)
{
    gen_opts o;
    small_opts(&o);
    o.num_docs = 1000;
    o.vocab_size = 1000;
    o.mean_doc_len = 100;
    o.num_queries = 0;
    const char *dir = tu_tmp_path("gen_zipf");
    gen_ok(&o, dir);
    char *corpus = (char *)tu_read_file(file_in(dir, "corpus.jsonl"), NULL);
    /* Count words with a tiny table keyed by the word text. */
    enum { CAP = 4096 };
    static char keys[CAP][16];
    static unsigned counts[CAP];
    memset(keys, 0, sizeof keys);
    memset(counts, 0, sizeof counts);
    size_t tokens = 0, distinct = 0;
    char *save = NULL;
    for (char *line = strtok_r(corpus, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *c = strstr(line, "\"contents\": \"");
        ck_assert(c != NULL);
        c += strlen("\"contents\": \"");
        char *end = strrchr(c, '"');
        ck_assert(end != NULL);
        *end = '\0';
        char *s2 = NULL;
        for (char *t = strtok_r(c, " ", &s2); t; t = strtok_r(NULL, " ", &s2)) {
            uint64_t h = 1469598103934665603ULL;
            for (const char *p = t; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ULL;
            size_t i = h & (CAP - 1);
            while (keys[i][0] && strcmp(keys[i], t) != 0) i = (i + 1) & (CAP - 1);
            if (!keys[i][0]) {
                snprintf(keys[i], sizeof keys[i], "%s", t);
                distinct++;
            }
            counts[i]++;
            tokens++;
        }
    }
    ck_assert_uint_le(distinct, o.vocab_size);
    ck_assert_uint_gt(distinct, o.vocab_size * 9 / 10);
    /* Sort the counts descending. */
    unsigned sorted[CAP];
    size_t n = 0;
    for (size_t i = 0; i < CAP; i++)
        if (keys[i][0]) sorted[n++] = counts[i];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && sorted[j - 1] < sorted[j]; j--) {
            unsigned t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    double h = 0;
    for (unsigned r = 1; r <= o.vocab_size; r++) h += 1.0 / r;
    double top = (double)sorted[0] / tokens;
    ck_assert_msg(fabs(top - 1.0 / h) < 0.1 / h, "top word share %.4f, want %.4f", top, 1.0 / h);
    double r10 = (double)sorted[0] / sorted[9];
    ck_assert_msg(r10 > 7 && r10 < 13, "rank 1 / rank 10 frequency ratio %.2f, want ~10", r10);
    free(corpus);
    remove_dir(dir);
}
END_TEST

START_TEST(zero_queries_and_creates_parents)
{
    gen_opts o;
    small_opts(&o);
    o.num_queries = 0;
    const char *base = tu_tmp_path("gen_parent");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/sub", base);
    gen_ok(&o, dir);
    size_t len;
    char *topics = (char *)tu_read_file(file_in(dir, "topics.tsv"), &len);
    ck_assert_uint_eq(len, 0);
    free(topics);
    ck_assert_int_eq(count_entries(dir), 2);
    /* Regenerating over existing outputs replaces them. */
    gen_ok(&o, dir);
    ck_assert_int_eq(count_entries(dir), 2);
    remove_dir(dir);
    rmdir(base);
}
END_TEST

START_TEST(invalid_options)
{
    const char *dir = tu_tmp_path("gen_bad");
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    const char *absent = tu_tmp_path("gen_absent");
    for (int i = 0; i < 8; i++) {
        gen_opts o;
        small_opts(&o);
        switch (i) {
        case 0: o.num_docs = 0; break;
        case 1: o.vocab_size = 99; break;
        case 2: o.zipf_s = 0.0; break;
        case 3: o.zipf_s = -1.0; break;
        case 4: o.zipf_s = NAN; break;
        case 5: o.mean_doc_len = 0.5; break;
        case 6: o.mean_doc_len = NAN; break;
        case 7: o.vocab_size = 0; break;
        }
        cls_status st = gen_corpus(&o, dir);
        ck_assert_msg(st == CLS_E_ARG, "case %d: %s", i, cls_status_str(st));
        ck_assert_msg(cls_last_error()[0] != '\0', "case %d: no detail", i);
        ck_assert_int_eq(count_entries(dir), 0);
        ck_assert_int_eq(gen_corpus(&o, absent), CLS_E_ARG);
        ck_assert_int_eq(count_entries(absent), -1); /* not even created */
    }
    gen_opts o;
    small_opts(&o);
    ck_assert_int_eq(gen_corpus(NULL, dir), CLS_E_ARG);
    ck_assert_int_eq(gen_corpus(&o, NULL), CLS_E_ARG);
    ck_assert_int_eq(gen_corpus(&o, ""), CLS_E_ARG);
    /* The smallest valid vocabulary works. */
    o.vocab_size = 100;
    gen_ok(&o, dir);
    remove_dir(dir);
}
END_TEST

START_TEST(unwritable)
{
    gen_opts o;
    small_opts(&o);
    /* A folder below a regular file cannot be created, even by root. */
    const char *file = tu_tmp_path("gen_file");
    tu_write_file(file, "x", 1);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/sub", file);
    cls_status st = gen_corpus(&o, dir);
    ck_assert_msg(st == CLS_E_IO, "%s", cls_status_str(st));
    ck_assert_msg(strstr(cls_last_error(), file) != NULL, "detail lacks the path: %s",
                  cls_last_error());
    /* The folder is an existing regular file. */
    ck_assert_int_eq(gen_corpus(&o, file), CLS_E_IO);
    remove(file);

    /* A read-only folder (permissions do not bind root, so only checked for others). */
    if (geteuid() != 0) {
        const char *ro = tu_tmp_path("gen_ro");
        ck_assert_int_eq(mkdir(ro, 0555), 0);
        st = gen_corpus(&o, ro);
        ck_assert_msg(st == CLS_E_IO, "%s", cls_status_str(st));
        ck_assert_ptr_nonnull(strstr(cls_last_error(), ro));
        ck_assert_int_eq(count_entries(ro), 0);
        rmdir(ro);
    }
}
END_TEST

/* A write that fails half-way (here: the file-size limit, EFBIG) leaves no temporary behind. */
START_TEST(write_failure_cleans_up)
{
    gen_opts o;
    small_opts(&o);
    o.num_docs = 5000; /* ~1.5 MB of corpus */
    const char *dir = tu_tmp_path("gen_efbig");
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    cls_status st = gen_corpus(&o, dir);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    ck_assert_msg(st == CLS_E_IO, "%s: %s", cls_status_str(st), cls_last_error());
    ck_assert_msg(strstr(cls_last_error(), dir) != NULL, "detail lacks the path: %s",
                  cls_last_error());
    ck_assert_int_eq(count_entries(dir), 0);
    rmdir(dir);
}
END_TEST

/* ---- Straight into an index (gen_index) ---------------------------------------------- */

static void gen_index_ok(const gen_opts *o, const cls_build_opts *b, const char *idx, const char *topics,
                         gen_index_info *info)
{
    cls_status st = gen_index_ex(o, b, idx, topics, NULL, NULL, info);
    ck_assert_msg(st == CLS_OK, "gen_index: %s: %s", cls_status_str(st), cls_last_error());
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *fa = tu_read_file(a, &la), *fb = tu_read_file(b, &lb);
    ck_assert_msg(la > 0, "%s is empty: the comparison would prove nothing", a);
    int same = la == lb && memcmp(fa, fb, la) == 0;
    free(fa);
    free(fb);
    return same;
}

static int add_to_builder(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    return cls_builder_add(user, docno, dl, text, tl) != CLS_OK;
}

/* The text path: gen_corpus's corpus.jsonl through the builder (default analyzer) into idx. */
static void text_index(const gen_opts *o, const cls_build_opts *b, const char *dir, const char *idx)
{
    gen_ok(o, dir);
    cls_builder *bl;
    ck_assert_int_eq(cls_builder_create(NULL, &bl), CLS_OK);
    ck_assert_int_eq(cls_builder_configure(bl, b), CLS_OK);
    cls_status st = cls_corpus_read(CLS_CORPUS_JSONL, file_in(dir, "corpus.jsonl"), add_to_builder, bl);
    ck_assert_msg(st == CLS_OK, "reading the corpus: %s", cls_last_error());
    ck_assert_msg(cls_builder_write(bl, idx) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(bl);
}

/* The models are the same draw for draw (gen.h), and the generated words pass the analyzer
 * unchanged, so the direct index equals the text path's byte for byte, topics included. Three
 * configurations: a small one, one with long documents over a tiny vocabulary (frequencies past
 * the 31 that a posting holds inline: the escape table), and another codec and block size. */
START_TEST(index_equals_text_path)
{
    for (int c = 0; c < 3; c++) {
        gen_opts o;
        small_opts(&o);
        cls_build_opts b;
        cls_build_defaults(&b);
        if (c == 1) {
            o.num_docs = 300;
            o.vocab_size = 100;
            o.mean_doc_len = 2000;
        } else if (c == 2) {
            o.seed = 7;
            o.num_docs = 1500;
            b.codec = CLS_CODEC_OPTPFD;
            b.block_size = 64;
        }
        b.threads = 1;
        const char *dir = tu_tmp_path("gen_eq"), *ti = tu_tmp_path("gen_eq_text.idx");
        const char *di = tu_tmp_path("gen_eq_direct.idx"), *dt = tu_tmp_path("gen_eq_direct.tsv");
        text_index(&o, &b, dir, ti);
        b.threads = 3;
        gen_index_ok(&o, &b, di, dt, NULL);
        ck_assert_msg(same_file(ti, di), "config %d: the direct index differs from the text path's", c);
        ck_assert_msg(same_file(file_in(dir, "topics.tsv"), dt), "config %d: topics differ", c);
        remove(ti);
        remove(di);
        remove(dt);
        remove_dir(dir);
    }
}
END_TEST

/* Expected distinct terms of a document under the model: sum over ranks of 1 - (1 - p_r)^len,
 * averaged over the log-normal lengths (rounded, clamped as the generator does) by quadrature. */
static double expected_distinct(const gen_opts *o)
{
    uint32_t V = o->vocab_size;
    double *p = malloc(V * sizeof *p), H = 0;
    ck_assert_ptr_nonnull(p);
    for (uint32_t r = 0; r < V; r++) H += p[r] = pow(r + 1.0, -o->zipf_s);
    for (uint32_t r = 0; r < V; r++) p[r] = log1p(-p[r] / H);
    double sig = 0.6, mu = log(o->mean_doc_len) - sig * sig / 2, max_len = floor(20.0 * o->mean_doc_len);
    double sum = 0, wsum = 0;
    for (int i = 0; i <= 160; i++) {
        double z = -8.0 + 0.1 * i, w = exp(-z * z / 2);
        double len = floor(exp(mu + sig * z) + 0.5);
        len = len < 1 ? 1 : len > max_len ? max_len : len;
        double d = 0;
        for (uint32_t r = 0; r < V; r++) d += -expm1(len * p[r]);
        sum += w * d;
        wsum += w;
    }
    free(p);
    return sum / wsum;
}

/* The small scale: the index opens (and so verifies), its counts are the model's, the file is the
 * same for 1 and 3 threads, and the topics' terms are the index's. */
START_TEST(index_small_scale)
{
    gen_opts o;
    ck_assert_int_eq(gen_scale("small", &o), CLS_OK);
    cls_build_opts b;
    cls_build_defaults(&b);
    const char *a = tu_tmp_path("gen_small1.idx"), *c = tu_tmp_path("gen_small3.idx");
    const char *ta = tu_tmp_path("gen_small1.tsv"), *tc = tu_tmp_path("gen_small3.tsv");
    gen_index_info ia, ic;
    b.threads = 1;
    gen_index_ok(&o, &b, a, ta, &ia);
    b.threads = 3;
    gen_index_ok(&o, &b, c, tc, &ic);
    ck_assert_uint_eq(ia.threads, 1);
    ck_assert_uint_eq(ic.threads, 3);
    ck_assert_msg(same_file(a, c), "the index differs between 1 and 3 threads");
    ck_assert_msg(same_file(ta, tc), "the topics differ between 1 and 3 threads");

    cls_index *idx;
    ck_assert_msg(cls_index_open(a, &idx) == CLS_OK, "%s", cls_last_error());
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_docs, o.num_docs);
    ck_assert_uint_eq(st.num_docs, ia.num_docs);
    ck_assert_uint_eq(st.num_terms, ia.num_terms);
    ck_assert_uint_eq(st.num_postings, ia.num_postings);
    ck_assert_uint_eq(st.num_tokens, ia.num_tokens);
    ck_assert_str_eq(cls_index_docno(idx, 0), "G00000000");
    ck_assert_str_eq(cls_index_docno(idx, o.num_docs - 1), "G00019999");
    /* Lengths: mean within 2% (standard error ~0.5%); postings: the model's expectation within
     * 1.5% (standard error ~0.4%); nearly every word of the vocabulary occurs. */
    double mean_len = (double)st.num_tokens / st.num_docs;
    ck_assert_msg(fabs(mean_len - o.mean_doc_len) < 0.02 * o.mean_doc_len, "mean length %.2f", mean_len);
    double want = expected_distinct(&o), got = (double)st.num_postings / st.num_docs;
    ck_assert_msg(fabs(got - want) < 0.015 * want, "distinct terms a document %.2f, the model says %.2f", got, want);
    ck_assert_uint_le(st.num_terms, o.vocab_size);
    ck_assert_uint_gt(st.num_terms, o.vocab_size * 99 / 100);

    /* Every query has 1..8 terms, and (nearly) all of them are in the index. */
    cls_batch *bt;
    ck_assert_int_eq(cls_batch_create(idx, &bt), CLS_OK);
    char *topics = (char *)tu_read_file(ta, NULL);
    size_t words = 0, known = 0, queries = 0;
    char *save = NULL;
    for (char *line = strtok_r(topics, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        ck_assert_ptr_nonnull(tab);
        *tab = '\0';
        size_t n = 1;
        for (const char *q = tab + 1; *q; q++) n += *q == ' ';
        ck_assert(n >= 1 && n <= 8);
        ck_assert_int_eq(cls_batch_add(bt, line, tab + 1), CLS_OK);
        known += cls_batch_terms(bt, queries++);
        words += n;
    }
    ck_assert_uint_eq(queries, o.num_queries);
    ck_assert_msg(known * 1000 >= words * 999, "%zu of %zu query terms are in the index", known, words);
    free(topics);
    cls_batch_free(bt);
    cls_index_close(idx);
    remove(a);
    remove(c);
    remove(ta);
    remove(tc);
}
END_TEST

START_TEST(index_scales)
{
    gen_opts o, d;
    gen_defaults(&d);
    ck_assert_int_eq(gen_scale("small", &o), CLS_OK);
    ck_assert(o.seed == d.seed && o.num_docs == d.num_docs && o.num_queries == d.num_queries &&
              o.vocab_size == d.vocab_size && o.zipf_s == d.zipf_s && o.mean_doc_len == d.mean_doc_len);
    ck_assert_int_eq(gen_scale("medium", &o), CLS_OK);
    ck_assert_uint_eq(o.num_docs, 2000000);
    ck_assert_uint_eq(o.vocab_size, 4000000);
    ck_assert(o.mean_doc_len == 301.0);
    ck_assert_int_eq(gen_scale("gov2", &o), CLS_OK);
    ck_assert_uint_eq(o.num_docs, 25205179);
    ck_assert_uint_eq(o.vocab_size, 4000000);
    ck_assert(o.mean_doc_len == 301.0);
    ck_assert_int_eq(gen_scale("large", &o), CLS_E_ARG);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "gov2"));
    ck_assert_int_eq(gen_scale(NULL, &o), CLS_E_ARG);
}
END_TEST

/* Progress comes from the calling thread in phase order, counts never above their totals. */
typedef struct prog_log {
    int calls, writing;
    char last[32];
    int bad;
} prog_log;

static void on_prog(void *user, const char *phase, uint64_t done, uint64_t total)
{
    prog_log *l = user;
    l->calls++;
    if (total && done > total) l->bad = 1;
    if (strcmp(phase, "writing") == 0) l->writing = 1;
    snprintf(l->last, sizeof l->last, "%s", phase);
}

START_TEST(index_progress_and_threads)
{
    gen_opts o;
    small_opts(&o);
    cls_build_opts b;
    cls_build_defaults(&b);
    const char *x = tu_tmp_path("gen_prog.idx"), *y = tu_tmp_path("gen_prog7.idx");
    prog_log l = {0, 0, "", 0};
    gen_index_info info;
    ck_assert_int_eq(gen_index_ex(&o, &b, x, NULL, on_prog, &l, &info), CLS_OK);
    ck_assert_int_gt(l.calls, 5);
    ck_assert(l.writing && !l.bad);
    ck_assert_str_eq(l.last, "writing"); /* no topics asked for */
    /* More threads than ranges of documents: each still gets whole ranges, the file the same. */
    b.threads = 7;
    ck_assert_int_eq(gen_index(&o, &b, y, NULL), CLS_OK);
    ck_assert(same_file(x, y));
    remove(x);
    remove(y);
}
END_TEST

START_TEST(index_invalid)
{
    gen_opts o;
    small_opts(&o);
    cls_build_opts b;
    cls_build_defaults(&b);
    const char *dir = tu_tmp_path("gen_ibad");
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    const char *x = file_in(dir, "x.idx");
    ck_assert_int_eq(gen_index(NULL, &b, x, NULL), CLS_E_ARG);
    ck_assert_int_eq(gen_index(&o, NULL, x, NULL), CLS_E_ARG);
    ck_assert_int_eq(gen_index(&o, &b, NULL, NULL), CLS_E_ARG);
    ck_assert_int_eq(gen_index(&o, &b, "", NULL), CLS_E_ARG);
    ck_assert_int_eq(gen_index(&o, &b, x, x), CLS_E_ARG);
    o.num_docs = 0;
    ck_assert_int_eq(gen_index(&o, &b, x, NULL), CLS_E_ARG);
    small_opts(&o);
    o.vocab_size = 99;
    ck_assert_int_eq(gen_index(&o, &b, x, NULL), CLS_E_ARG);
    small_opts(&o);
    b.block_size = 100;
    ck_assert_int_eq(gen_index(&o, &b, x, NULL), CLS_E_ARG);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "block size"));
    cls_build_defaults(&b);
    b.codec = (cls_codec)99;
    ck_assert_int_eq(gen_index(&o, &b, x, NULL), CLS_E_ARG);
    cls_build_defaults(&b);
    ck_assert_int_eq(count_entries(dir), 0);
    /* Unwritable: an index below a regular file; the topics folder absent. Both are found before
     * any work, and nothing is written. */
    const char *file = file_in(dir, "plain");
    tu_write_file(file, "x", 1);
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/sub/x.idx", file);
    cls_status st = gen_index(&o, &b, bad, NULL);
    ck_assert_msg(st == CLS_E_IO, "%s", cls_status_str(st));
    snprintf(bad, sizeof bad, "%s/absent/t.tsv", dir);
    st = gen_index(&o, &b, x, bad);
    ck_assert_msg(st == CLS_E_IO, "%s: %s", cls_status_str(st), cls_last_error());
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "absent"));
    remove(file);
    ck_assert_int_eq(count_entries(dir), 0);
    rmdir(dir);
}
END_TEST

/* The command: --index with a scale, the totals line, stats on the result; bad usage exits 2. */
START_TEST(index_cli)
{
    char dir[4096], x[4200], t[4200], out[4200], badp[4200];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("gen_cli"));
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    snprintf(x, sizeof x, "%s/x.idx", dir);
    snprintf(t, sizeof t, "%s/t.tsv", dir);
    snprintf(out, sizeof out, "%s/stats.txt", dir);
    snprintf(badp, sizeof badp, "%s/bad", dir);
    char args[16384];
    const char *err;
    snprintf(args, sizeof args, "generate --index '%s' --topics '%s' --scale small --docs 3000 --queries 50 "
             "--threads 2 --codec pfor --block 256", x, t);
    int rc = tu_run_cli(args, &err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_msg(strstr(err, "3000 documents") && strstr(err, "postings"), "no totals: %s", err);
    char *topics = (char *)tu_read_file(t, NULL);
    ck_assert_uint_eq(count_lines(topics), 50);
    free(topics);
    snprintf(args, sizeof args, "stats '%s'", x);
    ck_assert_int_eq(tu_run_cli_to(args, out, &err), 0);
    char *stats = (char *)tu_read_file(out, NULL);
    ck_assert_msg(strstr(stats, "documents        3000") && strstr(stats, "pfor (block size 256"), "%s", stats);
    free(stats);
    remove(out);
    /* -q: nothing on stderr */
    snprintf(args, sizeof args, "generate --index '%s' --docs 300 -q", x);
    ck_assert_int_eq(tu_run_cli(args, &err), 0);
    ck_assert_str_eq(err, "");
    static const struct { const char *args, *msg; int rc; } bad[] = {
        {"generate --index '%s' --scale huge", "unknown --scale", 2},
        {"generate --index '%s' --threads 0", "--threads", 2},
        {"generate --index '%s' --codec zip", "codec", 2},
        {"generate --index '%s' --block 100 --docs 10", "block size 100", 1},
        {"generate --index '%s' -o somewhere", "not both", 2},
        {"generate --threads 2 -o '%s'", "go with --index", 2},
        {"generate --topics t.tsv -o '%s'", "go with --index", 2},
        {"generate --index '%s' extra", "unexpected argument", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i].args, badp);
        rc = tu_run_cli(args, &err);
        ck_assert_msg(rc == bad[i].rc && strstr(err, bad[i].msg), "%s: rc %d: %s", args, rc, err);
    }
    rc = tu_run_cli("generate", &err);
    ck_assert_msg(rc == 2 && strstr(err, "--index"), "rc %d: %s", rc, err);
    remove(x);
    remove(t);
    ck_assert_int_eq(count_entries(dir), 0);
    rmdir(dir);
}
END_TEST

static Suite *generate_suite(void)
{
    Suite *s = suite_create("generate");
    TCase *tc = tcase_create("generate");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, independent_streams);
    tcase_add_test(tc, corpus_shape);
    tcase_add_test(tc, query_lengths);
    tcase_add_test(tc, zipf_frequencies);
    tcase_add_test(tc, zero_queries_and_creates_parents);
    tcase_add_test(tc, invalid_options);
    tcase_add_test(tc, unwritable);
    tcase_add_test(tc, write_failure_cleans_up);
    tcase_add_test(tc, index_equals_text_path);
    tcase_add_test(tc, index_small_scale);
    tcase_add_test(tc, index_scales);
    tcase_add_test(tc, index_progress_and_threads);
    tcase_add_test(tc, index_invalid);
    tcase_add_test(tc, index_cli);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(generate_suite()); }
