/* Launching kernels and taking their time: device buffers that grow, kernel arguments set and
 * checked by name, commands counted toward named profile steps, and the two kernel families
 * every algorithm shares (decode_blocks, topk_select). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/vec.h"

cl_mem dev_create_buffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
    if (fault_hit(FAULT_DEVICE_ALLOC)) {
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    return clCreateBuffer(ctx, flags, size, host, err);
}

cls_status dev_buf_need(clx_engine *e, dbuf *b, size_t need, const char *what)
{
    if (need < DEV_MIN_BUF) need = DEV_MIN_BUF;
    if (b->mem && b->cap >= need) return CLS_OK;
    if (need > e->dev.info.max_alloc)
        return err_set(CLS_E_DEVMEM, "%s needs %zu bytes, more than the device allows in one buffer (%llu)", what, need,
                       (unsigned long long)e->dev.info.max_alloc);
    dev_buf_release(b);
    /* an eighth of headroom, not doubling: capacities near the budget must not overshoot it twofold */
    size_t cap = need + need / 8;
    if (cap > e->dev.info.max_alloc) cap = need;
    cl_int err;
    b->mem = dev_create_buffer(e->ctx, CL_MEM_READ_WRITE, cap, NULL, &err);
    if (!b->mem || err != CL_SUCCESS) {
        b->mem = NULL;
        b->cap = 0;
        return err_wrap(clx_fail("clCreateBuffer", err), "allocating %s (%zu bytes): ", what, cap);
    }
    b->cap = cap;
    return CLS_OK;
}

void dev_pinned_release(clx_engine *e, dev_pinned *p)
{
    if (p->host) clEnqueueUnmapMemObject(e->queue, p->mem, p->host, 0, NULL, NULL);
    if (p->mem) clReleaseMemObject(p->mem);
    *p = (dev_pinned){0};
}

cls_status dev_pinned_need(clx_engine *e, dev_pinned *p, size_t need, const char *what)
{
    if (need < DEV_MIN_BUF) need = DEV_MIN_BUF;
    if (p->mem && p->cap >= need) return CLS_OK;
    /* exact the first time (staging of a fixed size), an eighth of headroom when it grows */
    const size_t cap = p->cap ? need + need / 8 : need;
    dev_pinned_release(e, p);
    cl_int err;
    p->mem = dev_create_buffer(e->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, cap, NULL, &err);
    if (!p->mem || err != CL_SUCCESS) {
        p->mem = NULL;
        return err_wrap(clx_fail("clCreateBuffer", err), "allocating %s (%zu bytes of pinned host memory): ", what, cap);
    }
    p->host = clEnqueueMapBuffer(e->queue, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, cap, 0, NULL, NULL, &err);
    if (!p->host || err != CL_SUCCESS) {
        p->host = NULL;
        dev_pinned_release(e, p);
        return err_wrap(clx_fail("clEnqueueMapBuffer", err), "mapping %s (%zu bytes): ", what, cap);
    }
    p->cap = cap;
    return CLS_OK;
}

void dev_buf_release(dbuf *b)
{
    if (b->mem) clReleaseMemObject(b->mem);
    b->mem = NULL;
}

/* The index of the kernel called name in e's table, or e->nkernels. */
static unsigned kernel_at(const clx_engine *e, const char *name)
{
    unsigned i = 0;
    while (i < e->nkernels && strcmp(e->kernel_names[i], name) != 0) i++;
    return i;
}

cl_kernel dev_kernel(const clx_engine *e, const char *name)
{
    unsigned i = kernel_at(e, name);
    return i < e->nkernels ? e->kernels[i] : NULL;
}

