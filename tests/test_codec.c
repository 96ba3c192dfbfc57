/* Stream codecs on the host (codec.h): round trips for every codec and pfor depth on random
 * data and edges, the exact word count, rejection of short, long and corrupted streams (the
 * decoders stand between a forged index file and the device decoders, which do not check),
 * and sizes. Decoders read from heap buffers of exactly the stream's size, so an ASan build
 * (CLSEARCH_SANITIZE) catches any read past the words a decoder is given. The device twins
 * are compared with these decoders in test_kernels (decode_random_and_edges). */
#include "codec/codec.h"
#include "codec/codec_bp.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct variant {
    cls_codec c;
    unsigned depth; /* pfor only; the others ignore it */
    const char *name;
} variant;

static const variant VARIANTS[] = {
    {CLS_CODEC_RAW, 1, "raw"},      {CLS_CODEC_BP, 1, "bp"},         {CLS_CODEC_PFOR, 0, "pfor/0"},
    {CLS_CODEC_PFOR, 1, "pfor/1"},  {CLS_CODEC_PFOR, 2, "pfor/2"},   {CLS_CODEC_PFOR, 3, "pfor/3"},
    {CLS_CODEC_OPTPFD, 1, "optpfd"}, {CLS_CODEC_RICE, 1, "rice"},
};
#define NVARIANTS ((int)(sizeof VARIANTS / sizeof *VARIANTS))
enum { VI_BP = 1, VI_OPTPFD = 6, VI_RICE = 7 }; /* indices into VARIANTS */

/* ck_assert_msg that costs nothing when it holds (Check reports every passing assertion to
 * its parent process, and the loops here make millions). */
