/* clsearch: the command line, a thin layer over libclsearch (include/clsearch.h).
 *
 *   clsearch devices [-v]
 *   clsearch index -c {jsonl,beir,html,trec,smart,files} -o INDEX INPUT... [options]
 *   clsearch search -x INDEX -q TOPICS [options]
 *   clsearch stats INDEX [--codecs]
 *   clsearch check INDEX [--threads N] [-v]
 *   clsearch recode INDEX -o OUT [--codec C] [--block N] [--pfor-depth D]
 *   clsearch generate -o DIR [--docs N] [--queries N] [--vocab N] [--seed S]
 *   clsearch generate --index FILE [--topics FILE] [--scale small|medium|gov2] [options]
 *   clsearch compare RUN_A RUN_B
 *   clsearch bench {copy,decode,e2e,topk,scan,intersect,score} [options]
 *   clsearch tune [-d DEVICE] [-o FILE] [-r N] [--quick] [--json FILE] | --list
 *   clsearch ciff-import FILE.ciff -o INDEX [--codec C] [--block N] [--pfor-depth D] [analyzer options]
 *   clsearch ciff-export INDEX -o FILE.ciff [--description TEXT]
 *
 * Exit status: 0 success, 1 failure (the message says what and where), 2 bad usage. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "clsearch.h"
#include "codec/codec.h"
#include "generate.h"

static const char *prog = "clsearch";

static int fail(cls_status s, const char *what)
{
    const char *detail = cls_last_error();
    fprintf(stderr, "%s: %s: %s%s%s\n", prog, what, cls_status_str(s), *detail ? ": " : "", detail);
    return 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see '%s help')\n", prog);
    return 2;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Strict unsigned parse: digits only, within [lo, hi]. */
static int parse_u64(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
    if (!s || !*s || *s == '-' || *s == '+') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || errno || *end) return 0;
    *out = (float)v;
    return 1;
}

/* ---- devices ------------------------------------------------------------------------------ */

static int cmd_devices(int argc, char **argv)
{
    int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    cls_device_info *list;
    size_t n;
    cls_status s = cls_devices_list(&list, &n);
    if (s != CLS_OK) return fail(s, "listing OpenCL devices");
    if (n == 0) printf("no OpenCL platform found; '-d ref' still runs the reference engine\n");
    unsigned last_platform = (unsigned)-1;
    for (size_t i = 0; i < n; i++) {
        const cls_device_info *d = &list[i];
        if (d->platform != last_platform) {
            printf("platform %u: %s (%s)\n", d->platform, d->platform_name, d->platform_version);
            last_platform = d->platform;
        }
        printf("  device %u:%u  %s\n", d->platform, d->device, d->name);
        printf("    type %s, vendor %s, driver %s, %s\n", d->is_gpu ? "GPU" : "CPU/other", d->vendor,
               d->driver_version, d->opencl_c_version);
        printf("    %u compute units at %u MHz, global memory %.2f GiB (max buffer %.2f GiB), local memory %llu KiB, "
               "max work-group %zu\n",
               d->compute_units, d->clock_mhz, (double)d->global_mem / (1u << 30), (double)d->max_alloc / (1u << 30),
               (unsigned long long)(d->local_mem / 1024), d->max_work_group);
        printf("    extensions of interest: %s\n", *d->extensions ? d->extensions : "(none)");
    }
    if (verbose) {
        printf("\nkernel parameters in force:\n");
        for (size_t i = 0; i < n; i++) {
            char params[256];
            cls_device_params(&list[i], params, sizeof params);
            printf("  %u:%u  %s\n", list[i].platform, list[i].device, params);
        }
    }
    cls_devices_free(list);
    return 0;
}

/* ---- index -------------------------------------------------------------------------------- */

typedef struct index_ctx {
    cls_builder *b;
    unsigned long long docs;
    uint64_t text_bytes;   /* document text handed to the builder */
    cls_status err;
    /* progress */
    int show;              /* draw the progress line: stderr is a terminal and no -q */
    int drawn;             /* a progress line is on the screen */
    double t0, t_input, last_draw;
    uint64_t bytes_before; /* input bytes of the inputs already read */
    uint64_t bytes_done;   /* of the current input */
    int input, ninputs;
} index_ctx;

static int on_doc(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    index_ctx *c = user;
    c->err = cls_builder_add(c->b, docno, dl, text, tl);
    if (c->err != CLS_OK) return 1;
    c->docs++;
    c->text_bytes += tl;
    return 0;
}

/* "m:ss" or "h:mm:ss". */
static void fmt_duration(char *buf, size_t n, double s)
{
    unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
}

/* One line, redrawn in place: documents, input MB and MB/s since the start, and for the current
 * input its percentage and the time left at its rate so far. */
static void on_progress(void *user, uint64_t docs, uint64_t done, uint64_t total)
{
    index_ctx *c = user;
    (void)docs; /* c->docs counts every input's documents */
    c->bytes_done = done;
    if (!c->show) return;
    double t = now();
    if (t - c->last_draw < 0.1 && !(total && done >= total)) return;
    c->last_draw = t;
    double el = t - c->t0, mb = (double)(c->bytes_before + done) / 1e6;
    fprintf(stderr, "\r%llu documents  %.1f MB  %.1f MB/s", c->docs, mb, el > 0 ? mb / el : 0.0);
    if (total) {
        fprintf(stderr, "  %5.1f%%", 100.0 * (double)done / (double)total);
        if (c->ninputs > 1) fprintf(stderr, " of input %d/%d", c->input, c->ninputs);
        double in_el = t - c->t_input;
        if (done > 0 && done < total && in_el > 0.5) {
            char eta[32];
            fmt_duration(eta, sizeof eta, in_el * (double)(total - done) / (double)done);
            fprintf(stderr, "  ETA %s", eta);
        }
    }
    fputs("\033[K", stderr); /* clear what a longer previous line left */
    fflush(stderr);
    c->drawn = 1;
}

static int index_fail(index_ctx *c, cls_status s, const char *what)
{
    if (c->drawn) fputc('\n', stderr);
    c->drawn = 0;
    cls_builder_free(c->b);
    return fail(s, what);
}