cls_status dev_add_kernel(clx_engine *e, cl_program prog, const char *name)
{
    if (e->nkernels == DEV_MAX_KERNELS) return err_set(CLS_E_ARG, "more than %u kernels", DEV_MAX_KERNELS);
    cl_int err;
    cl_kernel k = clx_create_kernel(prog, name, &err);
    if (!k || err != CL_SUCCESS) return err_wrap(clx_fail("clCreateKernel", err), "kernel %s: ", name);
    cl_uint nargs = 0;
    err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
    if (err != CL_SUCCESS) {
        clx_release_kernel(k);
        return err_wrap(clx_fail("clGetKernelInfo(CL_KERNEL_NUM_ARGS)", err), "kernel %s: ", name);
    }
    e->kernels[e->nkernels] = k;
    e->kernel_nargs[e->nkernels] = nargs;
    e->kernel_names[e->nkernels++] = name;
    return CLS_OK;
}

/* A slot for one more profiled command, counted toward the step called name (added on first
 * use; the names are static strings): *step. Checked before a command is enqueued where it can
 * be, so a batch that would pass the tables' sizes fails with the limit named instead of
 * writing past them. */
static cls_status profile_slot(clx_engine *e, const char *name, int transfer, unsigned *step)
{
    if (e->nevents == DEV_MAX_EVENTS)
        return err_set(CLS_E_ARG, "more than %u profiled commands in the batches in flight (step %s)", DEV_MAX_EVENTS,
                       name);
    for (unsigned i = 0; i < e->nsteps; i++)
        if (strcmp(e->steps[i].name, name) == 0) {
            if (e->steps[i].transfer != transfer) /* a step is transfers or device work, never both */
                return err_set(CLS_E_ARG, "profile step %s counts both transfers and device work", name);
            *step = i;
            return CLS_OK;
        }
    if (e->nsteps == DEV_MAX_STEPS)
        return err_set(CLS_E_ARG, "more than %u profile steps (adding %s)", DEV_MAX_STEPS, name);
    e->steps[e->nsteps] = (cls_profile_step){.name = name, .transfer = transfer};
    *step = e->nsteps++;
    return CLS_OK;
}

/* Keeps ev for the profile, or releases it where no slot is left (its command still runs). */
static cls_status record(clx_engine *e, cl_event ev, const char *name, int transfer, uint64_t bytes)
{
    unsigned step;
    cls_status s = profile_slot(e, name, transfer, &step);
    if (s != CLS_OK) {
        clReleaseEvent(ev);
        return s;
    }
    e->events[e->nevents++] = (dev_event){.ev = ev, .step = step, .bytes = bytes};
    return CLS_OK;
}

cls_status dev_record(clx_engine *e, cl_event ev, const char *step, uint64_t bytes)
{
    return record(e, ev, step, 1, bytes);
}

cls_status dev_record_fill(clx_engine *e, cl_event ev, const char *step) { return record(e, ev, step, 0, 0); }

cls_status dev_run_n(clx_engine *e, const char *kernel, const dev_arg *args, unsigned nargs, size_t groups, size_t wg,
                     const char *step)
{
    unsigned at = kernel_at(e, kernel);
    if (at == e->nkernels) return err_set(CLS_E_ARG, "no kernel called %s in the engine's programs", kernel);
    if (nargs != e->kernel_nargs[at])
        return err_set(CLS_E_ARG, "kernel %s takes %u arguments, given %u", kernel, e->kernel_nargs[at], nargs);
    cl_kernel k = e->kernels[at];
    for (unsigned i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, i, args[i].size, args[i].ptr);
        if (err != CL_SUCCESS) return err_wrap(clx_fail("clSetKernelArg", err), "kernel %s, argument %u: ", kernel, i);
    }
    if (groups == 0) return CLS_OK;
    unsigned st;
    cls_status s = profile_slot(e, step, 0, &st);
    if (s != CLS_OK) return err_wrap(s, "kernel %s: ", kernel);
    size_t global = groups * wg;
    cl_event ev = NULL;
    cl_int err = fault_hit(FAULT_ENQUEUE) ? CL_OUT_OF_RESOURCES
                                          : clEnqueueNDRangeKernel(e->queue, k, 1, NULL, &global, &wg, 0, NULL, &ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueNDRangeKernel", err), "kernel %s: ", kernel);
    e->events[e->nevents++] = (dev_event){.ev = ev, .step = st};
    return CLS_OK;
}

