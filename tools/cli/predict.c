/* clsearch predict: a tree ensemble's raw scores for SVMlight / LETOR lines, by the plain-C
 * evaluator or the OpenCL kernel (src/rank/). A thin layer: the model, the reader and both
 * evaluators are src/rank/'s.
 *
 * The input is read a batch of documents at a time, so memory is bounded whatever its length.
 * Nothing is written unless the whole input is good: -o's file through outfile (a temporary file
 * renamed over it when whole), standard output through an anonymous temporary file copied out
 * at the end, so a bad line far in leaves no partial output. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rank/model.h"
#include "rank/rank_dev.h"
#include "rank/svmlight.h"

/* Documents a batch, and the most bytes a batch's rows may take (a model of many features gets
 * fewer documents a batch). */
#define PREDICT_BATCH 4096u
#define PREDICT_BATCH_BYTES (64u << 20)

/* Reads every document of in, scores it by rd (or the C evaluator when rd is NULL) and writes
 * one score a line to out; the count into *docs. 0, or 1 after the message. */
static int predict_all(const rank_model *m, rank_dev *rd, svm_reader *r, FILE *out, unsigned long long *docs)
{
    size_t width = m->num_features, batch = PREDICT_BATCH;
    if (batch * width * sizeof(float) > PREDICT_BATCH_BYTES) batch = PREDICT_BATCH_BYTES / (width * sizeof(float));
    if (batch == 0) batch = 1;
    float *rows = malloc(batch * width * sizeof(float)), *scores = malloc(batch * sizeof(float));
    int rc = rows && scores ? 0 : fail(CLS_E_NOMEM, "predict");
    *docs = 0;
    while (rc == 0) {
        size_t n;
        cls_status s = svm_read(r, rows, batch, &n);
        if (s != CLS_OK) {
            rc = fail(s, "reading the documents");
            break;
        }
        if (rd) {
            if ((s = rank_dev_score(rd, rows, width, n, scores)) != CLS_OK) rc = fail(s, "scoring on the device");
        } else {
            rank_model_score_rows(m, rows, width, n, scores);
        }
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (fprintf(out, "%.9g\n", (double)scores[i]) < 0) {
                fprintf(stderr, "%s: predict: writing the scores: %s\n", prog, strerror(errno));
                rc = 1;
            }
        *docs += n;
        if (n < batch) break;
    }
    free(rows);
    free(scores);
    return rc;
}

/* The scores in tmp (rewound) to standard output. 0, or 1 after the message. */
static int copy_out(FILE *tmp)
{
    char buf[65536];
    size_t n;
    if (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0) {
        fprintf(stderr, "%s: predict: the temporary file: %s\n", prog, strerror(errno));
        return 1;
    }
    while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        if (fwrite(buf, 1, n, stdout) != n) break;
    if (ferror(tmp) || ferror(stdout) || fflush(stdout) != 0) {
        fprintf(stderr, "%s: predict: writing the scores: %s\n", prog, strerror(errno));
        return 1;
    }
    return 0;
}

int cmd_predict(int argc, char **argv)
{
    static const char *use = "predict: usage: clsearch predict -m MODEL [-d ref|DEVICE] [-o OUT] [-v] FILE%s";
    static const struct option lo[] = {{"model", required_argument, 0, 'm'},  {"device", required_argument, 0, 'd'},
                                       {"output", required_argument, 0, 'o'}, {"verbose", no_argument, 0, 'v'},
                                       {0, 0, 0, 0}};
    const char *model = NULL, *device = "ref", *out = NULL;
    int verbose = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":m:d:o:v", lo, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'd': device = optarg; break;
        case 'o': out = optarg; break;
        case 'v': verbose = 1; break;
        default: return bad_option(argc, argv, c);
        }
    }
    if (!model || optind != argc - 1) return usage_error(use, "");
    const char *path = argv[optind];
    char *inputs[2] = {argv[optind], (char *)model};
    if (out && guard_output("predict", out, OF_SCORES, inputs, 2)) return 1;

    rank_model m;
    cls_status s = rank_model_load(model, 0, &m);
    if (s != CLS_OK) return fail(s, "loading the model");
    int rc = 0, on_device = strcmp(device, "ref") != 0;
    rank_dev rd;
    if (on_device && (s = rank_dev_open(&rd, device, &m)) != CLS_OK) {
        rank_model_free(&m);
        return fail(s, "starting the device");
    }
    if (verbose) {
        char d[256];
        rank_model_describe(&m, d, sizeof d);
        fprintf(stderr, "model: %s\n", d);
        if (on_device)
            fprintf(stderr, "evaluator: OpenCL kernel trees_score on %s (%s)\n", rank_dev_name(&rd), rd.note);
        else
            fprintf(stderr, "evaluator: plain C (ref)\n");
    }
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!in) {
        fprintf(stderr, "%s: predict: %s: %s\n", prog, path, strerror(errno));
        rc = 1;
    }
    of_file o = {0};
    FILE *dst = NULL;
    if (rc == 0 && out) {
        if ((s = of_open(&o, out, 0)) != CLS_OK) rc = fail(s, "predict");
        else dst = o.f;
    } else if (rc == 0 && !(dst = tmpfile())) {
        fprintf(stderr, "%s: predict: a temporary file for the scores: %s\n", prog, strerror(errno));
        rc = 1;
    }
    unsigned long long docs = 0;
    if (rc == 0) {
        svm_reader r;
        svm_open(&r, in, strcmp(path, "-") == 0 ? "standard input" : path, m.num_features, m.absent);
        rc = predict_all(&m, on_device ? &rd : NULL, &r, dst, &docs);
        svm_close(&r);
    }
    if (out && dst) {
        if (rc != 0) of_discard(&o);
        else if ((s = of_commit(&o)) != CLS_OK) rc = fail(s, "predict");
    } else if (dst) {
        if (rc == 0) rc = copy_out(dst);
        fclose(dst);
    }
    if (rc == 0 && verbose) fprintf(stderr, "%llu documents scored\n", docs);
    if (in && in != stdin) fclose(in);
    if (on_device) rank_dev_close(&rd);
    rank_model_free(&m);
    return rc;
}