static int cmd_index(int argc, char **argv)
{
    const char *fmt = NULL, *out = NULL;
    int verbose = 0, quiet = 0, opt;
    unsigned long long v;
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    cls_build_opts bo;
    cls_build_defaults(&bo);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    bo.threads = cores < 1 ? 1u : cores > 1024 ? 1024u : (unsigned)cores;
    static const struct option lo[] = {{"collection", required_argument, 0, 'c'}, {"output", required_argument, 0, 'o'},
                                       {"no-stem", no_argument, 0, 1}, {"no-stopwords", no_argument, 0, 2},
                                       {"no-lowercase", no_argument, 0, 3}, {"no-possessive", no_argument, 0, 4},
                                       {"threads", required_argument, 0, 5}, {"codec", required_argument, 0, 6},
                                       {"block", required_argument, 0, 7}, {"pfor-depth", required_argument, 0, 8},
                                       {"verbose", no_argument, 0, 'v'}, {"quiet", no_argument, 0, 'q'}, {0, 0, 0, 0}};
    cls_status s;
    while ((opt = getopt_long(argc, argv, "c:o:vq", lo, NULL)) != -1) {
        switch (opt) {
        case 'c': fmt = optarg; break;
        case 'o': out = optarg; break;
        case 'v': verbose = 1; break;
        case 'q': quiet = 1; break;
        case 1: an.stem = 0; break;
        case 2: an.stopwords = 0; break;
        case 3: an.lowercase = 0; break;
        case 4: an.possessive = 0; break;
        case 5:
            if (!parse_u64(optarg, 1, 1024, &v)) {
                fprintf(stderr, "%s: index: --threads takes a number from 1 to 1024, not '%s'\n", prog, optarg);
                return 1;
            }
            bo.threads = (unsigned)v;
            break;
        case 6:
            if ((s = cls_codec_parse(optarg, &bo.codec)) != CLS_OK) return fail(s, "index --codec");
            break;
        case 7:
            if (!parse_u64(optarg, 1, 1u << 20, &v)) {
                fprintf(stderr, "%s: index: --block takes 64, 128, 256 or 512, not '%s'\n", prog, optarg);
                return 1;
            }
            bo.block_size = (uint32_t)v;
            break;
        case 8:
            if (!parse_u64(optarg, 0, 1000, &v)) {
                fprintf(stderr, "%s: index: --pfor-depth takes a number from 0 to 3, not '%s'\n", prog, optarg);
                return 1;
            }
            bo.pfor_depth = (unsigned)v;
            break;
        default: return usage_error("index: unknown option%s", "");
        }
    }
    cls_corpus_format cf;
    if (!fmt) return usage_error("index: -c {jsonl,beir,html,trec,smart,files} is required%s", "");
    if (strcmp(fmt, "jsonl") == 0) cf = CLS_CORPUS_JSONL;
    else if (strcmp(fmt, "beir") == 0) cf = CLS_CORPUS_BEIR;
    else if (strcmp(fmt, "html") == 0) cf = CLS_CORPUS_HTML;
    else if (strcmp(fmt, "trec") == 0) cf = CLS_CORPUS_TREC;
    else if (strcmp(fmt, "smart") == 0) cf = CLS_CORPUS_SMART;
    else if (strcmp(fmt, "files") == 0) cf = CLS_CORPUS_FILES;
    else return usage_error("index: unknown collection format '%s' (jsonl, beir, html, trec, smart, files)", fmt);
    if (!out) return usage_error("index: -o INDEX is required%s", "");
    if (optind >= argc) return usage_error("index: no INPUT given%s", "");
    index_ctx c = {0};
    s = cls_builder_create(&an, &c.b);
    if (s != CLS_OK) return fail(s, "index");
    if ((s = cls_builder_configure(c.b, &bo)) != CLS_OK) return index_fail(&c, s, "index");
    c.show = !quiet && isatty(2);
    c.ninputs = argc - optind;
    c.t0 = now();
    cls_corpus_counts counts = {0, 0};
    for (int i = optind; i < argc; i++) {
        c.input = i - optind + 1;
        c.t_input = now();
        c.bytes_done = 0;
        s = cls_corpus_read_ex(cf, argv[i], on_doc, &c, on_progress, &c);
        if (c.err != CLS_OK) s = c.err;
        if (s != CLS_OK) {
            char what[4200];
            snprintf(what, sizeof what, "indexing %s (nothing written)", argv[i]);
            return index_fail(&c, s, what);
        }
        c.bytes_before += c.bytes_done;
        cls_corpus_counts one;
        cls_corpus_last_counts(&one);
        counts.skipped_binary += one.skipped_binary;
        counts.truncated += one.truncated;
    }
    double t_read = now() - c.t0;
    s = cls_builder_write(c.b, out);
    if (s != CLS_OK) return index_fail(&c, s, "writing the index");
    cls_builder_free(c.b);
    double el = now() - c.t0, mb = (double)c.bytes_before / 1e6;
    if (c.drawn) fputc('\n', stderr);
    char skipped[128] = "";
    if (counts.skipped_binary)
        snprintf(skipped, sizeof skipped, "; skipped %llu binary file%s", (unsigned long long)counts.skipped_binary,
                 counts.skipped_binary == 1 ? "" : "s");
    if (counts.truncated)
        snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "; indexed %llu file%s only up to 64 MiB",
                 (unsigned long long)counts.truncated, counts.truncated == 1 ? "" : "s");
    if (c.show || verbose) {
        fprintf(stderr, "indexed %llu documents, %.1f MB of input (%.1f MB of text) in %.2f s: %.1f MB/s, %u thread%s%s\n",
                c.docs, mb, (double)c.text_bytes / 1e6, el, el > 0 ? mb / el : 0.0, bo.threads,
                bo.threads == 1 ? "" : "s", skipped);
        if (verbose)
            fprintf(stderr, "reading and analysis %.2f s, inverting and writing %.2f s, index %s (%s, block %u)\n",
                    t_read, el - t_read, out, cls_codec_name(bo.codec), bo.block_size);
    } else if (*skipped && !quiet) {
        fprintf(stderr, "%s: note: %s\n", prog, skipped + 2);
    }
    return 0;
}

/* ---- search ------------------------------------------------------------------------------- */

typedef struct topics_ctx {
    cls_batch *b;
    cls_status err;
} topics_ctx;

static int on_topic(void *user, const char *qid, const char *text)
{
    topics_ctx *c = user;
    c->err = cls_batch_add(c->b, qid, text);
    return c->err != CLS_OK;
}