#define CHECK(cond, ...)                        \
    do {                                        \
        if (!(cond)) ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* A heap copy of exactly `words` words (at least one byte, so that even an empty stream is a
 * distinct allocation ASan guards). */
static uint32_t *exact_copy(const uint32_t *w, uint32_t words)
{
    uint32_t *p = malloc(words ? (size_t)words * 4 : 1);
    CHECK(p != NULL, "out of memory");
    if (words) memcpy(p, w, (size_t)words * 4);
    return p;
}

/* cdc_decode from an exact-size heap copy into an exact-size output. Returns its result;
 * on success the values go to out (if not NULL) and *used to used. */
static int decode_exact(const variant *x, const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param,
                        uint32_t *out, uint32_t *used)
{
    uint32_t *in = exact_copy(w, avail);
    uint32_t *o = malloc(n ? (size_t)n * 4 : 1), u = UINT32_MAX;
    CHECK(o != NULL, "out of memory");
    int r = cdc_decode(x->c, in, avail, n, param, x->depth, o, &u);
    if (r == 0) {
        if (out && n) memcpy(out, o, (size_t)n * 4);
        if (used) *used = u;
    }
    free(in);
    free(o);
    return r;
}

#define GUARD 0xC0DEC0DEu

/* Encodes v[0..n), checks the round trip, the exact word count and the rejection of a stream
 * one word short or one word long. Returns the words; the stream and its parameter go to
 * w (room for cdc_max_words(n)) and *param when not NULL. */
static uint32_t roundtrip(const variant *x, const uint32_t *v, uint32_t n, uint32_t list_param, uint32_t *param,
                          uint32_t *w)
{
    uint32_t max = cdc_max_words(n);
    uint32_t *buf = malloc(((size_t)max + 4) * 4);
    CHECK(buf != NULL, "out of memory");
    for (uint32_t i = 0; i < max + 4; i++) buf[i] = GUARD;
    uint32_t p = 0xFFFFFFFFu;
    uint32_t nw = cdc_encode(x->c, v, n, list_param, x->depth, &p, buf);
    CHECK(nw <= max, "%s n=%u: %u words, bound %u", x->name, n, nw, max);
    for (uint32_t i = nw; i < max + 4; i++)
        CHECK(buf[i] == GUARD, "%s n=%u: wrote past its %u words", x->name, n, nw);
    uint32_t out[CDC_MAX_N], used = UINT32_MAX;
    int r = decode_exact(x, buf, nw, n, p, out, &used);
    CHECK(r == 0, "%s n=%u list_param %u: own stream (%u words, param %#x) rejected", x->name, n, list_param, nw,
          p);
    CHECK(used == nw, "%s n=%u: used %u of %u words", x->name, n, used, nw);
    for (uint32_t i = 0; i < n; i++)
        CHECK(out[i] == v[i], "%s n=%u list_param %u: value %u is %u, not %u", x->name, n, list_param, i, out[i],
              v[i]);
    /* exactly nw words: one fewer or one more (zero or all ones) is malformed */
    if (nw > 0) CHECK(decode_exact(x, buf, nw - 1, n, p, NULL, NULL) == -1, "%s n=%u: short accepted", x->name, n);
    buf[nw] = 0;
    CHECK(decode_exact(x, buf, nw + 1, n, p, NULL, NULL) == -1, "%s n=%u: long accepted", x->name, n);
    buf[nw] = UINT32_MAX;
    CHECK(decode_exact(x, buf, nw + 1, n, p, NULL, NULL) == -1, "%s n=%u: long accepted", x->name, n);
    if (param) *param = p;
    if (w) memcpy(w, buf, (size_t)nw * 4);
    free(buf);
    return nw;
}

/* Round trip with the list parameter a list of just these values would get, and for pfor
 * also with others (a list's width need not suit the block: 0 makes every nonzero value an
 * exception, 32 none). */
static void roundtrip_all_params(const variant *x, const uint32_t *v, uint32_t n)
{
    roundtrip(x, v, n, cdc_list_param(x->c, v, n), NULL, NULL);
    if (x->c == CLS_CODEC_PFOR) {
        static const uint32_t lp[] = {0, 1, 3, 8, 17, 31, 32, 40};
        for (size_t i = 0; i < sizeof lp / sizeof *lp; i++) roundtrip(x, v, n, lp[i], NULL, NULL);
    }
}

/* Value of at most `bw` bits, random. */
static uint32_t rand_bits(uint64_t *st, unsigned bw)
{
    uint32_t r = (uint32_t)tu_rand(st);
    return bw == 0 ? 0 : bw == 32 ? r : r & ((1u << bw) - 1);
}

/* Geometric value with the given mean (docID-gap-like). */
static uint32_t rand_geom(uint64_t *st, double mean)
{
    double u = ((double)(tu_rand(st) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    double g = floor(log(u) / log(1.0 - 1.0 / (mean + 1.0)));
    return g >= 4294967295.0 ? UINT32_MAX : (uint32_t)g;
}

enum { SH_ZERO, SH_MAX, SH_WIDTH, SH_GEOM, SH_FEW_HUGE, SH_ALL_EXC, SH_ALTERNATE, SH_RANDOM, SH_ONE_HUGE, NSHAPES };

static void gen(uint64_t *st, unsigned shape, uint32_t n, uint32_t *v)
{
    unsigned bw = (unsigned)(tu_rand(st) % 33);
    double mean = (double)(1u << (tu_rand(st) % 16));
    for (uint32_t i = 0; i < n; i++) {
        switch (shape) {
        case SH_ZERO: v[i] = 0; break;
        case SH_MAX: v[i] = UINT32_MAX; break;
        case SH_WIDTH: v[i] = rand_bits(st, bw); break;
        case SH_GEOM: v[i] = rand_geom(st, mean); break;
        case SH_FEW_HUGE: v[i] = tu_rand(st) % 20 == 0 ? (uint32_t)tu_rand(st) : rand_bits(st, 4); break;
        case SH_ALL_EXC: v[i] = (1u << 20) | rand_bits(st, 20 + (unsigned)(tu_rand(st) % 13)); break;
        case SH_ALTERNATE: v[i] = i % 2 ? 1u : 1u << 31; break;
        case SH_RANDOM: v[i] = (uint32_t)tu_rand(st); break;
        default: v[i] = i == n / 2 ? UINT32_MAX : rand_bits(st, 2); break;
        }
    }
}

static const uint32_t EDGE_N[] = {0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511, 512};
#define NEDGE_N (sizeof EDGE_N / sizeof *EDGE_N)

/* ---- round trips -------------------------------------------------------------------------- */

START_TEST(roundtrip_edges)
{
    const variant *x = &VARIANTS[_i];
    uint32_t v[CDC_MAX_N];
    uint64_t st = 1 + (uint64_t)_i;
    for (size_t k = 0; k < NEDGE_N; k++) {
        uint32_t n = EDGE_N[k];
        for (unsigned s = 0; s < NSHAPES; s++) {
            gen(&st, s, n, v);
            roundtrip_all_params(x, v, n);
        }
        /* the extreme single values */
        static const uint32_t one[] = {0, 1, 2, 1u << 31, UINT32_MAX - 1, UINT32_MAX};
        for (size_t j = 0; j < sizeof one / sizeof *one; j++) {
            for (uint32_t i = 0; i < n; i++) v[i] = one[j];
            roundtrip_all_params(x, v, n);
            if (n) { /* the value once, among zeros, first / middle / last */
                memset(v, 0, (size_t)n * 4);
                v[0] = v[n / 2] = v[n - 1] = one[j];
                roundtrip_all_params(x, v, n);
            }
        }
    }
}
END_TEST

START_TEST(roundtrip_every_width)
{
    /* every bit width 0..32, the width exactly reached (one value has its top bit set) */
    const variant *x = &VARIANTS[_i];
    uint32_t v[CDC_MAX_N];
    uint64_t st = 100 + (uint64_t)_i;
    static const uint32_t ns[] = {1, 7, 64, 127, 128, 300, 511, 512};
    for (unsigned bw = 0; bw <= 32; bw++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            uint32_t n = ns[k];
            for (uint32_t i = 0; i < n; i++) v[i] = rand_bits(&st, bw);
            if (bw) v[tu_rand(&st) % n] |= 1u << (bw - 1);
            roundtrip_all_params(x, v, n);
            /* mostly narrow, a few of this width: the exception paths at every high-part width */
            for (uint32_t i = 0; i < n; i++) v[i] = tu_rand(&st) % 8 == 0 ? rand_bits(&st, bw) : rand_bits(&st, bw / 4);
            roundtrip_all_params(x, v, n);
        }
}
END_TEST

START_TEST(roundtrip_random)
{
    const variant *x = &VARIANTS[_i];
    uint32_t v[CDC_MAX_N];
    uint64_t st = 200 + (uint64_t)_i;
    for (int t = 0; t < 20000; t++) {
        uint32_t n = (uint32_t)(tu_rand(&st) % (CDC_MAX_N + 1));
        gen(&st, (unsigned)(tu_rand(&st) % NSHAPES), n, v);
        uint32_t lp = x->c == CLS_CODEC_PFOR && t % 2 ? (uint32_t)(tu_rand(&st) % 33) : cdc_list_param(x->c, v, n);
        roundtrip(x, v, n, lp, NULL, NULL);
    }
}
END_TEST

/* The shape of a verified pfor stream: nodes, and values in child nodes (docs/FORMAT.md). */
static void pfor_walk(const uint32_t *w, uint32_t *at, uint32_t m, uint32_t node, unsigned d, unsigned *nodes,
                      uint32_t *kids)
{
    uint32_t b = node & 0xFFu, e = node >> 8 & 0x3FFu;
    *at += bp_words(m, b);
    ++*nodes;
    for (int c = 0; c < 2 && e && d; c++) {
        uint32_t hdr = w[(*at)++];
        *kids += e;
        pfor_walk(w, at, e, hdr, d - 1, nodes, kids);
    }
}

START_TEST(pfor_deep_trees)
{
    /* Values that give every node of a depth-3 tree exceptions (list width 0 or 1 makes most
     * values exceptions at the top, and the levels below get spread values and positions);
     * the child nodes stay within the format's 3n bound. */
    uint32_t v[CDC_MAX_N], max_kids = 0;
    unsigned max_nodes[4] = {0};
    uint64_t st = 300;
    for (int t = 0; t < 400; t++) {
        uint32_t n = t < 4 ? CDC_MAX_N : 1 + (uint32_t)(tu_rand(&st) % CDC_MAX_N);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t r = (uint32_t)tu_rand(&st);
            if (t % 2) /* every value an exception: P holds gaps 0, H branches */
                v[i] = r % 17 == 0 ? r | 0x80000000u : r % 5 == 0 ? (r & 0xFFFFu) | 1 : 1 + (r & 1);
            else /* exceptions at random positions with widths 2..32: P and H both branch */
                v[i] = r % 2 ? r >> 31 : rand_bits(&st, 2 + (unsigned)(tu_rand(&st) % 31)) | 2;
        }
        for (unsigned d = 0; d <= 3; d++) {
            variant x = {CLS_CODEC_PFOR, d, "pfor"};
            for (uint32_t lp = 0; lp < 2; lp++) {
                uint32_t w[4 * CDC_MAX_N + 64], param, at = 0, kids = 0;
                unsigned nodes = 0;
                uint32_t nw = roundtrip(&x, v, n, lp, &param, w);
                pfor_walk(w, &at, n, param, d, &nodes, &kids);
                CHECK(at == nw && nodes < (2u << d) && kids <= 3 * n, "walk: %u of %u words, %u nodes", at, nw, nodes);
                if (nodes > max_nodes[d]) max_nodes[d] = nodes;
                if (n == CDC_MAX_N && kids > max_kids) max_kids = kids;
            }
        }
    }
    /* the data reach every node of the tree at every depth */
    for (unsigned d = 0; d <= 3; d++) ck_assert_uint_eq(max_nodes[d], (2u << d) - 1);
    ck_assert_uint_gt(max_kids, 2 * CDC_MAX_N);
    if (getenv("CLS_TEST_VERBOSE")) printf("pfor depth 3, n = 512: up to %u child-node values\n", max_kids);
}
END_TEST

START_TEST(pfor_list_width)
{
    uint32_t v[1000] = {0};
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 0), 0);
    for (int i = 0; i < 100; i++) v[i] = i < 90 ? 7 : 1000; /* 90 of 100 fit 3 bits */
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 100), 3);
    v[0] = 1000; /* now 89: ceil(90%) needs 10 bits */
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 100), 10);
    for (int i = 0; i < 10; i++) v[i] = i == 9 ? UINT32_MAX : 0; /* 9 of 10 fit 0 bits */
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 10), 0);
    v[0] = 1; /* 8 of 10 */
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 10), 1);
    for (int i = 0; i < 1000; i++) v[i] = UINT32_MAX;
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 1000), 32);
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_PFOR, v, 1), 32);
    /* the other codecs have no list parameter */
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_BP, v, 1000), 0);
    ck_assert_uint_eq(cdc_list_param(CLS_CODEC_RICE, v, 1000), 0);
}
END_TEST

