/*
 * Generated collections: the project's own synthetic corpus and topics, reproducible from a seed.
 *
 * The model, and why each piece is there:
 *
 *  - Vocabulary. vocab_size distinct pronounceable lowercase words, each 1..5 consonant+vowel
 *    syllables followed by one final consonant (3..11 letters). The final consonant comes from
 *    "bdgkmnptvz" and "ed" is never an ending: with no final s, y, e, l, r or c and no vowel pairs or
 *    consonant clusters, none of Porter's suffix rules (-s, -ed, -ing, -y, -er, -al, -ic, -ize,
 *    -ator, -ion, -ent, final -e, ...) can fire, so the stemmer leaves every word as it is and
 *    distinct words stay distinct terms. Lucene's 33 English stopwords are excluded (only "but"
 *    and "not" fit the pattern, the check covers all 33). Word length grows with frequency rank
 *    (Zipf's law of abbreviation: frequent words are short), so byte sizes look like text.
 *  - Term frequencies. Token ranks follow a Zipf law, P(rank r) ~ r^-zipf_s over the vocabulary.
 *    Each token is drawn by binary search in a precomputed CDF: O(log V), no rejection loops.
 *  - Document lengths. Log-normal with the requested mean and sigma 0.6 (mu = ln(mean) - sigma^2/2
 *    keeps the mean), rounded, at least 1 token and at most 20x the mean so one outlier cannot
 *    blow up the file.
 *  - Queries. The number of terms comes from the TREC 2009 Million Query distribution (table
 *    below). Terms are Zipf-sampled like document tokens, but most draws skip the top 0.1% of
 *    ranks, which in real logs are function-word-like and rare in queries; terms within a query
 *    are distinct.
 *
 * Determinism: one xoshiro256** generator (seeded through splitmix64) per purpose: vocabulary,
 * documents, queries. Changing num_queries therefore leaves corpus.jsonl unchanged and changing
 * num_docs leaves topics.tsv unchanged. Output is byte-identical for a seed on a given platform;
 * the log-normal and Zipf tables use libm (exp, log, pow), whose last-bit rounding may differ
 * between C libraries.
 *
 * Output: dir/corpus.jsonl ({"id": "G00000000", "contents": "..."} per line) and dir/topics.tsv
 * (q1<TAB>text ...). Documents are streamed (one document buffer, reused); each file goes to a
 * temporary name in dir and is renamed only when complete, so a reader never sees a partial file
 * and a failure leaves nothing behind. (No fsync: this guards against errors, not power loss.)
 *
 * generate_index.c draws the very same documents straight into an index (no text, all cores);
 * what both need of the model is in gen.h, so the two cannot drift apart (test_generate checks
 * that the two indexes are byte-identical).
 */
#include "generate.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/tmpfile.h"
#include "gen.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GEN_MAX_MEAN_LEN 100000.0
#define GEN_MAX_QUERIES 100000000u
#define GEN_QUERY_MAX 8
#define GEN_TAIL_PROB 0.8    /* share of query-term draws that skip the top ranks */
#define GEN_IOBUF (1u << 20) /* stdio buffer per output file */

/* The limits, the PRNG, the length law and cdf_search are in gen.h, shared with
 * generate_index.c (the same documents, generated straight into an index). */

/* ---- Vocabulary ------------------------------------------------------------------------ */

static const char ONSETS[] = "bdfghjklmnprstvwz"; /* no c, q, x, y: no digraph or y rules */
static const char VOWELS[] = "aeiou";
static const char FINALS[] = "bdgkmnptvz"; /* no s, y, e, l, r, c: see the header comment */

/* Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET. */
static const char *const STOPWORDS[] = {
    "a",    "an",   "and",   "are",  "as",    "at",   "be",   "but",   "by",
    "for",  "if",   "in",    "into", "is",    "it",   "no",   "not",   "of",
    "on",   "or",   "such",  "that", "the",   "their", "then", "there", "these",
    "they", "this", "to",    "was",  "will",  "with"};

static int is_stopword(const char *w)
{
    for (size_t i = 0; i < sizeof STOPWORDS / sizeof STOPWORDS[0]; i++)
        if (strcmp(w, STOPWORDS[i]) == 0) return 1;
    return 0;
}

