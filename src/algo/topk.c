/* The top-k stage (topk.h). */
#include "algo/topk.h"

#include "cl/abi.h"
#include "util/err.h"

/* Few long dense rows (cl/topk_wide.cl). One work-group a row fills the device once there are
 * two rows a compute unit; below that, each row is cut into slices of at least TW_SLICE_MIN keys a
 * work-item, so that rows x slices comes near TW_GROUPS_PER_CU groups a compute unit (at most
 * TW_MAX_SLICES a row). A row too short for two slices keeps its one group. */
#define TW_SLICE_MIN 32u
#define TW_GROUPS_PER_CU 8u
#define TW_MAX_SLICES 1024u
#define TW_BINS ABI_TOPK_BINS
#define TW_STATE ABI_TOPK_WIDE_STATE
#define TW_TIES ABI_TOPK_WIDE_TIES
/* Ordering the survivors by counting takes rows x k^2 comparisons over the whole device;
 * topk_select's bitonic sort gives each row one work-group, side by side, k log^2 k steps each,
 * so counting wins while rows x k stays small. The two meet near rows x k = 2 x 10^5, an estimate
 * from one row at two values of k (docs/PERFORMANCE.md, "Ranked OR by docID-range partitions,
 * decoding in the partitions", "The fallback"): counting grows with the rows, the sort not until
 * they pass the compute units. Past TW_COUNT_MAX the sort ranks them. */
#define TW_COUNT_MAX (1u << 17)

/* Slices a row for the many-group top-k of b's rows; 1: topk_select alone. */
static cl_uint wide_slices(const topk_state *t, const topk_input *b, cl_uint rows)
{
    uint64_t cu = t->dc->dev.info.compute_units ? t->dc->dev.info.compute_units : 1;
    if (!b->dense || rows == 0 || rows >= 2 * cu) return 1;
    uint64_t most = b->num_docs / ((uint64_t)t->dc->prm.wg_topk * TW_SLICE_MIN);
    uint64_t g = (TW_GROUPS_PER_CU * cu + rows - 1) / rows;
    if (g > most) g = most;
    if (g > TW_MAX_SLICES) g = TW_MAX_SLICES;
    return g < 2 ? 1 : (cl_uint)g;
}


/* The many-group top-k of rows dense rows, G slices each: survivors (at most k a row) into
 * t->wcand (positions, which are docIDs) and t->wscore (keys), one segment a row in t->wseg, the
 * rows' select state (and survivor ranks) in t->wstate; then topk_wide_rank puts them in order,
 * B x B groups a row for B = ceil(k / WG_TOPK) blocks of survivors, and where B > 1
 * topk_wide_place writes them out; or, rows x k past TW_COUNT_MAX (or as t->force says),
 * topk_select ranks the segments. Those buffers hold the algorithm's candidates and segments,
 * dead once a dense row is made. */