static int write_run(FILE *f, const cls_index *idx, const cls_batch *b, const cls_results *r, const char *tag)
{
    for (size_t q = 0; q < cls_results_count(r); q++) {
        size_t n;
        const uint32_t *docs;
        const float *scores;
        cls_results_get(r, q, &n, &docs, &scores);
        for (size_t j = 0; j < n; j++)
            if (fprintf(f, "%s Q0 %s %zu %.6f %s\n", cls_batch_qid(b, q), cls_index_docno(idx, docs[j]), j + 1,
                        (double)scores[j], tag) < 0)
                return 0;
    }
    return 1;
}

static int cmd_search(int argc, char **argv)
{
    const char *index_path = NULL, *topics = NULL, *fmt = "auto", *device = NULL, *out = NULL, *tag = "clsearch";
    int verbose = 0, opt;
    cls_search_params p;
    cls_search_defaults(&p);
    unsigned long long v;
    static const struct option lo[] = {{"index", required_argument, 0, 'x'}, {"topics", required_argument, 0, 'q'},
                                       {"format", required_argument, 0, 'f'}, {"k", required_argument, 0, 'k'},
                                       {"mode", required_argument, 0, 'm'}, {"k1", required_argument, 0, 1},
                                       {"b", required_argument, 0, 2}, {"device", required_argument, 0, 'd'},
                                       {"output", required_argument, 0, 'o'}, {"tag", required_argument, 0, 3},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, "x:q:f:k:m:d:o:v", lo, NULL)) != -1) {
        switch (opt) {
        case 'x': index_path = optarg; break;
        case 'q': topics = optarg; break;
        case 'f': fmt = optarg; break;
        case 'k':
            if (!parse_u64(optarg, 1, CLS_MAX_K, &v))
                return usage_error("search: k must be a whole number from 1 to 100000, not '%s'", optarg);
            p.k = (uint32_t)v;
            break;
        case 'm':
            if (cls_mode_parse(optarg, &p.mode) != CLS_OK) return usage_error("search: %s", cls_last_error());
            break;
        case 1:
            if (!parse_float(optarg, &p.k1) || !(p.k1 >= 0 && p.k1 <= 100))
                return usage_error("search: --k1 takes a number from 0 to 100, not '%s'", optarg);
            break;
        case 2:
            if (!parse_float(optarg, &p.b) || !(p.b >= 0 && p.b <= 1))
                return usage_error("search: --b takes a number from 0 to 1, not '%s'", optarg);
            break;
        case 'd': device = optarg; break;
        case 'o': out = optarg; break;
        case 3: tag = optarg; break;
        case 'v': verbose = 1; break;
        default: return usage_error("search: unknown option%s", "");
        }
    }
    if (!index_path || !topics) return usage_error("search: -x INDEX and -q TOPICS are required%s", "");
    if (optind < argc) return usage_error("search: unexpected argument '%s'", argv[optind]);
    if (strpbrk(tag, " \t\n")) return usage_error("search: the tag '%s' holds white space", tag);
    cls_topics_format tf;
    if (strcmp(fmt, "tsv") == 0) tf = CLS_TOPICS_TSV;
    else if (strcmp(fmt, "anserini") == 0) tf = CLS_TOPICS_ANSERINI;
    else if (strcmp(fmt, "trec") == 0) tf = CLS_TOPICS_TREC;
    else if (strcmp(fmt, "smart") == 0) tf = CLS_TOPICS_SMART;
    else if (strcmp(fmt, "mq") == 0) tf = CLS_TOPICS_MQ;
    else if (strcmp(fmt, "auto") == 0) tf = cls_topics_detect(topics);
    else return usage_error("search: unknown topics format '%s' (tsv, anserini, trec, smart, mq)", fmt);

    cls_index *idx = NULL;
    cls_batch *batch = NULL;
    cls_engine *eng = NULL;
    cls_results *res = NULL;
    int rc = 1;
    char *tmp = NULL;
    FILE *f = NULL;
    cls_status s = cls_index_open(index_path, &idx);
    if (s != CLS_OK) {
        fail(s, "opening the index");
        goto done;
    }
    if ((s = cls_batch_create(idx, &batch)) != CLS_OK) {
        fail(s, "search");
        goto done;
    }
    topics_ctx tc = {batch, CLS_OK};
    s = cls_topics_read(tf, topics, on_topic, &tc);
    if (tc.err != CLS_OK) s = tc.err;
    if (s != CLS_OK) {
        fail(s, "reading topics");
        goto done;
    }
    double t0 = now();
    if ((s = cls_engine_create(idx, device, &eng)) != CLS_OK) {
        fail(s, "starting the engine");
        goto done;
    }
    double t_start = now() - t0;
    if (verbose) {
        double bs;
        int cached;
        cls_engine_build_times(eng, &bs, &cached);
        fprintf(stderr, "%s\n", cls_engine_describe(eng));
        fprintf(stderr, "engine start-up %.3f s (%s)\n", t_start,
                bs > 0 ? (cached ? "warm: program from cache" : "cold: program built") : "no kernels");
    }
    if ((s = cls_results_create(&res)) != CLS_OK) {
        fail(s, "search");
        goto done;
    }
    double t1 = now();
    s = cls_engine_search(eng, batch, &p, res);
    double t_search = now() - t1;
    if (s != CLS_OK) {
        fail(s, "searching");
        goto done;
    }
    size_t nq = cls_batch_count(batch), empty = 0, hits = 0;
    for (size_t q = 0; q < nq; q++) {
        size_t n;
        cls_results_get(res, q, &n, NULL, NULL);
        hits += n;
        if (n == 0) {
            empty++;
            if (verbose)
                fprintf(stderr, "query %s: no results (%s)\n", cls_batch_qid(batch, q),
                        cls_batch_terms(batch, q) == 0 ? "empty, all stopwords or only unknown terms"
                                                       : "no document matches");
        }
    }
    struct stat ost;
    if (out && lstat(out, &ost) == 0 && !S_ISREG(ost.st_mode)) {
        /* a device, a pipe or a link (/dev/null, /dev/stdout, a FIFO): write straight through
         * it; renaming a temporary file over it would replace the node or the link itself */
        f = fopen(out, "w");
        int ok = f && write_run(f, idx, batch, res, tag);
        if (f) ok = (fclose(f) == 0) && ok;
        f = NULL;
        if (!ok) {
            fprintf(stderr, "%s: writing %s: %s\n", prog, out, strerror(errno));
            goto done;
        }
    } else if (out) {
        size_t len = strlen(out) + 16;
        tmp = malloc(len);
        if (!tmp) {
            fail(CLS_E_NOMEM, "writing the run");
            goto done;
        }
        snprintf(tmp, len, "%s.tmp.XXXXXX", out);
        int fd = mkstemp(tmp);
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            fprintf(stderr, "%s: cannot create %s: %s\n", prog, tmp, strerror(errno));
            if (fd >= 0) close(fd), remove(tmp);
            goto done;
        }
        int ok = write_run(f, idx, batch, res, tag);
        ok = (fclose(f) == 0) && ok;
        f = NULL;
        if (!ok || rename(tmp, out) != 0) {
            fprintf(stderr, "%s: writing %s: %s\n", prog, out, strerror(errno));
            remove(tmp);
            goto done;
        }
    } else if (!write_run(stdout, idx, batch, res, tag) || fflush(stdout) != 0) {
        fprintf(stderr, "%s: writing the run: %s\n", prog, strerror(errno));
        goto done;
    }
    const cls_profile_step *steps;
    uint32_t batches;
    size_t nsteps = cls_engine_profile(eng, &steps, &batches);
    if (verbose && batches) {
        fprintf(stderr, "device time in %u batch(es):", batches);
        for (size_t i = 0; i < nsteps; i++) {
            fprintf(stderr, "%s %s %.3f ms", i ? "," : "", steps[i].name, steps[i].seconds * 1e3);
            if (steps[i].transfer) fprintf(stderr, " (%.2f MB)", (double)steps[i].bytes / 1e6);
        }
        fputc('\n', stderr);
        const cls_counter *cn;
        size_t ncn = cls_engine_counters(eng, &cn);
        uint64_t in_lists = 0, decoded = 0;
        for (size_t i = 0; i < ncn; i++) {
            if (strcmp(cn[i].name, "blocks_in_lists") == 0) in_lists = cn[i].value;
            if (strcmp(cn[i].name, "blocks_decoded") == 0) decoded = cn[i].value;
        }
        if (in_lists)
            fprintf(stderr, "blocks decoded: %llu of the %llu in the queries' lists (%.1f%%)\n",
                    (unsigned long long)decoded, (unsigned long long)in_lists, 100.0 * (double)decoded / (double)in_lists);
    }
    if (verbose)
        fprintf(stderr, "searched %zu queries (%s, k %u) in %.3f s: %.1f queries/s, %zu hits, %zu queries without results\n",
                nq, cls_mode_name(p.mode), p.k, t_search, t_search > 0 ? (double)nq / t_search : 0.0, hits, empty);
    rc = 0;
