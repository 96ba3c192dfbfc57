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
