/* Kernel programs: sources (embedded at build time, or $CLSEARCH_KERNEL_DIR for kernel work),
 * builds, and the on-disk binary cache.
 *
 * Cache entries live in $CLSEARCH_CACHE_DIR, else $XDG_CACHE_HOME/clsearch, else
 * ~/.cache/clsearch, one file per key, the key an xxh64 of the source, build options, device
 * name, driver version and platform version. An entry is a header (magic, key, size, xxh64
 * of the binary) and the binary; anything that does not check out is ignored and rebuilt.
 * Entries are written to a temporary name and renamed, so concurrent writers never leave a
 * half-written file: the last rename wins and every version is whole. On POCL the driver's own
 * cache serves instead, and an entry is only a mark (program_cache_policy says why).
 *
 * A program missing from the cache is compiled in a child process where the helper is found
 * (clx_compile.h: a compiler that crashes must not end the caller), then loaded here. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "device/clx.h"
#include "device/clx_compile.h"
#include "device/clx_guard.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/readfile.h"

extern const clx_source cls_embedded_kernels[];

#define CACHE_MAGIC "CLSPRG1\n"

typedef struct cache_header {
    char magic[8];
    uint64_t key;
    uint64_t size;
    uint64_t xxh;
} cache_header;

/* The embedded source called name: in extra (when given), else in the library's own table. */
static const clx_source *find_source(const clx_source *extra, const char *name)
{
    for (const clx_source *t = extra; t && t->name; t++)
        if (strcmp(t->name, name) == 0) return t;
    for (const clx_source *t = cls_embedded_kernels; t->name; t++)
        if (strcmp(t->name, name) == 0) return t;
    return NULL;
}

/* Appends one source (embedded, or the file of that name in dir) and a newline to buf. */
static cls_status append_source(const clx_source *extra, const char *dir, const char *name, char **buf, size_t *n)
{
    const clx_source *src = find_source(extra, name);
    if (!src) return err_set(CLS_E_ARG, "no kernel source called %s is compiled in", name);
    char *text = NULL;
    size_t len = src->len;
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!(text = read_whole_file(path, &len)))
            return err_set(CLS_E_IO, "CLSEARCH_KERNEL_DIR: cannot read %s: %s", path, strerror(errno));
    }
    char *nb = realloc(*buf, *n + len + 2);
    if (!nb) {
        free(text);
        return err_set(CLS_E_NOMEM, "out of memory for kernel sources");
    }
    memcpy(nb + *n, text ? text : src->src, len);
    *n += len;
    nb[(*n)++] = '\n';
    nb[*n] = '\0';
    *buf = nb;
    free(text);
    return CLS_OK;
}

/* One program source: the host/device layouts (abi.h), common.cl, then the family files in the
 * order given (caller frees). */
static cls_status load_sources(const clx_source *extra, const char *const *families, char **out, size_t *len,
                               char *note, size_t note_len)
{
    const char *dir = getenv("CLSEARCH_KERNEL_DIR");
    char *buf = NULL;
    size_t n = 0;
    cls_status s = append_source(extra, dir, "abi.h", &buf, &n);
    if (s == CLS_OK) s = append_source(extra, dir, "common.cl", &buf, &n);
    for (; s == CLS_OK && *families; families++) s = append_source(extra, dir, *families, &buf, &n);
    if (s != CLS_OK) {
        free(buf);
        return s;
    }
    if (dir && *dir) snprintf(note, note_len, "kernels from %s", dir);
    else snprintf(note, note_len, "embedded kernels");
    *out = buf;
    *len = n;
    return CLS_OK;
}

int clx_cache_dir(char *buf, size_t len)
{
    const char *d = getenv("CLSEARCH_CACHE_DIR");
    if (d && *d) snprintf(buf, len, "%s", d);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d) snprintf(buf, len, "%s/clsearch", d);
    else if ((d = getenv("HOME")) && *d) snprintf(buf, len, "%s/.cache/clsearch", d);
    else return 0;
    /* mkdir -p */
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(buf, 0755);
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

static unsigned char *cache_read(const char *path, uint64_t key, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cache_header h;
    unsigned char *bin = NULL;
    if (fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.key == key &&
        h.size > 0 && h.size < (1ull << 31) && (bin = malloc((size_t)h.size)) != NULL &&
        fread(bin, 1, (size_t)h.size, f) == h.size && fgetc(f) == EOF && XXH64(bin, (size_t)h.size, 0) == h.xxh) {
        *len = (size_t)h.size;
        fclose(f);
        return bin;
    }
    free(bin);
    fclose(f);
    return NULL;
}

