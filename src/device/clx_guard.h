/* OpenCL calls that an implementation written in C++ (POCL) can leave by a C++ exception when
 * host memory runs out, wrapped so that the exception ends as CL_OUT_OF_HOST_MEMORY instead of
 * std::terminate (clx_guard.cpp says why this is C++). Same arguments and results as the calls
 * they wrap, for one device. */
#ifndef CLS_CLX_GUARD_H
#define CLS_CLX_GUARD_H

#include <CL/cl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

cl_int clx_get_platforms(cl_uint num, cl_platform_id *ids, cl_uint *n);
cl_int clx_get_devices(cl_platform_id p, cl_uint num, cl_device_id *ids, cl_uint *n); /* CL_DEVICE_TYPE_ALL */
cl_context clx_create_context(cl_device_id dev, cl_int *err);
cl_program clx_program_from_source(cl_context ctx, const char *src, size_t len, cl_int *err);
cl_program clx_program_from_binary(cl_context ctx, cl_device_id dev, const unsigned char *bin, size_t len,
                                   cl_int *bstatus, cl_int *err);
cl_int clx_build_program(cl_program prog, cl_device_id dev, const char *options);

#ifdef __cplusplus
}
#endif

#endif
