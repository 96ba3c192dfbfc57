/* The scratch folder of fuzz_common.h: one per process under $TMPDIR (or /tmp), so that
 * libFuzzer's parallel jobs and the CTest replays never share a file. */
#include "fuzz/fuzz_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];

const char *fz_scratch_dir(void)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/clsfuzz-%ld", t && *t ? t : "/tmp", (long)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

/* Removes every plain file of the folder and of its subfolders (one level: the harnesses make
 * no deeper ones). */
static void empty_dir(const char *path, int depth)
{
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth < 2) {
            empty_dir(p, depth + 1);
            rmdir(p);
        } else {
            unlink(p);
        }
    }
    closedir(d);
}

void fz_clean(void) { empty_dir(fz_scratch_dir(), 0); }

const char *fz_write(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/input%s", fz_scratch_dir(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    int ok = fwrite(data, 1, size, f) == size;
    ok &= fclose(f) == 0;
    return ok ? path : NULL;
}

const char *fz_sniff(const uint8_t *data, size_t size, const char *plain)
{
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return ".gz";
    if (size >= 4 && !memcmp(data, "PK\3\4", 4)) return ".zip";
    if (size >= 262 && !memcmp(data + 257, "ustar", 5)) return ".tar";
    return plain;
}