static void cache_write(const char *dir, const char *path, uint64_t key, const unsigned char *bin, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.tmp.XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) return; /* a cache that cannot be written only costs the next start time */
    FILE *f = fdopen(fd, "wb");
    cache_header h = {.key = key, .size = len, .xxh = XXH64(bin, len, 0)};
    memcpy(h.magic, CACHE_MAGIC, 8);
    int ok = f && fwrite(&h, sizeof h, 1, f) == 1 && fwrite(bin, 1, len, f) == len;
    if (f) ok = (fclose(f) == 0) && ok; else close(fd);
    if (!ok || rename(tmp, path) != 0) remove(tmp);
}

/* Which cache keeps a device's compiled programs. Most drivers compile every kernel of a program
 * at clBuildProgram, and its binary (clGetProgramInfo) is what this folder keeps. POCL compiles a
 * kernel's work-group function when the kernel first launches, for that launch's shape, and keeps
 * those in a cache folder of its own; asking it for the program's binary makes it compile every
 * kernel of the program besides, for a shape never launched: the kernels a search uses are then
 * compiled twice and the others once for nothing (docs/PERFORMANCE.md, "Kernels on POCL 5.0 and
 * cold starts"). So on POCL the driver's cache is the cache, and this folder keeps only a mark
 * (KEY.built) that the program was built here, for the once-only notice. The first build of a
 * program on such a device still compiles every kernel once, in the compiler process
 * (clx_compile.h): the check that the driver's compiler takes them all, which a crash there
 * reports instead of the caller's death at a kernel's first launch. CLSEARCH_PROGRAM_CACHE=binary
 * or =driver overrides the choice (tests run the binary cache on POCL that way). */
static cls_status program_cache_policy(const clx_device *dev, int *by_driver)
{
    const char *env = getenv("CLSEARCH_PROGRAM_CACHE");
    if (!env || !*env || strcmp(env, "auto") == 0) {
        *by_driver = clx_is_pocl(&dev->info);
        return CLS_OK;
    }
    if (strcmp(env, "binary") == 0 || strcmp(env, "driver") == 0) {
        *by_driver = strcmp(env, "driver") == 0;
        return CLS_OK;
    }
    return err_set(CLS_E_ARG, "CLSEARCH_PROGRAM_CACHE='%s': auto, binary or driver", env);
}

/* The mark that a program was built on this device (program_cache_policy), written whole. */
static void mark_built(const char *dir, const char *path)
{
    static const unsigned char mark[] = "built\n";
    cache_write(dir, path, 0, mark, sizeof mark - 1);
}

/* Whether the build log of prog is empty (or white space only). */
static int log_is_empty(cl_program prog, cl_device_id dev)
{
    size_t len = 0;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS || len <= 1) return 1;
    char *log = malloc(len + 1);
    if (!log) return 0;
    int empty = 1;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < len && log[i]; i++) empty &= log[i] == ' ' || log[i] == '\n' || log[i] == '\t' || log[i] == '\r';
    free(log);
    return empty;
}

/* Compiling the kernels takes LLVM a few hundred MB, and where that memory is missing LLVM and
 * POCL abort the process (LLVM's own out-of-memory handler, a thread that cannot start: nothing
 * clx_guard.cpp can catch). Under an address-space limit (ulimit -v) the room left is known, so
 * a start that cannot compile is refused with a clear message before it begins. */
/* measured with POCL 3.1 (LLVM 15): a cold start segfaulted with 390 MB left and compiled with
 * 439 MB; 480 keeps a margin */
#define CLX_COMPILE_NEEDS_MB 480
static cls_status room_to_compile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return CLS_OK;
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    int got = f && fscanf(f, "%llu", &pages) == 1;
    if (f) fclose(f);
    if (!got) return CLS_OK;
    unsigned long long used = pages * (unsigned long long)sysconf(_SC_PAGESIZE), limit = rl.rlim_cur;
    unsigned long long left = limit > used ? (limit - used) >> 20 : 0;
    if (left >= (unsigned long long)CLX_COMPILE_NEEDS_MB) return CLS_OK;
    return err_set(CLS_E_NOMEM, "compiling the kernels needs about %u MB of address space and the "
                   "limit (ulimit -v, %llu MB) leaves %llu MB; raise it, or run once without it to fill the kernel "
                   "cache", CLX_COMPILE_NEEDS_MB, limit >> 20, left);
}

static cls_status build_log_error(cl_program prog, cl_device_id dev, cl_int err, const char *options, int retried)
{
    size_t len = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *log = malloc(len + 1);
    if (log && clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS) log[len] = '\0';
    else if (log) log[0] = '\0';
    cls_status s = err_set(CLS_E_BUILD, "clBuildProgram failed: %s (%d)%s\noptions: %s\nbuild log:\n%s",
                           clx_errname(err), (int)err, retried ? " (the second attempt: the first failed with an empty build log)" : "",
                           options, log ? log : "(out of memory)");
    free(log);
    return s;
}