void dev_profile_collect(clx_engine *e, int ok) { dev_profile_collect_first(e, e->nevents, ok); }

void dev_profile_collect_first(clx_engine *e, unsigned n, int ok)
{
    assert(n <= e->nevents);
    for (unsigned i = 0; i < n; i++) {
        cls_profile_step *st = &e->steps[e->events[i].step];
        if (ok) {
            st->seconds += clx_event_span(e->events[i].ev, e->events[i].ev);
            st->bytes += e->events[i].bytes;
        }
        clReleaseEvent(e->events[i].ev);
    }
    memmove(e->events, e->events + n, (e->nevents - n) * sizeof *e->events);
    e->nevents -= n;
}

void dev_profile_reset(clx_engine *e)
{
    dev_profile_collect(e, 0);
    e->nsteps = 0;
    e->batches = 0;
}

cls_status dev_words_count(cl_mem words, cl_uint *nwords)
{
    size_t wbytes = 0;
    cl_int err = clGetMemObjectInfo(words, CL_MEM_SIZE, sizeof wbytes, &wbytes, NULL);
    if (err != CL_SUCCESS) return clx_fail("clGetMemObjectInfo(CL_MEM_SIZE)", err);
    *nwords = wbytes / 4 > UINT32_MAX ? UINT32_MAX : (cl_uint)(wbytes / 4);
    if (*nwords == 0) return err_set(CLS_E_ARG, "a words buffer of %zu bytes", wbytes);
    return CLS_OK;
}

cls_status dev_decode(clx_engine *e, cl_mem words, cl_mem blocks, cl_mem tasks, cl_uint task_base, size_t ntasks,
                      const char *step)
{
    /* the decoders read no word past the buffer's last, whatever a stream holds (decode.cl) */
    cl_uint nwords;
    cls_status s = dev_words_count(words, &nwords);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(words), DEV_U32(nwords), DEV_MEM(blocks), DEV_MEM(tasks), DEV_U32(task_base),
                   DEV_MEM(e->docs.mem), DEV_MEM(e->freqs.mem)};
    return dev_run(e, "decode_blocks", a, ntasks, e->idx->block_size, step);
}

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
 * so counting wins while rows x k stays small. On an H100 (bench topk, one row of 1,000,000 keys,
 * the whole top-k) k 10,000 took 0.12 ms counting against 0.47 sorting, k 40,000 0.52 against
 * 2.78; from those, the two meet near rows x k = 2 x 10^5 (an estimate: counting grows with the
 * rows, the sort not until they pass the compute units). Past TW_COUNT_MAX the sort ranks them. */
#define TW_COUNT_MAX (1u << 17)

/* Slices a row for the many-group top-k of b's rows; 1: topk_select alone. */
static cl_uint wide_slices(const clx_engine *e, const dev_batch *b, cl_uint rows)
{
    uint64_t cu = e->dev.info.compute_units ? e->dev.info.compute_units : 1;
    if (!b->dense || rows == 0 || rows >= 2 * cu) return 1;
    uint64_t most = b->num_docs / ((uint64_t)e->prm.wg_topk * TW_SLICE_MIN);
    uint64_t g = (TW_GROUPS_PER_CU * cu + rows - 1) / rows;
    if (g > most) g = most;
    if (g > TW_MAX_SLICES) g = TW_MAX_SLICES;
    return g < 2 ? 1 : (cl_uint)g;
}

/* The kernel called name, created from the query program on first use (the many-group top-k's
 * kernels are made only by the engines that take that path); clx_free releases it with the rest. */
static cls_status query_kernel(clx_engine *e, const char *name)
{
    if (dev_kernel(e, name)) return CLS_OK;
    return dev_add_kernel(e, e->prog, name);
}

