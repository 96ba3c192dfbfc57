/* The generated collection's model, shared by the text generator (generate.c) and the direct
 * index generator (generate_index.c) so that both draw exactly the same documents: the PRNG,
 * the document-length law, the Zipf rank search, and (in generate.c) the vocabulary, the CDF and
 * the topics writer. generate.c's header comment explains the model. */
#ifndef CLS_GEN_H
#define CLS_GEN_H

#include <math.h>
#include <stdint.h>

#include "generate.h"

/* Limits that keep the output meaningful and memory bounded. Document ids have 8 digits. */
#define GEN_MAX_DOCS 100000000u
#define GEN_MAX_VOCAB (1u << 24)
#define GEN_LEN_SIGMA 0.6
#define GEN_LEN_CAP 20.0   /* longest document: 20x the mean */
#define GEN_WORD_MAX 11    /* 5 syllables + final consonant */
#define GEN_WORD_STRIDE 12 /* GEN_WORD_MAX + NUL */

/* ---- PRNG: splitmix64 seeds xoshiro256** (Blackman & Vigna), never rand() ---------------- */

typedef struct gen_rng {
    uint64_t s[4];
} gen_rng;

static inline uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Each stream mixes a distinct constant into the seed so the streams are independent:
 * 1 vocabulary, 2 documents, 3 queries. */
static inline void rng_seed(gen_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(gen_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double rng_unit(gen_rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n) by Lemire's multiply-shift; the bias (< n / 2^64) is irrelevant here. */
static inline uint32_t rng_below(gen_rng *r, uint32_t n)
{
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Standard normal by Box-Muller; the second value is dropped to keep the state simple. */
static inline double rng_normal(gen_rng *r)
{
    double u1 = 1.0 - rng_unit(r); /* (0, 1]: log() stays finite */
    double u2 = rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- Document lengths and token ranks ------------------------------------------------------ */

/* Log-normal lengths of mean `mean`: mu keeps the mean, at least 1 and at most GEN_LEN_CAP x the
 * mean tokens. */
typedef struct gen_len {
    double mu;
    uint32_t max_len;
} gen_len;

static inline void gen_len_init(gen_len *l, double mean)
{
    l->mu = log(mean) - 0.5 * GEN_LEN_SIGMA * GEN_LEN_SIGMA;
    l->max_len = (uint32_t)(GEN_LEN_CAP * mean);
}

/* One document's length: two draws from r (the document's tokens follow, one draw each). */
static inline uint32_t gen_doc_len(gen_rng *r, const gen_len *l)
{
    double len_f = floor(exp(l->mu + GEN_LEN_SIGMA * rng_normal(r)) + 0.5);
    return len_f < 1.0 ? 1u : len_f > (double)l->max_len ? l->max_len : (uint32_t)len_f;
}

/* The first rank in [lo, hi] whose cdf exceeds u, hi when none does (the answer is known to lie
 * in that range). */
static inline uint32_t cdf_search_in(const double *cdf, uint32_t lo, uint32_t hi, double u)
{
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The first rank whose cdf exceeds u (u in [0, 1]); clamped to the last rank. */
static inline uint32_t cdf_search(const double *cdf, uint32_t n, double u) { return cdf_search_in(cdf, 0, n - 1, u); }

/* ---- generate.c -------------------------------------------------------------------------- */

/* CLS_E_ARG unless o's counts and model parameters are within the generator's limits. */
cls_status gen_check_model(const gen_opts *o);
/* words (vocab x GEN_WORD_STRIDE, NUL-terminated) and lens: word i has frequency rank i. */
cls_status gen_vocab(uint64_t seed, uint32_t vocab, char *words, uint8_t *lens);
/* cdf[i] = P(rank <= i) under Zipf(s) over n ranks; the last entry is exactly 1. */
void gen_cdf(double *cdf, uint32_t n, double s);
/* Writes o->num_queries topics (qid<TAB>text, the Million Query length model) to path through a
 * temporary name in its folder, renamed when complete. */
cls_status gen_topics_file(const gen_opts *o, const char *words, const uint8_t *lens,
                           const double *cdf, const char *path);

#endif
