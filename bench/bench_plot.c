/* PNG plots for the suites' --plot DIR, drawn by gnuplot: each plot is a data file and a
 * gnuplot script written into DIR, then rendered by running gnuplot on the script. Without
 * gnuplot the data and script stay, and the message says how to render them later (e.g.
 * after copying them off a GPU host that has no gnuplot). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench.h"

extern char **environ;

int bench_plot(const char *dir, const char *name, const char *data, const char *script)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "clsearch bench: --plot %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char dat[4096], gp[4096], png[4096];
    snprintf(dat, sizeof dat, "%s/%s.dat", dir, name);
    snprintf(gp, sizeof gp, "%s/%s.gp", dir, name);
    snprintf(png, sizeof png, "%s/%s.png", dir, name);
    /* Each file whole or not at all (outfile.h: a temporary file renamed over the target, every
     * write checked); the PNG is gnuplot's. */
    of_file o;
    cls_status s = of_open(&o, dat, 0);
    if (s == CLS_OK) {
        fputs(data, o.f); /* of_commit checks the stream's writes */
        s = of_commit(&o);
    }
    if (s == CLS_OK) s = of_open(&o, gp, 0);
    if (s == CLS_OK) {
        fprintf(o.f, "set terminal pngcairo size 1000,640 noenhanced\nset output '%s'\ndatafile = '%s'\n%s", png, dat,
                script);
        s = of_commit(&o);
    }
    if (s != CLS_OK) {
        fprintf(stderr, "clsearch bench: --plot: %s\n", cls_last_error());
        return 1;
    }
    pid_t pid;
    char *argv[] = {"gnuplot", gp, NULL};
    int status = 0;
    if (posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "clsearch bench: %s not drawn (gnuplot missing or failed); data and script are in %s: "
                        "install gnuplot (Debian: gnuplot-nox) and run 'gnuplot %s'\n", png, dir, gp);
        return 0;
    }
    printf("plot: %s\n", png);
    return 0;
}
