/* scan.cl: a device-wide inclusive prefix sum of 32-bit unsigned integers (wrapping), the
 * primitive under block decoding, for the benchmark suites (bench/bench_scan.c) to measure
 * variants of against the copy ceiling and torch.cumsum.
 *
 * Three passes, the classic reduce-then-scan over tiles:
 *   scan_tiles   each work-group scans a tile of SCAN_WG x SCAN_ITEMS elements: every
 *                work-item scans its SCAN_ITEMS consecutive elements in registers, the group
 *                scans the per-item totals in local memory (the variant), and each element
 *                gets its item's exclusive offset; the tile's total goes to sums[group];
 *   (recursion)  the host scans sums the same way until one tile holds them;
 *   scan_add     every element of tile g > 0 gets the inclusive sum of tiles 0..g-1.
 *
 * Variants (SCAN_ALGO): 0 Hillis-Steele (log2(WG) steps, every item adding at each step, as
 * the batched-intersection paper uses), 1 work-efficient up-sweep/down-sweep (Blelloch: 2 (WG-1)
 * additions). A warp-shuffle variant for NVIDIA is not written yet. */
#ifndef SCAN_WG
#define SCAN_WG 256
#endif
#ifndef SCAN_ITEMS
#define SCAN_ITEMS 8
#endif
#ifndef SCAN_ALGO
#define SCAN_ALGO 0
#endif

/* Exclusive scan of x over the work-group; *total gets the sum. buf: 2 * SCAN_WG uints. */
inline uint group_scan_excl(__local uint *buf, uint x, uint *total)
{
    uint lid = get_local_id(0);
#if SCAN_ALGO == 0
    /* Hillis-Steele, double-buffered: one barrier per step */
    uint pin = 0;
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < SCAN_WG; off <<= 1) {
        uint v = buf[pin * SCAN_WG + lid];
        if (lid >= off) v += buf[pin * SCAN_WG + lid - off];
        pin ^= 1u;
        buf[pin * SCAN_WG + lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint incl = buf[pin * SCAN_WG + lid];
    *total = buf[pin * SCAN_WG + SCAN_WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return incl - x;
#else
    /* Blelloch: up-sweep builds partial sums in place, down-sweep distributes them */
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = 1; d < SCAN_WG; d <<= 1) {
        uint i = (lid + 1) * 2 * d - 1;
        if (i < SCAN_WG) buf[i] += buf[i - d];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *total = buf[SCAN_WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) buf[SCAN_WG - 1] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = SCAN_WG >> 1; d >= 1; d >>= 1) {
        uint i = (lid + 1) * 2 * d - 1;
        if (i < SCAN_WG) {
            uint t = buf[i - d];
            buf[i - d] = buf[i];
            buf[i] += t;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint r = buf[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#endif
}

__kernel __attribute__((reqd_work_group_size(SCAN_WG, 1, 1)))
void scan_tiles(__global const uint *in, __global uint *out, __global uint *sums, uint n)
{
    __local uint buf[2 * SCAN_WG];
    size_t base = (size_t)get_group_id(0) * SCAN_WG * SCAN_ITEMS + (size_t)get_local_id(0) * SCAN_ITEMS;
    uint v[SCAN_ITEMS], acc = 0;
    for (uint j = 0; j < SCAN_ITEMS; j++) {
        v[j] = base + j < n ? in[base + j] : 0;
        acc += v[j];
        v[j] = acc;
    }
    uint total;
    uint off = group_scan_excl(buf, acc, &total);
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