done:
    free(tmp);
    cls_results_free(res);
    cls_engine_free(eng);
    cls_batch_free(batch);
    cls_index_close(idx);
    return rc;
}

/* ---- stats, generate, compare ------------------------------------------------------------- */

/* One size line: bits per docID and per frequency over the postings, metadata per posting. */
static void print_sizes(const char *label, const cls_index_stats *st)
{
    double P = st->num_postings ? (double)st->num_postings : 1.0;
    printf("%-14s %6u %9.3f %9.3f %9.3f %9.3f %14llu\n", label, st->block_size, (double)st->doc_bits / P,
           (double)st->freq_bits / P, 8.0 * (double)st->meta_bytes / P,
           (8.0 * (double)st->postings_bytes + 8.0 * (double)st->meta_bytes) / P,
           (unsigned long long)(st->postings_bytes + st->meta_bytes));
}

static int cmd_stats(int argc, char **argv)
{
    const char *path = NULL;
    int all = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--codecs") == 0) all = 1;
        else if (argv[i][0] == '-' || path) return usage_error("stats: usage: clsearch stats INDEX [--codecs]%s", "");
        else path = argv[i];
    }
    if (!path) return usage_error("stats: usage: clsearch stats INDEX [--codecs]%s", "");
    cls_index *idx;
    cls_status s = cls_index_open(path, &idx);
    if (s != CLS_OK) return fail(s, "opening the index");
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    cls_analyzer_opts an;
    cls_index_analyzer(idx, &an);
    printf("documents        %u\nterms            %u\npostings         %llu\ntokens           %llu\n"
           "avg doc length   %.2f\ncodec            %s (block size %u",
           st.num_docs, st.num_terms, (unsigned long long)st.num_postings, (unsigned long long)st.num_tokens,
           st.avg_doc_len, cls_codec_name(st.codec), st.block_size);
    if (cdc_get(st.codec) && cdc_get(st.codec)->uses_depth) printf(", exception depth %u", st.pfor_depth);
    printf(")\nblocks           %llu\npostings bytes   %llu (%.2f bits per posting)\nfile bytes       %llu\n"
           "analyzer         possessive=%d lowercase=%d stopwords=%d stem=%d\n\n",
           (unsigned long long)st.num_blocks, (unsigned long long)st.postings_bytes,
           st.num_postings ? 8.0 * (double)st.postings_bytes / (double)st.num_postings : 0.0,
           (unsigned long long)st.file_bytes, an.possessive, an.lowercase, an.stopwords, an.stem);
    printf("%-14s %6s %9s %9s %9s %9s %14s\n", "codec", "block", "bits/doc", "bits/freq", "meta/post", "total/post",
           "bytes");
    char label[32];
    snprintf(label, sizeof label, "%s%s", cls_codec_name(st.codec), all ? " (this)" : "");
    print_sizes(label, &st);
    /* --codecs: what every codec and block size would take, re-encoded from this index */
    static const uint32_t sizes[] = {64, 128, 256, 512};
    for (int c = 0; all && c < CLS_NUM_CODECS; c++)
        for (int k = 0; k < 4; k++) {
            cls_index_stats cs;
            if ((s = cls_index_codec_stats(idx, (cls_codec)c, sizes[k], 1, &cs)) != CLS_OK) {
                cls_index_close(idx);
                return fail(s, "re-encoding");
            }
            print_sizes(cls_codec_name((cls_codec)c), &cs);
        }
    cls_index_close(idx);
    return 0;
}

