/* decode.cl: posting-list blocks to docIDs and frequencies, for every codec.
 *
 * One work-group decodes one block (BLOCK_SIZE work-items, one posting each): the localized
 * prefix sum of Ding et al. The group first decodes the block's docID stream (n-1 gaps) into
 * local memory with the index's codec, then runs a prefix sum over x_0 = 0, x_i = gap_i + 1:
 * docID_i = first + sum. The first docID is in the block's metadata, so blocks decode
 * independently and any subset of them can be decoded. The frequency stream (n values
 * tf - 1) is decoded the same way, without the prefix sum.
 *
 * The codec is fixed per index: the decode program is abi.h, common.cl, the index's codec
 * fragment cl/codec_<name>.cl (src/codec/codec.h: cdc_kernel_file) and this file, so only
 * that codec's decoder is compiled. Every fragment fulfils one contract:
 *   - it defines DECODE_SCRATCH, the uints of local scratch its decoder needs (at least 1);
 *   - it defines
 *       void decode_stream(__global const uint *w, uint last, uint n, uint param,
 *                          __local uint *vals, __local uint *scratch)
 *     which decodes the stream at w of n values (n <= BLOCK_SIZE) with the parameter word the
 *     encoder chose (the block's dparam or fparam) and leaves value j in vals[j] for j < n.
 *     Every work-item of the group calls it, so it may hold barriers (uniformly). It may
 *     write vals from its start (the caller's earlier reads are behind a barrier); the caller
 *     puts a barrier after it before reading vals; scratch[0..DECODE_SCRATCH) is its own for
 *     the call;
 *   - whatever the stream and param hold, it reads no word past w[last] (the words buffer's
 *     last) and writes no local memory outside vals[0..BLOCK_SIZE) and its scratch: cheap
 *     clamps (min) where a value from the stream becomes an index or a count;
 *   - it may use the build options (BLOCK_SIZE, PFOR_DEPTH: defaults where the fragment needs
 *     them) and common.cl's helpers (bits_get, bits_at, wg_scan_incl), nothing of decode.cl;
 *   - where any value of a stream decodes alone (bp, raw), it may also define DECODE_AT and
 *       uint decode_at(__global const uint *w, uint last, uint j, uint param)
 *     giving value j (j < n) under the same read bounds; decode_block then has each work-item
 *     decode its own gap and frequency in registers. That saves the two trips through vals and
 *     four of the block's seven barriers, which on the H100 are most of a block's cost in
 *     or_score (docs/PERFORMANCE.md, "Ranked OR").
 * src/codec/codec_<name>.c holds each decoder's plain-C twin; docs/FORMAT.md the layouts.
 *
 * Trust: cls_index_open checked every block record (counts, extents inside the words, first <=
 * last < num_docs), and the engine verified the words' checksum as it uploaded them. A file
 * forged with consistent checksums still reaches the device, and only `clsearch check` (the
 * strict host decoders) tells it apart; so nothing here may fault on any stream: reads stay
 * inside the words buffer (nwords words), local writes inside their arrays, and each docID is
 * clamped to the block's last, so every later kernel indexing by docID stays below num_docs.
 * On valid streams none of this changes a value.
 *
 * Work-group g decodes the abi_task at word task_base of tasks + g: block metadata (idx_block)
 * and output position (cl/abi.h). */

#ifndef DECODE_SCRATCH
#error "decode.cl follows a codec fragment, cl/codec_<name>.cl, which defines DECODE_SCRATCH and decode_stream"
#endif

/* Decodes block m with the whole group (every work-item calls it: it holds barriers): work-item i
 * gets posting i's docID and frequency in *doc and *tf when i < the returned count n. decode_blocks
 * writes them out; or_score (or_parts.cl) adds them into a partition's accumulators. */
inline uint decode_block(__global const uint *words, uint nwords, __global const idx_block *m, __local uint *vals,
                         __local uint *scan, __local uint *scratch, uint *doc, uint *tf)
{
    uint i = get_local_id(0);
    uint8 mb = vload8(0, (__global const uint *)m); /* the 32-byte record in one load */
    uint first = mb.s0, last = mb.s1, offset = mb.s2, info = mb.s3, dparam = mb.s4, fparam = mb.s5;
    uint n = min(IDX_INFO_COUNT(info), (uint)BLOCK_SIZE), fofs = IDX_INFO_FOFS(info);
    /* each stream's start and the last word it may read (nwords >= 1: buffers are never empty) */
    uint wl = nwords - 1, d0 = min(offset, wl), f0 = min(offset + fofs, wl);
#ifdef DECODE_AT
    (void)vals;
    (void)scratch;
    uint x = (i > 0 && i < n) ? decode_at(words + d0, wl - d0, i - 1, dparam) + 1 : 0;
    uint total, s = wg_scan_incl(scan, x, &total); /* ends with a barrier: scan is free again */
    *doc = min(first + s, last); /* first + s <= last on a valid block */
    *tf = i < n ? decode_at(words + f0, wl - f0, i, fparam) + 1 : 0;
    return n;
#else
    decode_stream(words + d0, wl - d0, n - 1, dparam, vals, scratch);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = (i > 0 && i < n) ? vals[i - 1] + 1 : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint total;
    uint s = wg_scan_incl(scan, x, &total);
    decode_stream(words + f0, wl - f0, n, fparam, vals, scratch);
    barrier(CLK_LOCAL_MEM_FENCE);
    *doc = min(first + s, last); /* first + s <= last on a valid block */
    *tf = i < n ? vals[i] + 1 : 0;
    barrier(CLK_LOCAL_MEM_FENCE); /* vals is free again for the caller's next block */
    return n;
#endif
}

__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void decode_blocks(__global const uint *words, uint nwords, __global const idx_block *blocks,
                   __global const uint *tasks, uint task_base,
                   __global uint *docs, __global uint *freqs)
{
    __local uint vals[BLOCK_SIZE];
    __local uint scan[BLOCK_SIZE];
    __local uint scratch[DECODE_SCRATCH];
    uint g = get_group_id(0), i = get_local_id(0);
    abi_task tk = ((__global const abi_task *)(tasks + task_base))[g];
    if (tk.block == ABI_NO_BLOCK) return; /* uniform: a region's unused tail (block skipping) */
    uint doc, tf, n = decode_block(words, nwords, blocks + tk.block, vals, scan, scratch, &doc, &tf);
    if (i < n) {
        docs[tk.dst + i] = doc;
        freqs[tk.dst + i] = tf;
    }
}

/* One work-group per abi_list: the list's decode tasks, one per block, in list order. */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void expand_lists(__global const abi_list *lists, __global abi_task *tasks)
{
    __global const abi_list *l = lists + get_group_id(0);
    for (uint b = get_local_id(0); b < l->num_blocks; b += BLOCK_SIZE) {
        abi_task t = {l->first_block + b, l->dst + b * BLOCK_SIZE};
        tasks[l->task_base + b] = t;
    }
}
