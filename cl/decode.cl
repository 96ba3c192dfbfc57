/* decode.cl: posting-list blocks to docIDs and frequencies, for every codec.
 *
 * One work-group decodes one block (BLOCK_SIZE work-items, one posting each): the localized
 * prefix sum of Ding et al. The group first decodes the block's docID stream (n-1 gaps) into
 * local memory with the index's codec, then runs a prefix sum over x_0 = 0, x_i = gap_i + 1:
 * docID_i = first + sum. The first docID is in the block's metadata, so blocks decode
 * independently and any subset of them can be decoded. The frequency stream (n values
 * tf - 1) is decoded the same way, without the prefix sum.
 *
 * The codec is fixed per index and arrives as -DCODEC=n (cls_codec's values); each codec
 * supplies decode_stream(), which every work-item of the group calls (it may hold barriers)
 * and which leaves value j of the stream in vals[j] for j < n. src/codec_*.c hold the plain-C
 * twins; docs/FORMAT.md the layouts. Streams reaching the device were verified on the host
 * when the index was opened, so nothing here bounds-checks.
 *
 * tasks[2g], tasks[2g+1]: block index and output position of work-group g.
 * blocks[8b ..]: first, last, offset, info, dparam, fparam, max_score, reserved;
 * info = (count-1) | (frequency stream offset after `offset`) << 10. */

#define CODEC_RAW 0
#define CODEC_BP 1
#define CODEC_PFOR 2
#define CODEC_OPTPFD 3
#define CODEC_RICE 4
#ifndef CODEC
#define CODEC CODEC_BP
#endif
#ifndef PFOR_DEPTH
#define PFOR_DEPTH 1     /* pfor: levels of recursive exception coding (index header) */
#endif

#if CODEC == CODEC_RAW
/* raw: one word per value. */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = w[j];
}

#elif CODEC == CODEC_BP
/* bp: param is the bit width. */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, j, param);
}

#elif CODEC == CODEC_PFOR
#error "pfor device decoder: to be written"

#elif CODEC == CODEC_OPTPFD
#error "optpfd device decoder: to be written"

#elif CODEC == CODEC_RICE
#error "rice device decoder: to be written"

#else
#error "unknown CODEC"
#endif

__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void decode_blocks(__global const uint *words, __global const uint *blocks,
                   __global const uint *tasks, uint task_base,
                   __global uint *docs, __global uint *freqs)
{
    __local uint vals[BLOCK_SIZE];
    __local uint scan[BLOCK_SIZE];
    __local uint scratch[DECODE_SCRATCH];
    uint g = get_group_id(0), i = get_local_id(0);
    uint blk = tasks[task_base + 2 * g], dst = tasks[task_base + 2 * g + 1];
    __global const uint *m = blocks + 8 * (size_t)blk;
    uint first = m[0], offset = m[2], info = m[3], dparam = m[4], fparam = m[5];
    uint n = (info & 0x3FFu) + 1, fofs = info >> 10;

    decode_stream(words + offset, n - 1, dparam, vals, scratch);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = (i > 0 && i < n) ? vals[i - 1] + 1 : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint total;
    uint s = wg_scan_incl(scan, x, &total);
    decode_stream(words + offset + fofs, n, fparam, vals, scratch);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        docs[dst + i] = first + s;
        freqs[dst + i] = vals[i] + 1;
    }
}
