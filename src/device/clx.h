/* OpenCL plumbing shared by the device engine: error reporting, device selection, tuned
 * parameters, and program builds with the on-disk binary cache. */
#ifndef CLS_CLX_H
#define CLS_CLX_H

#include <CL/cl.h>
#include <stddef.h>

#include "clsearch.h"

/* Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char *clx_errname(cl_int err);
/* Reports a failed OpenCL call by name and code; the device's out-of-memory codes give
 * CLS_E_DEVMEM, CL_OUT_OF_HOST_MEMORY gives CLS_E_NOMEM. */
cls_status clx_fail(const char *call, cl_int err);
/* Evaluates an OpenCL call returning cl_int; on failure returns from the caller. */
#define CLX_TRY(call)                                                                            \
    do {                                                                                         \
        cl_int clx_err_ = (call);                                                                \
        if (clx_err_ != CL_SUCCESS) return clx_fail(#call, clx_err_);                            \
    } while (0)

typedef struct clx_device {
    cl_platform_id platform;
    cl_device_id device;
    cls_device_info info;
    char reason[160]; /* why this device was chosen */
} clx_device;

/* Resolves "auto", "gpu", "cpu" or "P:D" to a device. */
cls_status clx_select(const char *spec, clx_device *out);
cls_status clx_describe_device(cl_platform_id p, cl_device_id d, unsigned pi, unsigned di, cls_device_info *info);

/* ---- Kernel parameters (clx_params.c) --------------------------------------------------- */

/* The values every kernel program is built with (-D NAME=VALUE), and where they came from. */
typedef struct clx_params {
    unsigned wg_intersect, wg_score, wg_topk; /* work-items per query of each family */
    unsigned wg_scan_algo;                    /* in-group prefix sum: 0 HS, 1 work-efficient, 2 warp PTX */
    unsigned scan_wg, scan_items;             /* the device-wide scan (cl/scan.cl) */
    unsigned copy_vec;                        /* vector width of the copy kernels (cl/copy.cl) */
    unsigned or_part_log;                     /* log2 documents per OR partition (cl/or_parts.cl) */
    unsigned or_dense_log;                    /* OR keeps a dense row up to 2^this documents (src/algo/or.c) */
    unsigned wg_rows;                         /* work-items per dense row in topk_rows */
    unsigned or_hash_ratio;                   /* OR by partitions hashes a query of at most this many
                                               * postings a partition instead (src/algo/or.c); 0: none */
    unsigned or_search_cost;                  /* or_score's exact sums: a binary search's step against a
                                               * place read in order (cl/or_parts.cl) */
    unsigned host_wait;                       /* how the host waits for a batch (dev_wait): 0 the
                                               * driver's wait, 1 a completion callback */
    unsigned wg_trees;                        /* work-items a work-group of cl/trees.cl */
    unsigned trees_layout;                    /* 0 node walk, 1 complete level-order trees */
    unsigned trees_docs;                      /* documents a work-item (level-order trees) */
    unsigned trees_rows_local;                /* 1: a work-group's rows staged in local memory */
    unsigned trees_tile;                      /* trees staged in local memory at a time (0: none) */
    unsigned wg_encode;                       /* work-items per block of the index writer's encoders
                                               * (cl/encode.cl) */
    char source[512];                         /* database entry, tuning file, override */
} clx_params;

/* One tunable parameter of the registry: its macro name, the kernel families it shapes, the
 * candidates `clsearch tune` sweeps (those the device allows), and where it sits in clx_params. */
typedef struct clx_tunable {
    const char *name, *families, *what;
    size_t offset;
    int pow2_wg; /* a work-group size: a power of two within the device's maximum */
    unsigned candidates[8];
    unsigned ncandidates;
} clx_tunable;
const clx_tunable *clx_tunables(size_t *n);
/* The registered tunable called name, or NULL; where its value sits in p. */
const clx_tunable *clx_tunable_find(const char *name);
unsigned *clx_param_slot(clx_params *p, const clx_tunable *t);

/* The parameters in force on a device: built-in database (vendor, then generic fallbacks),
 * then the tuning file's entry for this device and driver, then CLSEARCH_PARAMS. Fails,
 * naming the source, on a malformed tuning file or a value the device cannot run. */
cls_status clx_params_for(const cls_device_info *info, clx_params *p);
/* The built-in database's values alone (no tuning file, no CLSEARCH_PARAMS): where tuning starts. */
void clx_params_default(const cls_device_info *info, clx_params *p);
/* Checks p against the registry and the device; from names the source in the message. */
cls_status clx_params_check(const cls_device_info *info, const clx_params *p, const char *from);
/* Applies "NAME=VALUE,..." to p. */
cls_status clx_params_parse(const char *spec, clx_params *p, const char *from);
/* "WG_INTERSECT=256 WG_SCORE=..." */
void clx_params_str(const clx_params *p, char *buf, size_t len);
/* The query program's work-group options (-DWG_...=), each kernel family's width. */
void clx_query_options(const clx_params *p, char *buf, size_t len);
int clx_is_nvidia(const cls_device_info *info);
/* Whether the device is POCL's (its platform's name). */
int clx_is_pocl(const cls_device_info *info);
/* Whether engines of one process may launch kernels on this device from several threads at once. */
int clx_threaded_launches(const cls_device_info *info);
/* The build options that name the device's compiler to the kernels where a kernel must take a
 * form that compiler needs (" -DCLS_POCL=1" on POCL: cl/common.cl), "" elsewhere; every program
 * the engine builds gets them. */
const char *clx_compiler_defines(const cls_device_info *info);
/* "Hillis-Steele", "work-efficient", "warp-shuffle" for WG_SCAN_ALGO 0, 1, 2. */
const char *clx_scan_algo_name(unsigned algo);
/* "hs", "we", "shfl" to 0, 1, 2 (-1 for anything else); the list of those a device runs. */
int clx_scan_algo_parse(const char *s);
const char *clx_scan_algos_for(const cls_device_info *info);

/* The tuning file: $CLSEARCH_TUNING, else tuning.json in the cache folder (0: no folder). */
int clx_tuning_path(char *buf, size_t len);
struct cJSON;
/* Parses the tuning file; *out is NULL (and CLS_OK) when there is none. */
cls_status clx_tuning_load(const char *path, struct cJSON **out);
/* The entry for this device name and driver version, or NULL. */
struct cJSON *clx_tuning_find(const struct cJSON *root, const cls_device_info *info);
/* The program binary cache folder (created): $CLSEARCH_CACHE_DIR, $XDG_CACHE_HOME/clsearch or
 * ~/.cache/clsearch; 0 when there is none. */
int clx_cache_dir(char *buf, size_t len);

/* A kernel source compiled into a binary by tools/embed_cl.cmake: the library's own (cl/) or a
 * program's (the benchmarks' bench/cl/). Tables end with a NULL name. */
typedef struct clx_source {
    const char *name;
    const char *src;
    size_t len;
} clx_source;

/* Builds a kernel program from abi.h, common.cl and the family files named in families (NULL-
 * terminated, e.g. "decode.cl", in that order) for dev with options, from the binary cache when
 * an entry for exactly this source, options, device and driver is there. note receives a short
 * account. */
cls_status clx_build(cl_context ctx, const clx_device *dev, const char *const *families, const char *options,
                     cl_program *out, double *seconds, int *from_cache, char *note, size_t note_len);
/* clx_build whose family files are looked up in extra first (a program's own kernels). */
cls_status clx_build_ex(cl_context ctx, const clx_device *dev, const clx_source *extra, const char *const *families,
                        const char *options, cl_program *out, double *seconds, int *from_cache, char *note,
                        size_t note_len);

/* clCreateKernel and clReleaseKernel, one thread at a time in the process. POCL keeps one
 * reference-counted handle per compiled kernel across contexts, and its count is not safe against
 * threads creating and releasing kernels at once (engines of their own in several threads, on a
 * cold cache): POCL 3.1 asserted "found->ref_count > 0" in pocl_release_dlhandle_cache and ended
 * the process (a fresh root's test_concurrency). The calls take microseconds. */
cl_kernel clx_create_kernel(cl_program prog, const char *name, cl_int *err);
void clx_release_kernel(cl_kernel k);

/* Whether the device rounds single-precision division correctly when asked (OpenCL 1.2's
 * -cl-fp32-correctly-rounded-divide-sqrt); without it scores may differ from the reference in
 * the last bit, and the engine's description says so (clx_engine.c). */
int clx_correct_div(cl_device_id d);

/* Monotonic seconds. */
double clx_now(void);
/* Seconds from first's start to last's end, from profiling events (the queue must profile);
 * 0 when the times are not available. clx_event_span(ev, ev) is one command's time. */
double clx_event_span(cl_event first, cl_event last);

#endif