/* The many-group top-k of rows dense rows, G slices each: survivors (at most k a row) into
 * e->cand (positions, which are docIDs) and e->cscore (keys), one segment a row in e->qseg, the
 * rows' select state (and survivor ranks) in e->useg; then topk_wide_rank puts them in order,
 * B x B groups a row for B = ceil(k / WG_TOPK) blocks of survivors, and where B > 1
 * topk_wide_place writes them out; or, rows x k past TW_COUNT_MAX (or as e->topk_force says),
 * topk_select ranks the segments. Those buffers hold the algorithm's candidates and segments,
 * dead once a dense row is made. */
static cls_status topk_wide(clx_engine *e, const dev_batch *b, cl_uint rows, cl_uint G, cl_mem out, const char *step)
{
    static const char *const names[] = {"topk_wide_init", "topk_wide_hist", "topk_wide_keep", "topk_wide_rank",
                                        "topk_wide_place"};
    cls_status s;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((s = query_kernel(e, names[i])) != CLS_OK) return s;
    size_t wg = e->prm.wg_topk, slices = (size_t)rows * G;
    cl_uint n = b->num_docs, k = b->kk, R = rows, shift = b->key_shift, B = (cl_uint)((k + wg - 1) / wg);
    int count = e->topk_force != DEV_TOPK_WIDE_SELECT && (uint64_t)rows * k <= TW_COUNT_MAX;
    cl_uint ranks = count && B > 1;
    size_t work = (size_t)rows * (TW_STATE + 3 * TW_BINS + (size_t)G * TW_TIES + (ranks ? k : 0)) * 4;
    if ((s = dev_buf_need(e, &e->cand, (size_t)rows * k * 4, "top-k survivors")) != CLS_OK ||
        (s = dev_buf_need(e, &e->cscore, (size_t)rows * k * 4, "top-k survivors")) != CLS_OK ||
        (s = dev_buf_need(e, &e->qseg, (size_t)rows * 8, "top-k segments")) != CLS_OK ||
        (s = dev_buf_need(e, &e->useg, work, "top-k select state")) != CLS_OK)
        return s;
    dev_arg ai[] = {DEV_U32(n), DEV_U32(k), DEV_U32(G), DEV_U32(R), DEV_U32(ranks), DEV_MEM(e->useg.mem),
                    DEV_MEM(e->qseg.mem)};
    if ((s = dev_run(e, "topk_wide_init", ai, rows, wg, step)) != CLS_OK) return s;
    for (cl_uint pass = 0; pass < 3; pass++) { /* 11 + 11 + 10 bits */
        dev_arg ah[] = {DEV_MEM(b->scores), DEV_U32(shift), DEV_U32(n), DEV_U32(G), DEV_U32(pass), DEV_U32(R),
                        DEV_MEM(e->useg.mem)};
        if ((s = dev_run(e, "topk_wide_hist", ah, slices, wg, step)) != CLS_OK) return s;
    }
    dev_arg ak[] = {DEV_MEM(b->scores), DEV_U32(shift),        DEV_U32(n),           DEV_U32(G),
                    DEV_U32(k),         DEV_U32(R),            DEV_MEM(e->useg.mem), DEV_MEM(e->qseg.mem),
                    DEV_MEM(e->cand.mem), DEV_MEM(e->cscore.mem)};
    dev_arg ar[] = {DEV_U32(k),          DEV_U32(R),           DEV_U32(G),             DEV_U32(B),  DEV_MEM(e->useg.mem),
                    DEV_MEM(e->qseg.mem), DEV_MEM(e->cand.mem), DEV_MEM(e->cscore.mem), DEV_MEM(out)};
    if ((s = dev_run(e, "topk_wide_keep", ak, slices, wg, step)) != CLS_OK) return s;
    if (!count) {
        dev_batch sb = *b;
        dev_segments(&sb, e->cscore.mem, e->cand.mem, e->qseg.mem, 0);
        return dev_topk(e, &sb, rows, out, step);
    }
    if ((s = dev_run(e, "topk_wide_rank", ar, (size_t)rows * B * B, wg, step)) != CLS_OK) return s;
    if (!ranks) return CLS_OK;
    return dev_run(e, "topk_wide_place", ar, (size_t)rows * B, wg, step); /* the same arguments */
}