/* ---- malformed streams -------------------------------------------------------------------- */

static const variant V_RAW = {CLS_CODEC_RAW, 1, "raw"}, V_BP = {CLS_CODEC_BP, 1, "bp"},
                     V_OPT = {CLS_CODEC_OPTPFD, 1, "optpfd"}, V_RICE = {CLS_CODEC_RICE, 1, "rice"};
static variant v_pfor(unsigned d) { return (variant){CLS_CODEC_PFOR, d, "pfor"}; }

/* bw bits of x at bit `bit` of w (zero-filled by the caller). */
static void put(uint32_t *w, uint32_t bit, uint32_t x, unsigned bw)
{
    for (unsigned i = 0; i < bw; i++)
        if (x >> i & 1) w[(bit + i) / 32] |= 1u << ((bit + i) % 32);
}

#define REJECT(x, w, avail, n, param)                                                                         \
    ck_assert_msg(decode_exact(x, w, avail, n, param, NULL, NULL) == -1, "%s: line %d accepted", (x)->name, \
                  __LINE__)
#define ACCEPT(x, w, avail, n, param, out)                                                                   \
    ck_assert_msg(decode_exact(x, w, avail, n, param, out, NULL) == 0, "%s: line %d rejected", (x)->name, \
                  __LINE__)

