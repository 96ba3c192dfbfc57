/* codec_raw.cl: raw's device decoder, the twin of src/codec/codec_raw.c; the decode
 * program compiles it ahead of decode.cl, whose header gives the contract (DECODE_SCRATCH,
 * decode_stream). */

/* raw: one word per value, so any value decodes alone (DECODE_AT, see decode.cl). */
#define DECODE_SCRATCH 1
#define DECODE_AT 1
inline uint decode_at(__global const uint *w, uint last, uint j, uint param)
{
    (void)param;
    return w[min(j, last)];
}
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = w[min(j, last)];
}
