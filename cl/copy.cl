/* copy.cl: the device's memory-bandwidth ceiling, for the benchmark suites only (bench/).
 *
 * A plain copy of 16-byte elements, each work-item striding over the buffer so that any
 * launch size covers any length; consecutive work-items touch consecutive elements, so every
 * access is coalesced. Achieved bandwidth counts bytes read plus bytes written; the decode and
 * other memory-bound kernels are reported as a fraction of it. */
__kernel void copy_u4(__global const uint4 *restrict src, __global uint4 *restrict dst, ulong n)
{
    size_t stride = get_global_size(0);
    for (size_t i = get_global_id(0); i < n; i += stride) dst[i] = src[i];
}

/* The same copy with a contiguous run of elements per work-item: what a CPU device streams
 * best (one core walks one run), what a GPU does worst (neighbouring work-items far apart).
 * The suite runs both and takes the faster as the device's ceiling. */
__kernel void copy_u4_runs(__global const uint4 *restrict src, __global uint4 *restrict dst, ulong n)
{
    size_t per = (n + get_global_size(0) - 1) / get_global_size(0);
    size_t a = get_global_id(0) * per, z = a + per < n ? a + per : n;
    for (size_t i = a; i < z; i++) dst[i] = src[i];
}
