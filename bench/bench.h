/* The benchmark suites behind `clsearch bench SUITE` (code in bench/, linked into the command,
 * never run by the tests). Each suite parses its own options and returns an exit status:
 * 0 done, 1 a failure (message printed), 2 bad usage. */
#ifndef CLS_BENCH_H
#define CLS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "util/outfile.h"

/* A profiling queue on one device and a set of kernel parameters (src/clx.h); declared here so
 * that this header needs no OpenCL headers. */
struct clx_queue;
struct clx_params;

/* copy: the memory-bandwidth ceiling of each device (bench_copy.c). */
int bench_copy(int argc, char **argv);
/* decode: every block of given indexes, reference decoder and devices (bench_decode.c). */
int bench_decode(int argc, char **argv);

/* encode: the index writer's encoding, host threads against devices (bench_encode.c). */
int bench_encode(int argc, char **argv);

/* e2e: query batches through the whole engine, by batch size (bench_e2e.c). */
int bench_e2e(int argc, char **argv);

/* topk: the engine's top-k of dense rows alone, on random scores (bench_topk.c). */
int bench_topk(int argc, char **argv);

/* scan: the device-wide prefix sum alone, per variant (bench_scan.c). */
int bench_scan(int argc, char **argv);

/* intersect: intersect_and alone on generated AND queries, per work-group size (bench_intersect.c). */
int bench_intersect(int argc, char **argv);
/* serve: the query server under concurrent loopback clients, by batching setting and client count
 * (bench_serve.c; built with CLSEARCH_SERVE only). */
int bench_serve(int argc, char **argv);
/* trees: a tree ensemble's scoring alone on a feature matrix file, per kernel variant (bench_trees.c). */
int bench_trees(int argc, char **argv);
/* score: score_and over candidates and score_or over dense rows, per work-group size (bench_score.c). */
int bench_score(int argc, char **argv);

/* Measurements for `clsearch tune`: each builds its kernel on q with the parameters p (intersect:
 * WG_INTERSECT and WG_SCAN_ALGO; score: WG_SCORE), makes the suite's inputs (over 1 GiB
 * refused), uploads them, runs once untimed and reps times, checks the result against the
 * host's, frees everything, and puts the median kernel time in *median_s. 0 when done; 1 after
 * a failure or a wrong result, with a message on stderr.
 * intersect: nq 2-term AND queries, a short list of s postings and a long one of s x ratio, half
 * the short list in the long one. score: nq 2-term queries; AND (or_mode 0): per_query candidates
 * each, in lists of 2 x per_query; OR (or_mode 1): lists of per_query postings into rows of
 * 4 x per_query documents. */
int bench_intersect_time(const struct clx_queue *q, const struct clx_params *p, uint32_t nq, uint32_t s,
                         uint32_t ratio, unsigned reps, double *median_s);
int bench_score_time(const struct clx_queue *q, const struct clx_params *p, int or_mode, uint32_t nq,
                     uint32_t per_query, unsigned reps, double *median_s);

/* Seconds for one copy of mib MiB (read + write) by the faster copy kernel at vector width vec,
 * median of reps after warm-ups, the copy checked; 0 ok, else 1 with a message (bench_copy.c). */
int bench_copy_time(const struct clx_queue *q, unsigned vec, unsigned mib, unsigned reps, double *median_s);
/* tune: sweeps the variant registry on one device, writes the tuning file (bench_tune.c). */
int bench_tune(int argc, char **argv);
/* The tuning file's writing, tune's last step: puts an entry for dev (its name and driver) with
 * the parameters best, the measurements (a JSON array, copied) and workload ("quick", "gpu",
 * "cpu") into the file at path, replacing dev's old entry and keeping the others' (a file that
 * is empty, or with --force any file that is no tuning file, starts over), through a temporary
 * file renamed when whole (util/outfile.h). 0, or 1 after a message. */
struct cJSON;
int bench_tune_write(const char *path, const cls_device_info *dev, const struct clx_params *best,
                     const struct cJSON *measurements, const char *workload);
/* Median kernel seconds of topk_select over rows x N random scores with k, on an engine made
 * for device with parameters prm (NULL: those in force); checks row 0 against the host. 0 ok,
 * else 1 with a message printed (bench_topk.c). */
int bench_topk_time(const char *device, const struct clx_params *prm, uint32_t rows, uint32_t N, uint32_t k,
                    unsigned reps, double *median_s);
/* Median seconds of the device-wide scan (scan.cl) over n values with p's SCAN_WG, SCAN_ITEMS
 * and WG_SCAN_ALGO, checked against a host scan; 0 ok, else 1 with a message (bench_scan.c). */
int bench_scan_time(const struct clx_queue *q, const struct clx_params *p, uint32_t n, unsigned reps, double *median_s);


/* Writes dir/name.dat (data) and dir/name.gp (a gnuplot script that finds its data file in the
 * variable `datafile`), then draws dir/name.png with gnuplot; without gnuplot it says how to
 * draw it later. 0 unless the files cannot be written (bench_plot.c). */
int bench_plot(const char *dir, const char *name, const char *data, const char *script);

/* Shared by the suites (bench_util.c). */
double bench_now(void);                          /* monotonic seconds */
double bench_cpu(void);                          /* the process's CPU seconds, every thread's, user and system */
void bench_sort(double *v, unsigned n);          /* ascending */
struct cls_engine;
/* The last search's profile in three sums: transfers to the device, kernels, the download. */
void bench_profile_split(const struct cls_engine *e, double *up, double *kern, double *down);
/* The same for one search's steps (cls_search_profile). */
void bench_steps_split(const struct cls_profile_step *st, size_t n, double *up, double *kern, double *down);
/* A suite's --json FILE: guarded as any output of the command (util/outfile.h: never one of
 * the suite's inputs, nor a file that is not JSON lines, without --force), the suite's lines
 * appended to a copy of FILE (with --force, a file of another kind is written over instead)
 * that replaces FILE once the suite is done. path NULL: nothing (o->f NULL).
 * 1 after a message naming suite ("bench copy") when FILE cannot be written, else 0. */
int bench_json_open(of_file *o, const char *suite, const char *path, char *const *inputs, int ninputs);
/* Puts the lines in place (of_commit: every write checked, a full disk an error and FILE left as
 * it was); 1 after a message when that fails, 0 when it worked or nothing was open. */
int bench_json_close(of_file *o, const char *suite);
/* The commit the figures belong to: $CLSEARCH_COMMIT, else the one the build was made from. */
const char *bench_commit(void);
/* Appends printf output to the growing string *buf (length *len, room *cap); 0 when out of
 * memory. */
int bench_cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The UTC time now, as 2026-11-21T00:14Z. */
const char *bench_when(void);

#endif