START_TEST(reject_raw_bp)
{
    uint32_t w[4] = {1, 2, 3, 4}, out[4];
    ACCEPT(&V_RAW, w, 4, 4, 0, out);
    REJECT(&V_RAW, w, 4, 4, 1);
    REJECT(&V_RAW, w, 3, 4, 0);
    ACCEPT(&V_BP, w, 4, 4, 32, out);
    ACCEPT(&V_BP, w, 2, 4, 16, out);
    REJECT(&V_BP, w, 4, 4, 33);
    REJECT(&V_BP, w, 4, 4, 24); /* 3 words */
    REJECT(&V_BP, w, 0, 0, 0xFFFFFFFFu);
}
END_TEST

START_TEST(reject_pfor)
{
    uint32_t out[CDC_MAX_N];
    variant p0 = v_pfor(0), p1 = v_pfor(1), p2 = v_pfor(2), p3 = v_pfor(3);
    /* Hand-built: n = 4, top width 0 with 4 exceptions; P child (width 0, no exceptions: gaps
     * 0, positions 0..3), H child (width 0: high parts 0 + 1). Values 1, 1, 1, 1. */
    uint32_t s1[2] = {0x000, 0x000};
    ACCEPT(&p1, s1, 2, 4, 4u << 8, out);
    for (int i = 0; i < 4; i++) ck_assert_uint_eq(out[i], 1);
    REJECT(&p0, s1, 2, 4, 4u << 8);         /* exceptions at depth 0 */
    REJECT(&p1, s1, 2, 4, 5u << 8);         /* e > n */
    REJECT(&p1, s1, 2, 4, 4u << 8 | 33);    /* width 33 */
    REJECT(&p1, s1, 2, 4, 4u << 8 | 1u << 18); /* reserved bit */
    REJECT(&p1, s1, 2, 4, 4u << 8 | 1u << 31);
    REJECT(&p1, s1, 1, 4, 4u << 8);         /* H header missing */
    ck_assert_int_eq(cdc_decode(CLS_CODEC_PFOR, s1, 2, 4, 4u << 8, 4, out, &(uint32_t){0}), -1); /* depth 4 */
    /* width 32 with exceptions */
    uint32_t s32[4 + 2] = {5, 6, 7, 8, 0, 0};
    ACCEPT(&p1, s32, 4, 4, 32, out);
    REJECT(&p1, s32, 6, 4, 32 | 4u << 8);
    /* child headers: width 33, reserved bits, e > m, exceptions in a depth-0 child */
    uint32_t s2[2] = {33, 0};
    REJECT(&p1, s2, 2, 4, 4u << 8);
    s2[0] = 1u << 20;
    REJECT(&p1, s2, 2, 4, 4u << 8);
    s2[0] = 5u << 8;
    REJECT(&p2, s2, 2, 4, 4u << 8);
    s2[0] = 1u << 8; /* P child with an exception at depth 0 */
    REJECT(&p1, s2, 2, 4, 4u << 8);
    /* a position past the node: P child width 2, gaps 0,0,0,1 -> position 4 of 4 */
    uint32_t s3[3] = {2, 1u << 6, 0};
    REJECT(&p1, s3, 3, 4, 4u << 8);
    s3[1] = 0; /* gaps 0,0,0,0 */
    ACCEPT(&p1, s3, 3, 4, 4u << 8, out);
    s3[1] = 1u << 2; /* gaps 0,1,...: positions 0,2,3,4 */
    REJECT(&p1, s3, 3, 4, 4u << 8);
    /* nonzero padding in a child's low part */
    s3[1] = 1u << 8;
    REJECT(&p1, s3, 3, 4, 4u << 8);
    /* high parts: n = 1, top width 31 (one word), one exception at 0; P header 0 (width 0,
     * no words); H header width 1, its one word holds H. H = 0: high part 1, value 2^31. */
    uint32_t s4[4] = {0, 0, 1, 0};
    ACCEPT(&p1, s4, 4, 1, 31 | 1u << 8, out);
    ck_assert_uint_eq(out[0], 1u << 31);
    s4[3] = 1; /* H = 1: high part 2, and 2 << 31 overflows */
    REJECT(&p1, s4, 4, 1, 31 | 1u << 8);
    /* top width 0: H (width 32) of 2^32 - 2 gives 2^32 - 1; of 2^32 - 1 a high part of 2^32 */
    uint32_t s6[3] = {0, 32, 0xFFFFFFFEu};
    ACCEPT(&p1, s6, 3, 1, 1u << 8, out);
    ck_assert_uint_eq(out[0], UINT32_MAX);
    s6[2] = UINT32_MAX;
    REJECT(&p1, s6, 3, 1, 1u << 8);
    /* the 3n bound on child values: only H nodes have exceptions (P nodes must hold gaps 0),
     * each with e = m = 4. n = 4 at depth 3: P 4, H 4, H.P 4, H.H 4 = 16 > 12 already */
    uint32_t s7[6] = {0, 4u << 8, 0, 4u << 8, 0, 0};
    REJECT(&p3, s7, 6, 4, 4u << 8);
    uint32_t s8[4] = {0, 4u << 8, 0, 0}; /* the same at depth 2 */
    REJECT(&p2, s8, 4, 4, 4u << 8);
    /* n = 8 (bound 24): the same tree decodes; H.H = 0, so H = 1 and the top 2 at 0..3 */
    ACCEPT(&p2, s8, 4, 8, 4u << 8, out);
    for (int i = 0; i < 8; i++) ck_assert_uint_eq(out[i], i < 4 ? 2 : 0);
}
END_TEST

