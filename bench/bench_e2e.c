/* e2e suite: query batches through the whole engine, the throughput-versus-response-time
 * trade-off of batching.
 *
 *   clsearch bench e2e -x INDEX -q TOPICS [-d ref,DEVICES] [-m or,and] [-k 10,100,1000]
 *                      [-b 1,16,256,1024,4096,16384] [--seconds S] [--inflight N] [--json FILE] [--plot DIR]
 *                      [--trace] [--placement auto|replicate|shard] [--device-mem BYTES]
 *                      [--rerank MODEL [--rerank-depth D]] [--stages]
 *
 * For every engine, mode, k and batch size B, the topics are cut into chunks of B queries taken
 * in turn around the topic list (so consecutive chunks hold different queries and the caches
 * cannot keep one batch's lists), each chunk analysed outside the timing, then searched with
 * one cls_engine_search, timed with a monotonic clock. One untimed chunk warms up; then chunks
 * run until S seconds (default 1) have been spent, at least 3 and at most 1000 of them.
 *
 * Reported per configuration: queries per second (B / median chunk time); per-query latency
 * p50, p95 and p99, where a query's latency is its chunk's time (every query of a batch waits
 * for the whole batch); and, from OpenCL profiling events, the medians per chunk of the
 * host-to-device transfer, the kernels and the device-to-host transfer; and the work done as a
 * share of the exhaustive work, summed over the timed chunks from the engine's counters: block
 * decodes over the blocks the queries' lists hold ("blocks %"), and, for OR by partitions,
 * postings decoded over the lists' postings ("postings %"). A list's blocks count once per query
 * that uses it, and OR by partitions decodes a list once for the batch's queries that give its
 * term the same weight, so its shares fall as batches grow and say how much they share; its
 * pruning shows in the search's partitions_scored counter (clsearch search -v). "batches" is
 * the median number of device batches a chunk was cut into (the cost model sizes them).
 * "cores" is the process's CPU time (every thread's, user and system: getrusage) while the
 * timed chunks ran over their wall time: the host cores a search keeps busy, waiting included
 * (a driver that spins while the device works shows here; HOST_WAIT in clsearch devices -v).
 * --trace prints every timed chunk to stderr: its wall ms, device batches and kernel ms.
 *
 * --inflight N (default 1) keeps N chunks in flight through cls_engine_submit, the way a server
 * or a pipeline feeds an engine of several devices: N + 1 chunks are analysed before the row,
 * then submitted in turn, each resubmitted (with the next of them) as soon as it is waited for.
 * Queries per second are then the queries of the chunks finished after the first timed one over
 * the time from its end to the last one's (a steady state's completions), a chunk's
 * latency its submission to its wait's return, and the device columns each chunk's own
 * (cls_search_profile). With N 1 it is the synchronous search above.
 * --rerank MODEL (a LightGBM or XGBoost model, cls_model_load) adds the second ranking stage to
 * every search: the first stage keeps --rerank-depth candidates (default 1000), the model
 * re-ranks them and k are kept. --stages prints under each row its profile's steps by name, the
 * mean seconds a chunk spent in each (kernels and transfers alike), so the cost splits by stage.
 * A row's engine of several executors names them joined by '+' (-d 1:0+host:12), as -d's rows
 * are cut at commas.
 * --placement and --device-mem go to the engine (cls_engine_opts): a device list sharded by
 * documents, or an engine held to less device memory than the device's (the list cache).
 *
 * The reference engine has no counters ("-"). --plot DIR draws e2e-throughput.png (queries/s
 * against batch size) and e2e-latency.png (p50 and p99). Results are not compared here: the tests
 * and bench_qps compare every engine with the reference engine. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clsearch.h"
#include "util/vec.h"

typedef struct topic_list {
    char **qid, **text;
    size_t n, cap;
} topic_list;

static int on_topic(void *u, const char *qid, const char *text)
{
    topic_list *t = u;
    size_t qcap = t->cap, tcap = t->cap; /* the two arrays share t->cap */
    if (!vec_reserve(&t->qid, &qcap, t->n + 1, sizeof *t->qid) || !vec_reserve(&t->text, &tcap, t->n + 1, sizeof *t->text))
        return 1;
    t->cap = qcap < tcap ? qcap : tcap;
    t->qid[t->n] = strdup(qid);
    t->text[t->n] = strdup(text);
    if (!t->qid[t->n] || !t->text[t->n]) return 1;
    t->n++;
    return 0;
}

