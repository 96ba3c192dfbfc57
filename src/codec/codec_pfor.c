/* pfor: PForDelta as Ding, He, Yan and Suel ran it on GPUs (WWW 2009): one bit width per list
 * that most values fit, the exceptions' low bits kept in their slots, and their positions
 * and high parts in two separate arrays that are themselves coded the same way, recursively,
 * down to a fixed depth (the index's pfor_depth, 0..3; 1 by default).
 *
 * Node. A node codes m values x[0..m) with a width b (0..32) at depth d:
 *   - its low part: the m values' low b bits, bit-packed (bp's layout: value j at bit j*b,
 *     LSB-first, zero-padded to the word; bp_words(m, b) words);
 *   - its exceptions: the e values with x >= 2^b (none when b = 32). If e > 0 (only allowed
 *     when d > 0), two child nodes follow, each coding e values at depth d-1:
 *       P, the positions as gaps: p_0, then p_i - p_{i-1} - 1;
 *       H, the high parts minus one: (x_{p_i} >> b) - 1 (a high part is >= 1).
 *     Value p_i of the node is then low_{p_i} | (H_i + 1) << b.
 * A child node's width is the smallest that ceil(90%) of its own values fit, except at depth
 * 0, where a node may hold no exceptions and takes its largest value's width (plain bp).
 *
 * Stream of one block (n values) at depth D: the top node (m = n, depth D), in pre-order:
 *   top's low part | P subtree | H subtree,
 * where a child subtree is: one header word (b | e << 8) | its low part | its P subtree |
 * its H subtree. Every part starts at a word boundary. The top node has no header: its
 * b | e << 8 is the parameter word.
 *
 * Node word (the parameter, and each child's header): bits 0-7 b (0..32), bits 8-17 e
 * (0..m), bits 18-31 zero.
 *
 * Widths. pfor_list_param (cdc_list_param) gives the list-wide width: the smallest b that at least
 * ceil(90%) of the list's stream values fit. The top node uses it, or the block's largest
 * width if that is smaller (then the block has no exceptions and costs what bp costs; Ding
 * et al. would keep the list width). At depth 0 the top node takes the block's largest width.
 *
 * Bound. With the 90% rule a child node of m values has at most floor(m/10) exceptions, so
 * the child nodes of a block hold at most 2e + 4*floor(e/10) + 8*floor(e/100) < 2.5n values
 * in all (e <= n the top's exceptions). The format caps that sum at 3n: the device keeps every
 * child node's values in local memory (3 * BLOCK_SIZE words, cl/codec_pfor.cl), and the decoder
 * rejects a tree beyond it. A tree has at most 2^(D+1) - 1 = 15 nodes.
 *
 * The reference decoder accepts only what an encoder could have written and the device can
 * decode without checks: widths <= 32, e <= m, reserved bits zero, no exceptions at depth 0
 * or width 32, zero padding, positions < m, high parts that fit 32 bits after the shift, the
 * 3n bound, and exactly `avail` words. */
#include "codec/codec.h"
#include "codec/codec_bp.h"

#include <string.h>

#define PFOR_MAX_DEPTH 3u
#define PFOR_B(x) ((x) & 0xFFu)
#define PFOR_E(x) (((x) >> 8) & 0x3FFu)
#define PFOR_RESERVED(x) ((x) >> 18)

/* Bits needed for x (0 for 0). */
static unsigned width_of(uint32_t x)
{
    unsigned w = 0;
    while (w < 32 && (x >> w) != 0) w++;
    return w;
}

/* The smallest width b such that at least ceil(9n/10) of v[0..n) are < 2^b (0 for n = 0). */
static unsigned width90(const uint32_t *v, uint64_t n)
{
    uint64_t cnt[33] = {0};
    for (uint64_t i = 0; i < n; i++) cnt[width_of(v[i])]++;
    uint64_t need = (9 * n + 9) / 10, fit = 0;
    for (unsigned b = 0; b < 32; b++) {
        fit += cnt[b]; /* values of width <= b fit b bits */
        if (fit >= need) return b;
    }
    return 32;
}

static uint32_t pfor_list_param(const uint32_t *v, uint64_t n) { return width90(v, n); }

static uint32_t child_encode(const uint32_t *v, uint32_t m, unsigned d, uint32_t *out);

/* Writes the node of v[0..m) at width b and depth d (exceptions only if d > 0: the caller
 * picks b so). Returns the words written; *ne receives the exception count. */
