/* The OpenCL calls that can throw, called where a C++ exception stops (clx_guard.h).
 *
 * Why C++ in a C library: POCL is written in C++ and, when memory runs short (a `ulimit -v`, a
 * container's limit), LLVM or POCL itself throws std::bad_alloc straight through the OpenCL C
 * API. C code cannot catch it, so it reached std::terminate and killed the process with SIGABRT
 * in the middle of a search. Here the throwing calls run inside try blocks, and an exception
 * becomes CL_OUT_OF_HOST_MEMORY, which the callers report as "out of host memory". This file is
 * the whole of the library's C++: nothing else needs it, and nothing here allocates.
 *
 * What no catch can help: LLVM's own out-of-memory handler aborts in some allocations, and a
 * thread POCL fails to start ends in abort too; clx_program.c checks the address space left
 * before a compile so that a known limit is refused before that point. */
#include "device/clx_guard.h"

#include <new>

extern "C" cl_int clx_get_platforms(cl_uint num, cl_platform_id *ids, cl_uint *n)
{
    try {
        return clGetPlatformIDs(num, ids, n);
    } catch (...) {
        return CL_OUT_OF_HOST_MEMORY;
    }
}

extern "C" cl_int clx_get_devices(cl_platform_id p, cl_uint num, cl_device_id *ids, cl_uint *n)
{
    try {
        return clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, num, ids, n);
    } catch (...) {
        return CL_OUT_OF_HOST_MEMORY;
    }
}

extern "C" cl_context clx_create_context(cl_device_id dev, cl_int *err)
{
    try {
        return clCreateContext(NULL, 1, &dev, NULL, NULL, err);
    } catch (...) {
        if (err) *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
}

extern "C" cl_program clx_program_from_source(cl_context ctx, const char *src, size_t len, cl_int *err)
{
    try {
        return clCreateProgramWithSource(ctx, 1, &src, &len, err);
    } catch (...) {
        if (err) *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
}

extern "C" cl_program clx_program_from_binary(cl_context ctx, cl_device_id dev, const unsigned char *bin, size_t len,
                                              cl_int *bstatus, cl_int *err)
{
    try {
        return clCreateProgramWithBinary(ctx, 1, &dev, &len, &bin, bstatus, err);
    } catch (...) {
        if (err) *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
}

extern "C" cl_int clx_build_program(cl_program prog, cl_device_id dev, const char *options)
{
    try {
        return clBuildProgram(prog, 1, &dev, options, NULL, NULL);
    } catch (...) {
        return CL_OUT_OF_HOST_MEMORY;
    }
}
