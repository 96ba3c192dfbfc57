/* The benchmark suites behind `clsearch bench SUITE` (code in bench/, linked into the command,
 * never run by the tests). Each suite parses its own options and returns an exit status:
 * 0 done, 1 a failure (message printed), 2 bad usage. */
#ifndef CLS_BENCH_H
#define CLS_BENCH_H

/* copy: the memory-bandwidth ceiling of each device (bench_copy.c). */
int bench_copy(int argc, char **argv);
/* decode: every block of given indexes, reference decoder and devices (bench_decode.c). */
int bench_decode(int argc, char **argv);

/* e2e: query batches through the whole engine, by batch size (bench_e2e.c). */
int bench_e2e(int argc, char **argv);

/* topk: topk_select alone on dense rows of random scores (bench_topk.c). */
int bench_topk(int argc, char **argv);

/* scan: the device-wide prefix sum alone, per variant (bench_scan.c). */
int bench_scan(int argc, char **argv);

/* Writes dir/name.dat (data) and dir/name.gp (a gnuplot script that finds its data file in the
 * variable `datafile`), then draws dir/name.png with gnuplot; without gnuplot it says how to
 * draw it later. 0 unless the files cannot be written (bench_plot.c). */
int bench_plot(const char *dir, const char *name, const char *data, const char *script);

/* Shared by the suites (bench_util.c). */
double bench_now(void);                          /* monotonic seconds */
void bench_sort(double *v, unsigned n);          /* ascending */
/* The commit the figures belong to: $CLSEARCH_COMMIT, else the one the build was made from. */
const char *bench_commit(void);
/* The UTC time now, as 2026-11-21T00:14Z. */
const char *bench_when(void);

#endif
