/* A harness as a plain program: feeds LLVMFuzzerTestOneInput each file named on the command
 * line, or each file of each folder named, so that the regression inputs found by fuzzing run
 * under the normal builds (and their sanitizers) as CTest tests. A crash fails the test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz_common.h"

static int feed(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    int bad = 0, fed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= feed(argv[i]);
            fed++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) return 1;
        char *names[4096];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n < 4096)
            if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
        closedir(d);
        qsort(names, n, sizeof *names, cmp);
        for (size_t k = 0; k < n; k++) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", argv[i], names[k]);
            bad |= feed(p);
            fed++;
            free(names[k]);
        }
    }
    printf("replayed %d inputs\n", fed);
    return bad || fed == 0;
}
