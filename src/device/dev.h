/* OpenCL plumbing for the layers above (src/algo, src/engine): one device's context and queue,
 * the kernels created from its programs, buffers that grow, kernel launches whose arguments are
 * counted and checked, and the profile of the commands in flight by named step. It knows no
 * index, query or algorithm. */
#ifndef CLS_DEVICE_DEV_H
#define CLS_DEVICE_DEV_H

#include "device/clx.h"

#define DEV_MIN_BUF 64u

/* A device buffer that only grows (contents are not kept when it does). */
typedef struct dbuf {
    cl_mem mem;
    size_t cap; /* bytes */
} dbuf;

/* Host memory that the device reads or writes by DMA (a transfer from pageable memory is staged
 * by the driver, and may wait for the commands queued before it): a buffer of
 * CL_MEM_ALLOC_HOST_PTR, mapped once, its mapping kept while the buffer lives. */
typedef struct dev_pinned {
    cl_mem mem;
    void *host;
    size_t cap; /* bytes */
} dev_pinned;

/* A command in flight and the profile step it counts toward. */
typedef struct dev_event {
    cl_event ev;
    unsigned step;
    uint64_t bytes;
} dev_event;

/* A kernel of the context's programs: its name (a static string) and the parameters it declares. */
typedef struct dev_kernel_entry {
    cl_kernel k;
    const char *name;
    cl_uint nargs;
} dev_kernel_entry;

/* One device, its context and in-order profiling queue, its kernels and the profile of the
 * commands enqueued since the last collection. The tables grow with what is registered. */
typedef struct dev_ctx {
    clx_device dev;
    clx_params prm;
    cl_context ctx;
    cl_command_queue queue;
    dev_kernel_entry *kernels;
    unsigned nkernels;
    size_t kernels_cap;
    cls_profile_step *steps; /* named steps of the profile (the last search's, for an engine) */
    unsigned nsteps;
    size_t steps_cap;
    dev_event *events;       /* commands not yet taken into the profile */
    unsigned nevents;
    size_t events_cap;
    double build_secs;       /* programs built (dev_build): their time together, and */
    int from_cache;          /* whether all of them came from the program cache */
} dev_ctx;

/* Creates the context and queue for dc->dev (set by the caller). */
cls_status dev_open(dev_ctx *dc);
/* Releases the kernels, the queue and the context (events not yet collected are dropped). */
void dev_close(dev_ctx *dc);

/* clx_build on dc's context, the time and cache use added to dc's; note receives the build's note. */
cls_status dev_build(dev_ctx *dc, const char *const *files, const char *options, cl_program *out, char *note,
                     size_t note_len);

/* Waits for ev's command to end and checks how it ended (what names it in errors). How the host
 * waits is the device's HOST_WAIT parameter: 0, the driver's own wait (clWaitForEvents), which
 * on NVIDIA keeps a core spinning for as long as the device works; 1, a completion callback
 * (clSetEventCallback) that wakes this thread, asleep on a condition meanwhile. */
cls_status dev_wait(dev_ctx *dc, cl_event ev, const char *what);

/* Grows p to at least need bytes (what names it in errors); p must not be in use by a command.
 * Its contents are not kept. */
cls_status dev_pinned_need(dev_ctx *dc, dev_pinned *p, size_t need, const char *what);
void dev_pinned_release(dev_ctx *dc, dev_pinned *p);
/* Grows b to at least need bytes (what names it in errors). */
cls_status dev_buf_need(dev_ctx *dc, dbuf *b, size_t need, const char *what);
/* clCreateBuffer, failing as CLSEARCH_FAULT's device-alloc faults (util/fault.h) say. */
cl_mem dev_create_buffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err);
void dev_buf_release(dbuf *b);
/* Grows b and writes bytes of data into it, blocking. */
cls_status dev_upload(dev_ctx *dc, dbuf *b, const void *data, size_t bytes, const char *what);
/* The 32-bit words of a words buffer (at least 1, at most 2^32 - 1): decoders clamp their reads to it. */
cls_status dev_words_count(cl_mem words, cl_uint *nwords);

/* One kernel argument. DEV_MEM(x) and DEV_U32(x) take lvalues (their address is kept). */
typedef struct dev_arg {
    size_t size;
    const void *ptr;
} dev_arg;
#define DEV_MEM(m) ((dev_arg){sizeof(cl_mem), &(m)})
#define DEV_U32(v) ((dev_arg){sizeof(cl_uint), &(v)})

/* Sets kernel's arguments and enqueues groups work-groups of wg items; the command's device
 * time counts toward the profile step called step. Errors name the kernel (and the argument);
 * nargs must be the number of parameters the kernel declares. groups 0: the arguments alone. */
cls_status dev_run_n(dev_ctx *dc, const char *kernel, const dev_arg *args, unsigned nargs, size_t groups, size_t wg,
                     const char *step);
/* The elements of an array of dev_arg. */
#define DEV_NARGS(args) ((unsigned)(sizeof(args) / sizeof((args)[0])))
/* dev_run_n over an array (not a pointer) of arguments, counted from the array itself, so the
 * count cannot disagree with what the array holds; dev_run_n checks it against the kernel's. */
#define dev_run(dc, kernel, args, groups, wg, step)                                                                   \
    dev_run_n((dc), (kernel), (args), DEV_NARGS(args), (groups), (wg), (step))
/* Creates the kernel called name from prog into the table (name must be a static string). */
cls_status dev_add_kernel(dev_ctx *dc, cl_program prog, const char *name);
/* The kernel called name, created from prog on first use. */
cls_status dev_need_kernel(dev_ctx *dc, cl_program prog, const char *name);
/* The kernel called name (created with the programs), or NULL. */
cl_kernel dev_kernel(const dev_ctx *dc, const char *name);
/* Counts a transfer's event toward step (the event is kept until the profile is collected). */
cls_status dev_record(dev_ctx *dc, cl_event ev, const char *step, uint64_t bytes);
/* Counts a clEnqueueFillBuffer's event toward the kernel step it prepares: device work, not a
 * transfer (a fill moves nothing between host and device). */
cls_status dev_record_fill(dev_ctx *dc, cl_event ev, const char *step);
/* Adds the finished commands to the profile (when ok) and releases their events. */
void dev_profile_collect(dev_ctx *dc, int ok);
/* The same for the first n of them (a batch that completed while the next was enqueued). */
void dev_profile_collect_first(dev_ctx *dc, unsigned n, int ok);
/* Drops the events and empties the steps. */
void dev_profile_reset(dev_ctx *dc);

#endif