/* Short dense rows (cl/topk.cl: topk_team), a team of ABI_TOPK_TEAM(WG_TOPK) work-items a row,
 * WG_TOPK / team rows a work-group: rows of at most team x ABI_TOPK_TEAM_KEYS keys (registers)
 * at k up to ABI_TOPK_TEAM_K (local memory for the survivors). */
int dev_topk_team_fits(const clx_engine *e, uint32_t num_docs, uint32_t kk)
{
    return kk <= ABI_TOPK_TEAM_K && num_docs <= ABI_TOPK_TEAM(e->prm.wg_topk) * ABI_TOPK_TEAM_KEYS;
}

/* The top-k kernels, in the order of their counters (counters[DEV_C_TOPK + i]: launches in the
 * last search, which -v prints); topk_ran names the last that ranked dense rows (tests,
 * benchmarks: topk_wide's survivors ranked by topk_select leave it topk_wide). */
enum { TK_SELECT, TK_ROWS, TK_TEAM, TK_WIDE };
static const char *const topk_names[] = {"topk_select", "topk_rows", "topk_team", "topk_wide"};
_Static_assert(sizeof topk_names / sizeof topk_names[0] == DEV_C_TOPK_LAST - DEV_C_TOPK + 1,
               "a counter for each top-k kernel (dev.h: enum dev_counter)");

static void topk_mark(clx_engine *e, unsigned i, int dense)
{
    if (dense) e->topk_ran = topk_names[i];
    if (e->counters[DEV_C_TOPK + i].name) e->counters[DEV_C_TOPK + i].value++;
}

