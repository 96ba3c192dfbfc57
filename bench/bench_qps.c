/* bench_qps: end-to-end queries per second of whole query batches, per engine, with the
 * reference engine's results as the check. The figures in docs/PERFORMANCE.md come from here.
 *
 *   bench_qps -x INDEX -q TOPICS [-d ref,0:0,1:0] [-m or|and] [-k K] [-r REPEATS] [--json FILE]
 *
 * Method: each engine is created (start-up timed: program build or cache load), searched once
 * untimed (warm-up: lazy device compilation, first allocations), then searched REPEATS times;
 * each repeat is timed with a monotonic clock around cls_engine_search, which covers the
 * batch's upload, every kernel and the read-back. Reported: median, min and max queries per
 * second over the repeats, and whether the engine's results equal the reference engine's
 * (same docIDs in the same order, scores within 1e-5 relative). */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clsearch.h"

static int on_topic(void *u, const char *qid, const char *text) { return cls_batch_add(u, qid, text) != CLS_OK; }

static int die(cls_status s, const char *what)
{
    fprintf(stderr, "bench_qps: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const char *index = NULL, *topics = NULL, *devices = "ref,auto", *json = NULL;
    cls_search_params p;
    cls_search_defaults(&p);
    int repeats = 5, opt;
    static const struct option lo[] = {{"json", required_argument, 0, 1}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, "x:q:d:m:k:r:", lo, NULL)) != -1) {
        switch (opt) {
        case 'x': index = optarg; break;
        case 'q': topics = optarg; break;
        case 'd': devices = optarg; break;
        case 'm':
            if (cls_mode_parse(optarg, &p.mode) != CLS_OK) {
                fprintf(stderr, "bench_qps: %s\n", cls_last_error());
                return 2;
            }
            break;
        case 'k': p.k = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'r': repeats = atoi(optarg); break;
        case 1: json = optarg; break;
        default: return 2;
        }
    }
    if (!index || !topics || repeats < 1 || repeats > 1000) {
        fprintf(stderr, "usage: bench_qps -x INDEX -q TOPICS [-d ref,0:0] [-m or|and] [-k K] [-r REPEATS] [--json FILE]\n");
        return 2;
    }
    cls_index *idx;
    cls_batch *batch;
    cls_status s = cls_index_open(index, &idx);
    if (s != CLS_OK) return die(s, index);
    if ((s = cls_batch_create(idx, &batch)) != CLS_OK) return die(s, "batch");
    if ((s = cls_topics_read(CLS_TOPICS_AUTO, topics, on_topic, batch)) != CLS_OK)
        return die(s, topics);
    size_t nq = cls_batch_count(batch);
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    of_file jo; /* --json: guarded (never an input, never a file of another kind) and whole or absent */
    char *inputs[] = {(char *)index, (char *)topics};
    if (bench_json_open(&jo, "bench_qps", json, inputs, 2)) return 1;
    FILE *jf = jo.f;
    printf("index %s: %u docs, %llu postings; %zu queries from %s; %s, k %u, %d repeats\n", index, st.num_docs,
           (unsigned long long)st.num_postings, nq, topics, cls_mode_name(p.mode), p.k, repeats);
    printf("%-8s %10s %10s %10s %10s  %-8s %s\n", "engine", "qps_med", "qps_min", "qps_max", "start_s", "vs_ref", "device");

    cls_results *ref = NULL, *res = NULL;
    if ((s = cls_results_create(&res)) != CLS_OK) return die(s, "results");
    double *t = calloc((size_t)repeats, sizeof *t);
    char *list = strdup(devices);
    int rc = 0;
    for (char *save = NULL, *d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
        cls_engine *e;
        double t0 = bench_now();
        if ((s = cls_engine_create(idx, d, &e)) != CLS_OK) {
            die(s, d);
            rc = 1;
            continue;
        }
        double start = bench_now() - t0;
        if ((s = cls_engine_search(e, batch, &p, res)) != CLS_OK) { /* warm-up */
            die(s, d);
            cls_engine_free(e);
            rc = 1;
            continue;
        }
        for (int r = 0; r < repeats; r++) {
            double a = bench_now();
            s = cls_engine_search(e, batch, &p, res);
            t[r] = bench_now() - a;
            if (s != CLS_OK) break;
        }
        if (s != CLS_OK) {
            die(s, d);
            cls_engine_free(e);
            rc = 1;
            continue;
        }
        bench_sort(t, (unsigned)repeats);
        const char *verdict = "oracle";
        if (strcmp(d, "ref") == 0 && !ref) {
            ref = res;
            res = NULL;
            if ((s = cls_results_create(&res)) != CLS_OK) return die(s, "results");
        } else if (ref) {
            verdict = cls_results_compare(ref, strcmp(d, "ref") == 0 ? ref : res, 1e-5) == CLS_OK ? "match" : "DIFFER";
            if (*verdict == 'D') {
                fprintf(stderr, "%s: %s\n", d, cls_last_error());
                rc = 1;
            }
        } else {
            verdict = "unchecked";
        }
        double med = t[repeats / 2], mn = t[0], mx = t[repeats - 1];
        const cls_profile_step *pst; /* of the last repeat: transfers apart from kernel time */
        uint32_t batches;
        size_t nst = cls_engine_profile(e, &pst, &batches);
        char steps[512] = "", jsteps[512] = "";
        size_t sl = 0, jl = 0;
        for (size_t i = 0; i < nst && sl < sizeof steps && jl < sizeof jsteps; i++) {
            sl += (size_t)snprintf(steps + sl, sizeof steps - sl, "%s %s %.3f", i ? "," : "", pst[i].name, pst[i].seconds * 1e3);
            jl += (size_t)snprintf(jsteps + jl, sizeof jsteps - jl, "%s\"%s_ms\":%.4f", i ? "," : "", pst[i].name,
                                   pst[i].seconds * 1e3);
        }
        const char *desc = cls_engine_describe(e);
        int dl = (int)strcspn(desc, "\n");
        printf("%-8s %10.1f %10.1f %10.1f %10.3f  %-8s %.*s\n", d, nq / med, nq / mx, nq / mn, start, verdict, dl, desc);
        if (batches)
            printf("%-8s   device ms (last repeat, %u batches):%s; wall %.3f\n", "", batches, steps, t[repeats - 1] * 1e3);
        if (jf)
            fprintf(jf, "{\"engine\":\"%s\",\"index\":\"%s\",\"queries\":%zu,\"mode\":\"%s\",\"k\":%u,\"repeats\":%d,"
                        "\"qps_median\":%.3f,\"qps_min\":%.3f,\"qps_max\":%.3f,\"startup_s\":%.4f,\"vs_ref\":\"%s\","
                        "\"steps\":{%s},\"device\":\"%.*s\"}\n",
                    d, index, nq, cls_mode_name(p.mode), p.k, repeats, nq / med, nq / mx, nq / mn, start, verdict, jsteps,
                    dl, desc);
        cls_engine_free(e);
    }
    free(list);
    free(t);
    if (bench_json_close(&jo, "bench_qps")) rc = 1;
    cls_results_free(ref);
    cls_results_free(res);
    cls_batch_free(batch);
    cls_index_close(idx);
    return rc;
}