cls_status clx_build_source(cl_context ctx, const clx_device *dev, const char *src, size_t len, const char *options,
                            cl_program *out)
{
    /* A build that fails with no log said nothing about the source: it was seen once in 32
     * processes compiling at the same time on a cold start. It is tried once more, and only a
     * second failure is reported. */
    for (int attempt = 0;; attempt++) {
        cl_int e;
        cl_program prog = clx_program_from_source(ctx, src, len, &e);
        if (!prog || e != CL_SUCCESS) {
            if (prog) clReleaseProgram(prog);
            return clx_fail("clCreateProgramWithSource", e);
        }
        /* CLSEARCH_FAULT's build faults: that failure, the program left unbuilt, so its log is empty */
        e = fault_hit(FAULT_BUILD) ? CL_BUILD_PROGRAM_FAILURE : clx_build_program(prog, dev->device, options);
        if (e == CL_SUCCESS) {
            *out = prog;
            return CLS_OK;
        }
        if (e == CL_OUT_OF_HOST_MEMORY) {
            clReleaseProgram(prog);
            return clx_fail("clBuildProgram", e);
        }
        if (attempt == 0 && log_is_empty(prog, dev->device)) {
            err_notice("clBuildProgram failed with %s and an empty build log: building once more", clx_errname(e));
            clReleaseProgram(prog);
            continue;
        }
        cls_status s = build_log_error(prog, dev->device, e, options, attempt > 0);
        clReleaseProgram(prog);
        return s;
    }
}

/* "kernel program of decode.cl, ..." for messages: the families, the shared head left out. */
static void describe_program(const char *const *families, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "kernel program of");
    for (size_t i = 0; families[i] && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s %s", i ? "," : "", families[i]);
}

/* The program of a binary the helper made: created and built (linked) as a cached one is. */
static cls_status load_binary(cl_context ctx, const clx_device *dev, const char *what, const unsigned char *bin,
                              size_t len, const char *options, cl_program *out)
{
    cl_int bstatus = CL_SUCCESS, e;
    cl_program prog = clx_program_from_binary(ctx, dev->device, bin, len, &bstatus, &e);
    if (!prog || e != CL_SUCCESS || bstatus != CL_SUCCESS) {
        if (prog) clReleaseProgram(prog);
        return err_wrap(clx_fail("clCreateProgramWithBinary", e != CL_SUCCESS ? e : bstatus),
                        "loading the %s that the compiler process made: ", what);
    }
    if ((e = clx_build_program(prog, dev->device, options)) != CL_SUCCESS) {
        cls_status s = build_log_error(prog, dev->device, e, options, 0);
        clReleaseProgram(prog);
        return err_wrap(s, "loading the %s that the compiler process made: ", what);
    }
    *out = prog;
    return CLS_OK;
}

static pthread_mutex_t kernel_objects = PTHREAD_MUTEX_INITIALIZER;

cl_kernel clx_create_kernel(cl_program prog, const char *name, cl_int *err)
{
    pthread_mutex_lock(&kernel_objects);
    cl_kernel k = clCreateKernel(prog, name, err);
    pthread_mutex_unlock(&kernel_objects);
    return k;
}

void clx_release_kernel(cl_kernel k)
{
    pthread_mutex_lock(&kernel_objects);
    clReleaseKernel(k);
    pthread_mutex_unlock(&kernel_objects);
}

cls_status clx_build(cl_context ctx, const clx_device *dev, const char *const *families, const char *options,
                     cl_program *out, double *seconds, int *from_cache, char *note, size_t note_len)
{
    return clx_build_ex(ctx, dev, NULL, families, options, out, seconds, from_cache, note, note_len);
}