/* check: what opening leaves to first use, for every block (cls_index_check). */
static int cmd_check(int argc, char **argv)
{
    static const char *use = "check: usage: clsearch check INDEX [--threads N] [-v]%s";
    static const struct option lo[] = {{"threads", required_argument, 0, 1}, {"verbose", no_argument, 0, 'v'},
                                       {0, 0, 0, 0}};
    unsigned long long threads = 0;
    int verbose = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
        switch (opt) {
        case 'v': verbose = 1; break;
        case 1:
            if (!parse_u64(optarg, 1, 1024, &threads))
                return usage_error("check: --threads takes a number from 1 to 1024, not '%s'", optarg);
            break;
        default: return usage_error(use, "");
        }
    }
    if (optind != argc - 1) return usage_error(use, "");
    const char *path = argv[optind];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nth = threads ? (unsigned)threads : cores > 0 ? (unsigned)cores : 1;
    double t0 = now();
    cls_index *idx;
    cls_status s = cls_index_open(path, &idx);
    if (s != CLS_OK) return fail(s, "opening the index");
    double t1 = now();
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    if (verbose)
        fprintf(stderr, "opened %s in %.3f s: header, section table, 7 section checksums, %u documents, %u terms, "
                "%llu block records\n", path, t1 - t0, st.num_docs, st.num_terms, (unsigned long long)st.num_blocks);
    s = cls_index_check(idx, nth);
    double t2 = now();
    cls_index_close(idx);
    if (s != CLS_OK) return fail(s, "checking the index");
    if (verbose)
        fprintf(stderr, "checked in %.3f s on %u thread(s): postings checksum (%llu bytes), %llu blocks decoded "
                "(%llu postings, both streams, exact extents), max_score recomputed\n", t2 - t1, nth,
                (unsigned long long)st.postings_bytes, (unsigned long long)st.num_blocks,
                (unsigned long long)st.num_postings);
    printf("%s: ok\n", path);
    return 0;
}

static int cmd_recode(int argc, char **argv)
{
    static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"codec", required_argument, 0, 1},
                                       {"block", required_argument, 0, 2}, {"pfor-depth", required_argument, 0, 3},
                                       {0, 0, 0, 0}};
    const char *out = NULL;
    cls_build_opts o;
    cls_build_defaults(&o);
    cls_status s;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
        char *end;
        unsigned long v;
        switch (c) {
        case 'o': out = optarg; break;
        case 1:
            if ((s = cls_codec_parse(optarg, &o.codec)) != CLS_OK) return fail(s, "recode --codec");
            break;
        case 2:
        case 3:
            v = strtoul(optarg, &end, 10);
            if (*optarg == '\0' || *end || v > 4096) return usage_error("recode: bad number '%s'", optarg);
            if (c == 2) o.block_size = (uint32_t)v; else o.pfor_depth = (unsigned)v;
            break;
        default: return usage_error("recode: usage: clsearch recode INDEX -o OUT [--codec C] [--block N] [--pfor-depth D]%s", "");
        }
    }
    if (!out || optind != argc - 1)
        return usage_error("recode: usage: clsearch recode INDEX -o OUT [--codec C] [--block N] [--pfor-depth D]%s", "");
    cls_index *idx;
    if ((s = cls_index_open(argv[optind], &idx)) != CLS_OK) return fail(s, "opening the index");
    s = cls_index_recode(idx, &o, out);
    cls_index_close(idx);
    if (s != CLS_OK) return fail(s, "recoding");
    return 0;
}

/* The generate command's progress line: phase, share done, elapsed time. */
typedef struct gen_progress {
    int show, drawn;
    double t0;
} gen_progress;

static void on_gen_progress(void *user, const char *phase, uint64_t done, uint64_t total)
{
    gen_progress *p = user;
    if (!p->show) return;
    fprintf(stderr, "\r%-10s", phase);
    if (total) fprintf(stderr, " %5.1f%%", 100.0 * (double)done / (double)total);
    char el[32];
    fmt_duration(el, sizeof el, now() - p->t0);
    fprintf(stderr, "  %s\033[K", el);
    fflush(stderr);
    p->drawn = 1;
}