static uint32_t node_encode(const uint32_t *v, uint32_t m, unsigned b, unsigned d, uint32_t *out, uint32_t *ne)
{
    uint32_t gap[CDC_MAX_N], high[CDC_MAX_N], e = 0, last = 0;
    for (uint32_t j = 0; j < m; j++) {
        if (b < 32 && (v[j] >> b) != 0) {
            gap[e] = e ? j - last - 1 : j;
            high[e] = (v[j] >> b) - 1;
            last = j;
            e++;
        }
    }
    bp_pack_low(v, m, b, out);
    uint32_t nw = bp_words(m, b);
    if (e) {
        nw += child_encode(gap, e, d - 1, out + nw);
        nw += child_encode(high, e, d - 1, out + nw);
    }
    *ne = e;
    return nw;
}

/* A child node: its header word, then the node. */
static uint32_t child_encode(const uint32_t *v, uint32_t m, unsigned d, uint32_t *out)
{
    unsigned b = d ? width90(v, m) : bp_width(v, m);
    uint32_t e;
    uint32_t nw = node_encode(v, m, b, d, out + 1, &e);
    out[0] = (uint32_t)b | e << 8;
    return 1 + nw;
}

static uint32_t pfor_encode(const uint32_t *v, uint32_t n, uint32_t list_width, unsigned depth, uint32_t *param,
                            uint32_t *out)
{
    if (depth > PFOR_MAX_DEPTH) depth = PFOR_MAX_DEPTH; /* index_write allows 0..3 only */
    unsigned maxw = bp_width(v, n);
    unsigned b = depth == 0 || list_width > maxw ? maxw : list_width;
    uint32_t e;
    uint32_t nw = node_encode(v, n, b, depth, out, &e);
    *param = (uint32_t)b | e << 8;
    return nw;
}

typedef struct reader {
    const uint32_t *w;
    uint32_t avail, at; /* words in all, words consumed */
    uint32_t budget;    /* child-node values still allowed (3n at the start) */
} reader;

static int child_decode(reader *r, uint32_t m, unsigned d, uint32_t *out);

/* Decodes the node of m values at width b, e exceptions, depth d from r's position. */
static int node_decode(reader *r, uint32_t m, unsigned b, uint32_t e, unsigned d, uint32_t *out)
{
    if (b > 32 || e > m || (e > 0 && (d == 0 || b == 32))) return -1;
    uint32_t nw = bp_words(m, b);
    if (nw > r->avail - r->at) return -1;
    const uint32_t *lw = r->w + r->at;
    uint64_t bits = (uint64_t)m * b;
    if ((bits & 31) && (lw[nw - 1] >> (bits & 31)) != 0) return -1; /* padding must be zero */
    for (uint32_t j = 0; j < m; j++) out[j] = bp_get(lw, j, b);
    r->at += nw;
    if (e == 0) return 0;
    uint32_t gap[CDC_MAX_N], high[CDC_MAX_N];
    if (child_decode(r, e, d - 1, gap) != 0 || child_decode(r, e, d - 1, high) != 0) return -1;
    uint64_t p = 0;
    for (uint32_t i = 0; i < e; i++) {
        p = i ? p + gap[i] + 1 : gap[i];
        uint64_t h = ((uint64_t)high[i] + 1) << b; /* b < 32 here */
        if (p >= m || (h >> 32) != 0) return -1;
        out[p] |= (uint32_t)h;
    }
    return 0;
}

static int child_decode(reader *r, uint32_t m, unsigned d, uint32_t *out)
{
    if (r->at >= r->avail || m > r->budget) return -1;
    uint32_t hdr = r->w[r->at++];
    r->budget -= m;
    if (PFOR_RESERVED(hdr) != 0) return -1;
    return node_decode(r, m, PFOR_B(hdr), PFOR_E(hdr), d, out);
}

static int pfor_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out,
                       uint32_t *used)
{
    if (depth > PFOR_MAX_DEPTH || n > CDC_MAX_N || PFOR_RESERVED(param) != 0) return -1;
    reader r = {w, avail, 0, 3 * n};
    if (node_decode(&r, n, PFOR_B(param), PFOR_E(param), depth, out) != 0 || r.at != avail) return -1;
    *used = avail;
    return 0;
}

const cdc_codec cdc_codec_pfor = {
    .name = "pfor",
    .help = "PForDelta, one width per list, exceptions' high bits and positions coded recursively (--pfor-depth)",
    .encode = pfor_encode,
    .decode = pfor_decode,
    .list_param = pfor_list_param,
    .uses_depth = 1,
    .kernel = "codec_pfor.cl",
};
