/* codec_raw.cl: raw's device decoder, the twin of src/codec/codec_raw.c; the decode
 * program compiles it ahead of decode.cl, whose header gives the contract (DECODE_SCRATCH,
 * decode_stream). */

/* raw: one word per value, so any value decodes alone (DECODE_AT, see decode.cl). The strict
 * decoder's rules are all about the stream's shape: parameter 0 and one word a value. */
#define DECODE_SCRATCH 1
#define DECODE_AT 1
inline uint stream_shape_bad(uint n, uint param, uint avail) { return param != 0 || avail != n; }
inline uint decode_at(__global const uint *w, uint last, uint j, uint param)
{
    (void)param;
    return w[min(j, last)];
}
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch, uint avail, uint *bad)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = w[min(j, last)];
    if (DECODE_CHECK) *bad |= stream_shape_bad(n, param, avail);
}