START_TEST(reject_optpfd)
{
    uint32_t w[8], out[CDC_MAX_N];
    /* n = 8, b = 2, pw = 3, hb = 3, e = 2 at positions 1 and 6: bits 16 + 6 + 6 = 28, one word */
#define OPD(b, hb, e) ((uint32_t)(b) | (uint32_t)(hb) << 6 | (uint32_t)(e) << 12)
    memset(w, 0, sizeof w);
    put(w, 0, 0xE4E4, 16); /* slots 0,1,2,3,0,1,2,3 */
    put(w, 16, 1, 3);
    put(w, 19, 6, 3);
    put(w, 22, 5, 3);
    put(w, 25, 1, 3);
    ACCEPT(&V_OPT, w, 1, 8, OPD(2, 3, 2), out);
    ck_assert_uint_eq(out[1], 1 | 5u << 2);
    ck_assert_uint_eq(out[6], 2 | 1u << 2);
    ck_assert_uint_eq(out[7], 3);
    REJECT(&V_OPT, w, 2, 8, OPD(2, 3, 2));      /* a word too many */
    REJECT(&V_OPT, w, 1, 8, OPD(33, 3, 2));     /* width 33 */
    REJECT(&V_OPT, w, 1, 8, OPD(2, 33, 2));
    REJECT(&V_OPT, w, 1, 8, OPD(3, 30, 2));     /* b + hb > 32 */
    REJECT(&V_OPT, w, 1, 8, OPD(2, 3, 9));      /* e > n */
    REJECT(&V_OPT, w, 1, 8, OPD(2, 3, 2) | 1u << 22); /* reserved */
    REJECT(&V_OPT, w, 1, 8, OPD(2, 3, 0));      /* hb without exceptions */
    REJECT(&V_OPT, w, 1, 8, OPD(2, 0, 2));      /* exceptions without high bits */
    REJECT(&V_OPT, w, 1, 8, OPD(32, 1, 0));     /* hb without exceptions (and b = 32) */
    uint32_t bad[1];
    bad[0] = w[0] ^ (1u << 30); /* padding */
    REJECT(&V_OPT, bad, 1, 8, OPD(2, 3, 2));
    bad[0] = (w[0] & ~(7u << 16)) | (6u << 16); /* positions 6, 6: not increasing */
    REJECT(&V_OPT, bad, 1, 8, OPD(2, 3, 2));
    bad[0] = (w[0] & ~(7u << 16)) | (7u << 16); /* positions 7, 6 */
    REJECT(&V_OPT, bad, 1, 8, OPD(2, 3, 2));
    bad[0] = w[0] & ~(7u << 25); /* a high part of 0 */
    REJECT(&V_OPT, bad, 1, 8, OPD(2, 3, 2));
    /* n = 6: pw = 3 bits, so position 6 or 7 is representable but out of range */
    memset(w, 0, sizeof w);
    put(w, 12, 6, 3);
    put(w, 15, 1, 1);
    REJECT(&V_OPT, w, 1, 6, OPD(2, 1, 1));
    memset(w, 0, sizeof w);
    put(w, 12, 5, 3);
    put(w, 15, 1, 1);
    ACCEPT(&V_OPT, w, 1, 6, OPD(2, 1, 1), out);
    ck_assert_uint_eq(out[5], 4);
    /* n = 0 */
    ACCEPT(&V_OPT, w, 0, 0, 0, out);
    REJECT(&V_OPT, w, 0, 0, OPD(0, 1, 1));
#undef OPD
}
END_TEST

