/* The search command: queries from a topics file or the command line, searched on an engine,
 * written as a TREC run or as JSON lines, to standard output or to a file. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/strset.h"
#include "util/utf8.h"

/* The topics file's queries into the batch, each qid once. */
typedef struct topics_ctx {
    cls_batch *b;
    cls_status err;
    strset qids; /* a qid given twice would repeat its results under one name in the run */
} topics_ctx;

static int on_topic(void *user, const char *qid, const char *text)
{
    topics_ctx *c = user;
    if (strset_find(&c->qids, qid, strlen(qid), NULL)) {
        c->err = err_set(CLS_E_FORMAT, "query id '%s' is given twice: query ids must be unique", qid);
        return 1;
    }
    if (strset_add(&c->qids, qid, strlen(qid), NULL) < 0) {
        c->err = err_set(CLS_E_NOMEM, "reading topics: out of memory");
        return 1;
    }
    c->err = cls_batch_add(c->b, qid, text);
    return c->err != CLS_OK;
}

/* The stored fields a search prints with each hit (--fields, or with --json all of them). */
typedef struct field_sel {
    uint32_t id[CLS_MAX_FIELDS];
    size_t n;
    char *utf8;   /* a value made valid UTF-8 for JSON, reused from hit to hit */
    size_t cap;
} field_sel;

/* A value in a tab-separated column: tab, newline, carriage return and backslash escaped as
 * \t, \n, \r and \\, so that a line stays one line of columns. */
static int put_column(FILE *f, const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        const char *esc = c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\\' ? "\\\\" : NULL;
        if (esc ? fputs(esc, f) < 0 : fputc(c, f) == EOF) return 0;
    }
    return 1;
}

/* v[0..n) as JSON can hold it (util/utf8.h), in sel's buffer where it must be mended. */
static const char *json_text(field_sel *sel, const char *v, size_t n) { return utf8_json(v, n, &sel->utf8, &sel->cap); }

static int write_run(FILE *f, const cls_index *idx, const cls_batch *b, const cls_results *r, const char *tag,
                     const field_sel *sel)
{
    for (size_t q = 0; q < cls_results_count(r); q++) {
        size_t n;
        const uint32_t *docs;
        const float *scores;
        cls_results_get(r, q, &n, &docs, &scores);
        if (fault_hit(FAULT_WRITE)) { /* CLSEARCH_FAULT's write faults: a full disk */
            errno = ENOSPC;
            return 0;
        }
        for (size_t j = 0; j < n; j++) {
            if (fprintf(f, "%s Q0 %s %zu %.6f %s", cls_batch_qid(b, q), cls_index_docno(idx, docs[j]), j + 1,
                        (double)scores[j], tag) < 0)
                return 0;
            /* --fields: after the run's six columns, a tab and the values, tab-separated */
            for (size_t k = 0; k < sel->n; k++) {
                size_t len;
                const char *v = cls_index_field(idx, docs[j], sel->id[k], &len);
                if (fputc('\t', f) == EOF || (v && !put_column(f, v, len))) return 0;
            }
            if (fputc('\n', f) == EOF) return 0;
        }
    }
    return 1;
}

/* A score as the run file writes it (six decimals), so both outputs agree. */
static double run_score(float score)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", (double)score);
    return strtod(buf, NULL);
}

/* --json: one object a hit, {"qid", "rank", "docno", "score"}, with a second ranking stage
 * (--rerank) "score" the model's and "first_score" the first stage's, and "fields" when fields
 * are printed: {"name": value, ...}, null for an absent value. Every string valid UTF-8 (utf8_json's
 * rule, as the server and the Python bindings apply it). */
