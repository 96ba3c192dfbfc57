/* codec_bp.cl: bp's device decoder, the twin of src/codec/codec_bp.c; the decode
 * program compiles it ahead of decode.cl, whose header gives the contract (DECODE_SCRATCH,
 * decode_stream). */

/* bp: param is the bit width. Value j sits at bit j * width, so any value decodes alone
 * (DECODE_AT: decode.cl then skips the trip through local memory and its barriers). The strict
 * decoder's rules are about the shape only: a width of at most 32 and ceil(n * width / 32) words. */
#define DECODE_SCRATCH 1
#define DECODE_AT 1
inline uint stream_shape_bad(uint n, uint param, uint avail)
{
    return param > 32u || (ulong)avail != ((ulong)n * param + 31) / 32;
}
inline uint decode_at(__global const uint *w, uint last, uint j, uint param) { return bits_get(w, last, j, param); }
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch, uint avail, uint *bad)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, last, j, param);
    if (DECODE_CHECK) *bad |= stream_shape_bad(n, param, avail);
}
