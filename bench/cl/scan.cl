/* scan.cl: a device-wide inclusive prefix sum of 32-bit unsigned integers (wrapping), the
 * primitive under block decoding, for the benchmark suites (bench/bench_scan.c) to measure
 * variants of against the copy ceiling and torch.cumsum. Two methods:
 *
 * Single pass with decoupled look-back (Merrill and Garland), scan_lookback: each element is
 * read once and written once (8 bytes). A work-group takes the next tile number from an atomic
 * ticket, so every tile before its own has started (whatever order the device launches groups
 * in, POCL's threads included) and waiting on them cannot deadlock; it scans its tile, publishes
 * the tile's total as an aggregate, then walks back over its predecessors' published words,
 * adding aggregates until it meets an inclusive prefix, publishes its own inclusive prefix and
 * writes its elements with the sum of the tiles before it added. A published word is 64 bits,
 * written by one atomic exchange so the value and its flag arrive together: the low half the
 * value, the high half (run << 2) | flag, where run numbers the scan since the state was zeroed,
 * so an earlier run's words read as "not yet" and the state needs no clearing between runs
 * (the ticket, likewise, only grows: a run's tiles are first .. first + tiles - 1).
 *
 * Three passes, the classic reduce-then-scan over tiles (16 bytes an element):
 *   scan_tiles   each work-group scans a tile of SCAN_WG x SCAN_ITEMS elements: every
 *                work-item scans its SCAN_ITEMS consecutive elements in registers, the group
 *                scans the per-item totals in local memory (the variant), and each element
 *                gets its item's exclusive offset; the tile's total goes to sums[group];
 *   (recursion)  the host scans sums the same way until one tile holds them;
 *   scan_add     every element of tile g > 0 gets the inclusive sum of tiles 0..g-1.
 *
 * The in-group scan is common.cl's wg_scan_incl, so its variants (WG_SCAN_ALGO: Hillis-Steele,
 * work-efficient, NVIDIA warp shuffles) are the very ones the engine's decode, intersection
 * and top-k kernels run; this suite measures them at device scale. */
#ifndef SCAN_WG
#define SCAN_WG 256
#endif
#ifndef SCAN_ITEMS
#define SCAN_ITEMS 8
#endif

__kernel __attribute__((reqd_work_group_size(SCAN_WG, 1, 1)))
void scan_tiles(__global const uint *in, __global uint *out, __global uint *sums, uint n)
{
    __local uint buf[SCAN_WG];
    size_t base = (size_t)get_group_id(0) * SCAN_WG * SCAN_ITEMS + (size_t)get_local_id(0) * SCAN_ITEMS;
    uint v[SCAN_ITEMS], acc = 0;
    for (uint j = 0; j < SCAN_ITEMS; j++) {
        v[j] = base + j < n ? in[base + j] : 0;
        acc += v[j];
        v[j] = acc;
    }
    uint total;
    uint off = wg_scan_incl(buf, acc, &total) - acc;
    for (uint j = 0; j < SCAN_ITEMS; j++)
        if (base + j < n) out[base + j] = v[j] + off;
    if (get_local_id(0) == 0) sums[get_group_id(0)] = total;
}

/* out[i] += scanned[g - 1] for every element of tile g > 0 (scanned: inclusive tile sums). */
__kernel __attribute__((reqd_work_group_size(SCAN_WG, 1, 1)))
void scan_add(__global uint *out, __global const uint *scanned, uint n)
{
    uint g = get_group_id(0);
    if (g == 0) return;
    uint add = scanned[g - 1];
    size_t base = (size_t)g * SCAN_WG * SCAN_ITEMS;
    for (uint j = get_local_id(0); j < SCAN_WG * SCAN_ITEMS; j += SCAN_WG)
        if (base + j < n) out[base + j] += add;
}

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define LB_AGGREGATE 1u /* the tile's own total */
#define LB_PREFIX 2u    /* the sum of tiles 0..t, inclusive */

inline ulong lb_word(uint run, uint flag, uint value)
{
    return ((ulong)((run << 2) | flag) << 32) | value;
}

/* A work-item's SCAN_ITEMS consecutive elements from base (their first at a multiple of
 * SCAN_ITEMS), 0 past n. A whole run with SCAN_ITEMS a multiple of 4 moves as 16-byte vectors
 * (aligned: the buffer is, and base is a multiple of 4): a quarter of the memory instructions of
 * scalar ones, each of which touched a 32-byte sector per work-item for 4 bytes of it. */