static int cmd_generate(int argc, char **argv)
{
    static const char *use = "generate: usage: clsearch generate -o DIR | --index FILE [--topics FILE] "
                             "[--scale small|medium|gov2] [--docs N] [--queries N] [--vocab N] [--doc-len N] "
                             "[--seed S] [--threads N] [--codec C] [--block N] [--pfor-depth D] [-q] [-v]%s";
    const char *out = NULL, *index = NULL, *topics = NULL, *scale = "small";
    int opt, quiet = 0, verbose = 0, index_only = 0;
    unsigned long long v, docs = 0, queries = 0, vocab = 0, seed = 0, doc_len = 0;
    int set_docs = 0, set_queries = 0, set_vocab = 0, set_seed = 0, set_doc_len = 0;
    cls_build_opts bo;
    cls_build_defaults(&bo);
    cls_status s;
    static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"docs", required_argument, 0, 1},
                                       {"queries", required_argument, 0, 2}, {"vocab", required_argument, 0, 3},
                                       {"seed", required_argument, 0, 4}, {"doc-len", required_argument, 0, 5},
                                       {"index", required_argument, 0, 6}, {"topics", required_argument, 0, 7},
                                       {"scale", required_argument, 0, 8}, {"threads", required_argument, 0, 9},
                                       {"codec", required_argument, 0, 10}, {"block", required_argument, 0, 11},
                                       {"pfor-depth", required_argument, 0, 12}, {"quiet", no_argument, 0, 'q'},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, "o:qv", lo, NULL)) != -1) {
        switch (opt) {
        case 'o': out = optarg; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        case 1:
            if (!parse_u64(optarg, 1, 4000000000ull, &docs)) return usage_error("generate: --docs takes a positive number, not '%s'", optarg);
            set_docs = 1;
            break;
        case 2:
            if (!parse_u64(optarg, 0, 100000000ull, &queries)) return usage_error("generate: --queries takes a number, not '%s'", optarg);
            set_queries = 1;
            break;
        case 3:
            if (!parse_u64(optarg, 100, 100000000ull, &vocab)) return usage_error("generate: --vocab takes a number >= 100, not '%s'", optarg);
            set_vocab = 1;
            break;
        case 4:
            if (!parse_u64(optarg, 0, ~0ull, &seed)) return usage_error("generate: --seed takes a number, not '%s'", optarg);
            set_seed = 1;
            break;
        case 5:
            if (!parse_u64(optarg, 1, 1000000, &doc_len)) return usage_error("generate: --doc-len takes a positive number, not '%s'", optarg);
            set_doc_len = 1;
            break;
        case 6: index = optarg; break;
        case 7: topics = optarg; break;
        case 8: scale = optarg; break;
        case 9:
            if (!parse_u64(optarg, 1, 1024, &v)) return usage_error("generate: --threads takes a number from 1 to 1024, not '%s'", optarg);
            bo.threads = (unsigned)v;
            index_only = 1;
            break;
        case 10:
            if (cls_codec_parse(optarg, &bo.codec) != CLS_OK) return usage_error("generate: %s", cls_last_error());
            index_only = 1;
            break;
        case 11:
            if (!parse_u64(optarg, 1, 1u << 20, &v)) return usage_error("generate: --block takes 64, 128, 256 or 512, not '%s'", optarg);
            bo.block_size = (uint32_t)v;
            index_only = 1;
            break;
        case 12:
            if (!parse_u64(optarg, 0, 1000, &v)) return usage_error("generate: --pfor-depth takes 0 to 3, not '%s'", optarg);
            bo.pfor_depth = (unsigned)v;
            index_only = 1;
            break;
        default: return usage_error(use, "");
        }
    }
    if (optind != argc) return usage_error("generate: unexpected argument '%s'", argv[optind]);
    if (out && index) return usage_error("generate: give -o DIR (text) or --index FILE, not both%s", "");
    if (!out && !index) return usage_error("generate: -o DIR (a text collection) or --index FILE is required%s", "");
    if (!index && (topics || index_only))
        return usage_error("generate: --topics, --threads, --codec, --block and --pfor-depth go with --index "
                           "(-o DIR writes DIR/topics.tsv)%s", "");
    gen_opts o;
    if (gen_scale(scale, &o) != CLS_OK) return usage_error("generate: unknown --scale '%s' (small, medium, gov2)", scale);
    if (set_docs) o.num_docs = (uint32_t)docs;
    if (set_queries) o.num_queries = (uint32_t)queries;
    if (set_vocab) o.vocab_size = (uint32_t)vocab;
    if (set_seed) o.seed = seed;
    if (set_doc_len) o.mean_doc_len = (double)doc_len;
    if (out) {
        s = gen_corpus(&o, out);
        if (s != CLS_OK) return fail(s, "generating the collection");
        return 0;
    }
    gen_progress p = {!quiet && isatty(2), 0, now()};
    gen_index_info info;
    s = gen_index_ex(&o, &bo, index, topics, on_gen_progress, &p, &info);
    if (p.drawn) fputc('\n', stderr);
    if (s != CLS_OK) return fail(s, "generating the index");
    double el = now() - p.t0;
    if (!quiet) {
        struct stat st;
        unsigned long long bytes = stat(index, &st) == 0 ? (unsigned long long)st.st_size : 0ull;
        fprintf(stderr, "generated %s: %u documents, %u terms, %llu tokens, %llu postings (%.1f a document) into %s "
                "(%s, block %u, %.2f GB) in %.1f s on %u thread%s: %.1f M postings/s\n",
                scale, info.num_docs, info.num_terms, (unsigned long long)info.num_tokens,
                (unsigned long long)info.num_postings, info.num_docs ? (double)info.num_postings / info.num_docs : 0.0,
                index, cls_codec_name(bo.codec), bo.block_size, (double)bytes / 1e9, el, info.threads,
                info.threads == 1 ? "" : "s", el > 0 ? (double)info.num_postings / el / 1e6 : 0.0);
        if (topics) fprintf(stderr, "topics: %u queries in %s\n", o.num_queries, topics);
        if (verbose)
            fprintf(stderr, "set-up %.2f s, counting %.2f s, filling %.2f s, encoding %.2f s, writing %.2f s, "
                    "topics %.2f s\n", info.seconds_setup, info.seconds_count, info.seconds_fill,
                    info.seconds_encode, info.seconds_write, info.seconds_topics);
    }
    return 0;
}

/* A TREC run line: qid Q0 docno rank score tag. */
typedef struct run_line {
    char qid[256], docno[256];
    double score;
} run_line;

static int read_run_line(FILE *f, const char *path, unsigned long *line, run_line *r, int *bad)
{
    char buf[2048], q0[16], tag[256];
    long rank;
    while (fgets(buf, sizeof buf, f)) {
        ++*line;
        if (buf[0] == '\n') continue;
        if (sscanf(buf, "%255s %15s %255s %ld %lf %255s", r->qid, q0, r->docno, &rank, &r->score, tag) != 6) {
            fprintf(stderr, "%s: %s:%lu: not a TREC run line\n", prog, path, *line);
            *bad = 1;
            return 0;
        }
        return 1;
    }
    return 0;
}

static int cmd_compare(int argc, char **argv)
{
    if (argc != 3) return usage_error("compare: usage: clsearch compare RUN_A RUN_B%s", "");
    FILE *a = fopen(argv[1], "r"), *b = fopen(argv[2], "r");
    if (!a || !b) {
        fprintf(stderr, "%s: cannot open %s: %s\n", prog, !a ? argv[1] : argv[2], strerror(errno));
        if (a) fclose(a);
        if (b) fclose(b);
        return 1;
    }
    unsigned long la = 0, lb = 0, n = 0;
    int bad = 0, rc = 0;
    run_line x = {{0}, {0}, 0}, y = {{0}, {0}, 0};
    for (;;) {
        int ha = read_run_line(a, argv[1], &la, &x, &bad), hb = read_run_line(b, argv[2], &lb, &y, &bad);
        if (bad) { rc = 1; break; }
        if (!ha && !hb) break;
        double m = x.score > y.score ? x.score : y.score, d = x.score > y.score ? x.score - y.score : y.score - x.score;
        if (ha != hb || strcmp(x.qid, y.qid) || strcmp(x.docno, y.docno) || d > 1e-5 * (m < 0 ? -m : m) + 1e-6) {
            if (ha != hb) printf("differ: %s ends at line %lu, the other goes on\n", ha ? argv[2] : argv[1], ha ? lb : la);
            else printf("differ at line %lu: %s %s %.6f against %s %s %.6f\n", la, x.qid, x.docno, x.score, y.qid, y.docno, y.score);
            rc = 1;
            break;
        }
        n++;
    }
    if (rc == 0) printf("identical: %lu lines, same docnos in the same order, scores within 1e-5\n", n);
    fclose(a);
    fclose(b);
    return rc;
}