/* The work of a row's chunks, from cls_engine_counters: block decodes and blocks in the lists,
 * postings decoded and postings in the lists (all zero where the engine keeps no such counters). */
typedef struct e2e_work {
    uint64_t v[4];
} e2e_work;

static void work_add_counters(const cls_counter *c, size_t n, e2e_work *w)
{
    static const char *const names[4] = {"blocks_decoded", "blocks_in_lists", "postings_decoded", "postings_in_lists"};
    uint64_t v[4] = {0};
    unsigned got = 0;
    for (size_t i = 0; i < n; i++)
        for (unsigned j = 0; j < 4; j++)
            if (!strcmp(c[i].name, names[j])) {
                v[j] = c[i].value;
                got |= 1u << j;
            }
    if (got != 15) return;
    for (unsigned j = 0; j < 4; j++) w->v[j] += v[j];
}

static void work_add(const cls_engine *e, e2e_work *w)
{
    const cls_counter *c;
    size_t n = cls_engine_counters(e, &c);
    work_add_counters(c, n, w);
}

/* A row with `inflight` chunks in flight (--inflight): fills t, up, kern, down and nbat per timed
 * chunk and returns their number (at least 3), with the time from the first one's end to the
 * last one's in *wall; 0 on failure (reported). */
typedef struct e2e_slot {
    cls_batch *b;
    cls_results *r;
    cls_search *s;
    double at; /* submitted */
} e2e_slot;

static unsigned row_inflight(cls_engine *e, const cls_index *idx, const topic_list *tl, size_t *next, size_t B,
                             const cls_search_params *p, unsigned inflight, double seconds, unsigned maxch, double *t,
                             double *up, double *kern, double *down, double *nbat, e2e_work *w, double *wall,
                             double *cpu, int trace, const char *dev, const char *mode)
{
    const unsigned nslot = inflight + 1;
    e2e_slot *sl = calloc(nslot, sizeof *sl);
    cls_status s = sl ? CLS_OK : CLS_E_NOMEM;
    for (unsigned i = 0; i < nslot && s == CLS_OK; i++) {
        if ((s = cls_batch_create(idx, &sl[i].b)) != CLS_OK || (s = cls_results_create(&sl[i].r)) != CLS_OK) break;
        for (size_t q = 0; q < B && s == CLS_OK; q++, *next = (*next + 1) % tl->n)
            s = cls_batch_add(sl[i].b, tl->qid[*next], tl->text[*next]);
    }
    unsigned n = 0, submitted = 0, warm = inflight; /* the first round of chunks warms up, untimed */
    double t0 = 0, spent = 0, c0 = 0;
    /* slot k % nslot holds chunk k; chunk k is submitted once chunk k - inflight has been waited */
    for (unsigned k = 0; s == CLS_OK && k < inflight; k++, submitted++) {
        sl[k].at = bench_now();
        s = cls_engine_submit(e, sl[k].b, p, sl[k].r, &sl[k].s);
    }
    for (unsigned k = 0; s == CLS_OK; k++) {
        e2e_slot *c = &sl[k % nslot];
        s = cls_search_wait(c->s);
        double done = bench_now();
        if (s != CLS_OK) break;
        if (k == warm) t0 = done, c0 = bench_cpu();
        if (k >= warm) {
            t[n] = done - c->at;
            const cls_profile_step *st;
            uint32_t batches = 0;
            size_t ns = cls_search_profile(c->s, &st, &batches);
            bench_steps_split(st, ns, &up[n], &kern[n], &down[n]);
            nbat[n] = batches;
            const cls_counter *ct;
            size_t nc = cls_search_counters(c->s, &ct);
            work_add_counters(ct, nc, w);
            if (trace)
                fprintf(stderr, "trace %s %s k%u b%zu chunk %u: %.3f ms, %u batches, kernels %.3f ms\n", dev, mode, p->k,
                        B, n, t[n] * 1e3, batches, kern[n] * 1e3);
            n++;
            spent = done - t0;
        }
        cls_search_free(c->s);
        c->s = NULL;
        int more = n < maxch - inflight && (n < 3 || spent < seconds);
        if (more) {
            e2e_slot *d = &sl[submitted % nslot];
            d->at = bench_now();
            s = cls_engine_submit(e, d->b, p, d->r, &d->s);
            submitted++;
        } else if (k + 1 == submitted) {
            break;
        }
    }
    *wall = spent;
    *cpu = bench_cpu() - c0;
    if (s != CLS_OK) fprintf(stderr, "clsearch bench e2e: %s: %s: %s\n", dev, cls_status_str(s), cls_last_error());
    for (unsigned i = 0; sl && i < nslot; i++) {
        cls_search_free(sl[i].s);
        cls_batch_free(sl[i].b);
        cls_results_free(sl[i].r);
    }
    free(sl);
    return s == CLS_OK ? n : 0;
}