START_TEST(reject_rice)
{
    uint32_t w[4], out[CDC_MAX_N];
    /* n = 3, k = 2: values 5 (q 1, low 1), 2 (q 0, low 2), 13 (q 3, low 1);
     * binary 6 bits; unary 01 1 0001: U = 7 bits */
#define RICE(k, U) ((uint32_t)(k) | (uint32_t)(U) << 8)
    memset(w, 0, sizeof w);
    put(w, 0, 1 | 2 << 2 | 1 << 4, 6);
    put(w, 32, 0x46, 7); /* bits: 0 1 1 0 0 0 1 */
    ACCEPT(&V_RICE, w, 2, 3, RICE(2, 7), out);
    ck_assert_uint_eq(out[0], 5);
    ck_assert_uint_eq(out[1], 2);
    ck_assert_uint_eq(out[2], 13);
    REJECT(&V_RICE, w, 2, 3, RICE(33, 7)); /* k 33 */
    REJECT(&V_RICE, w, 2, 3, RICE(2, 8));  /* a zero trailing the last one */
    REJECT(&V_RICE, w, 2, 3, RICE(2, 6));  /* the last one outside U */
    REJECT(&V_RICE, w, 3, 3, RICE(2, 7));  /* U does not match avail */
    REJECT(&V_RICE, w, 2, 4, RICE(2, 7));  /* fewer ones than values */
    REJECT(&V_RICE, w, 2, 3, RICE(2, 7) | 1u << 31); /* U far beyond avail */
    uint32_t bad[2] = {w[0] | 1u << 6, w[1]}; /* binary padding */
    REJECT(&V_RICE, bad, 2, 3, RICE(2, 7));
    bad[0] = w[0];
    bad[1] = w[1] | 1u << 9; /* unary padding (and a fourth one) */
    REJECT(&V_RICE, bad, 2, 3, RICE(2, 7));
    /* more ones than values: k = 0, n = 2, unary 1 1 1 */
    uint32_t three = 7;
    REJECT(&V_RICE, &three, 1, 2, RICE(0, 3));
    ACCEPT(&V_RICE, &three, 1, 3, RICE(0, 3), out);
    /* q that does not fit after the shift: k = 31, q = 2 */
    memset(w, 0, sizeof w);
    put(w, 32, 4, 3); /* 0 0 1 */
    REJECT(&V_RICE, w, 2, 1, RICE(31, 3));
    memset(w, 0, sizeof w); /* q = 1: fits */
    put(w, 32, 2, 2);
    ACCEPT(&V_RICE, w, 2, 1, RICE(31, 2), out);
    ck_assert_uint_eq(out[0], 1u << 31);
    /* k = 32: every q must be 0 */
    memset(w, 0, sizeof w);
    w[0] = 0xFFFFFFFFu;
    w[1] = 1;
    ACCEPT(&V_RICE, w, 2, 1, RICE(32, 1), out);
    ck_assert_uint_eq(out[0], UINT32_MAX);
    w[1] = 2;
    REJECT(&V_RICE, w, 2, 1, RICE(32, 2));
    /* n = 0: nothing at all */
    ACCEPT(&V_RICE, w, 0, 0, 0, out);
    REJECT(&V_RICE, w, 1, 0, RICE(0, 1));
    w[0] = 0;
    REJECT(&V_RICE, w, 1, 0, RICE(0, 1));
#undef RICE
}
END_TEST