/* ---- CIFF ------------------------------------------------------------------------------------ */

static int cmd_ciff_import(int argc, char **argv)
{
    static const char *use = "ciff-import: usage: clsearch ciff-import FILE.ciff -o INDEX [--codec C] [--block N] "
                             "[--pfor-depth D] [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive] [-v]%s";
    static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"codec", required_argument, 0, 1},
                                       {"block", required_argument, 0, 2}, {"pfor-depth", required_argument, 0, 3},
                                       {"no-stem", no_argument, 0, 4}, {"no-stopwords", no_argument, 0, 5},
                                       {"no-lowercase", no_argument, 0, 6}, {"no-possessive", no_argument, 0, 7},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    const char *out = NULL;
    int verbose = 0, opt;
    unsigned long long v;
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    cls_build_opts o;
    cls_build_defaults(&o);
    while ((opt = getopt_long(argc, argv, "o:v", lo, NULL)) != -1) {
        switch (opt) {
        case 'o': out = optarg; break;
        case 'v': verbose = 1; break;
        case 1:
            if (cls_codec_parse(optarg, &o.codec) != CLS_OK) return usage_error("ciff-import: %s", cls_last_error());
            break;
        case 2:
            if (!parse_u64(optarg, 1, 1u << 20, &v)) return usage_error("ciff-import: --block takes 64, 128, 256 or 512, not '%s'", optarg);
            o.block_size = (uint32_t)v;
            break;
        case 3:
            if (!parse_u64(optarg, 0, 1000, &v)) return usage_error("ciff-import: --pfor-depth takes 0 to 3, not '%s'", optarg);
            o.pfor_depth = (unsigned)v;
            break;
        case 4: an.stem = 0; break;
        case 5: an.stopwords = 0; break;
        case 6: an.lowercase = 0; break;
        case 7: an.possessive = 0; break;
        default: return usage_error(use, "");
        }
    }
    if (!out || optind != argc - 1) return usage_error(use, "");
    double t0 = now();
    cls_status s = cls_ciff_import(argv[optind], &an, &o, out);
    if (s != CLS_OK) return fail(s, "importing CIFF (nothing written)");
    if (verbose) fprintf(stderr, "imported %s into %s in %.2f s\n", argv[optind], out, now() - t0);
    return 0;
}

static int cmd_ciff_export(int argc, char **argv)
{
    static const char *use = "ciff-export: usage: clsearch ciff-export INDEX -o FILE.ciff [--description TEXT] [-v]%s";
    static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"description", required_argument, 0, 1},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    const char *out = NULL, *desc = NULL;
    int verbose = 0, opt;
    while ((opt = getopt_long(argc, argv, "o:v", lo, NULL)) != -1) {
        switch (opt) {
        case 'o': out = optarg; break;
        case 'v': verbose = 1; break;
        case 1: desc = optarg; break;
        default: return usage_error(use, "");
        }
    }
    if (!out || optind != argc - 1) return usage_error(use, "");
    double t0 = now();
    cls_index *idx;
    cls_status s = cls_index_open(argv[optind], &idx);
    if (s != CLS_OK) return fail(s, "opening the index");
    char dflt[4200];
    if (!desc) {
        snprintf(dflt, sizeof dflt, "clsearch %s export of %s", cls_version(), argv[optind]);
        desc = dflt;
    }
    s = cls_ciff_export(idx, out, desc);
    cls_index_close(idx);
    if (s != CLS_OK) return fail(s, "exporting CIFF");
    if (verbose) fprintf(stderr, "exported %s to %s in %.2f s\n", argv[optind], out, now() - t0);
    return 0;
}

/* The codec names from the codec table, "raw|bp|pfor|optpfd|rice", for the usage lines. */
static const char *codec_names(char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int c = 0; c < CLS_NUM_CODECS && at < len; c++) {
        int k = snprintf(buf + at, len - at, "%s%s", c ? "|" : "", cls_codec_name((cls_codec)c));
        if (k < 0) break;
        at += (size_t)k;
    }
    return buf;
}