static cls_status topk_wide(topk_state *t, const topk_input *b, cl_uint rows, cl_uint G, cl_mem out, const char *step)
{
    static const char *const names[] = {"topk_wide_init", "topk_wide_hist", "topk_wide_keep", "topk_wide_rank",
                                        "topk_wide_place"};
    cls_status s;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((s = dev_need_kernel(t->dc, t->prog, names[i])) != CLS_OK) return s;
    size_t wg = t->dc->prm.wg_topk, slices = (size_t)rows * G;
    cl_uint n = b->num_docs, k = b->kk, R = rows, shift = b->key_shift, B = (cl_uint)((k + wg - 1) / wg);
    int count = t->force != TOPK_FORCE_WIDE_SELECT && (uint64_t)rows * k <= TW_COUNT_MAX;
    cl_uint ranks = count && B > 1;
    size_t work = (size_t)rows * (TW_STATE + 3 * TW_BINS + (size_t)G * TW_TIES + (ranks ? k : 0)) * 4;
    if ((s = dev_buf_need(t->dc, &t->wcand, (size_t)rows * k * 4, "top-k survivors")) != CLS_OK ||
        (s = dev_buf_need(t->dc, &t->wscore, (size_t)rows * k * 4, "top-k survivors")) != CLS_OK ||
        (s = dev_buf_need(t->dc, &t->wseg, (size_t)rows * 8, "top-k segments")) != CLS_OK ||
        (s = dev_buf_need(t->dc, &t->wstate, work, "top-k select state")) != CLS_OK)
        return s;
    dev_arg ai[] = {DEV_U32(n), DEV_U32(k), DEV_U32(G), DEV_U32(R), DEV_U32(ranks), DEV_MEM(t->wstate.mem),
                    DEV_MEM(t->wseg.mem)};
    if ((s = dev_run(t->dc, "topk_wide_init", ai, rows, wg, step)) != CLS_OK) return s;
    for (cl_uint pass = 0; pass < 3; pass++) { /* 11 + 11 + 10 bits */
        dev_arg ah[] = {DEV_MEM(b->scores), DEV_U32(shift), DEV_U32(n), DEV_U32(G), DEV_U32(pass), DEV_U32(R),
                        DEV_MEM(t->wstate.mem)};
        if ((s = dev_run(t->dc, "topk_wide_hist", ah, slices, wg, step)) != CLS_OK) return s;
    }
    dev_arg ak[] = {DEV_MEM(b->scores), DEV_U32(shift),        DEV_U32(n),           DEV_U32(G),
                    DEV_U32(k),         DEV_U32(R),            DEV_MEM(t->wstate.mem), DEV_MEM(t->wseg.mem),
                    DEV_MEM(t->wcand.mem), DEV_MEM(t->wscore.mem)};
    dev_arg ar[] = {DEV_U32(k),          DEV_U32(R),           DEV_U32(G),             DEV_U32(B),  DEV_MEM(t->wstate.mem),
                    DEV_MEM(t->wseg.mem), DEV_MEM(t->wcand.mem), DEV_MEM(t->wscore.mem), DEV_MEM(out)};
    if ((s = dev_run(t->dc, "topk_wide_keep", ak, slices, wg, step)) != CLS_OK) return s;
    if (!count) {
        topk_input sb = *b;
        topk_segments(&sb, t->wscore.mem, t->wcand.mem, t->wseg.mem, 0);
        return topk_run(t, &sb, rows, out, step);
    }
    if ((s = dev_run(t->dc, "topk_wide_rank", ar, (size_t)rows * B * B, wg, step)) != CLS_OK) return s;
    if (!ranks) return CLS_OK;
    return dev_run(t->dc, "topk_wide_place", ar, (size_t)rows * B, wg, step); /* the same arguments */
}

/* Short dense rows (cl/topk.cl: topk_team), a team of ABI_TOPK_TEAM(WG_TOPK) work-items a row,
 * WG_TOPK / team rows a work-group: rows of at most team x ABI_TOPK_TEAM_KEYS keys (registers)
 * at k up to ABI_TOPK_TEAM_K (local memory for the survivors). */
int topk_team_fits(const topk_state *t, uint32_t num_docs, uint32_t kk)
{
    return kk <= ABI_TOPK_TEAM_K && num_docs <= ABI_TOPK_TEAM(t->dc->prm.wg_topk) * ABI_TOPK_TEAM_KEYS;
}

const char *const topk_kind_names[TOPK_KINDS] = {
    [TOPK_SELECT] = "topk_select", [TOPK_ROWS] = "topk_rows", [TOPK_TEAM] = "topk_team", [TOPK_WIDE] = "topk_wide"};

/* Counts a launch of kernel i; ran names the last that ranked dense rows (topk_wide's survivors
 * ranked by topk_select leave it topk_wide). */
static void topk_mark(topk_state *t, unsigned i, int dense)
{
    if (dense) t->ran = topk_kind_names[i];
    t->launches[i]++;
}

static cls_status topk_team(topk_state *t, const topk_input *b, cl_uint rows, cl_mem out, const char *step)
{
    cls_status s = dev_need_kernel(t->dc, t->prog, "topk_team");
    if (s != CLS_OK) return s;
    cl_uint n = b->num_docs, k = b->kk, shift = b->key_shift, wg = t->dc->prm.wg_topk, teams = wg / ABI_TOPK_TEAM(wg);
    dev_arg a[] = {DEV_MEM(b->scores), DEV_U32(shift), DEV_U32(n), DEV_U32(k), DEV_U32(rows), DEV_MEM(out)};
    topk_mark(t, TOPK_TEAM, 1);
    return dev_run(t->dc, "topk_team", a, (rows + teams - 1) / teams, wg, step);
}