cls_status clx_build_ex(cl_context ctx, const clx_device *dev, const clx_source *extra, const char *const *families,
                        const char *options, cl_program *out, double *seconds, int *from_cache, char *note,
                        size_t note_len)
{
    double t0 = clx_now();
    char *src = NULL;
    size_t src_len;
    char srcnote[4200];
    cls_status s = load_sources(extra, families, &src, &src_len, srcnote, sizeof srcnote);
    if (s != CLS_OK) return s;
    XXH64_state_t *st = XXH64_createState();
    if (!st) {
        free(src);
        return err_set(CLS_E_NOMEM, "out of memory");
    }
    XXH64_reset(st, 0);
    XXH64_update(st, src, src_len);
    const char *parts[] = {options, dev->info.name, dev->info.driver_version, dev->info.platform_version, dev->info.platform_name};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) XXH64_update(st, parts[i], strlen(parts[i]) + 1);
    uint64_t key = XXH64_digest(st);
    XXH64_freeState(st);

    char dir[4096], path[4200];
    int have_dir = clx_cache_dir(dir, sizeof dir), by_driver = 0;
    if ((s = program_cache_policy(dev, &by_driver)) != CLS_OK) {
        free(src);
        return s;
    }
    snprintf(path, sizeof path, "%s/%016llx.%s", dir, (unsigned long long)key, by_driver ? "built" : "bin");
    *from_cache = 0;
    cl_int e;
    cl_program prog = NULL;
    size_t blen = 0;
    unsigned char *bin = have_dir && !by_driver ? cache_read(path, key, &blen) : NULL;
    if (bin) {
        cl_int bstatus;
        prog = clx_program_from_binary(ctx, dev->device, bin, blen, &bstatus, &e);
        if (prog && e == CL_SUCCESS && bstatus == CL_SUCCESS &&
            clx_build_program(prog, dev->device, options) == CL_SUCCESS) {
            *from_cache = 1;
        } else if (prog) { /* stale or foreign entry: fall through to a fresh build */
            clReleaseProgram(prog);
            prog = NULL;
        }
        free(bin);
        bin = NULL;
    }
    char how[4400] = "";
    if (!prog && by_driver && have_dir && access(path, F_OK) == 0) {
        /* built here before: the driver's own cache has it, and a build from source is quick */
        if ((s = clx_build_source(ctx, dev, src, src_len, options, &prog)) != CLS_OK) {
            free(src);
            return s;
        }
        *from_cache = 1;
        snprintf(how, sizeof how, ", built from source from the driver's own cache");
    }
    if (!prog) {
        if (have_dir) err_notice("compiling kernels for %s (once; cached in %s%s)", dev->info.name, dir,
                                 by_driver ? " and the driver's own cache" : "");
        else err_notice("compiling kernels for %s (no cache folder: every start compiles)", dev->info.name);
        if ((s = room_to_compile()) != CLS_OK) {
            free(src);
            return s;
        }
        char helper[4096], what[512], here[512] = "";
        describe_program(families, what, sizeof what);
        int isolated = clx_compiler_path(helper, sizeof helper);
        if (!isolated)
            snprintf(here, sizeof here, "%s", getenv("CLSEARCH_COMPILER") ? "CLSEARCH_COMPILER=none"
                                                                            : "no clsearch-compile found");
        if (isolated) {
            /* the whole program, every kernel of it, in the compiler process: the build itself, or
             * on a driver with a cache of its own the check that its compiler takes every kernel */
            s = clx_compile_isolated(helper, dev, what, src, src_len, options, &bin, &blen);
            if (s == CLS_E_NODEVICE) { /* the process could not open the device: compiled here */
                snprintf(here, sizeof here, "the compiler process could not open the device: %.400s", cls_last_error());
                isolated = 0;
                s = CLS_OK;
            } else if (s == CLS_OK && !by_driver) {
                s = load_binary(ctx, dev, what, bin, blen, options, &prog);
                if (s == CLS_OK && have_dir) cache_write(dir, path, key, bin, blen);
            }
            free(bin);
        }
        if (s == CLS_OK && !prog) s = clx_build_source(ctx, dev, src, src_len, options, &prog);
        if (s == CLS_OK && !isolated && !by_driver && have_dir) { /* the binary of the build in this process */
            size_t size = 0;
            if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) == CL_SUCCESS && size > 0) {
                unsigned char *b = malloc(size);
                if (b && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof b, &b, NULL) == CL_SUCCESS)
                    cache_write(dir, path, key, b, size);
                free(b);
            }
        }
        if (s == CLS_OK && by_driver && have_dir) mark_built(dir, path);
        if (s != CLS_OK) {
            free(src);
            return s;
        }
        if (isolated && by_driver)
            snprintf(how, sizeof how, ", every kernel compiled once in a child process (%s); the driver compiles "
                     "each at its first launch", helper);
        else if (isolated)
            snprintf(how, sizeof how, ", compiled in a child process (%s)", helper);
        else
            snprintf(how, sizeof how, ", compiled in this process (%s: a compiler crash would end it)", here);
    }
    free(src);
    *seconds = clx_now() - t0;
    snprintf(note, note_len, "%s, %s start %.3f s%s (%s)", srcnote, *from_cache ? "warm" : "cold", *seconds, how,
             have_dir ? path : "no cache folder");
    *out = prog;
    return CLS_OK;
}
