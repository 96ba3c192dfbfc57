/* copy.cl: the device's memory-bandwidth ceiling, for the benchmark suites only (bench/).
 *
 * A plain copy of COPY_VEC-wide uint vectors (the vector width: 1, 2, 4, 8 or 16 uints per load
 * and store, a registry parameter the copy suite sweeps), each work-item striding over the
 * buffer so that any launch size covers any length; consecutive work-items touch consecutive
 * elements, so every access is coalesced. Achieved bandwidth counts bytes read plus bytes
 * written; the decode and other memory-bound kernels are reported as a fraction of it. */
#ifndef COPY_VEC
#define COPY_VEC 4
#endif
#if COPY_VEC == 1
typedef uint vec_t;
#elif COPY_VEC == 2
typedef uint2 vec_t;
#elif COPY_VEC == 4
typedef uint4 vec_t;
#elif COPY_VEC == 8
typedef uint8 vec_t;
#elif COPY_VEC == 16
typedef uint16 vec_t;
#else
#error "COPY_VEC must be 1, 2, 4, 8 or 16"
#endif

__kernel void copy_strided(__global const vec_t *restrict src, __global vec_t *restrict dst, ulong n)
{
    size_t stride = get_global_size(0);
    for (size_t i = get_global_id(0); i < n; i += stride) dst[i] = src[i];
}

/* The same copy with a contiguous run of elements per work-item: what a CPU device streams
 * best (one core walks one run), what a GPU does worst (neighbouring work-items far apart).
 * The suite runs both and takes the faster as the device's ceiling. */
__kernel void copy_runs(__global const vec_t *restrict src, __global vec_t *restrict dst, ulong n)
{
    size_t per = (n + get_global_size(0) - 1) / get_global_size(0);
    size_t a = get_global_id(0) * per, z = a + per < n ? a + per : n;
    for (size_t i = a; i < z; i++) dst[i] = src[i];
}