/* Dense rows read once (cl/topk.cl: topk_rows), one work-group a row with a buffer of candidates
 * in local memory. It needs room for the final sort (next_pow2(min(k, n)) entries) and for a step
 * of the row beside the k kept after a cut (k + step entries), or for the whole row. It gets k or
 * a quarter step more (about k ln(n / cap) keys enter after the first cut on random scores, so
 * few cuts follow), as far as local memory allows: the buffer is 8 bytes an entry, beside its
 * histogram, scan and state words (TR_BINS + WG_ROWS + TR_SH words), and a smaller one leaves
 * room for more work-groups on a compute unit. */
#define TR_BINS ABI_TOPK_BINS
#define TR_SH ABI_TOPK_ROWS_SH

cl_uint topk_rows_cap(const topk_state *t, uint32_t num_docs, uint32_t kk)
{
    uint64_t n = num_docs, k = kk, wg = t->dc->prm.wg_rows, step = wg * 4 * ABI_TOPK_VEC(t->dc->prm.wg_rows);
    uint64_t p2 = 1, m = k < n ? k : n;
    while (p2 < m) p2 <<= 1;
    uint64_t least = k + step < n ? k + step : n, want = k + step + (k > step / 4 ? k : step / 4);
    if (want > n) want = n;
    if (least < p2) least = p2;
    if (want < least || t->force == TOPK_FORCE_ROWS_LEAST) want = least;
    uint64_t fixed = ((uint64_t)TR_BINS + wg + TR_SH) * 4, mem = t->dc->dev.info.local_mem;
    uint64_t room = mem > fixed ? (mem - fixed) / 8 : 0;
    if (want > room) want = room;
    return want >= least ? (cl_uint)want : 0;
}

/* topk_rows over rows dense rows with a buffer of cap entries a row. */
static cls_status topk_rows(topk_state *t, const topk_input *b, cl_uint rows, cl_uint cap, cl_mem out, const char *step)
{
    cls_status s = dev_need_kernel(t->dc, t->prog, "topk_rows");
    if (s != CLS_OK) return s;
    cl_uint n = b->num_docs, k = b->kk, shift = b->key_shift;
    size_t wg = t->dc->prm.wg_rows;
    dev_arg a[] = {DEV_MEM(b->scores), DEV_U32(shift), DEV_U32(n),   DEV_U32(k),
                   DEV_U32(cap),       DEV_U32(rows),  DEV_MEM(out), {((size_t)2 * cap + TR_BINS + wg + TR_SH) * 4, NULL}};
    topk_mark(t, TOPK_ROWS, 1);
    return dev_run(t->dc, "topk_rows", a, rows, wg, step);
}

cls_status topk_run(topk_state *t, const topk_input *b, cl_uint groups, cl_mem out, const char *step)
{
    cl_uint G = wide_slices(t, b, groups);
    if (G > 1) {
        topk_mark(t, TOPK_WIDE, 1);
        return topk_wide(t, b, groups, G, out, step);
    }
    if (b->dense && !t->force && topk_team_fits(t, b->num_docs, b->kk)) return topk_team(t, b, groups, out, step);
    if (b->dense && t->force != TOPK_FORCE_SELECT) {
        cl_uint cap = topk_rows_cap(t, b->num_docs, b->kk);
        if (cap) return topk_rows(t, b, groups, cap, out, step);
    }
    cls_status s;
    if ((s = dev_buf_need(t->dc, &t->sdoc, (size_t)groups * b->P * 4, "top-k scratch")) != CLS_OK ||
        (s = dev_buf_need(t->dc, &t->sscore, (size_t)groups * b->P * 4, "top-k scratch")) != CLS_OK)
        return s;
    topk_mark(t, TOPK_SELECT, b->dense);
    cl_uint num_docs = b->num_docs, kk = b->kk, P = b->P;
    cl_mem seg = b->seg ? b->seg : b->cand_docs; /* dense rows read no segment */
    dev_arg a[] = {DEV_MEM(b->scores), DEV_MEM(b->cand_docs), DEV_MEM(seg),           DEV_U32(b->key_shift),
                   DEV_U32(b->dense),  DEV_U32(num_docs),     DEV_U32(kk),            DEV_U32(P),
                   DEV_U32(groups),    DEV_MEM(t->sdoc.mem),  DEV_MEM(t->sscore.mem), DEV_MEM(out)};
    return dev_run(t->dc, "topk_select", a, groups, t->dc->prm.wg_topk, step);
}

void topk_free(topk_state *t)
{
    dbuf *bufs[] = {&t->sdoc, &t->sscore, &t->wcand, &t->wscore, &t->wseg, &t->wstate};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
}