static int write_json(FILE *f, const cls_index *idx, const cls_batch *b, const cls_results *r, field_sel *sel)
{
    for (size_t q = 0; q < cls_results_count(r); q++) {
        size_t n;
        const uint32_t *docs;
        const float *scores, *first;
        cls_results_get(r, q, &n, &docs, &scores);
        cls_results_get_first(r, q, &n, &first);
        for (size_t j = 0; j < n; j++) {
            /* qids come from topics files and docnos from the collection, as any bytes: each is
             * copied into the object before the buffer json_text reuses is written again */
            const char *qid = cls_batch_qid(b, q), *docno = cls_index_docno(idx, docs[j]), *u;
            cJSON *o = cJSON_CreateObject();
            if (!o || !(u = json_text(sel, qid, strlen(qid))) || !cJSON_AddStringToObject(o, "qid", u) ||
                !cJSON_AddNumberToObject(o, "rank", (double)(j + 1)) ||
                !(u = json_text(sel, docno, strlen(docno))) || !cJSON_AddStringToObject(o, "docno", u) ||
                !cJSON_AddNumberToObject(o, "score", run_score(scores[j])) ||
                (cls_results_reranked(r) && !cJSON_AddNumberToObject(o, "first_score", run_score(first[j])))) {
                cJSON_Delete(o);
                return 0;
            }
            cJSON *fo = sel->n ? cJSON_AddObjectToObject(o, "fields") : NULL;
            int ok = !sel->n || fo;
            for (size_t k = 0; ok && k < sel->n; k++) {
                size_t len;
                const char *name = cls_index_field_name(idx, sel->id[k]);
                const char *v = cls_index_field(idx, docs[j], sel->id[k], &len), *t = v ? json_text(sel, v, len) : NULL;
                ok = v ? t && cJSON_AddStringToObject(fo, name, t) : cJSON_AddNullToObject(fo, name) != NULL;
            }
            if (!ok) {
                cJSON_Delete(o);
                return 0;
            }
            if (!put_json_line(f, o)) return 0;
        }
    }
    return 1;
}

static int write_results(FILE *f, int json, const cls_index *idx, const cls_batch *b, const cls_results *r,
                         const char *tag, field_sel *sel)
{
    return json ? write_json(f, idx, b, r, sel) : write_run(f, idx, b, r, tag, sel);
}

/* What `search` was asked. */
typedef struct search_args {
    const char *index_path, *topics, *fmt, *device, *out, *tag, *qid, *fields_opt;
    const char *rerank; /* --rerank's model file, or NULL */
    const char *topics_path; /* topics, "/dev/stdin" for '-' */
    int verbose, json;
    cls_topics_format tf;
    cls_search_params p;
    cls_engine_opts eo;
    char *query; /* QUERY... joined, or NULL */
} search_args;

/* What a search holds while it runs, released by search_free. */
typedef struct search_state {
    cls_index *idx;
    cls_batch *batch;
    cls_engine *eng;
    cls_results *res;
    cls_model *model;   /* --rerank's */
    char *fields_buf;
    field_sel sel;
    double t_search;
} search_state;

static const name_value topics_formats[] = {
    {"auto", CLS_TOPICS_AUTO}, {"tsv", CLS_TOPICS_TSV},     {"anserini", CLS_TOPICS_ANSERINI},
    {"trec", CLS_TOPICS_TREC}, {"smart", CLS_TOPICS_SMART}, {"mq", CLS_TOPICS_MQ},
};