/* A word packed into 5 bits per letter (a=1 .. z=26; 11 letters fit in 55 bits): a unique,
 * nonzero key for the duplicate set. */
static uint64_t word_key(const char *w, size_t n)
{
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) k = (k << 5) | (uint64_t)(w[i] - 'a' + 1);
    return k;
}

static uint64_t key_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* Inserts key into the open-addressing set; returns 0 if it was already there. */
static int set_insert(uint64_t *set, uint64_t mask, uint64_t key)
{
    for (uint64_t h = key_hash(key) & mask;; h = (h + 1) & mask) {
        if (set[h] == key) return 0;
        if (set[h] == 0) {
            set[h] = key;
            return 1;
        }
    }
}

/* Writes a random word of syl syllables into w (NUL-terminated) and returns its length. */
static size_t make_word(gen_rng *r, int syl, char *w)
{
    size_t n = 0;
    for (int i = 0; i < syl; i++) {
        w[n++] = ONSETS[rng_below(r, sizeof ONSETS - 1)];
        w[n++] = VOWELS[rng_below(r, sizeof VOWELS - 1)];
    }
    do { /* "-ed" would be stripped by Porter's step 1b */
        w[n] = FINALS[rng_below(r, sizeof FINALS - 1)];
    } while (w[n] == 'd' && w[n - 1] == 'e');
    w[++n] = '\0';
    return n;
}

/* Fills words (vocab_size x GEN_WORD_STRIDE) and lens; word i has frequency rank i. */
static cls_status make_vocab(uint64_t seed, uint32_t vocab, char *words, uint8_t *lens)
{
    uint64_t cap = 1;
    while (cap < 2 * (uint64_t)vocab) cap <<= 1;
    uint64_t *set = calloc(cap, sizeof *set);
    if (!set) return err_set(CLS_E_NOMEM, "generate: vocabulary set of %u words", vocab);
    gen_rng r;
    rng_seed(&r, seed, 1);
    /* The syllable space (17*5 per syllable, 10 finals, minus "-ed") has about 830 one-syllable
     * words, 70k of two, 6M of three, ... so a short class fills up; after a few duplicates the word grows by a
     * syllable. The total bound below can only be hit by a broken generator. */
    uint64_t budget = 64 * (uint64_t)vocab + 1000000;
    for (uint32_t i = 0; i < vocab; i++) {
        /* Mean syllables rise with log rank: rank 1 ~1.6 (3-5 letters), rank 10^4 ~3.5. */
        double mean = 1.5 + 0.5 * log10((double)i + 1.0);
        int syl = (int)floor(mean + 2.0 * rng_unit(&r) - 0.5);
        if (syl < 1) syl = 1;
        if (syl > 5) syl = 5;
        char *w = words + (size_t)i * GEN_WORD_STRIDE;
        for (int tries = 0;; tries++) {
            if (budget-- == 0) {
                free(set);
                return err_set(CLS_E_ARG, "generate: could not draw %u distinct words", vocab);
            }
            if (tries > 0 && tries % 8 == 0 && syl < 5) syl++;
            size_t n = make_word(&r, syl, w);
            if (is_stopword(w)) continue;
            if (!set_insert(set, cap - 1, word_key(w, n))) continue;
            lens[i] = (uint8_t)n;
            break;
        }
    }
    free(set);
    return CLS_OK;
}

/* ---- Zipf sampling ------------------------------------------------------------------------ */

/* cdf[i] = P(rank <= i); the last entry is exactly 1. */
static void make_cdf(double *cdf, uint32_t n, double s)
{
    double sum = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        sum += pow((double)i + 1.0, -s);
        cdf[i] = sum;
    }
    for (uint32_t i = 0; i < n; i++) cdf[i] /= sum;
    cdf[n - 1] = 1.0;
}

/* ---- Query lengths ---------------------------------------------------------------------- */

/* Share of queries with 1..8 whitespace-separated words (longer ones clamped to 8), measured on
 * the TREC 2009 Million Query track query log. Embedded here; the log itself is never read. */
static const double QUERY_LEN_DIST[GEN_QUERY_MAX] = {0.1863, 0.3684, 0.2699, 0.1161,
                                                     0.0398, 0.0130, 0.0037, 0.0027};

