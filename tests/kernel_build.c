/* kernel_build [-j N] DIR [DEVICE]: compiles every program variant kernel_variants wrote to DIR
 * (variants.txt: "NN-family.cl<TAB>options") on an OpenCL device (default "cpu"), each in the
 * library's compiler process, and asks for each program's binary, which makes a driver that
 * compiles kernels at their first launch (POCL) compile every kernel of the program: a kernel
 * that driver cannot take shows here, whatever the tests launch. A compiler that crashes ends
 * its process only, and the variant is reported with the signal and the compiler's last words.
 * -j N: N compiler processes at once (default 1). One line a variant, in the list's order;
 * exit 0 when all compiled, 1 when any did not, 2 on a usage error.
 * tools/pocl-check.sh runs it against a second POCL. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/clx.h"
#include "device/clx_compile.h"
#include "util/readfile.h"

typedef struct variant {
    char name[256], options[4096];
    cls_status status;
    double seconds;
    char message[8192];
} variant;

typedef struct job {
    const char *dir, *helper;
    const clx_device *dev;
    variant *v;
    unsigned n;
    atomic_uint next;
} job;

/* A worker: takes the next variant until none is left, compiles it in the compiler process. */
static void *worker(void *arg)
{
    job *j = arg;
    for (unsigned i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        variant *v = &j->v[i];
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", j->dir, v->name);
        size_t len = 0;
        char *src = read_whole_file(path, &len);
        if (!src) {
            v->status = CLS_E_IO;
            snprintf(v->message, sizeof v->message, "cannot read %s", path);
            continue;
        }
        unsigned char *bin = NULL;
        size_t blen = 0;
        double t0 = clx_now();
        v->status = clx_compile_isolated(j->helper, j->dev, v->name, src, len, v->options, &bin, &blen);
        v->seconds = clx_now() - t0;
        if (v->status != CLS_OK) snprintf(v->message, sizeof v->message, "%s", cls_last_error());
        free(bin);
        free(src);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned jobs = 1;
    int a = 1;
    if (argc > 2 && strcmp(argv[1], "-j") == 0) {
        jobs = (unsigned)strtoul(argv[2], NULL, 10);
        a = 3;
    }
    if (argc - a < 1 || argc - a > 2 || strcmp(argv[a], "--help") == 0 || jobs < 1 || jobs > 256) {
        fprintf(stderr, "usage: kernel_build [-j N] DIR [DEVICE]\n");
        return 2;
    }
    const char *dir = argv[a], *spec = argc - a > 1 ? argv[a + 1] : "cpu";
    char helper[4096];
    if (!clx_compiler_path(helper, sizeof helper)) {
        fprintf(stderr, "kernel_build: no clsearch-compile found (build it, or set CLSEARCH_COMPILER)\n");
        return 2;
    }
    clx_device dev;
    if (clx_select(spec, &dev) != CLS_OK) {
        fprintf(stderr, "kernel_build: device %s: %s\n", spec, cls_last_error());
        return 2;
    }
    printf("device %u:%u %s (%s, driver %s); compiler process %s, %u at once\n", dev.info.platform, dev.info.device,
           dev.info.name, dev.info.platform_version, dev.info.driver_version, helper, jobs);
    char path[4200];
    snprintf(path, sizeof path, "%s/variants.txt", dir);
    FILE *list = fopen(path, "r");
    if (!list) {
        fprintf(stderr, "kernel_build: cannot read %s (run kernel_variants %s first)\n", path, dir);
        return 2;
    }
    job j = {.dir = dir, .helper = helper, .dev = &dev};
    atomic_init(&j.next, 0);
    char line[8192];
    unsigned cap = 0;
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = '\0';
        if (j.n == cap) {
            cap = cap ? 2 * cap : 64;
            variant *g = realloc(j.v, cap * sizeof *g);
            if (!g) {
                fprintf(stderr, "kernel_build: out of memory\n");
                return 2;
            }
            j.v = g;
        }
        variant *v = &j.v[j.n++];
        memset(v, 0, sizeof *v);
        snprintf(v->name, sizeof v->name, "%.255s", line);
        /* the options the engine adds on this device's compiler (clx_compiler_defines) */
        snprintf(v->options, sizeof v->options, "%.4000s%s", tab + 1, clx_compiler_defines(&dev.info));
    }
    fclose(list);
    pthread_t th[256];
    unsigned started = 0;
    for (; started < jobs && started < j.n; started++)
        if (pthread_create(&th[started], NULL, worker, &j) != 0) break;
    if (started == 0) worker(&j);
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    unsigned failed = 0;
    for (unsigned i = 0; i < j.n; i++) {
        variant *v = &j.v[i];
        if (v->status == CLS_OK) {
            printf("ok     %-24s %7.1f s  %s\n", v->name, v->seconds, v->options);
        } else {
            failed++;
            printf("FAILED %-24s %7.1f s  %s\n%s\n", v->name, v->seconds, v->options, v->message);
        }
    }
    printf("kernel_build: %u of %u program variants compiled on %s\n", j.n - failed, j.n, dev.info.name);
    free(j.v);
    return failed ? 1 : 0;
}
