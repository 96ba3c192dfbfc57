/* Devices: listing every platform's devices, and resolving a device spec to one of them. */
#define _DEFAULT_SOURCE /* struct dirent's d_name with readdir */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "device/clx.h"
#include "device/clx_guard.h"
#include "util/err.h"

/* Extensions worth showing: they decide which kernel features a later variant may use. */
static const char *const interesting_ext[] = {
    "cl_khr_int64_base_atomics", "cl_khr_global_int32_base_atomics", "cl_khr_local_int32_base_atomics",
    "cl_khr_subgroups", "cl_intel_subgroups", "cl_nv_pragma_unroll", "cl_nv_device_attribute_query",
    "cl_amd_device_attribute_query", "cl_khr_fp64", NULL};

static void get_str(cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS) snprintf(buf, len, "?");
    buf[len - 1] = '\0';
}

cls_status clx_describe_device(cl_platform_id p, cl_device_id d, unsigned pi, unsigned di, cls_device_info *o)
{
    memset(o, 0, sizeof *o);
    o->platform = pi;
    o->device = di;
    CLX_TRY(clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof o->platform_name, o->platform_name, NULL));
    CLX_TRY(clGetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof o->platform_version, o->platform_version, NULL));
    o->platform_name[sizeof o->platform_name - 1] = o->platform_version[sizeof o->platform_version - 1] = '\0';
    get_str(d, CL_DEVICE_NAME, o->name, sizeof o->name);
    get_str(d, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
    get_str(d, CL_DRIVER_VERSION, o->driver_version, sizeof o->driver_version);
    get_str(d, CL_DEVICE_OPENCL_C_VERSION, o->opencl_c_version, sizeof o->opencl_c_version);
    cl_device_type type = 0;
    cl_uint cu = 0, clock = 0;
    cl_ulong gmem = 0, lmem = 0, alloc = 0;
    size_t wg = 0;
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL));
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL));
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, NULL));
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL));
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL));
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof alloc, &alloc, NULL));
    CLX_TRY(clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL));
    o->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    o->compute_units = cu;
    o->clock_mhz = clock;
    o->global_mem = gmem;
    o->local_mem = lmem;
    o->max_alloc = alloc;
    o->max_work_group = wg;
    size_t elen = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &elen) == CL_SUCCESS && elen > 0) {
        char *ext = malloc(elen + 1);
        if (ext && clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, elen, ext, NULL) == CL_SUCCESS) {
            ext[elen] = '\0';
            for (int i = 0; interesting_ext[i]; i++) {
                const char *e = interesting_ext[i];
                size_t n = strlen(e), used = strlen(o->extensions);
                const char *hit = strstr(ext, e);
                if (hit && (hit[n] == ' ' || hit[n] == '\0') && used + n + 2 < sizeof o->extensions)
                    snprintf(o->extensions + used, sizeof o->extensions - used, "%s%s", used ? " " : "", e);
            }
        }
        free(ext);
    }
    return CLS_OK;
}

/* Every enumeration of platforms and devices holds this lock. POCL 3.1 sets its devices up on the
 * first clGetDeviceIDs of the process, and a thread that calls while another is doing so returns
 * at once with no device (CL_DEVICE_NOT_FOUND): engines created in several threads at once found
 * no CPU device. Enumerating one thread at a time costs nothing (it happens once an engine) and
 * leaves a single thread's calls, and so their errors, as they were. */
static pthread_mutex_t enum_lock = PTHREAD_MUTEX_INITIALIZER;

/* Platforms, or none: the ICD loader reports "no platform" as an error code. */
static cls_status platforms(cl_platform_id **out, cl_uint *n)
{
    *out = NULL;
    *n = 0;
    cl_int e = clx_get_platforms(0, NULL, n);
    if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (e == CL_SUCCESS && *n == 0)) {
        *n = 0;
        return CLS_OK;
    }
    if (e != CL_SUCCESS) return clx_fail("clGetPlatformIDs", e);
    *out = calloc(*n, sizeof **out);
    if (!*out) return err_set(CLS_E_NOMEM, "out of memory");
    CLX_TRY(clx_get_platforms(*n, *out, NULL));
    return CLS_OK;
}

/* No platform loaded: either none is installed, or one is (an ICD file names it) and it could
 * not be loaded, which under an address-space limit is a lack of memory, not of a platform. */