/* search's options into a; 0, or the exit status of a refusal. */
static int search_options(int argc, char **argv, search_args *a)
{
    float batch_ms = 0;
    int opt, rc;
    static const struct option lo[] = {{"index", required_argument, 0, 'x'}, {"topics", required_argument, 0, 'q'},
                                       {"format", required_argument, 0, 'f'}, {"k", required_argument, 0, 'k'},
                                       {"mode", required_argument, 0, 'm'}, {"k1", required_argument, 0, 1},
                                       {"b", required_argument, 0, 2}, {"device", required_argument, 0, 'd'},
                                       {"output", required_argument, 0, 'o'}, {"tag", required_argument, 0, 3},
                                       {"json", no_argument, 0, 4}, {"qid", required_argument, 0, 5},
                                       {"device-mem", required_argument, 0, 6}, {"batch-ms", required_argument, 0, 7},
                                       {"placement", required_argument, 0, 9},
                                       {"fields", required_argument, 0, 8},
                                       {"deadline-ms", required_argument, 0, 10},
                                       {"rerank", required_argument, 0, 11},
                                       {"rerank-depth", required_argument, 0, 12},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, ":x:q:f:k:m:d:o:v", lo, NULL)) != -1) {
        switch (opt) {
        case 'x': a->index_path = optarg; break;
        case 'q': a->topics = optarg; break;
        case 'f': a->fmt = optarg; break;
        case 'k':
            if ((rc = k_option("search", optarg, &a->p.k)) != 0) return rc;
            break;
        case 'm':
            if ((rc = mode_option("search", optarg, &a->p.mode)) != 0) return rc;
            break;
        case 1:
            if ((rc = k1_option("search", optarg, &a->p.k1)) != 0) return rc;
            break;
        case 2:
            if ((rc = b_option("search", optarg, &a->p.b)) != 0) return rc;
            break;
        case 10: {
            float d;
            if (!parse_float(optarg, &d) || !(d >= 0 && d <= 1e9))
                return usage_error("search: --deadline-ms takes 0 to 1e9 milliseconds (0: none), not '%s'", optarg);
            a->p.deadline_ms = d;
            break;
        }
        case 11: a->rerank = optarg; break;
        case 12: {
            unsigned long long v;
            if (!parse_u64(optarg, 1, CLS_MAX_K, &v))
                return usage_error("search: --rerank-depth must be a whole number from 1 to 100000, not '%s'", optarg);
            a->p.rerank_depth = (uint32_t)v;
            break;
        }
        case 'd': a->device = optarg; break;
        case 'o': a->out = optarg; break;
        case 3: a->tag = optarg; break;
        case 4: a->json = 1; break;
        case 5: a->qid = optarg; break;
        case 6:
            if ((rc = device_mem_option("search", optarg, &a->eo)) != 0) return rc;
            break;
        case 7:
            if (!parse_float(optarg, &batch_ms) || !(batch_ms > 0 && batch_ms <= 60000))
                return usage_error("search: --batch-ms takes a number of milliseconds above 0, up to 60000, not '%s'",
                                   optarg);
            a->eo.batch_ms = batch_ms;
            break;
        case 8: a->fields_opt = optarg; break;
        case 9:
            if ((rc = placement_option("search", optarg, &a->eo)) != 0) return rc;
            break;
        case 'v': a->verbose = 1; break;
        default: return bad_option(argc, argv, opt);
        }
    }
    return 0;
}

/* search's arguments into a, checked, and the output guarded; 0, or the exit status of a
 * refusal. a->query is the caller's to free. */
static int search_parse(int argc, char **argv, search_args *a)
{
    memset(a, 0, sizeof *a);
    a->tag = "clsearch";
    cls_search_defaults(&a->p);
    cls_engine_opts_init(&a->eo);
    int rc = search_options(argc, argv, a), tf;
    if (rc != 0) return rc;
    /* QUERY...: the words after the options, one query */
    if (optind < argc) {
        if (a->topics)
            return usage_error("search: give -q TOPICS or a query, not both (the query starts at '%s')", argv[optind]);
        if (a->fmt) return usage_error("search: -f %s goes with -q TOPICS, not with a query", a->fmt);
    } else if (a->qid) {
        return usage_error("search: --qid %s names a query given on the command line; there is none", a->qid);
    }
    if (!a->index_path || (!a->topics && optind >= argc))
        return usage_error("search: -x INDEX and -q TOPICS (or a query) are required%s", "");
    if (a->p.rerank_depth && !a->rerank)
        return usage_error("search: --rerank-depth goes with --rerank MODEL%s", "");
    if (strpbrk(a->tag, " \t\n")) return usage_error("search: the tag '%s' holds white space", a->tag);
    if (a->qid && (!*a->qid || strpbrk(a->qid, " \t\n")))
        return usage_error("search: the qid '%s' is empty or holds white space", a->qid);
    if (!name_lookup(topics_formats, sizeof topics_formats / sizeof topics_formats[0], a->fmt ? a->fmt : "auto", &tf))
        return usage_error("search: unknown topics format '%s' (auto, tsv, anserini, trec, smart, mq)", a->fmt);
    a->tf = (cls_topics_format)tf;
    /* '-' is standard input: read once, in any format (the format is told from the first line
     * as it goes by) */
    a->topics_path = a->topics && strcmp(a->topics, "-") == 0 ? "/dev/stdin" : a->topics;
    char *search_in[3] = {(char *)a->index_path, (char *)a->topics_path, (char *)a->rerank};
    if (a->out && guard_output("search", a->out, OF_RUN, search_in, a->rerank ? 3 : 2)) return 1;
    if (optind < argc) {
        size_t len = 1;
        for (int i = optind; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(a->query = malloc(len))) return fail(CLS_E_NOMEM, "search");
        a->query[0] = '\0';
        for (int i = optind; i < argc; i++) {
            if (i > optind) strcat(a->query, " ");
            strcat(a->query, argv[i]);
        }
    }
    return 0;
}