inline void lb_load(__global const uint *in, size_t base, uint n, uint whole, uint *v)
{
#if SCAN_ITEMS % 4 == 0
    if (whole) {
        __global const uint4 *p = (__global const uint4 *)(in + base);
        for (uint j = 0; j < SCAN_ITEMS / 4; j++) {
            uint4 x = p[j];
            v[4 * j] = x.s0;
            v[4 * j + 1] = x.s1;
            v[4 * j + 2] = x.s2;
            v[4 * j + 3] = x.s3;
        }
        return;
    }
#endif
    for (uint j = 0; j < SCAN_ITEMS; j++) v[j] = base + j < n ? in[base + j] : 0;
}

inline void lb_store(__global uint *out, size_t base, uint n, uint whole, const uint *v)
{
#if SCAN_ITEMS % 4 == 0
    if (whole) {
        __global uint4 *p = (__global uint4 *)(out + base);
        for (uint j = 0; j < SCAN_ITEMS / 4; j++) p[j] = (uint4)(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
        return;
    }
#endif
    for (uint j = 0; j < SCAN_ITEMS; j++)
        if (base + j < n) out[base + j] = v[j];
}

/* Predecessors looked at at once: one per work-item of the first LB_WINDOW (a warp's width),
 * so a tile behind many in flight walks back 32 tiles a step rather than one. */
#define LB_WINDOW (SCAN_WG < 32 ? SCAN_WG : 32)

/* state: one word per tile, zeroed before the first run; run: 1, 2, ... (below 2^30); first: the
 * ticket's value when this run starts. */
__kernel __attribute__((reqd_work_group_size(SCAN_WG, 1, 1)))
void scan_lookback(__global const uint *in, __global uint *out, volatile __global ulong *state,
                   volatile __global uint *ticket, uint run, uint first, uint n)
{
    __local uint buf[SCAN_WG];
    __local uint win_val[LB_WINDOW], win_flag[LB_WINDOW];
    __local uint sh[3]; /* tile number, sum of the tiles before it, look-back finished */
    uint lid = get_local_id(0);
    if (lid == 0) {
        sh[0] = atomic_inc(ticket) - first;
        sh[1] = 0;
        sh[2] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint t = sh[0];
    size_t base = (size_t)t * SCAN_WG * SCAN_ITEMS + (size_t)lid * SCAN_ITEMS;
    uint v[SCAN_ITEMS], acc = 0;
    uint whole = base + SCAN_ITEMS <= n; /* no barrier depends on it */
    lb_load(in, base, n, whole, v);
    for (uint j = 0; j < SCAN_ITEMS; j++) {
        acc += v[j];
        v[j] = acc;
    }
    uint total;
    uint off = wg_scan_incl(buf, acc, &total) - acc;
    if (lid == 0) atom_xchg(&state[t], lb_word(run, t == 0 ? LB_PREFIX : LB_AGGREGATE, total));
    /* look back from tile t - 1, a window at a time; the trip count is the group's (sh[2]) */
    for (long top = (long)t - 1; t > 0; top -= LB_WINDOW) {
        if (lid < LB_WINDOW) {
            long j = top - (long)lid;
            ulong w = 0;
            /* tile j has started (its ticket came first), so it publishes soon; j < 0 lies past
             * tile 0's prefix, where the walk stops anyway. A plain load of the aligned 64-bit
             * word (volatile: from L2 each time), not an atomic add of 0: a read-modify-write at
             * L2 for every poll of every window was the look-back's main cost. The word was
             * written whole by one exchange, and an aligned 64-bit load sees it whole on the
             * devices this runs on (NVIDIA, AMD, POCL on x86-64); the value kept is the one whose
             * run matched. */
            if (j >= 0)
                do w = state[j]; while (((uint)(w >> 32) >> 2) != run);
            win_val[lid] = (uint)w;
            win_flag[lid] = j >= 0 ? (uint)(w >> 32) & 3u : 0u;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            uint sum = 0, done = 0;
            for (uint i = 0; i < LB_WINDOW && !done; i++) {
                sum += win_val[i];
                done = win_flag[i] == LB_PREFIX;
            }
            sh[1] += sum;
            sh[2] = done;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sh[2]) break;
    }
    if (lid == 0 && t > 0) atom_xchg(&state[t], lb_word(run, LB_PREFIX, sh[1] + total));
    off += sh[1];
    for (uint j = 0; j < SCAN_ITEMS; j++) v[j] += off;
    lb_store(out, base, n, whole, v);
}