static cls_status topk_team(clx_engine *e, const dev_batch *b, cl_uint rows, cl_mem out, const char *step)
{
    cls_status s = query_kernel(e, "topk_team");
    if (s != CLS_OK) return s;
    cl_uint n = b->num_docs, k = b->kk, shift = b->key_shift, wg = e->prm.wg_topk, teams = wg / ABI_TOPK_TEAM(wg);
    dev_arg a[] = {DEV_MEM(b->scores), DEV_U32(shift), DEV_U32(n), DEV_U32(k), DEV_U32(rows), DEV_MEM(out)};
    topk_mark(e, TK_TEAM, 1);
    return dev_run(e, "topk_team", a, (rows + teams - 1) / teams, wg, step);
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

cl_uint dev_topk_rows_cap(const clx_engine *e, uint32_t num_docs, uint32_t kk)
{
    uint64_t n = num_docs, k = kk, wg = e->prm.wg_rows, step = wg * 4 * ABI_TOPK_VEC(e->prm.wg_rows);
    uint64_t p2 = 1, m = k < n ? k : n;
    while (p2 < m) p2 <<= 1;
    uint64_t least = k + step < n ? k + step : n, want = k + step + (k > step / 4 ? k : step / 4);
    if (want > n) want = n;
    if (least < p2) least = p2;
    if (want < least || e->topk_force == DEV_TOPK_ROWS_LEAST) want = least;
    uint64_t fixed = ((uint64_t)TR_BINS + wg + TR_SH) * 4, mem = e->dev.info.local_mem;
    uint64_t room = mem > fixed ? (mem - fixed) / 8 : 0;
    if (want > room) want = room;
    return want >= least ? (cl_uint)want : 0;
}

/* topk_rows over rows dense rows with a buffer of cap entries a row. */
static cls_status topk_rows(clx_engine *e, const dev_batch *b, cl_uint rows, cl_uint cap, cl_mem out, const char *step)
{
    cls_status s = query_kernel(e, "topk_rows");
    if (s != CLS_OK) return s;
    cl_uint n = b->num_docs, k = b->kk, shift = b->key_shift;
    size_t wg = e->prm.wg_rows;
    dev_arg a[] = {DEV_MEM(b->scores), DEV_U32(shift), DEV_U32(n),   DEV_U32(k),
                   DEV_U32(cap),       DEV_U32(rows),  DEV_MEM(out), {((size_t)2 * cap + TR_BINS + wg + TR_SH) * 4, NULL}};
    topk_mark(e, TK_ROWS, 1);
    return dev_run(e, "topk_rows", a, rows, wg, step);
}

cls_status dev_topk(clx_engine *e, const dev_batch *b, cl_uint groups, cl_mem out, const char *step)
{
    cl_uint G = wide_slices(e, b, groups);
    /* the survivors' buffers must not be the rows themselves */
    if (G > 1 && b->scores != e->cand.mem && b->scores != e->cscore.mem && b->scores != e->useg.mem) {
        topk_mark(e, TK_WIDE, 1);
        return topk_wide(e, b, groups, G, out, step);
    }
    if (b->dense && !e->topk_force && dev_topk_team_fits(e, b->num_docs, b->kk)) return topk_team(e, b, groups, out, step);
    if (b->dense && e->topk_force != DEV_TOPK_SELECT) {
        cl_uint cap = dev_topk_rows_cap(e, b->num_docs, b->kk);
        if (cap) return topk_rows(e, b, groups, cap, out, step);
    }
    topk_mark(e, TK_SELECT, b->dense);
    cl_uint num_docs = b->num_docs;
    cl_mem seg = b->seg ? b->seg : b->cand_docs; /* dense rows read no segment */
    dev_arg a[] = {DEV_MEM(b->scores), DEV_MEM(b->cand_docs), DEV_MEM(seg),        DEV_U32(b->key_shift),
                   DEV_U32(b->dense),  DEV_U32(num_docs),     DEV_U32(b->kk),      DEV_U32(b->P),
                   DEV_U32(groups),    DEV_MEM(e->sdoc.mem),  DEV_MEM(e->sscore.mem), DEV_MEM(out)};
    return dev_run(e, "topk_select", a, groups, e->prm.wg_topk, step);
}

cls_status dev_upload(clx_engine *e, dbuf *b, const void *data, size_t bytes, const char *what)
{
    cls_status s = dev_buf_need(e, b, bytes, what);
    if (s == CLS_OK && bytes) CLX_TRY(clEnqueueWriteBuffer(e->queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL));
    return s;
}

cls_status dev_topk_rows(clx_engine *e, uint32_t nq, uint32_t N, uint32_t k, dev_batch *b)
{
    uint32_t P = plan_scratch(k);
    size_t out_len = ABI_OUT_WORDS((size_t)nq, k);
    abi_query *none = calloc((size_t)nq + 1, sizeof *none); /* empty descriptors: top-k reads none of them */
    if (!none || !vec_reserve(&e->h_out, &e->h_out_cap, out_len + 1, 4)) {
        free(none);
        return err_set(CLS_E_NOMEM, "out of memory");
    }
    cls_status s;
    if ((s = dev_buf_need(e, &e->acc, (size_t)nq * N * 4, "score rows")) != CLS_OK ||
        (s = dev_upload(e, &e->in, none, (size_t)nq * sizeof *none, "query descriptors")) != CLS_OK ||
        (s = dev_buf_need(e, &e->cand, 4, "candidates")) != CLS_OK ||
        (s = dev_buf_need(e, &e->sdoc, (size_t)nq * P * 4, "top-k scratch")) != CLS_OK ||
        (s = dev_buf_need(e, &e->sscore, (size_t)nq * P * 4, "top-k scratch")) != CLS_OK ||
        (s = dev_buf_need(e, &e->out, out_len * 4, "results")) != CLS_OK) {
        free(none);
        return s;
    }
    free(none);
    *b = (dev_batch){.e = e, .nq = nq, .num_docs = N, .in = e->in.mem, .kk = k, .P = P, .scores = e->acc.mem,
                     .cand_docs = e->cand.mem, .dense = 1};
    return CLS_OK;
}