START_TEST(corrupted_streams)
{
    /* Random damage to encoded streams: flipped bits in the parameter or the words, a word
     * replaced by a small number (what headers and parameters look like), a wrong depth. Every
     * decode must return 0 (then with used = avail) or -1, never read outside the stream. */
    const variant *x = &VARIANTS[_i];
    uint64_t st = 400 + (uint64_t)_i;
    uint32_t v[CDC_MAX_N], w[4 * CDC_MAX_N + 64], d[4 * CDC_MAX_N + 64], out[CDC_MAX_N];
    int accepted = 0, rejected = 0;
    for (int t = 0; t < 1500; t++) {
        uint32_t n = t % 4 == 0 ? (uint32_t)(tu_rand(&st) % 8) : (uint32_t)(tu_rand(&st) % (CDC_MAX_N + 1));
        gen(&st, (unsigned)(tu_rand(&st) % NSHAPES), n, v);
        uint32_t lp = x->c == CLS_CODEC_PFOR ? (uint32_t)(tu_rand(&st) % 12) : 0, param;
        uint32_t nw = roundtrip(x, v, n, lp, &param, w);
        for (int k = 0; k < 40; k++) {
            uint32_t p = param, avail = nw;
            memcpy(d, w, (size_t)nw * 4);
            unsigned what = (unsigned)(tu_rand(&st) % 6);
            if (what <= 1 || nw == 0) p ^= 1u << (tu_rand(&st) % (what == 0 ? 32 : 20));
            else if (what == 2) d[tu_rand(&st) % nw] ^= 1u << (tu_rand(&st) % 32);
            else if (what == 3) d[tu_rand(&st) % nw] = (uint32_t)(tu_rand(&st) % 0x40000u);
            else if (what == 4) {
                d[tu_rand(&st) % nw] ^= 1u << (tu_rand(&st) % 32);
                p ^= 1u << (tu_rand(&st) % 20);
            } else {
                avail = (uint32_t)(tu_rand(&st) % (nw + 2));
                if (avail > nw) d[nw] = (uint32_t)tu_rand(&st);
            }
            variant y = *x;
            if (tu_rand(&st) % 8 == 0) y.depth = (unsigned)(tu_rand(&st) % 5);
            uint32_t used = UINT32_MAX;
            int r = decode_exact(&y, d, avail, n, p, out, &used);
            CHECK(r == 0 || r == -1, "%s: decode returned %d", x->name, r);
            if (r == 0) {
                CHECK(used == avail, "%s: accepted, but used %u of %u words", x->name, used, avail);
                accepted++;
            } else
                rejected++;
        }
    }
    CHECK(rejected > 0, "%s: no damage detected", x->name);
    if (getenv("CLS_TEST_VERBOSE")) printf("%s: damaged streams: %d accepted, %d rejected\n", x->name, accepted, rejected);
}
END_TEST