/* The fields to print: those named (each one the index stores), or with --json all. 0, or the
 * exit status of a refusal. */
static int search_fields(const search_args *a, search_state *st)
{
    if (a->fields_opt) {
        const char *names[CLS_MAX_FIELDS];
        size_t n;
        int rc = split_fields("search: --fields", a->fields_opt, &st->fields_buf, names, &n);
        if (rc != 0) return rc;
        for (size_t k = 0; k < n; k++)
            if (cls_index_field_find(st->idx, names[k], &st->sel.id[st->sel.n++]) != CLS_OK)
                return usage_error("search: --fields: %s", cls_last_error());
    } else if (a->json) {
        for (uint32_t k = 0; k < cls_index_field_count(st->idx); k++) st->sel.id[st->sel.n++] = k;
    }
    return 0;
}

/* The batch of queries: the one of the command line, or the topics file's. 0, or 1 after the
 * message. */
static int search_queries(const search_args *a, search_state *st)
{
    cls_status s;
    if ((s = cls_batch_create(st->idx, &st->batch)) != CLS_OK) return fail(s, "search");
    if (a->query) {
        if ((s = cls_batch_add(st->batch, a->qid ? a->qid : "1", a->query)) != CLS_OK) return fail(s, "search");
        return 0;
    }
    topics_ctx tc = {st->batch, CLS_OK, {0}};
    s = cls_topics_read(a->tf, a->topics_path, on_topic, &tc);
    strset_free(&tc.qids);
    if (tc.err != CLS_OK) s = tc.err;
    if (s != CLS_OK) return fail(s, "reading topics");
    if (cls_batch_count(st->batch) == 0) {
        fprintf(stderr, "%s: reading topics: %s holds no topic (it is empty or all blank lines)\n", prog,
                strcmp(a->topics, "-") == 0 ? "standard input" : a->topics);
        return 1;
    }
    return 0;
}

/* The engine started and the batch searched, the time it took in st->t_search. 0, or 1 after
 * the message. */
