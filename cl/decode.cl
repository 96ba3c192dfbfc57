/* decode.cl: posting-list blocks to docIDs and frequencies.
 *
 * One work-group decodes one block (BLOCK_SIZE work-items, one posting each), the localized
 * prefix sum of Ding et al.: work-item i extracts its bit-packed gap, the group runs a
 * prefix sum over x_0 = gap_0, x_i = gap_i + 1, and docID_i = base + sum. The block's base
 * (0, or the previous block's last docID + 1) is stored in its metadata, so blocks decode
 * independently and any subset of blocks can be decoded.
 *
 * tasks[2g], tasks[2g+1]: block index and output position of work-group g.
 * blocks[b] = (last, base, word offset, info), info = (count-1) | bwd << 16 | bwf << 24. */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void decode_blocks(__global const uint *words, __global const uint4 *blocks,
                   __global const uint *tasks, uint task_base,
                   __global uint *docs, __global uint *freqs)
{
    __local uint scan[BLOCK_SIZE];
    uint g = get_group_id(0), i = get_local_id(0);
    uint blk = tasks[task_base + 2 * g], dst = tasks[task_base + 2 * g + 1];
    uint4 m = blocks[blk];
    uint n = (m.w & 0xFFFFu) + 1, bwd = (m.w >> 16) & 63u, bwf = (m.w >> 24) & 63u;
    __global const uint *w = words + m.z;
    uint x = 0;
    if (i < n) x = bits_get(w, i, bwd) + (i > 0 ? 1u : 0u);
    uint total;
    uint s = wg_scan_incl(scan, x, &total);
    if (i < n) {
        docs[dst + i] = m.y + s;
        freqs[dst + i] = bits_get(w + (n * bwd + 31) / 32, i, bwf) + 1;
    }
}