static int query_len(gen_rng *r)
{
    double total = 0.0;
    for (int i = 0; i < GEN_QUERY_MAX; i++) total += QUERY_LEN_DIST[i];
    double u = rng_unit(r) * total, acc = 0.0; /* the table sums to 0.9999: scale, not clip */
    for (int i = 0; i < GEN_QUERY_MAX - 1; i++) {
        acc += QUERY_LEN_DIST[i];
        if (u < acc) return i + 1;
    }
    return GEN_QUERY_MAX;
}

/* ---- Files ------------------------------------------------------------------------------ */

/* An output file written under a temporary name in the target folder. */
typedef struct gen_out {
    char *tmp; /* the temporary file on disk (util/tmpfile.h), NULL when none */
    char final[4096];
    FILE *f;
} gen_out;

/* mkdir -p: creates dir and its missing parents. */
static cls_status make_dirs(const char *dir)
{
    char p[4096];
    size_t n = strlen(dir);
    if (n >= sizeof p) return err_set(CLS_E_ARG, "generate: path too long: %s", dir);
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return err_set(CLS_E_IO, "generate: create folder %s: %s", p, strerror(errno));
        p[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return err_set(CLS_E_IO, "generate: %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return err_set(CLS_E_IO, "generate: %s: %s", dir, strerror(ENOTDIR));
    return CLS_OK;
}

/* Opens a fresh temporary file beside dir/name: tmp_create's, so the final file gets the usual
 * umask-derived mode rather than mkstemp's 0600, and SIGINT, SIGTERM, SIGHUP or an exit before
 * out_commit removes it. */
static cls_status out_open(gen_out *o, const char *dir, const char *name, char *buf)
{
    memset(o, 0, sizeof *o);
    if ((size_t)snprintf(o->final, sizeof o->final, "%s/%s", dir, name) >= sizeof o->final)
        return err_set(CLS_E_ARG, "generate: path too long: %s/%s", dir, name);
    int fd = tmp_create(o->final, &o->tmp);
    if (fd < 0) return err_set(CLS_E_IO, "generate: create a temporary file beside %s: %s", o->final, strerror(errno));
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        tmp_discard(o->tmp);
        o->tmp = NULL;
        return err_set(CLS_E_IO, "generate: open a temporary file beside %s: %s", o->final, strerror(e));
    }
    setvbuf(o->f, buf, _IOFBF, GEN_IOBUF);
    return CLS_OK;
}

/* Flushes and closes the temporary; it stays on disk until out_commit or out_discard. Every
 * write's error surfaces here (ferror), a full disk included. */
static cls_status out_close(gen_out *o)
{
    int bad = ferror(o->f);
    int e = errno;
    if (fault_hit(FAULT_WRITE)) bad = 1, e = ENOSPC; /* CLSEARCH_FAULT's write faults: a full disk */
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (bad) return err_set(CLS_E_IO, "generate: writing %s: %s", o->final, strerror(e ? e : EIO));
    return CLS_OK;
}

static cls_status out_commit(gen_out *o)
{
    if (rename(o->tmp, o->final) != 0)
        return err_set(CLS_E_IO, "generate: rename %s to %s: %s", o->tmp, o->final,
                       strerror(errno));
    tmp_release(o->tmp);
    o->tmp = NULL;
    return CLS_OK;
}

static void out_discard(gen_out *o)
{
    if (o->f) fclose(o->f);
    o->f = NULL;
    tmp_discard(o->tmp);
    o->tmp = NULL;
}

/* ---- Writers ------------------------------------------------------------------------------ */

typedef struct gen_ctx {
    const gen_opts *o;
    const char *words; /* vocab_size x GEN_WORD_STRIDE, rank order */
    const uint8_t *lens;
    const double *cdf;
} gen_ctx;

static cls_status write_corpus(const gen_ctx *g, gen_out *out)
{
    const gen_opts *o = g->o;
    gen_len lm;
    gen_len_init(&lm, o->mean_doc_len);
    uint32_t max_len = lm.max_len;
    /* One line buffer for the longest possible document, reused: no per-document allocation. */
    size_t cap = (size_t)max_len * (GEN_WORD_MAX + 1) + 64;
    char *line = malloc(cap);
    if (!line) return err_set(CLS_E_NOMEM, "generate: document buffer of %zu bytes", cap);
    gen_rng r;
    rng_seed(&r, o->seed, 2);
    for (uint32_t d = 0; d < o->num_docs; d++) {
        uint32_t len = gen_doc_len(&r, &lm);
        int n = snprintf(line, cap, "{\"id\": \"G%08u\", \"contents\": \"", (unsigned)d);
        char *p = line + n;
        for (uint32_t t = 0; t < len; t++) {
            uint32_t rank = cdf_search(g->cdf, o->vocab_size, rng_unit(&r));
            if (t) *p++ = ' ';
            memcpy(p, g->words + (size_t)rank * GEN_WORD_STRIDE, g->lens[rank]);
            p += g->lens[rank];
        }
        memcpy(p, "\"}\n", 3);
        p += 3;
        if (fwrite(line, 1, (size_t)(p - line), out->f) != (size_t)(p - line)) {
            int e = errno;
            free(line);
            return err_set(CLS_E_IO, "generate: writing %s: %s", out->final, strerror(e ? e : EIO));
        }
    }
    free(line);
    return CLS_OK;
}

static cls_status write_topics(const gen_ctx *g, gen_out *out)
{
    const gen_opts *o = g->o;
    uint32_t v = o->vocab_size;
    /* The "head": top 0.1% of ranks (at least 1). A tail draw maps u into [cdf[head-1], 1), an
     * exact sample of the distribution conditioned on rank >= head, still one binary search. */
    uint32_t head = v / 1000 ? v / 1000 : 1;
    double tail_lo = g->cdf[head - 1];
    gen_rng r;
    rng_seed(&r, o->seed, 3);
    for (uint32_t q = 0; q < o->num_queries; q++) {
        uint32_t ranks[GEN_QUERY_MAX];
        int nt = query_len(&r);
        for (int t = 0; t < nt; t++) {
            uint32_t rank = 0;
            int dup = 1;
            /* Distinct terms: a few redraws, then the next unused rank (at most nt steps), so
             * even an extreme zipf_s, where nearly all mass is on rank 1, terminates. */
            for (int tries = 0; tries < 32 && dup; tries++) {
                double u = rng_unit(&r);
                if (rng_unit(&r) < GEN_TAIL_PROB) u = tail_lo + u * (1.0 - tail_lo);
                rank = cdf_search(g->cdf, v, u);
                dup = 0;
                for (int j = 0; j < t; j++) dup |= ranks[j] == rank;
            }
            while (dup) {
                rank = (rank + 1) % v;
                dup = 0;
                for (int j = 0; j < t; j++) dup |= ranks[j] == rank;
            }
            ranks[t] = rank;
        }
        fprintf(out->f, "q%u\t", (unsigned)q + 1);
        for (int t = 0; t < nt; t++) {
            if (t) fputc(' ', out->f);
            fwrite(g->words + (size_t)ranks[t] * GEN_WORD_STRIDE, 1, g->lens[ranks[t]], out->f);
        }
        fputc('\n', out->f);
    }
    return CLS_OK; /* write errors surface through ferror in out_close */
}

/* ---- Public ------------------------------------------------------------------------------ */

void gen_defaults(gen_opts *o)
{
    o->seed = 42;
    o->num_docs = 20000;
    o->num_queries = 1000;
    o->vocab_size = 50000;
    o->zipf_s = 1.0;
    o->mean_doc_len = 150.0;
}

static cls_status check_opts(const gen_opts *o, const char *dir)
{
    if (!o || !dir || !*dir) return err_set(CLS_E_ARG, "generate: no options or no folder");
    return gen_check_model(o);
}

cls_status gen_check_model(const gen_opts *o)
{
    if (!o) return err_set(CLS_E_ARG, "generate: no options");
    if (o->num_docs == 0 || o->num_docs > GEN_MAX_DOCS)
        return err_set(CLS_E_ARG, "generate: num_docs %u is outside 1..%u", o->num_docs,
                       GEN_MAX_DOCS);
    if (o->vocab_size < 100 || o->vocab_size > GEN_MAX_VOCAB)
        return err_set(CLS_E_ARG, "generate: vocab_size %u is outside 100..%u", o->vocab_size,
                       GEN_MAX_VOCAB);
    if (!(o->zipf_s > 0.0) || !isfinite(o->zipf_s)) /* also rejects NaN */
        return err_set(CLS_E_ARG, "generate: zipf_s %g must be positive and finite", o->zipf_s);
    if (!(o->mean_doc_len >= 1.0) || !(o->mean_doc_len <= GEN_MAX_MEAN_LEN))
        return err_set(CLS_E_ARG, "generate: mean_doc_len %g is outside 1..%g", o->mean_doc_len,
                       GEN_MAX_MEAN_LEN);
    if (o->num_queries > GEN_MAX_QUERIES)
        return err_set(CLS_E_ARG, "generate: num_queries %u exceeds %u", o->num_queries,
                       GEN_MAX_QUERIES);
    return CLS_OK;
}

cls_status gen_corpus(const gen_opts *o, const char *dir)
{
    cls_status st = check_opts(o, dir);
    if (st != CLS_OK) return st;
    if ((st = make_dirs(dir)) != CLS_OK) return st;

    char *words = malloc((size_t)o->vocab_size * GEN_WORD_STRIDE);
    uint8_t *lens = malloc(o->vocab_size);
    double *cdf = malloc((size_t)o->vocab_size * sizeof *cdf);
    char *buf_c = malloc(GEN_IOBUF), *buf_t = malloc(GEN_IOBUF);
    gen_out corpus = {.tmp = NULL}, topics = {.tmp = NULL};
    if (!words || !lens || !cdf || !buf_c || !buf_t) {
        st = err_set(CLS_E_NOMEM, "generate: tables for %u words", o->vocab_size);
        goto done;
    }
    if ((st = make_vocab(o->seed, o->vocab_size, words, lens)) != CLS_OK) goto done;
    make_cdf(cdf, o->vocab_size, o->zipf_s);
    gen_ctx g = {o, words, lens, cdf};

    if ((st = out_open(&corpus, dir, "corpus.jsonl", buf_c)) != CLS_OK) goto done;
    if ((st = write_corpus(&g, &corpus)) != CLS_OK) goto done;
    if ((st = out_close(&corpus)) != CLS_OK) goto done;
    if ((st = out_open(&topics, dir, "topics.tsv", buf_t)) != CLS_OK) goto done;
    if ((st = write_topics(&g, &topics)) != CLS_OK) goto done;
    if ((st = out_close(&topics)) != CLS_OK) goto done;
    /* Both complete: publish them. Renames within one folder do not fail in practice. */
    if ((st = out_commit(&corpus)) != CLS_OK) goto done;
    st = out_commit(&topics);
done:
    out_discard(&corpus);
    out_discard(&topics);
    free(words);
    free(lens);
    free(cdf);
    free(buf_c);
    free(buf_t);
    return st;
}

/* ---- Shared with generate_index.c (gen.h) ------------------------------------------------ */

cls_status gen_vocab(uint64_t seed, uint32_t vocab, char *words, uint8_t *lens)
{
    return make_vocab(seed, vocab, words, lens);
}

void gen_cdf(double *cdf, uint32_t n, double s) { make_cdf(cdf, n, s); }

cls_status gen_topics_file(const gen_opts *o, const char *words, const uint8_t *lens,
                           const double *cdf, const char *path)
{
    /* out_open wants the folder and the name apart. */
    char dir[4096];
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    size_t dn = slash ? (size_t)(slash - path) : 1;
    if (!*name) return err_set(CLS_E_ARG, "generate: topics path %s names a folder", path);
    if (dn >= sizeof dir) return err_set(CLS_E_ARG, "generate: path too long: %s", path);
    if (slash) {
        memcpy(dir, path, dn);
        dir[dn] = '\0';
        if (dn == 0) strcpy(dir, "/");
    } else {
        strcpy(dir, ".");
    }
    char *buf = malloc(GEN_IOBUF);
    if (!buf) return err_set(CLS_E_NOMEM, "generate: topics buffer");
    gen_ctx g = {o, words, lens, cdf};
    gen_out out = {.tmp = NULL};
    cls_status st = out_open(&out, dir, name, buf);
    if (st == CLS_OK) st = write_topics(&g, &out);
    if (st == CLS_OK) st = out_close(&out);
    if (st == CLS_OK) st = out_commit(&out);
    out_discard(&out);
    free(buf);
    return st;
}
