/* The features command: the feature table (--list), or training data for a second ranking stage:
 * the first stage's top k of every topic, each candidate's features (src/rank/features.h) and its
 * label from the qrels, as SVMlight/LETOR lines `label qid:Q 1:v 2:v ... # docno`. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rank/features.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/strset.h"
#include "util/vec.h"

typedef struct features_args {
    const char *index_path, *topics, *qrels, *fmt, *device, *out;
    int list;
    cls_topics_format tf;
    cls_search_params p;
    feat_params fp;
} features_args;

typedef struct features_state {
    cls_index *idx;
    cls_batch *batch;
    cls_engine *eng;
    cls_results *res;
    feat_extractor *fx;
    feat_qrels *qrels;
    float *rows;    /* one query's candidates x features */
    size_t rows_cap;
    uint64_t lines, judged, relevant;
} features_state;

static const name_value topics_formats[] = {
    {"auto", CLS_TOPICS_AUTO}, {"tsv", CLS_TOPICS_TSV},     {"anserini", CLS_TOPICS_ANSERINI},
    {"trec", CLS_TOPICS_TREC}, {"smart", CLS_TOPICS_SMART}, {"mq", CLS_TOPICS_MQ},
};

static int features_options(int argc, char **argv, features_args *a)
{
    int opt, rc;
    static const struct option lo[] = {{"index", required_argument, 0, 'x'}, {"topics", required_argument, 0, 'q'},
                                       {"format", required_argument, 0, 'f'}, {"k", required_argument, 0, 'k'},
                                       {"mode", required_argument, 0, 'm'}, {"device", required_argument, 0, 'd'},
                                       {"output", required_argument, 0, 'o'}, {"qrels", required_argument, 0, 1},
                                       {"k1", required_argument, 0, 2}, {"b", required_argument, 0, 3},
                                       {"mu", required_argument, 0, 4}, {"lambda", required_argument, 0, 5},
                                       {"list", no_argument, 0, 6}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, ":x:q:f:k:m:d:o:", lo, NULL)) != -1) {
        switch (opt) {
        case 'x': a->index_path = optarg; break;
        case 'q': a->topics = optarg; break;
        case 'f': a->fmt = optarg; break;
        case 'k':
            if ((rc = k_option("features", optarg, &a->p.k)) != 0) return rc;
            break;
        case 'm':
            if ((rc = mode_option("features", optarg, &a->p.mode)) != 0) return rc;
            break;
        case 'd': a->device = optarg; break;
        case 'o': a->out = optarg; break;
        case 1: a->qrels = optarg; break;
        case 2:
            if ((rc = k1_option("features", optarg, &a->fp.k1)) != 0) return rc;
            break;
        case 3:
            if ((rc = b_option("features", optarg, &a->fp.b)) != 0) return rc;
            break;
        case 4:
            if (!parse_float(optarg, &a->fp.mu)) return usage_error("features: --mu takes a number, not '%s'", optarg);
            break;
        case 5:
            if (!parse_float(optarg, &a->fp.lambda))
                return usage_error("features: --lambda takes a number, not '%s'", optarg);
            break;
        case 6: a->list = 1; break;
        default: return bad_option(argc, argv, opt);
        }
    }
    if (optind < argc) return usage_error("features: unexpected argument '%s'", argv[optind]);
    return 0;
}

static int features_parse(int argc, char **argv, features_args *a)
{
    memset(a, 0, sizeof *a);
    cls_search_defaults(&a->p);
    feat_params_default(&a->fp);
    int rc = features_options(argc, argv, a), tf;
    if (rc != 0) return rc;
    if (feat_params_check(&a->fp) != CLS_OK) return usage_error("%s", cls_last_error());
    a->p.k1 = a->fp.k1;
    a->p.b = a->fp.b;
    if (a->list) {
        if (a->topics || a->qrels || a->out)
            return usage_error("features: --list prints the table (with -x, the index's fields too)%s; no -q, --qrels "
                               "or -o", "");
        return 0;
    }
    if (!a->index_path || !a->topics || !a->qrels)
        return usage_error("features: -x INDEX, -q TOPICS and --qrels QRELS are required (or --list)%s", "");
    if (!name_lookup(topics_formats, sizeof topics_formats / sizeof topics_formats[0], a->fmt ? a->fmt : "auto", &tf))
        return usage_error("features: unknown topics format '%s' (auto, tsv, anserini, trec, smart, mq)", a->fmt);
    a->tf = (cls_topics_format)tf;
    char *inputs[3] = {(char *)a->index_path, (char *)a->topics, (char *)a->qrels};
    if (a->out && guard_output("features", a->out, OF_FEATURES, inputs, 3)) return 1;
    return 0;
}