/* ---- sizes -------------------------------------------------------------------------------- */

START_TEST(sizes)
{
    uint64_t st = 500;
    uint32_t v[CDC_MAX_N], w[4 * CDC_MAX_N + 64], param;
    /* optpfd never exceeds bp, on any shape */
    for (int t = 0; t < 2000; t++) {
        uint32_t n = (uint32_t)(tu_rand(&st) % (CDC_MAX_N + 1));
        gen(&st, (unsigned)(tu_rand(&st) % NSHAPES), n, v);
        uint32_t bp = cdc_encode(CLS_CODEC_BP, v, n, 0, 1, &param, w);
        uint32_t op = cdc_encode(CLS_CODEC_OPTPFD, v, n, 0, 1, &param, w);
        CHECK(op <= bp, "n=%u: optpfd %u words, bp %u", n, op, bp);
    }
    /* geometric gaps (mean 20) in blocks of 127 and 128: rice and optpfd beat bp on each
     * block; over all blocks rice is at least 10% smaller than bp */
    uint64_t tot[NVARIANTS] = {0};
    uint64_t values = 0;
    for (int t = 0; t < 400; t++) {
        uint32_t n = 127 + (uint32_t)(t & 1);
        for (uint32_t i = 0; i < n; i++) v[i] = rand_geom(&st, 20.0);
        uint32_t sz[NVARIANTS];
        for (int k = 0; k < NVARIANTS; k++) {
            const variant *x = &VARIANTS[k];
            sz[k] = cdc_encode(x->c, v, n, cdc_list_param(x->c, v, n), x->depth, &param, w);
            tot[k] += sz[k];
        }
        values += n;
        CHECK(sz[VI_RICE] < sz[VI_BP], "rice %u words, bp %u", sz[VI_RICE], sz[VI_BP]);
        CHECK(sz[VI_OPTPFD] <= sz[VI_BP], "optpfd %u words, bp %u", sz[VI_OPTPFD], sz[VI_BP]);
    }
    CHECK(tot[VI_RICE] * 10 < tot[VI_BP] * 9, "rice %llu words, bp %llu", (unsigned long long)tot[VI_RICE],
          (unsigned long long)tot[VI_BP]);
    if (getenv("CLS_TEST_VERBOSE")) {
        printf("geometric gaps, mean 20, bits per value:");
        for (int k = 0; k < NVARIANTS; k++) printf(" %s %.2f", VARIANTS[k].name, 32.0 * (double)tot[k] / (double)values);
        printf("\n");
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codec");
    TCase *tc = tcase_create("roundtrip");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, roundtrip_edges, 0, NVARIANTS);
    tcase_add_loop_test(tc, roundtrip_every_width, 0, NVARIANTS);
    tcase_add_loop_test(tc, roundtrip_random, 0, NVARIANTS);
    tcase_add_test(tc, pfor_deep_trees);
    tcase_add_test(tc, pfor_list_width);
    tcase_add_test(tc, sizes);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("malformed");
    tcase_set_timeout(tm, 600);
    tcase_add_test(tm, reject_raw_bp);
    tcase_add_test(tm, reject_pfor);
    tcase_add_test(tm, reject_optpfd);
    tcase_add_test(tm, reject_rice);
    tcase_add_loop_test(tm, corrupted_streams, 0, NVARIANTS);
    suite_add_tcase(s, tm);
    return s;
}

int main(void) { return tu_run_suite(suite()); }