static int search_engine(search_args *a, search_state *st)
{
    cls_status s;
    double t0 = now();
    a->eo.device = a->device;
    if ((s = cls_engine_create_opts(st->idx, &a->eo, &st->eng)) != CLS_OK)
        return fail_reading(st->idx, s, "starting the engine");
    double t_start = now() - t0;
    if (a->verbose) {
        double bs;
        int cached;
        cls_engine_build_times(st->eng, &bs, &cached);
        fprintf(stderr, "%s\n", cls_engine_describe(st->eng));
        fprintf(stderr, "engine start-up %.3f s (%s)\n", t_start,
                bs > 0 ? (cached ? "warm: program from cache" : "cold: program built") : "no kernels");
    }
    if (a->rerank) {
        if ((s = cls_model_load(a->rerank, &st->model)) != CLS_OK) return fail(s, "--rerank");
        a->p.rerank = st->model;
        if (a->verbose)
            fprintf(stderr, "rerank: model %s; the top %u of the first stage (%s) re-ranked by it, the top %u kept\n",
                    cls_model_describe(st->model), a->p.rerank_depth ? a->p.rerank_depth : CLS_RERANK_DEPTH,
                    cls_mode_name(a->p.mode), a->p.k);
    }
    if ((s = cls_results_create(&st->res)) != CLS_OK) return fail(s, "search");
    double t1 = now();
    s = cls_engine_search(st->eng, st->batch, &a->p, st->res);
    st->t_search = now() - t1;
    if (s != CLS_OK) return fail_reading(st->idx, s, "searching");
    if (a->verbose && a->rerank) {
        /* where the candidates were scored: the engine's counters say */
        const cls_counter *cn;
        uint64_t dev = 0, host = 0;
        for (size_t i = 0, n = cls_engine_counters(st->eng, &cn); i < n; i++) {
            if (strcmp(cn[i].name, "rerank_queries_device") == 0) dev += cn[i].value;
            if (strcmp(cn[i].name, "rerank_queries_host") == 0) host += cn[i].value;
        }
        /* a device's batches run the whole stage; else the host after the first stage (the
         * engine's description, "rerank=", says why a device left it) */
        fprintf(stderr, "rerank: %s%s%s\n",
                dev ? "scored on the device, in its batches after top-k (rerank_tf, features_rows, trees_score, "
                      "rerank_order), only the final k read back" : "",
                dev && host ? "; " : "",
                host ? "scored and ranked on the host after the first stage (plain-C features and evaluator)" : "");
    }
    /* an OpenCL engine may search without reading the file again: a shrunk one is found here */
    return index_whole(st->idx, "searching") ? 0 : 1;
}

/* The results to -o's file through outfile (a temporary file renamed over it when whole; a
 * device or a pipe written through; a link's target replaced, the link kept); to standard
 * output without -o. 0, or 1 after the message. The docnos and fields written come from the
 * mapping: no run from a shrunk file. */
static int search_write(const search_args *a, search_state *st)
{
    if (!a->out) {
        if (!write_results(stdout, a->json, st->idx, st->batch, st->res, a->tag, &st->sel) || fflush(stdout) != 0) {
            fprintf(stderr, "%s: writing the run: %s\n", prog, strerror(errno));
            return 1;
        }
        return index_whole(st->idx, "writing the run") ? 0 : 1;
    }
    of_file o;
    cls_status s = of_open(&o, a->out, 0);
    if (s != CLS_OK) {
        fprintf(stderr, "%s: %s\n", prog, cls_last_error());
        return 1;
    }
    if (!write_results(o.f, a->json, st->idx, st->batch, st->res, a->tag, &st->sel)) {
        fprintf(stderr, "%s: writing %s: %s\n", prog, a->out, strerror(errno));
        of_discard(&o);
        return 1;
    }
    if (!index_whole(st->idx, "writing the run")) {
        of_discard(&o);
        return 1;
    }
    if ((s = of_commit(&o)) != CLS_OK) {
        fprintf(stderr, "%s: %s\n", prog, cls_last_error());
        return 1;
    }
    return 0;
}