/* A share in percent into buf, and the same for JSON; "-" (null) where the engine counted none:
 * no counters (the reference engine), or no postings counted (only OR by partitions counts them). */
static const char *share(char *buf, size_t len, uint64_t part, uint64_t whole, int json)
{
    if (!whole || !part) snprintf(buf, len, json ? "null" : "-");
    else snprintf(buf, len, json ? "%.4f" : "%.1f", 100.0 * (double)part / (double)whole);
    return buf;
}

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench e2e: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

/* Parses a comma list of unsigned numbers into v (at most max); returns the count, 0 if bad. */
static unsigned parse_list(const char *s, unsigned long *v, unsigned max)
{
    unsigned n = 0;
    while (*s && n < max) {
        char *end;
        unsigned long x = strtoul(s, &end, 10);
        if (end == s || (*end && *end != ',')) return 0;
        v[n++] = x;
        s = *end ? end + 1 : end;
    }
    return *s ? 0 : n;
}

/* One row of the table, kept for the plots. */
typedef struct e2e_row {
    char series[64]; /* engine-mode-kK */
    size_t batch;
    double qps, p50, p95, p99;
} e2e_row;

static int plot_rows(const char *dir, const e2e_row *r, size_t n)
{
    char *data = NULL, *titles = NULL;
    size_t dl = 0, dc = 0, tl = 0, tc = 0;
    unsigned series = 0;
    int ok = bench_cat(&titles, &tl, &tc, "%s", "");
    for (size_t i = 0; i < n && ok; i++) {
        if (i == 0 || strcmp(r[i].series, r[i - 1].series) != 0) {
            ok = (i == 0 || bench_cat(&data, &dl, &dc, "\n\n")) && bench_cat(&data, &dl, &dc, "# %s\n", r[i].series) &&
                 bench_cat(&titles, &tl, &tc, "%s%s", series ? " " : "", r[i].series);
            series++;
        }
        ok = ok && bench_cat(&data, &dl, &dc, "%zu %.3f %.4f %.4f %.4f\n", r[i].batch, r[i].qps, r[i].p50, r[i].p95, r[i].p99);
    }
    char *script = NULL;
    size_t sl = 0, sc = 0;
    ok = ok && bench_cat(&script, &sl, &sc,
                   "titles = '%s'\nset logscale x 2\nset logscale y\nset grid\nset key outside right\n"
                   "set xlabel 'queries per batch'\nset ylabel 'queries per second'\n"
                   "set title 'clsearch bench e2e: throughput by batch size (commit %s)'\n"
                   "plot for [i=0:%u] datafile index i using 1:2 with linespoints title word(titles, i+1)\n",
                   titles, bench_commit(), series - 1);
    int rc = ok ? bench_plot(dir, "e2e-throughput", data, script) : 1;
    sl = 0;
    ok = ok && bench_cat(&script, &sl, &sc,
                   "titles = '%s'\nset logscale x 2\nset logscale y\nset grid\nset key outside right\n"
                   "set xlabel 'queries per batch'\nset ylabel 'latency per query, ms (solid p50, dashed p99)'\n"
                   "set title 'clsearch bench e2e: latency by batch size (commit %s)'\n"
                   "plot for [i=0:%u] datafile index i using 1:3 with linespoints linecolor i+1 title word(titles, i+1), "
                   "for [i=0:%u] datafile index i using 1:5 with lines dashtype 2 linecolor i+1 notitle\n",
                   titles, bench_commit(), series - 1, series - 1);
    if (rc == 0) rc = ok ? bench_plot(dir, "e2e-latency", data, script) : 1;
    if (!ok) fprintf(stderr, "clsearch bench e2e: out of memory for the plots\n");
    free(data), free(titles), free(script);
    return rc;
}

