/* Kernel programs: sources (embedded at build time, or $CLSEARCH_KERNEL_DIR for kernel work),
 * builds, and the on-disk binary cache.
 *
 * Cache entries live in $CLSEARCH_CACHE_DIR, else $XDG_CACHE_HOME/clsearch, else
 * ~/.cache/clsearch, one file per key, the key an xxh64 of the source, build options, device
 * name, driver version and platform version. An entry is a header (magic, key, size, xxh64
 * of the binary) and the binary; anything that does not check out is ignored and rebuilt.
 * Entries are written to a temporary name and renamed, so concurrent writers never leave a
 * half-written file: the last rename wins and every version is whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "clx.h"
#include "err.h"

struct cls_embedded_kernel {
    const char *name;
    const char *src;
    size_t len;
};
extern const struct cls_embedded_kernel cls_embedded_kernels[];

#define CACHE_MAGIC "CLSPRG1\n"

typedef struct cache_header {
    char magic[8];
    uint64_t key;
    uint64_t size;
    uint64_t xxh;
} cache_header;

/* Whether file name is common.cl or one of families (NULL-terminated). */
static int wanted(const char *name, const char *const *families)
{
    if (strcmp(name, "common.cl") == 0) return 1;
    for (; *families; families++)
        if (strcmp(name, *families) == 0) return 1;
    return 0;
}

/* Concatenates common.cl and the family files into one source (caller frees). */
static cls_status load_sources(const char *const *families, char **out, size_t *len, char *note, size_t note_len)
{
    const char *dir = getenv("CLSEARCH_KERNEL_DIR");
    size_t cap = 1, n = 0;
    for (int i = 0; cls_embedded_kernels[i].name; i++) cap += cls_embedded_kernels[i].len + 64;
    char *buf = NULL;
    if (!dir || !*dir) {
        buf = malloc(cap);
        if (!buf) return err_set(CLS_E_NOMEM, "out of memory");
        /* common.cl sorts first among the embedded names, so table order is build order */
        for (int i = 0; cls_embedded_kernels[i].name; i++) {
            if (!wanted(cls_embedded_kernels[i].name, families)) continue;
            memcpy(buf + n, cls_embedded_kernels[i].src, cls_embedded_kernels[i].len);
            n += cls_embedded_kernels[i].len;
            buf[n++] = '\n';
        }
        buf[n] = '\0';
        snprintf(note, note_len, "embedded kernels");
    } else {
        for (int i = 0; cls_embedded_kernels[i].name; i++) {
            if (!wanted(cls_embedded_kernels[i].name, families)) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, cls_embedded_kernels[i].name);
            FILE *f = fopen(path, "rb");
            if (!f) {
                free(buf);
                return err_set(CLS_E_IO, "CLSEARCH_KERNEL_DIR: cannot open %s: %s", path, strerror(errno));
            }
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, 0, SEEK_SET);
            char *nb = sz >= 0 ? realloc(buf, n + (size_t)sz + 2) : NULL;
            if (!nb || fread(nb + n, 1, (size_t)sz, f) != (size_t)sz) {
                fclose(f);
                free(nb ? nb : buf);
                return err_set(CLS_E_IO, "cannot read %s", path);
            }
            fclose(f);
            buf = nb;
            n += (size_t)sz;
            buf[n++] = '\n';
            buf[n] = '\0';
        }
        snprintf(note, note_len, "kernels from %s", dir);
    }
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

static cls_status build_log_error(cl_program prog, cl_device_id dev, cl_int err, const char *options)
{
    size_t len = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *log = malloc(len + 1);
    if (log && clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS) log[len] = '\0';
    else if (log) log[0] = '\0';
    cls_status s = err_set(CLS_E_BUILD, "clBuildProgram failed: %s (%d)\noptions: %s\nbuild log:\n%s",
                           clx_errname(err), (int)err, options, log ? log : "(out of memory)");
    free(log);
    return s;
}

cls_status clx_build(cl_context ctx, const clx_device *dev, const char *const *families, const char *options,
                     cl_program *out, double *seconds, int *from_cache, char *note, size_t note_len)
{
    double t0 = clx_now();
    char *src = NULL;
    size_t src_len;
    char srcnote[4200];
    cls_status s = load_sources(families, &src, &src_len, srcnote, sizeof srcnote);
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
    int have_dir = clx_cache_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%016llx.bin", dir, (unsigned long long)key);
    *from_cache = 0;
    cl_int e;
    cl_program prog = NULL;
    size_t blen = 0;
    unsigned char *bin = have_dir ? cache_read(path, key, &blen) : NULL;
    if (bin) {
        const unsigned char *bp = bin;
        cl_int bstatus;
        prog = clCreateProgramWithBinary(ctx, 1, &dev->device, &blen, &bp, &bstatus, &e);
        if (prog && e == CL_SUCCESS && bstatus == CL_SUCCESS &&
            clBuildProgram(prog, 1, &dev->device, options, NULL, NULL) == CL_SUCCESS) {
            *from_cache = 1;
        } else if (prog) { /* stale or foreign entry: fall through to a fresh build */
            clReleaseProgram(prog);
            prog = NULL;
        }
        free(bin);
    }
    if (!prog) {
        const char *sp = src;
        prog = clCreateProgramWithSource(ctx, 1, &sp, &src_len, &e);
        if (!prog || e != CL_SUCCESS) {
            free(src);
            return clx_fail("clCreateProgramWithSource", e);
        }
        e = clBuildProgram(prog, 1, &dev->device, options, NULL, NULL);
        if (e != CL_SUCCESS) {
            s = build_log_error(prog, dev->device, e, options);
            clReleaseProgram(prog);
            free(src);
            return s;
        }
        size_t size = 0;
        if (have_dir && clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) == CL_SUCCESS && size > 0) {
            unsigned char *b = malloc(size);
            if (b && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof b, &b, NULL) == CL_SUCCESS)
                cache_write(dir, path, key, b, size);
            free(b);
        }
    }
    free(src);
    *seconds = clx_now() - t0;
    snprintf(note, note_len, "%s, %s start %.3f s (%s)", srcnote, *from_cache ? "warm" : "cold", *seconds,
             have_dir ? path : "no cache folder");
    *out = prog;
    return CLS_OK;
}
