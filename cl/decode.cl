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
 *                          __local uint *vals, __local uint *scratch,
 *                          uint avail, uint *bad)
 *     which decodes the stream at w of n values (n <= BLOCK_SIZE) with the parameter word the
 *     encoder chose (the block's dparam or fparam) and leaves value j in vals[j] for j < n.
 *     Every work-item of the group calls it, so it may hold barriers (uniformly). It may
 *     write vals from its start (the caller's earlier reads are behind a barrier); the caller
 *     puts a barrier after it before reading vals; scratch[0..DECODE_SCRATCH) is its own for
 *     the call; where the program is built with -DDECODE_CHECK=1 (the engine's check program,
 *     below), it also tests every rule its host twin's strict decoder has for a stream of
 *     avail words and ORs 1 into *bad on a work-item that found one broken (any work-item; the
 *     caller combines them); otherwise avail and bad are unused;
 *   - whatever the stream and param hold, it reads no word past w[last] (the words buffer's
 *     last) and writes no local memory outside vals[0..BLOCK_SIZE) and its scratch: cheap
 *     clamps (min) where a value from the stream becomes an index or a count;
 *   - it may use the build options (BLOCK_SIZE, PFOR_DEPTH: defaults where the fragment needs
 *     them) and common.cl's helpers (bits_get, bits_at, wg_scan_incl), nothing of decode.cl;
 *   - where any value of a stream decodes alone (bp, raw), it may also define DECODE_AT and
 *       uint decode_at(__global const uint *w, uint last, uint j, uint param)
 *     giving value j (j < n) under the same read bounds, and
 *       uint stream_shape_bad(uint n, uint param, uint avail)
 *     testing the strict decoder's rules (all about the shape, for such codecs); decode_block
 *     then has each work-item decode its own gap and frequency in registers. That saves the
 *     two trips through vals and four of the block's seven barriers, which are most of what a
 *     block costs to decode for ranked OR (docs/PERFORMANCE.md, "Ranked OR by docID-range
 *     partitions, decoding in the partitions").
 * src/codec/codec_<name>.c holds each decoder's plain-C twin; docs/FORMAT.md the layouts.
 *
 * Trust: cls_index_open checked every block record (counts, extents inside the words, first <=
 * last < num_docs), the engine verified the words' checksum as it uploaded them, and before any
 * search it ran check_blocks (below) over every block: the strict decoders' rules, on the device.
 * A file forged with consistent checksums is refused there, naming the block as `clsearch check`
 * does. The decoders still never fault on any stream, whatever it holds: reads stay inside the
 * words buffer (nwords words), local writes inside their arrays, and each docID is clamped to the
 * block's last, so every later kernel indexing by docID stays below num_docs. On valid streams
 * none of this changes a value.
 *
 * Work-group g decodes the abi_task at word task_base of tasks + g: block metadata (idx_block)
 * and output position (cl/abi.h). */

#ifndef DECODE_SCRATCH
#error "decode.cl follows a codec fragment, cl/codec_<name>.cl, which defines DECODE_SCRATCH and decode_stream"
#endif

/* Decodes block m with the whole group (every work-item calls it: it holds barriers): work-item i
 * gets posting i's docID and frequency in *doc and *tf when i < the returned count n. The block's
 * words start at its record's offset less base (the words buffer may hold a stretch of the index
 * that starts at word base) and are bwords long.
 *
 * Built with DECODE_CHECK 1, every rule of the host's strict decoders (src/index/index_file.c:
 * decode_strict, src/codec/codec_*.c) is tested as well, and *bad is nonzero on a work-item that
 * found one broken: the streams' shapes and values (each fragment's decode_stream or
 * stream_shape_bad), docIDs that increase from first and end exactly at last, frequencies below
 * 2^32 - 1. The checks are a separate program rather than an argument so that the search's
 * decoders hold none of their code whether or not a compiler inlines this function. */
inline uint decode_block_at(__global const uint *words, uint nwords, __global const idx_block *m, uint base,
                            uint bwords, __local uint *vals, __local uint *scan, __local uint *scratch,
                            uint *doc, uint *tf, uint *bad)
{
    uint i = get_local_id(0);
    uint8 mb = vload8(0, (__global const uint *)m); /* the 32-byte record in one load */
    uint first = mb.s0, last = mb.s1, offset = mb.s2 - base, info = mb.s3, dparam = mb.s4, fparam = mb.s5;
    uint n = min(IDX_INFO_COUNT(info), (uint)BLOCK_SIZE), fofs = IDX_INFO_FOFS(info);
    /* each stream's start and the last word it may read (nwords >= 1: buffers are never empty) */
    uint wl = nwords - 1, d0 = min(offset, wl), f0 = min(offset + fofs, wl);
    uint wrong = DECODE_CHECK && fofs > bwords, favail = bwords - fofs;
#ifdef DECODE_AT
    (void)vals;
    (void)scratch;
    uint gap = (i > 0 && i < n) ? decode_at(words + d0, wl - d0, i - 1, dparam) : 0;
    uint x = (i > 0 && i < n) ? gap + 1 : 0;
    uint total, s = wg_scan_incl(scan, x, &total); /* ends with a barrier: scan is free again */
    uint f = i < n ? decode_at(words + f0, wl - f0, i, fparam) : 0;
    if (DECODE_CHECK) wrong |= stream_shape_bad(n - 1, dparam, fofs) | stream_shape_bad(n, fparam, favail);
#else
    decode_stream(words + d0, wl - d0, n - 1, dparam, vals, scratch, fofs, &wrong);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = (i > 0 && i < n) ? vals[i - 1] + 1 : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint total;
    uint s = wg_scan_incl(scan, x, &total);
    decode_stream(words + f0, wl - f0, n, fparam, vals, scratch, favail, &wrong);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint f = i < n ? vals[i] : 0;
    barrier(CLK_LOCAL_MEM_FENCE); /* vals is free again for the caller's next block */
#endif
    uint d = first + s;
    /* a docID no larger than the one before (x is 0 or the sum wrapped: past 2^32, so past last),
     * the last one not at last, a frequency of 2^32 */
    if (DECODE_CHECK) wrong |= (i > 0 && i < n && d <= d - x) || (i + 1 == n && d != last) || (i < n && f == 0xFFFFFFFFu);
    if (DECODE_CHECK) *bad = wrong;
    *doc = min(d, last); /* first + s <= last on a valid block */
    *tf = i < n ? f + 1 : 0;
    return n;
}

/* decode_block_at over the whole words buffer: what the search's kernels decode with (the engine
 * checked every block before its first search: check_blocks below). */
inline uint decode_block(__global const uint *words, uint nwords, __global const idx_block *m, __local uint *vals,
                         __local uint *scan, __local uint *scratch, uint *doc, uint *tf)
{
    uint bad = 0;
    return decode_block_at(words, nwords, m, 0, 0, vals, scan, scratch, doc, tf, &bad);
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

/* One work-group per block: the block decoded with every check of the host's strict decoders,
 * and its max_score compared with the largest contribution of its postings at its term's weight
 * (weights[g], the block's idf or 1 for an impact index) and the norms at the index header's k1
 * and b, as cls_index_check compares them: the same bits where division is correctly rounded
 * (exact != 0), else within 4 units in the last place. A block that breaks any rule puts its
 * number, index_base + block0 + g, into *first_bad with atomic_min, so the host learns the lowest
 * and asks the strict decoders for the message.
 *
 * blocks holds nblocks records whose words are words[0..): word_base is the index word at
 * words[0] (0 when the whole index is there) and word_end the index word just after the last
 * block's. The engine runs this once over the whole index before any search (clx_create), from
 * the program built with -DDECODE_CHECK=1. */
#if DECODE_CHECK
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void check_blocks(__global const uint *words, uint nwords, __global const idx_block *blocks, uint nblocks,
                  uint word_base, uint word_end, __global const float *norms, __global const float *weights,
                  uint block0, uint index_base, uint exact, __global uint *first_bad)
{
    __local uint vals[BLOCK_SIZE];
    __local uint scan[BLOCK_SIZE];
    __local uint scratch[DECODE_SCRATCH];
    uint g = get_group_id(0), lid = get_local_id(0), b = block0 + g;
    uint start = blocks[b].offset, end = b + 1 < nblocks ? blocks[b + 1].offset : word_end;
    uint doc, tf, bad, n = decode_block_at(words, nwords, blocks + b, word_base, end > start ? end - start : 0, vals,
                                           scan, scratch, &doc, &tf, &bad);
    /* the largest contribution, 0 at least, as check_block folds it; non-negative floats order as
     * their bits */
    float c = lid < n ? bm25_contrib(weights[g], tf, norms[doc]) : 0.0f;
    scan[lid] = as_uint(c > 0.0f ? c : 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = BLOCK_SIZE / 2; h > 0; h >>= 1) {
        if (lid < h) scan[lid] = max(scan[lid], scan[lid + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        uint best = scan[0], stored = as_uint(blocks[b].max_score);
        bad |= exact ? best != stored : abs_diff(best, stored) > 4u;
    }
    if (bad) atomic_min(first_bad, index_base + b);
}
#endif