/* --list: the conventions, then a line a feature: its number (SVMlight's index), name and
 * definition, tab-separated. */
static int features_list(const features_args *a)
{
    cls_index *idx = NULL;
    feat_extractor *fx = NULL;
    cls_status s;
    if (a->index_path && (s = cls_index_open(a->index_path, &idx)) != CLS_OK) return fail(s, "opening the index");
    if (idx && (s = feat_create(idx, &a->fp, &fx)) != CLS_OK) {
        cls_index_close(idx);
        return fail(s, "features");
    }
    printf("# the features of a (query, document) pair: number, name, definition. t is a query term (the query's\n"
           "# distinct known terms, in order), n their number, ln the natural logarithm computed in float by\n"
           "# feat_log (src/rank/features.h); every operation is float unless said, in the order written; an\n"
           "# aggregate over a query of no term is 0.\n");
    const feat_row *rows = feat_table();
    uint32_t n = fx ? feat_count(fx) : FEAT_FIXED;
    for (uint32_t i = 0; i < n; i++)
        printf("%u\t%s\t%s\n", i + 1, fx ? feat_name(fx, i) : rows[i].name, fx ? feat_definition(fx, i) : rows[i].definition);
    if (!fx) printf("# and, with -x INDEX, each numeric stored field of the index (field:NAME)\n");
    feat_free(fx);
    cls_index_close(idx);
    return 0;
}

/* The topics into the batch, each qid once (a repeated one would mix two queries' lines). */
typedef struct topics_ctx {
    cls_batch *b;
    cls_status err;
    strset qids;
} topics_ctx;

static int on_topic(void *user, const char *qid, const char *text)
{
    topics_ctx *c = user;
    int added = strset_add(&c->qids, qid, strlen(qid), NULL);
    if (added <= 0) {
        c->err = added < 0 ? err_set(CLS_E_NOMEM, "reading topics: out of memory")
                           : err_set(CLS_E_FORMAT, "query id '%s' is given twice: query ids must be unique", qid);
        return 1;
    }
    c->err = cls_batch_add(c->b, qid, text);
    return c->err != CLS_OK;
}

/* SVMlight's qid is a number: a qid of digits is written as it is, any other as its topic's
 * place (1, 2, ...) with the qid itself after the docno in the comment. */
static int numeric_qid(const char *qid)
{
    size_t n = strlen(qid);
    return n > 0 && n <= 18 && strspn(qid, "0123456789") == n;
}

static int write_head(FILE *f, const features_args *a, const features_state *st)
{
    if (fprintf(f, "# clsearch features: index %s, topics %s, qrels %s, first stage %s k %u (k1 %g, b %g), mu %g, "
                   "lambda %g; clsearch features --list defines them\n# features:",
                a->index_path, a->topics, a->qrels, cls_mode_name(a->p.mode), a->p.k, (double)a->fp.k1,
                (double)a->fp.b, (double)a->fp.mu, (double)a->fp.lambda) < 0)
        return 0;
    for (uint32_t i = 0; i < feat_count(st->fx); i++)
        if (fprintf(f, " %u:%s", i + 1, feat_name(st->fx, i)) < 0) return 0;
    return fputc('\n', f) != EOF;
}

/* Query q's lines. 0 after the message when a feature or a write failed. */
static int write_query(FILE *f, features_state *st, size_t q, const char *out_name)
{
    size_t n;
    const uint32_t *docs;
    cls_results_get(st->res, q, &n, &docs, NULL);
    uint32_t nf = feat_count(st->fx);
    if (!vec_reserve(&st->rows, &st->rows_cap, n * nf + 1, sizeof *st->rows)) {
        fail(CLS_E_NOMEM, "features");
        return 0;
    }
    cls_status s = feat_query(st->fx, st->batch, q, docs, (uint32_t)n, st->rows);
    if (s != CLS_OK) {
        fail_reading(st->idx, s, "computing features");
        return 0;
    }
    const char *qid = cls_batch_qid(st->batch, q);
    int num = numeric_qid(qid);
    if (fault_hit(FAULT_WRITE)) { /* CLSEARCH_FAULT's write faults: a full disk */
        errno = ENOSPC;
        goto write_error;
    }
    for (size_t j = 0; j < n; j++) {
        const char *docno = cls_index_docno(st->idx, docs[j]);
        int label, judged;
        if ((s = feat_qrels_label(st->qrels, qid, docno, &label, &judged)) != CLS_OK) {
            fail(s, "features");
            return 0;
        }
        st->judged += judged;
        st->relevant += label > 0;
        if (num ? fprintf(f, "%d qid:%s", label, qid) < 0 : fprintf(f, "%d qid:%zu", label, q + 1) < 0) goto write_error;
        const float *row = st->rows + j * nf;
        for (uint32_t i = 0; i < nf; i++)
            if (fprintf(f, " %u:%.9g", i + 1, (double)row[i]) < 0) goto write_error;
        if ((num ? fprintf(f, " # %s\n", docno) : fprintf(f, " # %s %s\n", docno, qid)) < 0) goto write_error;
        st->lines++;
    }
    return 1;
write_error:
    fprintf(stderr, "%s: writing %s: %s\n", prog, out_name, strerror(errno));
    return 0;
}