/* -v: the device's steps (where a device ran), the counters and each executor's share. */
static void search_profile(const search_state *st)
{
    const cls_profile_step *steps;
    uint32_t batches;
    size_t nsteps = cls_engine_profile(st->eng, &steps, &batches);
    if (batches) {
        fprintf(stderr, "device time in %u batch(es):", batches);
        for (size_t i = 0; i < nsteps; i++) {
            fprintf(stderr, "%s %s %.3f ms", i ? "," : "", steps[i].name, steps[i].seconds * 1e3);
            if (steps[i].transfer) fprintf(stderr, " (%.2f MB)", (double)steps[i].bytes / 1e6);
        }
        fputc('\n', stderr);
    }
    const cls_counter *cn;
    size_t ncn = cls_engine_counters(st->eng, &cn);
    uint64_t in_lists = 0, decoded = 0;
    for (size_t i = 0; i < ncn; i++) {
        if (strcmp(cn[i].name, "blocks_in_lists") == 0) in_lists = cn[i].value;
        if (strcmp(cn[i].name, "blocks_decoded") == 0) decoded = cn[i].value;
    }
    if (in_lists)
        fprintf(stderr, "blocks decoded: %llu of the %llu in the queries' lists (%.1f%%)\n",
                (unsigned long long)decoded, (unsigned long long)in_lists, 100.0 * (double)decoded / (double)in_lists);
    if (ncn) {
        fprintf(stderr, "counters:");
        for (size_t i = 0; i < ncn; i++) fprintf(stderr, " %s %llu", cn[i].name, (unsigned long long)cn[i].value);
        fputc('\n', stderr);
    }
    /* a device list: each executor's share, its routing and cost model, and any set aside after a failure */
    size_t nx = cls_engine_executors(st->eng, NULL, 0);
    cls_executor_info *x = nx > 1 ? calloc(nx, sizeof *x) : NULL;
    if (x) {
        cls_engine_executors(st->eng, x, nx);
        fprintf(stderr, "executors:");
        for (size_t i = 0; i < nx; i++) {
            fprintf(stderr, "%s [%zu] %s: %llu queries", i ? "," : "", i, x[i].name, (unsigned long long)x[i].queries);
            if (x[i].set_aside) fprintf(stderr, " (set aside: %s)", x[i].why);
        }
        fputc('\n', stderr);
        for (size_t i = 0; i < nx; i++)
            fprintf(stderr, "executor [%zu] %s: %llu searches, %llu taken from a busy executor's queue, %llu late; model %s\n",
                    i, x[i].name, (unsigned long long)x[i].searches, (unsigned long long)x[i].stolen,
                    (unsigned long long)x[i].late, x[i].model);
        free(x);
    }
}

/* The queries without results, each named with -v; the hits in *hits. */
static size_t search_empty(const search_args *a, const search_state *st, size_t *hits)
{
    size_t nq = cls_batch_count(st->batch), empty = 0;
    *hits = 0;
    for (size_t q = 0; q < nq; q++) {
        size_t n;
        cls_results_get(st->res, q, &n, NULL, NULL);
        *hits += n;
        if (n == 0) {
            empty++;
            if (a->verbose)
                fprintf(stderr, "query %s: no results (%s)\n", cls_batch_qid(st->batch, q),
                        cls_batch_terms(st->batch, q) == 0 ? "empty, all stopwords or only unknown terms"
                                                           : "no document matches");
        }
    }
    return empty;
}

static void search_free(search_state *st)
{
    free(st->fields_buf);
    free(st->sel.utf8);
    cls_results_free(st->res);
    cls_engine_free(st->eng);
    cls_model_free(st->model);
    cls_batch_free(st->batch);
    cls_index_close(st->idx);
}

/* The search itself once its arguments are checked: 0, or 1 or 2 after the message. */
static int search_run(search_args *a)
{
    search_state st = {.sel = {.n = 0}};
    cls_status s = cls_index_open(a->index_path, &st.idx);
    int rc = s != CLS_OK ? fail(s, "opening the index") : search_fields(a, &st);
    if (rc == 0) rc = search_queries(a, &st);
    if (rc == 0) rc = search_engine(a, &st);
    size_t hits = 0, empty = rc == 0 ? search_empty(a, &st, &hits) : 0;
    if (rc == 0) rc = search_write(a, &st);
    if (rc == 0) {
        size_t nq = cls_batch_count(st.batch);
        if (a->verbose) search_profile(&st);
        if (a->verbose)
            fprintf(stderr, "searched %zu queries (%s, k %u) in %.3f s: %.1f queries/s, %zu hits, %zu queries without "
                    "results\n", nq, cls_mode_name(a->p.mode), a->p.k, st.t_search,
                    st.t_search > 0 ? (double)nq / st.t_search : 0.0, hits, empty);
        else if (empty) /* a run without those queries' lines would look like a dropped input */
            fprintf(stderr, "%s: note: %zu of %zu %s matched no document (%s): no lines for %s\n", prog, empty, nq,
                    nq == 1 ? "query" : "queries", cls_mode_name(a->p.mode), empty == 1 ? "it" : "them");
    }
    search_free(&st);
    return rc;
}

int cmd_search(int argc, char **argv)
{
    search_args a;
    int rc = search_parse(argc, argv, &a);
    if (rc == 0) rc = search_run(&a);
    free(a.query);
    return rc;
}