static void help(void)
{
    char codecs[256];
    codec_names(codecs, sizeof codecs);
    printf("clsearch %s: query processing on OpenCL devices\n\n"
           "  clsearch devices [-v]                       list OpenCL platforms and devices\n"
           "  clsearch index -c {jsonl,beir,html,trec,smart,files} -o INDEX INPUT...\n"
           "                  [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive]\n"
           "                  [--threads N] [--codec %s] [--block 64|128|256|512]\n"
           "                  [--pfor-depth 0..3] [-q] [-v]\n"
           "                  files: a folder tree, archive (.tar[.gz|.xz|...], .zip) or file of plain text,\n"
           "                  docno = relative path (%%XX-escaped), *.gz decompressed, binary files skipped;\n"
           "                  --threads: analysis threads (default: all cores); -q: no progress line\n"
           "                  (shown when stderr is a terminal); -v: summary and timings\n"
           "  clsearch search -x INDEX -q TOPICS [-f {auto,tsv,anserini,trec,smart,mq}] [-k K] [-m MODE]\n"
           "                  [--k1 0.9] [--b 0.4] [-d DEVICE] [-o RUN] [--tag TAG] [-v]\n"
           "                  DEVICE: auto, gpu, cpu, ref, or P:D (default $CLSEARCH_DEVICE, else auto)\n",
           cls_version(), codecs);
    for (cls_mode m = 0; cls_mode_name(m); m++)
        printf("                  -m %-7s %s%s\n", cls_mode_name(m), cls_mode_help(m), m == CLS_MODE_OR ? " (default)" : "");
    printf("  clsearch stats INDEX [--codecs]             sizes; --codecs: every codec and block size\n"
           "  clsearch check INDEX [--threads N] [-v]     verifies what opening leaves to first use: the postings\n"
           "                  checksum, every block decoded strictly, every max_score; prints 'INDEX: ok' or\n"
           "                  the first damage (section, term, block) and exits 1; --threads: default all cores;\n"
           "                  -v: what was checked and how long it took\n"
           "  clsearch recode INDEX -o OUT [--codec %s] [--block 64|128|256|512]\n"
           "                  [--pfor-depth 0..3]         the same index in another codec or block size\n"
           "  clsearch generate -o DIR [--scale S] [--docs N] [--queries N] [--vocab N] [--doc-len N] [--seed S]\n"
           "                  a generated text collection: DIR/corpus.jsonl and DIR/topics.tsv\n"
           "  clsearch generate --index FILE [--topics FILE] [--scale small|medium|gov2] [--docs N] [--queries N]\n"
           "                  [--vocab N] [--doc-len N] [--seed S] [--threads N] [--codec C] [--block N]\n"
           "                  [--pfor-depth D] [-q] [-v]\n"
           "                  the same collection straight into an index, no text, on all cores (--threads);\n"
           "                  small 20k documents, medium 2M, gov2 25.2M (~6e9 postings); -q: no progress or totals\n"
           "  clsearch ciff-import FILE.ciff[.gz] -o INDEX [--codec C] [--block N] [--pfor-depth D]\n"
           "                  [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive] [-v]\n"
           "                  CIFF (Anserini, PISA, Lucene) to an index; the analyzer flags are what\n"
           "                  queries will use, so give those the CIFF's terms were made with\n"
           "  clsearch ciff-export INDEX -o FILE.ciff [--description TEXT] [-v]\n"
           "  clsearch compare RUN_A RUN_B                same docnos in the same order, scores within 1e-5\n"
           "  clsearch bench copy [-d DEVICES] [-r N] [--mib N] [--json FILE]\n"
           "                  the devices' memory-bandwidth ceiling (copy kernel, bytes read + written)\n"
           "  clsearch bench decode [-d ref,DEVICES] [-r N] [--select 1,0.05] [--algo hs,we,shfl|all]\n"
           "                  [--ceiling GBPS] [--json FILE] [--plot DIR] INDEX...\n"
           "                  decoding speed of whole lists and scattered blocks per scan variant, checked against ref\n"
           "  clsearch bench e2e -x INDEX -q TOPICS [-d ref,DEVICES] [-m or,and,and-or] [-k 10,100,1000]\n"
           "                  [-b 1,16,256,1024,4096,16384] [--seconds S] [--json FILE]\n"
           "                  queries/s and latency p50/p95/p99 by batch size, transfers apart\n"
           "  clsearch bench topk [-d DEVICES] [-c ROWSxN:K,...] [-r N] [--json FILE]\n"
           "                  top-k selection alone on dense score rows, checked on the host\n"
           "  clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--algo all|hs,we,shfl] [--wg N,...] [--items N,...]\n"
           "                  [--json FILE]\n"
           "                  device-wide prefix sum alone, per variant, checked on the host\n"
           "  clsearch bench intersect [-d DEVICES] [--terms 2] [--short 1000,10000] [--ratios 1,10,100,1000]\n"
           "                  [--batch 1,64,1024,16384] [--wg 64,128,256,512] [-r N] [--mib N] [--json FILE]\n"
           "                  AND-query list intersection alone, per work-group size, checked on the host\n"
           "  clsearch bench score [-d DEVICES] [--mode and,or] [--cands 1e3,...] [--lists 1e4,...] [--batch N,...]\n"
           "                  [--wg 64,128,256,512] [-r N] [--mib N] [--json FILE]\n"
           "                  BM25 scoring alone (candidates; dense rows), per work-group size, checked on the host\n"
           "  clsearch tune [-d DEVICE] [-o FILE] [-r N] [--quick] [--json FILE]\n"
           "                  sweeps the kernel variants on the device, writes the tuning file the engine loads\n"
           "  clsearch tune --list                        the registry of tunable parameters\n\n",
           codecs);
    printf("Codecs (--codec):\n");
    for (int c = 0; c < CLS_NUM_CODECS; c++) {
        const cdc_codec *d = cdc_get((cls_codec)c);
        printf("  %-8s %s\n", d->name, d->help);
    }
    printf("\nEnvironment: CLSEARCH_DEVICE, CLSEARCH_CACHE_DIR (program binaries), CLSEARCH_KERNEL_DIR\n"
           "(kernel sources instead of the embedded ones), CLSEARCH_TUNING (tuning file; 'none' ignores it;\n"
           "default CACHE_DIR/tuning.json), CLSEARCH_PARAMS (NAME=VALUE,... over the tuned values).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        help();
        return 2;
    }
    const char *cmd = argv[1];
    argc--;
    argv++;
    if (strcmp(cmd, "devices") == 0) return cmd_devices(argc, argv);
    if (strcmp(cmd, "index") == 0) return cmd_index(argc, argv);
    if (strcmp(cmd, "search") == 0) return cmd_search(argc, argv);
    if (strcmp(cmd, "stats") == 0) return cmd_stats(argc, argv);
    if (strcmp(cmd, "check") == 0) return cmd_check(argc, argv);
    if (strcmp(cmd, "recode") == 0) return cmd_recode(argc, argv);
    if (strcmp(cmd, "generate") == 0) return cmd_generate(argc, argv);
    if (strcmp(cmd, "compare") == 0) return cmd_compare(argc, argv);
    if (strcmp(cmd, "ciff-import") == 0) return cmd_ciff_import(argc, argv);
    if (strcmp(cmd, "ciff-export") == 0) return cmd_ciff_export(argc, argv);
    if (strcmp(cmd, "tune") == 0) return bench_tune(argc, argv);
    if (strcmp(cmd, "bench") == 0) {
        if (argc < 2)
            return usage_error("bench: usage: clsearch bench {copy,decode,e2e,topk,scan,intersect,score} [options]%s", "");
        if (strcmp(argv[1], "copy") == 0) return bench_copy(argc - 1, argv + 1);
        if (strcmp(argv[1], "decode") == 0) return bench_decode(argc - 1, argv + 1);
        if (strcmp(argv[1], "e2e") == 0) return bench_e2e(argc - 1, argv + 1);
        if (strcmp(argv[1], "topk") == 0) return bench_topk(argc - 1, argv + 1);
        if (strcmp(argv[1], "scan") == 0) return bench_scan(argc - 1, argv + 1);
        if (strcmp(argv[1], "intersect") == 0) return bench_intersect(argc - 1, argv + 1);
        if (strcmp(argv[1], "score") == 0) return bench_score(argc - 1, argv + 1);
        return usage_error("bench: unknown suite '%s' (copy, decode, e2e, topk, scan, intersect, score)", argv[1]);
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        help();
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("clsearch %s\n", cls_version());
        return 0;
    }
    return usage_error("unknown command '%s'", cmd);
}