static cls_status no_platform(void)
{
    const char *vendors = getenv("OCL_ICD_VENDORS");
    if (!vendors || !*vendors) vendors = "/etc/OpenCL/vendors";
    int installed = 0;
    DIR *d = opendir(vendors);
    for (struct dirent *de; d && !installed && (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        installed = n > 4 && strcmp(de->d_name + n - 4, ".icd") == 0;
    }
    if (d) closedir(d);
    struct rlimit rl;
    int limited = getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
    if (installed && limited)
        return err_set(CLS_E_NOMEM, "an OpenCL platform is installed (%s) but could not be loaded "
                       "under the address-space limit of %llu MB (ulimit -v); '-d ref' runs without OpenCL",
                       vendors, (unsigned long long)(rl.rlim_cur >> 20));
    if (installed)
        return err_set(CLS_E_NODEVICE, "an OpenCL platform is installed (%s) but none could be loaded (out of "
                       "memory, or a broken installation); '-d ref' runs without OpenCL", vendors);
    return err_set(CLS_E_NODEVICE, "no OpenCL platform is installed (for a CPU device, install pocl-opencl-icd); "
                                   "'-d ref' runs the plain-C reference engine without OpenCL");
}

static cls_status devices_of(cl_platform_id p, cl_device_id **out, cl_uint *n)
{
    *out = NULL;
    *n = 0;
    cl_int e = clx_get_devices(p, 0, NULL, n);
    if (e == CL_DEVICE_NOT_FOUND) {
        *n = 0;
        return CLS_OK;
    }
    if (e != CL_SUCCESS) return clx_fail("clGetDeviceIDs", e);
    *out = calloc(*n ? *n : 1, sizeof **out);
    if (!*out) return err_set(CLS_E_NOMEM, "out of memory");
    CLX_TRY(clx_get_devices(p, *n, *out, NULL));
    return CLS_OK;
}

static cls_status list_locked(cls_device_info **out, size_t *count)
{
    cl_platform_id *ps;
    cl_uint np;
    cls_status s = platforms(&ps, &np);
    if (s != CLS_OK) return s;
    cls_device_info *list = NULL;
    size_t n = 0;
    for (cl_uint pi = 0; pi < np && s == CLS_OK; pi++) {
        cl_device_id *ds;
        cl_uint nd;
        s = devices_of(ps[pi], &ds, &nd);
        if (s != CLS_OK) break;
        cls_device_info *grown = nd ? realloc(list, (n + nd) * sizeof *list) : list;
        if (nd && !grown) s = err_set(CLS_E_NOMEM, "out of memory");
        else list = grown;
        for (cl_uint di = 0; di < nd && s == CLS_OK; di++) s = clx_describe_device(ps[pi], ds[di], pi, di, &list[n++]);
        free(ds);
    }
    free(ps);
    if (s != CLS_OK) {
        free(list);
        return s;
    }
    *out = list;
    *count = n;
    return CLS_OK;
}

cls_status cls_devices_list(cls_device_info **out, size_t *count)
{
    if (!out || !count) return err_set(CLS_E_ARG, "cls_devices_list: NULL argument");
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&enum_lock);
    cls_status s = list_locked(out, count);
    pthread_mutex_unlock(&enum_lock);
    return s;
}

void cls_devices_free(cls_device_info *list) { free(list); }

static cls_status select_locked(const char *spec, int by_index, unsigned want_p, unsigned want_d, clx_device *out)
{
    cl_platform_id *ps;
    cl_uint np;
    cls_status s = platforms(&ps, &np);
    if (s != CLS_OK) return s;
    if (np == 0) return no_platform();
    /* Two passes for auto: GPUs first, then CPUs. */
    for (int pass = 0; pass < 2 && s == CLS_OK; pass++) {
        for (cl_uint pi = 0; pi < np && s == CLS_OK; pi++) {
            cl_device_id *ds;
            cl_uint nd;
            s = devices_of(ps[pi], &ds, &nd);
            for (cl_uint di = 0; s == CLS_OK && di < nd; di++) {
                cl_device_type t = 0;
                cl_int e = clGetDeviceInfo(ds[di], CL_DEVICE_TYPE, sizeof t, &t, NULL);
                if (e != CL_SUCCESS) {
                    s = clx_fail("clGetDeviceInfo(CL_DEVICE_TYPE)", e);
                    break;
                }
                int gpu = (t & CL_DEVICE_TYPE_GPU) != 0, cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
                const char *why = NULL;
                if (by_index) {
                    if (pass == 0 && pi == want_p && di == want_d) why = "the platform:device asked for";
                } else if (strcmp(spec, "gpu") == 0) {
                    if (pass == 0 && gpu) why = "first GPU";
                } else if (strcmp(spec, "cpu") == 0) {
                    if (pass == 0 && cpu) why = "first CPU device";
                } else if (pass == 0 ? gpu : cpu) {
                    why = pass == 0 ? "auto: first GPU" : "auto: no GPU, first CPU device";
                }
                if (why) {
                    out->platform = ps[pi];
                    out->device = ds[di];
                    snprintf(out->reason, sizeof out->reason, "%s", why);
                    s = clx_describe_device(ps[pi], ds[di], pi, di, &out->info);
                    free(ds);
                    free(ps);
                    return s;
                }
            }
            free(ds);
        }
    }
    free(ps);
    if (s != CLS_OK) return s;
    return err_set(CLS_E_NODEVICE, "no OpenCL device matches '%s' (see `clsearch devices`)", spec);
}

cls_status clx_select(const char *spec, clx_device *out)
{
    memset(out, 0, sizeof *out);
    unsigned want_p = 0, want_d = 0;
    int by_index = 0;
    char tail;
    if (strcmp(spec, "auto") != 0 && strcmp(spec, "gpu") != 0 && strcmp(spec, "cpu") != 0) {
        if (sscanf(spec, "%u:%u%c", &want_p, &want_d, &tail) != 2)
            return err_set(CLS_E_ARG, "unknown device '%s': use auto, gpu, cpu, ref or P:D (see `clsearch devices`)", spec);
        by_index = 1;
    }
    pthread_mutex_lock(&enum_lock);
    cls_status s = select_locked(spec, by_index, want_p, want_d, out);
    pthread_mutex_unlock(&enum_lock);
    return s;
}

int clx_correct_div(cl_device_id d)
{
    cl_device_fp_config cfg = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof cfg, &cfg, NULL) != CL_SUCCESS) return 0;
    return (cfg & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
}