static int write_all(FILE *f, const features_args *a, features_state *st, const char *out_name)
{
    if (!write_head(f, a, st)) {
        fprintf(stderr, "%s: writing %s: %s\n", prog, out_name, strerror(errno));
        return 0;
    }
    for (size_t q = 0; q < cls_batch_count(st->batch); q++)
        if (!write_query(f, st, q, out_name)) return 0;
    return index_whole(st->idx, "writing the features");
}

static int features_write(const features_args *a, features_state *st)
{
    if (!a->out) {
        if (!write_all(stdout, a, st, "standard output")) return 1;
        if (fflush(stdout) != 0) {
            fprintf(stderr, "%s: writing standard output: %s\n", prog, strerror(errno));
            return 1;
        }
        return 0;
    }
    of_file o;
    cls_status s = of_open(&o, a->out, 0);
    if (s != CLS_OK) {
        fprintf(stderr, "%s: %s\n", prog, cls_last_error());
        return 1;
    }
    if (!write_all(o.f, a, st, a->out)) {
        of_discard(&o);
        return 1;
    }
    if ((s = of_commit(&o)) != CLS_OK) {
        fprintf(stderr, "%s: %s\n", prog, cls_last_error());
        return 1;
    }
    return 0;
}

/* Index, qrels, topics, the first stage's search and the extractor. 0, or 1 after the message. */
static int features_prepare(const features_args *a, features_state *st)
{
    cls_status s;
    if ((s = cls_index_open(a->index_path, &st->idx)) != CLS_OK) return fail(s, "opening the index");
    if ((s = feat_qrels_read(a->qrels, &st->qrels)) != CLS_OK) return fail(s, "reading the qrels");
    if ((s = cls_batch_create(st->idx, &st->batch)) != CLS_OK) return fail(s, "features");
    topics_ctx tc = {st->batch, CLS_OK, {0}};
    s = cls_topics_read(a->tf, strcmp(a->topics, "-") == 0 ? "/dev/stdin" : a->topics, on_topic, &tc);
    strset_free(&tc.qids);
    if (tc.err != CLS_OK) s = tc.err;
    if (s != CLS_OK) return fail(s, "reading topics");
    if (cls_batch_count(st->batch) == 0) {
        fprintf(stderr, "%s: reading topics: %s holds no topic\n", prog, a->topics);
        return 1;
    }
    if ((s = feat_create(st->idx, &a->fp, &st->fx)) != CLS_OK) return fail_reading(st->idx, s, "features");
    if ((s = cls_engine_create(st->idx, a->device, &st->eng)) != CLS_OK)
        return fail_reading(st->idx, s, "starting the engine");
    if ((s = cls_results_create(&st->res)) != CLS_OK) return fail(s, "features");
    if ((s = cls_engine_search(st->eng, st->batch, &a->p, st->res)) != CLS_OK)
        return fail_reading(st->idx, s, "searching");
    return index_whole(st->idx, "searching") ? 0 : 1;
}

static void features_free(features_state *st)
{
    free(st->rows);
    cls_results_free(st->res);
    cls_engine_free(st->eng);
    feat_free(st->fx);
    cls_batch_free(st->batch);
    feat_qrels_free(st->qrels);
    cls_index_close(st->idx);
}

int cmd_features(int argc, char **argv)
{
    features_args a;
    int rc = features_parse(argc, argv, &a);
    if (rc != 0) return rc;
    if (a.list) return features_list(&a);
    features_state st = {0};
    rc = features_prepare(&a, &st);
    if (rc == 0) rc = features_write(&a, &st);
    if (rc == 0) {
        size_t nq = cls_batch_count(st.batch), empty = 0;
        for (size_t q = 0; q < nq; q++) {
            size_t n;
            cls_results_get(st.res, q, &n, NULL, NULL);
            empty += n == 0;
        }
        fprintf(stderr, "%s: features: %llu lines of %u features for %zu queries (%zu without candidates), %llu "
                "judged, %llu relevant\n", prog, (unsigned long long)st.lines, feat_count(st.fx), nq, empty,
                (unsigned long long)st.judged, (unsigned long long)st.relevant);
    }
    features_free(&st);
    return rc;
}