static double pct(const double *sorted, unsigned n, double p)
{
    unsigned i = (unsigned)(p * (n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

/* --stages: a row's profile steps summed by name (the names are the engine's, valid while it
 * lives), in the order they first ran. */
#define MAX_STAGES 64
typedef struct e2e_stage {
    char name[48];
    int transfer;
    double seconds;
} e2e_stage;

static int stage_add(e2e_stage *st, size_t *n, const cls_profile_step *steps, size_t nsteps)
{
    for (size_t i = 0; i < nsteps; i++) {
        size_t j = 0;
        while (j < *n && !(st[j].transfer == steps[i].transfer && strcmp(st[j].name, steps[i].name) == 0)) j++;
        if (j == *n) {
            if (*n == MAX_STAGES) return 1;
            snprintf(st[j].name, sizeof st[j].name, "%s", steps[i].name);
            st[j].transfer = steps[i].transfer;
            st[j].seconds = 0;
            (*n)++;
        }
        st[j].seconds += steps[i].seconds;
    }
    return 0;
}

int bench_e2e(int argc, char **argv)
{
    e2e_stage stage[MAX_STAGES];
    size_t nstage = 0;
    const char *index = NULL, *topics = NULL, *devices = "ref,auto", *modes = "or,and", *json_path = NULL,
               *plot_dir = NULL;
    unsigned long ks[16], bs[32];
    unsigned nk = parse_list("10,100,1000", ks, 16), nb = parse_list("1,16,256,1024,4096,16384", bs, 32);
    double seconds = 1.0;
    int trace = 0;
    unsigned long inflight = 1, rerank_depth = 0;
    const char *rerank = NULL;
    int stages = 0;
    cls_engine_opts eo;
    cls_engine_opts_init(&eo);
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"seconds", required_argument, 0, 's'},
                                          {"plot", required_argument, 0, 'p'}, {"trace", no_argument, 0, 't'},
                                          {"inflight", required_argument, 0, 'i'},
                                          {"placement", required_argument, 0, 'P'},
                                          {"device-mem", required_argument, 0, 'M'},
                                          {"rerank", required_argument, 0, 'R'},
                                          {"rerank-depth", required_argument, 0, 'D'},
                                          {"stages", no_argument, 0, 'S'},
                                          {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "x:q:d:m:k:b:", longs, NULL)) != -1) {
        switch (c) {
        case 'x': index = optarg; break;
        case 'q': topics = optarg; break;
        case 'd': devices = optarg; break;
        case 'm': modes = optarg; break;
        case 'k': nk = parse_list(optarg, ks, 16); break;
        case 'b': nb = parse_list(optarg, bs, 32); break;
        case 'j': json_path = optarg; break;
        case 's': seconds = atof(optarg); break;
        case 'p': plot_dir = optarg; break;
        case 't': trace = 1; break;
        case 'P':
            if (cls_placement_parse(optarg, &eo.placement) != CLS_OK) nk = 0;
            break;
        case 'M':
            if (cls_parse_bytes(optarg, &eo.device_mem) != CLS_OK || !eo.device_mem) nk = 0;
            break;
        case 'R': rerank = optarg; break;
        case 'S': stages = 1; break;
        case 'D': {
            char *end;
            rerank_depth = strtoul(optarg, &end, 10);
            if (end == optarg || *end || rerank_depth < 1 || rerank_depth > CLS_MAX_K) nk = 0;
            break;
        }
        case 'i': {
            char *end;
            inflight = strtoul(optarg, &end, 10);
            if (end == optarg || *end || inflight < 1 || inflight > 64) nk = 0;
            break;
        }
        default: nk = 0;
        }
    }
    int bad = !index || !topics || !nk || !nb || optind != argc || !(seconds > 0 && seconds <= 3600) ||
              (rerank_depth && !rerank);
    for (unsigned i = 0; i < nk && !bad; i++) bad = ks[i] < 1 || ks[i] > CLS_MAX_K;
    for (unsigned i = 0; i < nb && !bad; i++) bad = bs[i] < 1 || bs[i] > 1000000;
    if (bad) {
        fprintf(stderr, "usage: clsearch bench e2e -x INDEX -q TOPICS [-d ref,DEVICES] [-m or,and] [-k 10,100,1000]\n"
                        "                          [-b 1,16,256,1024,4096,16384] [--seconds S] [--inflight 1..64]\n"
                        "                          [--json FILE] [--plot DIR] [--trace] [--placement P] [--device-mem BYTES]\n"
                        "                          [--rerank MODEL [--rerank-depth D]] [--stages]\n");
        return 2;
    }
    cls_index *idx;
    cls_status s = cls_index_open(index, &idx);
    if (s != CLS_OK) return failed(s, index);
    cls_model *model = NULL;
    if (rerank && (s = cls_model_load(rerank, &model)) != CLS_OK) return failed(s, rerank);
    topic_list tl = {0};
    if ((s = cls_topics_read(CLS_TOPICS_AUTO, topics, on_topic, &tl)) != CLS_OK) return failed(s, topics);
    if (tl.n == 0) {
        fprintf(stderr, "clsearch bench e2e: %s holds no topics\n", topics);
        return 1;
    }
    of_file jf;
    if (bench_json_open(&jf, "bench e2e", json_path, (char *[]){(char *)index, (char *)topics}, 2)) return 1;
    FILE *json = jf.f;
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    printf("e2e suite: commit %s, %s; index %s (%u docs, %llu postings, %s); %zu topics from %s; %.1f s per row\n",
           bench_commit(), bench_when(), index, st.num_docs, (unsigned long long)st.num_postings,
           cls_codec_name(st.codec), tl.n, topics, seconds);
    printf("%-6s %-6s %5s %6s %6s %11s %10s %10s %10s %9s %9s %9s %9s %10s %8s %6s\n", "engine", "mode", "k", "batch",
           "chunks", "qps", "p50 ms", "p95 ms", "p99 ms", "H2D ms", "kern ms", "D2H ms", "blocks %", "postings %", "batches",
           "cores");
    cls_batch *batch;
    cls_results *res;
    if ((s = cls_batch_create(idx, &batch)) != CLS_OK || (s = cls_results_create(&res)) != CLS_OK)
        return failed(s, "setting up");
    enum { MAXCH = 1000 };
    double *t = malloc(MAXCH * sizeof *t), *up = malloc(MAXCH * sizeof *up), *kern = malloc(MAXCH * sizeof *kern),
           *down = malloc(MAXCH * sizeof *down), *nbat = malloc(MAXCH * sizeof *nbat);
    char *dl = strdup(devices), *ml = strdup(modes);
    if (!t || !up || !kern || !down || !nbat || !dl || !ml) return failed(CLS_E_NOMEM, "setting up");
    int rc = 0;
    e2e_row *rows = NULL;
    size_t nrows = 0, rows_cap = 0;
    size_t next = 0; /* the topic the next chunk starts at, carried across rows */
    for (char *sd = NULL, *dev = strtok_r(dl, ",", &sd); dev; dev = strtok_r(NULL, ",", &sd)) {
        cls_engine *e;
        /* a row's engine of several executors joins them with '+' (1:0+host:12), as the rows'
         * list is cut at its commas */
        for (char *j = dev; *j; j++)
            if (*j == '+') *j = ',';
        eo.device = dev;
        if ((s = cls_engine_create_opts(idx, &eo, &e)) != CLS_OK) return failed(s, dev);
        char mcopy[64];
        snprintf(mcopy, sizeof mcopy, "%s", ml);
        for (char *sm = NULL, *mode = strtok_r(mcopy, ",", &sm); mode; mode = strtok_r(NULL, ",", &sm)) {
            cls_search_params p;
            cls_search_defaults(&p);
            if ((s = cls_mode_parse(mode, &p.mode)) != CLS_OK) return failed(s, "-m");
            p.rerank = model;
            p.rerank_depth = (uint32_t)rerank_depth;
            for (unsigned ki = 0; ki < nk; ki++)
                for (unsigned bi = 0; bi < nb; bi++) {
                    p.k = (uint32_t)ks[ki];
                    size_t B = bs[bi];
                    unsigned n = 0;
                    double spent = 0;
                    e2e_work w = {{0}};
                    double wall = 0, cpu = 0; /* the timed searches' wall and the process's CPU seconds */
                    nstage = 0;
                    if (inflight > 1) {
                        n = row_inflight(e, idx, &tl, &next, B, &p, (unsigned)inflight, seconds, MAXCH, t, up, kern,
                                         down, nbat, &w, &wall, &cpu, trace, dev, mode);
                        if (!n) return 1;
                    }
                    for (int chunk = -1; inflight == 1 && chunk < MAXCH && (chunk < 3 || spent < seconds); chunk++) {
                        cls_batch_clear(batch);
                        for (size_t i = 0; i < B; i++, next = (next + 1) % tl.n)
                            if ((s = cls_batch_add(batch, tl.qid[next], tl.text[next])) != CLS_OK)
                                return failed(s, "analysing a query");
                        double a = bench_now(), ca = bench_cpu();
                        s = cls_engine_search(e, batch, &p, res);
                        double dt = bench_now() - a;
                        if (s != CLS_OK) return failed(s, dev);
                        if (chunk < 0) continue; /* warm-up */
                        t[n] = dt;
                        cpu += bench_cpu() - ca;
                        wall += dt;
                        bench_profile_split(e, &up[n], &kern[n], &down[n]);
                        const cls_profile_step *steps;
                        uint32_t batches = 0;
                        size_t nsteps = cls_engine_profile(e, &steps, &batches);
                        nbat[n] = batches;
                        if (stages && stage_add(stage, &nstage, steps, nsteps)) return failed(CLS_E_NOMEM, "--stages");
                        if (trace)
                            fprintf(stderr, "trace %s %s k%u b%zu chunk %u: %.3f ms, %u batches, kernels %.3f ms\n", dev, mode,
                                    p.k, B, n, dt * 1e3, batches, kern[n] * 1e3);
                        work_add(e, &w);
                        n++;
                        spent += dt;
                    }
                    bench_sort(t, n);
                    bench_sort(up, n);
                    bench_sort(kern, n);
                    bench_sort(down, n);
                    bench_sort(nbat, n);
                    double med = t[n / 2];
                    /* chunks in flight overlap: the rate is the row's queries over its time */
                    double qps = inflight > 1 ? (double)B * (n - 1) / wall : (double)B / med;
                    char bsh[32], psh[32];
                    double cores = wall > 0 ? cpu / wall : 0; /* host cores busy while searching */
                    printf("%-6s %-6s %5u %6zu %6u %11.1f %10.3f %10.3f %10.3f %9.3f %9.3f %9.3f %9s %10s %8.0f %6.2f\n", dev,
                           mode, p.k, B, n, qps, pct(t, n, 0.5) * 1e3, pct(t, n, 0.95) * 1e3, pct(t, n, 0.99) * 1e3,
                           up[n / 2] * 1e3, kern[n / 2] * 1e3, down[n / 2] * 1e3,
                           share(bsh, sizeof bsh, w.v[0], w.v[1], 0), share(psh, sizeof psh, w.v[2], w.v[3], 0), nbat[n / 2],
                           cores);
                    if (stages && n) {
                        printf("  stages (ms a chunk, mean):");
                        for (size_t i = 0; i < nstage; i++)
                            printf("%s %s%s %.3f", i ? "," : "", stage[i].name, stage[i].transfer ? " (copy)" : "",
                                   stage[i].seconds * 1e3 / n);
                        printf("\n");
                    }
                    fflush(stdout);
                    if (!vec_reserve(&rows, &rows_cap, nrows + 1, sizeof *rows))
                        return failed(CLS_E_NOMEM, "keeping rows for the plots");
                    e2e_row *row = &rows[nrows++];
                    snprintf(row->series, sizeof row->series, "%.40s-%s-k%u", dev, mode, p.k);
                    row->batch = B;
                    row->qps = qps;
                    row->p50 = pct(t, n, 0.5) * 1e3;
                    row->p95 = pct(t, n, 0.95) * 1e3;
                    row->p99 = pct(t, n, 0.99) * 1e3;
                    if (json) {
                        const char *d = cls_engine_describe(e);
                        int len = (int)strcspn(d, "\n");
                        fprintf(json,
                                "{\"suite\":\"e2e\",\"commit\":\"%s\",\"when\":\"%s\",\"engine\":\"%s\",\"device\":\"%.*s\","
                                "\"index\":\"%s\",\"codec\":\"%s\",\"block\":%u,\"mode\":\"%s\",\"k\":%u,\"batch\":%zu,"
                                "\"chunks\":%u,\"qps\":%.3f,\"latency_p50_ms\":%.4f,\"latency_p95_ms\":%.4f,"
                                "\"latency_p99_ms\":%.4f,\"h2d_ms\":%.4f,\"kernels_ms\":%.4f,\"d2h_ms\":%.4f,"
                                "\"blocks_pct\":%s,\"postings_pct\":%s,\"device_batches\":%.0f,\"host_cores\":%.3f}\n",
                                bench_commit(), bench_when(), dev, len, d, index, cls_codec_name(st.codec), st.block_size,
                                mode, p.k, B, n, qps, pct(t, n, 0.5) * 1e3, pct(t, n, 0.95) * 1e3,
                                pct(t, n, 0.99) * 1e3, up[n / 2] * 1e3, kern[n / 2] * 1e3, down[n / 2] * 1e3,
                                share(bsh, sizeof bsh, w.v[0], w.v[1], 1), share(psh, sizeof psh, w.v[2], w.v[3], 1), nbat[n / 2],
                                wall > 0 ? cpu / wall : 0);
                    }
                }
        }
        cls_engine_free(e);
    }
    if (plot_dir && nrows) rc = plot_rows(plot_dir, rows, nrows);
    if (bench_json_close(&jf, "bench e2e")) rc = 1;
    free(rows);
    free(t), free(up), free(kern), free(down), free(nbat), free(dl), free(ml);
    for (size_t i = 0; i < tl.n; i++) free(tl.qid[i]), free(tl.text[i]);
    free(tl.qid), free(tl.text);
    cls_results_free(res);
    cls_batch_free(batch);
    cls_model_free(model);
    cls_index_close(idx);
    return rc;
}
