/* clsearch: the command line, a thin layer over libclsearch (include/clsearch.h).
 *
 *   clsearch devices [-v] [--json]
 *   clsearch index -c {jsonl,beir,html,trec,smart,files} -o INDEX INPUT... [options]
 *   clsearch search -x INDEX {-q TOPICS | QUERY...} [--json] [options]
 *   clsearch stats INDEX [--codecs] [--json]
 *   clsearch check INDEX [--threads N] [-v]
 *   clsearch recode INDEX -o OUT [--codec C] [--block N] [--pfor-depth D]
 *   clsearch generate -o DIR [--docs N] [--queries N] [--vocab N] [--seed S]
 *   clsearch generate --index FILE [--topics FILE] [--scale small|medium|gov2] [options]
 *   clsearch compare RUN_A RUN_B
 *   clsearch serve -x INDEX [-d DEVICE] [--listen ADDR:PORT] [--max-batch N] [--max-wait-ms T] [options]
 *   clsearch bench {copy,decode,e2e,topk,scan,intersect,score,serve} [options]
 *   clsearch tune [-d DEVICE] [-o FILE] [-r N] [--quick] [--json FILE] | --list
 *   clsearch ciff-import FILE.ciff -o INDEX [--codec C] [--block N] [--pfor-depth D] [--impact] [analyzer options]
 *   clsearch ciff-export INDEX -o FILE.ciff [--description TEXT]
 *
 * Every command takes -h/--help (its usage, from the table `usages`, which `clsearch help` prints
 * whole). A command that writes a file checks the file's folder before any work. Exit status:
 * 0 success, 1 failure (the message says what and where), 2 bad usage. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench.h"
#include "clsearch.h"
#include "codec/codec.h"
#include "generate.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/outfile.h"
#include "util/strset.h"
#include "util/tmpfile.h"
#include "util/utf8.h"
#ifdef CLSEARCH_SERVE
#include "serve.h"
#endif

static const char *prog = "clsearch";
static char cur_cmd[64]; /* the command running, for "see 'clsearch CMD --help'" */

static int fail(cls_status s, const char *what)
{
    const char *detail = cls_last_error();
    fprintf(stderr, "%s: %s: %s%s%s\n", prog, what, cls_status_str(s), *detail ? ": " : "", detail);
    return 1;
}

/* 1 while the index file is as long as when it was opened, else says why not (the file shrank
 * under its mapping: what was read of it since may be zeros, cls_index_intact) and 0. */
static int index_whole(const cls_index *idx, const char *what)
{
    cls_status s = cls_index_intact(idx);
    return s == CLS_OK || fail(s, what) == 0;
}

/* fail(s, what), unless the index file shrank meanwhile: then that, which is why (an engine
 * that read zeros where the file was cut may report something else first). */
static int fail_reading(const cls_index *idx, cls_status s, const char *what)
{
    cls_status w = cls_index_intact(idx);
    return fail(w != CLS_OK ? w : s, what);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    if (*cur_cmd) fprintf(stderr, "\n(see '%s %s --help')\n", prog, cur_cmd);
    else fprintf(stderr, "\n(see '%s help')\n", prog);
    return 2;
}

/* The usage error of an option getopt_long refused (its optstring starts with ':', opterr is 0):
 * ':' an option without its value, '?' an unknown option. */
static int bad_option(int argc, char **argv, int opt)
{
    char name[256];
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    if (optopt > 0 && optopt < 256 && !(arg[0] == '-' && arg[1] == '-')) snprintf(name, sizeof name, "-%c", optopt);
    else snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    char msg[400];
    snprintf(msg, sizeof msg, "%s: %s '%%s'", cur_cmd, opt == ':' ? "a value is missing after" : "unknown option");
    return usage_error(msg, name);
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

/* What keeps an output from destroying data (util/outfile.h, of_guard: the folder, the inputs,
 * a read-only file, a file of another kind, --force), before any work. Returns 0 when path may
 * be written, else 1 after the message. */
static int guard_output(const char *what, const char *path, of_kind kind, char *const *inputs, int ninputs)
{
    if (of_guard(path, kind, inputs, ninputs) == CLS_OK) return 0;
    fprintf(stderr, "%s: %s: %s\n", prog, what, cls_last_error());
    return 1;
}

/* Prints obj as one line and frees it; 0 when out of memory or the write fails. */
static int put_json_line(FILE *f, cJSON *obj)
{
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    int ok = text && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    free(text);
    cJSON_Delete(obj);
    return ok;
}

/* ---- devices ------------------------------------------------------------------------------ */

/* devices --json: one object a device. */
static int devices_json(const cls_device_info *list, size_t n, int verbose)
{
    for (size_t i = 0; i < n; i++) {
        const cls_device_info *d = &list[i];
        char id[32], params[256];
        snprintf(id, sizeof id, "%u:%u", d->platform, d->device);
        cJSON *o = cJSON_CreateObject();
        int ok = o && cJSON_AddStringToObject(o, "id", id) && cJSON_AddNumberToObject(o, "platform", d->platform) &&
                 cJSON_AddNumberToObject(o, "device", d->device) && cJSON_AddStringToObject(o, "name", d->name) &&
                 cJSON_AddStringToObject(o, "type", d->is_gpu ? "gpu" : "cpu") &&
                 cJSON_AddStringToObject(o, "vendor", d->vendor) &&
                 cJSON_AddStringToObject(o, "driver_version", d->driver_version) &&
                 cJSON_AddStringToObject(o, "opencl_c_version", d->opencl_c_version) &&
                 cJSON_AddStringToObject(o, "platform_name", d->platform_name) &&
                 cJSON_AddStringToObject(o, "platform_version", d->platform_version) &&
                 cJSON_AddNumberToObject(o, "compute_units", d->compute_units) &&
                 cJSON_AddNumberToObject(o, "clock_mhz", d->clock_mhz) &&
                 cJSON_AddNumberToObject(o, "global_mem_bytes", (double)d->global_mem) &&
                 cJSON_AddNumberToObject(o, "max_alloc_bytes", (double)d->max_alloc) &&
                 cJSON_AddNumberToObject(o, "local_mem_bytes", (double)d->local_mem) &&
                 cJSON_AddNumberToObject(o, "max_work_group", (double)d->max_work_group) &&
                 cJSON_AddStringToObject(o, "extensions", d->extensions);
        if (ok && verbose) {
            /* "NAME=VALUE ...\n        from SOURCE": the parameters, and where they come from */
            cls_device_params(d, params, sizeof params);
            char *from = strchr(params, '\n');
            if (from) {
                *from++ = '\0';
                while (*from == ' ') from++;
                if (strncmp(from, "from ", 5) == 0) from += 5;
            }
            ok = cJSON_AddStringToObject(o, "params", params) != NULL &&
                 (!from || cJSON_AddStringToObject(o, "params_from", from) != NULL);
        }
        if (!ok) {
            cJSON_Delete(o);
            return 0;
        }
        if (!put_json_line(stdout, o)) return 0;
    }
    return fflush(stdout) == 0;
}

static int cmd_devices(int argc, char **argv)
{
    int verbose = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) verbose = 1;
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else return usage_error("devices: unexpected argument '%s' (usage: clsearch devices [-v] [--json])", argv[i]);
    }
    cls_device_info *list;
    size_t n;
    cls_status s = cls_devices_list(&list, &n);
    if (s != CLS_OK) return fail(s, "listing OpenCL devices");
    if (json) {
        if (n == 0) fprintf(stderr, "%s: no OpenCL platform found; '-d ref' still runs the reference engine\n", prog);
        int ok = devices_json(list, n, verbose);
        cls_devices_free(list);
        if (!ok) fprintf(stderr, "%s: devices: writing the list: %s\n", prog, errno ? strerror(errno) : "out of memory");
        return ok ? 0 : 1;
    }
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

/* ---- stored fields -------------------------------------------------------------------------- */

/* A list of field names as --store and --fields take it ("title,url", or "none") into names[]
 * (pointing into *buf, which the caller frees); 0, or the usage error's exit status. */
static int split_fields(const char *opt, const char *list, char **buf, const char **names, size_t *n)
{
    *n = 0;
    *buf = NULL;
    if (strcmp(list, "none") == 0) return 0;
    if (!(*buf = strdup(list))) return fail(CLS_E_NOMEM, opt);
    for (char *p = *buf, *comma;; p = comma + 1) {
        comma = strchr(p, ',');
        if (comma) *comma = '\0';
        char msg[300];
        snprintf(msg, sizeof msg, "%s: '%%s' is not a list of field names separated by commas (or none)", opt);
        if (!*p || *n == CLS_MAX_FIELDS) return usage_error(msg, list);
        for (size_t j = 0; j < *n; j++)
            if (strcmp(names[j], p) == 0) {
                snprintf(msg, sizeof msg, "%s: field '%%s' is named twice", opt);
                return usage_error(msg, p);
            }
        names[(*n)++] = p;
        if (!comma) return 0;
    }
}

/* ---- index -------------------------------------------------------------------------------- */

/* The fields `index` stores when --store is not given: what a person searching the collection
 * wants to see beside a docno, where the format has it. */
static const char *default_store(cls_corpus_format f)
{
    switch (f) {
    case CLS_CORPUS_BEIR:
    case CLS_CORPUS_HTML:
    case CLS_CORPUS_SMART: return "title";
    case CLS_CORPUS_FILES: return "path";
    default: return "none";
    }
}

typedef struct index_ctx {
    cls_builder *b;
    unsigned long long docs;
    uint64_t text_bytes;   /* document text handed to the builder */
    cls_status err;
    unsigned long long present[CLS_MAX_FIELDS]; /* documents that had each stored field */
    /* progress */
    int show;              /* draw the progress line: stderr is a terminal and no -q */
    int drawn;             /* a progress line is on the screen */
    double t0, t_input, last_draw;
    uint64_t bytes_before; /* input bytes of the inputs already read */
    uint64_t bytes_done;   /* of the current input */
    int input, ninputs;
} index_ctx;

static int on_doc(void *user, const cls_doc *d)
{
    index_ctx *c = user;
    c->err = cls_builder_add_doc(c->b, d);
    if (c->err != CLS_OK) return 1;
    c->docs++;
    c->text_bytes += d->text_len;
    for (size_t f = 0; f < d->num_fields; f++) c->present[f] += d->fields[f] != NULL;
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
    const char *fmt = NULL, *out = NULL, *store = NULL;
    int verbose = 0, quiet = 0, allow_dups = 0, allow_empty = 0, follow_links = 0, opt;
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
                                       {"store", required_argument, 0, 9}, {"allow-duplicate-ids", no_argument, 0, 10},
                                       {"allow-empty", no_argument, 0, 11}, {"follow-links", no_argument, 0, 12},
                                       {"verbose", no_argument, 0, 'v'}, {"quiet", no_argument, 0, 'q'}, {0, 0, 0, 0}};
    cls_status s;
    while ((opt = getopt_long(argc, argv, ":c:o:vq", lo, NULL)) != -1) {
        switch (opt) {
        case 'c': fmt = optarg; break;
        case 9: store = optarg; break;
        case 10: allow_dups = 1; break;
        case 11: allow_empty = 1; break;
        case 12: follow_links = 1; break;
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
        default: return bad_option(argc, argv, opt);
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
    /* the stored fields: each one the reader can supply, checked before anything is read */
    const char *fields[CLS_MAX_FIELDS];
    size_t nfields;
    char *fields_buf;
    int rc = split_fields("index: --store", store ? store : default_store(cf), &fields_buf, fields, &nfields);
    for (size_t i = 0; rc == 0 && i < nfields; i++)
        if (cls_corpus_field_check(cf, fields[i]) != CLS_OK) rc = usage_error("index: --store: %s", cls_last_error());
    if (rc == 0 && guard_output("index", out, OF_INDEX, argv + optind, argc - optind)) rc = 1;
    if (rc != 0) {
        free(fields_buf);
        return rc;
    }
    index_ctx c = {0};
    s = cls_builder_create(&an, &c.b);
    if (s != CLS_OK) {
        free(fields_buf);
        return fail(s, "index");
    }
    if ((s = cls_builder_configure(c.b, &bo)) != CLS_OK || (s = cls_builder_set_fields(c.b, fields, nfields)) != CLS_OK ||
        (s = cls_builder_allow_duplicate_ids(c.b, allow_dups)) != CLS_OK) {
        free(fields_buf);
        return index_fail(&c, s, "index");
    }
    c.show = !quiet && isatty(2);
    c.ninputs = argc - optind;
    c.t0 = now();
    cls_corpus_counts counts;
    memset(&counts, 0, sizeof counts);
    cls_corpus_follow_links(follow_links);
    for (int i = optind; i < argc; i++) {
        c.input = i - optind + 1;
        c.t_input = now();
        c.bytes_done = 0;
        unsigned long long docs_before = c.docs;
        s = cls_corpus_read_fields(cf, argv[i], fields, nfields, on_doc, &c, on_progress, &c);
        if (c.err != CLS_OK) s = c.err;
        cls_corpus_counts one;
        cls_corpus_last_counts(&one);
        /* an input that gives nothing is most likely the wrong format or folder, not a collection */
        if (s == CLS_OK && c.docs == docs_before && !allow_empty) {
            char why[160] = "";
            if (one.skipped_binary)
                snprintf(why, sizeof why, " (%llu binary file%s skipped)", (unsigned long long)one.skipped_binary,
                         one.skipped_binary == 1 ? "" : "s");
            else if (one.skipped_links)
                snprintf(why, sizeof why, " (%llu link%s leading out of it skipped: --follow-links)",
                         (unsigned long long)one.skipped_links, one.skipped_links == 1 ? "" : "s");
            s = err_set(CLS_E_FORMAT, "%s holds no %s documents%s; --allow-empty indexes an input without any",
                        argv[i], fmt, why);
        }
        if (s == CLS_OK) s = cls_builder_add_root(c.b, cf, argv[i]); /* what `stats` shows as the root */
        if (s != CLS_OK) {
            char what[4200];
            snprintf(what, sizeof what, "indexing %s (nothing written)", argv[i]);
            free(fields_buf);
            return index_fail(&c, s, what);
        }
        c.bytes_before += c.bytes_done;
        counts.skipped_binary += one.skipped_binary;
        counts.truncated += one.truncated;
        counts.skipped_links += one.skipped_links;
    }
    double t_read = now() - c.t0;
    s = cls_builder_write(c.b, out);
    if (s != CLS_OK) {
        free(fields_buf);
        return index_fail(&c, s, "writing the index");
    }
    uint64_t dups = cls_builder_duplicates(c.b);
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
    if (!quiet) { /* the one-line summary, on a terminal or not (-q: none) */
        struct stat ost;
        double out_mb = stat(out, &ost) == 0 ? (double)ost.st_size / 1e6 : 0.0;
        fprintf(stderr, "indexed %llu documents, %.1f MB of input (%.1f MB of text) in %.2f s: %.1f MB/s, %u thread%s%s; "
                "%s: %.1f MB\n",
                c.docs, mb, (double)c.text_bytes / 1e6, el, el > 0 ? mb / el : 0.0, bo.threads,
                bo.threads == 1 ? "" : "s", skipped, out, out_mb);
    }
    if (verbose)
        fprintf(stderr, "reading and analysis %.2f s, inverting and writing %.2f s, index %s (%s, block %u)\n", t_read,
                el - t_read, out, cls_codec_name(bo.codec), bo.block_size);
    if (verbose) {
        fprintf(stderr, "stored fields:");
        for (size_t f = 0; f < nfields; f++)
            fprintf(stderr, "%s %s (%llu of %llu documents)", f ? "," : "", fields[f], c.present[f], c.docs);
        fprintf(stderr, "%s\n", nfields ? "" : " none");
    }
    if (dups && !quiet)
        fprintf(stderr, "%s: note: skipped %llu document%s whose id was given before (--allow-duplicate-ids kept the "
                "first)\n", prog, (unsigned long long)dups, dups == 1 ? "" : "s");
    if (counts.skipped_links && !quiet)
        fprintf(stderr, "%s: note: skipped %llu symbolic link%s leading out of the input folder (--follow-links "
                "follows them)\n", prog, (unsigned long long)counts.skipped_links, counts.skipped_links == 1 ? "" : "s");
    /* a field asked for by name that no document has is most likely a misspelt key */
    for (size_t f = 0; store && !quiet && c.docs && f < nfields; f++)
        if (c.present[f] == 0) fprintf(stderr, "%s: note: no document has the field '%s'\n", prog, fields[f]);
    free(fields_buf);
    return 0;
}

/* ---- search ------------------------------------------------------------------------------- */

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

/* --json: one object a hit, {"qid", "rank", "docno", "score"}, and "fields" when fields are
 * printed: {"name": value, ...}, null for an absent value. Every string valid UTF-8 (utf8_json's
 * rule, as the server and the Python bindings apply it). */
static int write_json(FILE *f, const cls_index *idx, const cls_batch *b, const cls_results *r, field_sel *sel)
{
    for (size_t q = 0; q < cls_results_count(r); q++) {
        size_t n;
        const uint32_t *docs;
        const float *scores;
        cls_results_get(r, q, &n, &docs, &scores);
        for (size_t j = 0; j < n; j++) {
            /* qids come from topics files and docnos from the collection, as any bytes: each is
             * copied into the object before the buffer json_text reuses is written again */
            const char *qid = cls_batch_qid(b, q), *docno = cls_index_docno(idx, docs[j]), *u;
            cJSON *o = cJSON_CreateObject();
            if (!o || !(u = json_text(sel, qid, strlen(qid))) || !cJSON_AddStringToObject(o, "qid", u) ||
                !cJSON_AddNumberToObject(o, "rank", (double)(j + 1)) ||
                !(u = json_text(sel, docno, strlen(docno))) || !cJSON_AddStringToObject(o, "docno", u) ||
                !cJSON_AddNumberToObject(o, "score", run_score(scores[j]))) {
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

static int cmd_search(int argc, char **argv)
{
    const char *index_path = NULL, *topics = NULL, *fmt = NULL, *device = NULL, *out = NULL, *tag = "clsearch";
    const char *qid = NULL, *fields_opt = NULL;
    int verbose = 0, json = 0, opt;
    float batch_ms = 0;
    cls_search_params p;
    cls_search_defaults(&p);
    unsigned long long v;
    static const struct option lo[] = {{"index", required_argument, 0, 'x'}, {"topics", required_argument, 0, 'q'},
                                       {"format", required_argument, 0, 'f'}, {"k", required_argument, 0, 'k'},
                                       {"mode", required_argument, 0, 'm'}, {"k1", required_argument, 0, 1},
                                       {"b", required_argument, 0, 2}, {"device", required_argument, 0, 'd'},
                                       {"output", required_argument, 0, 'o'}, {"tag", required_argument, 0, 3},
                                       {"json", no_argument, 0, 4}, {"qid", required_argument, 0, 5},
                                       {"device-mem", required_argument, 0, 6}, {"batch-ms", required_argument, 0, 7},
                                       {"fields", required_argument, 0, 8},
                                       {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    cls_engine_opts eo;
    cls_engine_opts_init(&eo);
    while ((opt = getopt_long(argc, argv, ":x:q:f:k:m:d:o:v", lo, NULL)) != -1) {
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
        case 4: json = 1; break;
        case 5: qid = optarg; break;
        case 6:
            if (cls_parse_bytes(optarg, &eo.device_mem) != CLS_OK || eo.device_mem == 0)
                return usage_error("search: --device-mem takes a byte count above 0 (digits, then optionally K, M, G "
                                   "or T), not '%s'", optarg);
            break;
        case 7:
            if (!parse_float(optarg, &batch_ms) || !(batch_ms > 0 && batch_ms <= 60000))
                return usage_error("search: --batch-ms takes a number of milliseconds above 0, up to 60000, not '%s'",
                                   optarg);
            eo.batch_ms = batch_ms;
            break;
        case 8: fields_opt = optarg; break;
        case 'v': verbose = 1; break;
        default: return bad_option(argc, argv, opt);
        }
    }
    /* QUERY...: the words after the options, one query */
    char *query = NULL;
    if (optind < argc) {
        if (topics)
            return usage_error("search: give -q TOPICS or a query, not both (the query starts at '%s')", argv[optind]);
        if (fmt) return usage_error("search: -f %s goes with -q TOPICS, not with a query", fmt);
    } else if (qid) {
        return usage_error("search: --qid %s names a query given on the command line; there is none", qid);
    }
    if (!index_path || (!topics && optind >= argc))
        return usage_error("search: -x INDEX and -q TOPICS (or a query) are required%s", "");
    if (strpbrk(tag, " \t\n")) return usage_error("search: the tag '%s' holds white space", tag);
    if (qid && (!*qid || strpbrk(qid, " \t\n"))) return usage_error("search: the qid '%s' is empty or holds white space", qid);
    cls_topics_format tf = CLS_TOPICS_AUTO;
    if (!fmt || strcmp(fmt, "auto") == 0) tf = CLS_TOPICS_AUTO;
    else if (strcmp(fmt, "tsv") == 0) tf = CLS_TOPICS_TSV;
    else if (strcmp(fmt, "anserini") == 0) tf = CLS_TOPICS_ANSERINI;
    else if (strcmp(fmt, "trec") == 0) tf = CLS_TOPICS_TREC;
    else if (strcmp(fmt, "smart") == 0) tf = CLS_TOPICS_SMART;
    else if (strcmp(fmt, "mq") == 0) tf = CLS_TOPICS_MQ;
    else return usage_error("search: unknown topics format '%s' (auto, tsv, anserini, trec, smart, mq)", fmt);
    /* '-' is standard input: read once, in any format (the format is told from the first line
     * as it goes by) */
    const char *topics_path = topics && strcmp(topics, "-") == 0 ? "/dev/stdin" : topics;
    char *search_in[2] = {(char *)index_path, (char *)topics_path};
    if (out && guard_output("search", out, OF_RUN, search_in, 2)) return 1;
    if (optind < argc) {
        size_t len = 1;
        for (int i = optind; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(query = malloc(len))) return fail(CLS_E_NOMEM, "search");
        query[0] = '\0';
        for (int i = optind; i < argc; i++) {
            if (i > optind) strcat(query, " ");
            strcat(query, argv[i]);
        }
    }

    cls_index *idx = NULL;
    cls_batch *batch = NULL;
    cls_engine *eng = NULL;
    cls_results *res = NULL;
    int rc = 1;
    char *tmp = NULL, *fields_buf = NULL;
    FILE *f = NULL;
    field_sel sel = {.n = 0};
    cls_status s = cls_index_open(index_path, &idx);
    if (s != CLS_OK) {
        fail(s, "opening the index");
        goto done;
    }
    /* the fields to print: those named (each one the index stores), or with --json all */
    if (fields_opt) {
        const char *names[CLS_MAX_FIELDS];
        size_t n;
        if ((rc = split_fields("search: --fields", fields_opt, &fields_buf, names, &n)) != 0) goto done;
        for (size_t k = 0; k < n; k++)
            if (cls_index_field_find(idx, names[k], &sel.id[sel.n++]) != CLS_OK) {
                rc = usage_error("search: --fields: %s", cls_last_error());
                goto done;
            }
        rc = 1;
    } else if (json) {
        for (uint32_t k = 0; k < cls_index_field_count(idx); k++) sel.id[sel.n++] = k;
    }
    if ((s = cls_batch_create(idx, &batch)) != CLS_OK) {
        fail(s, "search");
        goto done;
    }
    if (query) {
        if ((s = cls_batch_add(batch, qid ? qid : "1", query)) != CLS_OK) {
            fail(s, "search");
            goto done;
        }
    } else {
        topics_ctx tc = {batch, CLS_OK, {0}};
        s = cls_topics_read(tf, topics_path, on_topic, &tc);
        strset_free(&tc.qids);
        if (tc.err != CLS_OK) s = tc.err;
        if (s != CLS_OK) {
            fail(s, "reading topics");
            goto done;
        }
        if (cls_batch_count(batch) == 0) {
            fprintf(stderr, "%s: reading topics: %s holds no topic (it is empty or all blank lines)\n", prog,
                    strcmp(topics, "-") == 0 ? "standard input" : topics);
            goto done;
        }
    }
    double t0 = now();
    eo.device = device;
    if ((s = cls_engine_create_opts(idx, &eo, &eng)) != CLS_OK) {
        fail_reading(idx, s, "starting the engine");
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
        fail_reading(idx, s, "searching");
        goto done;
    }
    /* an OpenCL engine may search without reading the file again: a shrunk one is found here */
    if (!index_whole(idx, "searching")) goto done;
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
        int ok = f && write_results(f, json, idx, batch, res, tag, &sel);
        if (f) ok = (fclose(f) == 0) && ok;
        f = NULL;
        if (!ok) {
            fprintf(stderr, "%s: writing %s: %s\n", prog, out, strerror(errno));
            goto done;
        }
        if (!index_whole(idx, "writing the run")) goto done;
    } else if (out) {
        /* mode 0666 less the umask like any new file; removed on SIGINT/SIGTERM/SIGHUP */
        int fd = tmp_create(out, &tmp);
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            fprintf(stderr, "%s: cannot create a temporary file beside %s: %s\n", prog, out, strerror(errno));
            if (fd >= 0) close(fd);
            tmp_discard(tmp);
            tmp = NULL;
            goto done;
        }
        int ok = write_results(f, json, idx, batch, res, tag, &sel);
        ok = (fclose(f) == 0) && ok;
        f = NULL;
        /* the docnos and fields written come from the mapping: no run from a shrunk file */
        if (ok && !index_whole(idx, "writing the run")) {
            tmp_discard(tmp);
            tmp = NULL;
            goto done;
        }
        if (!ok || rename(tmp, out) != 0) {
            fprintf(stderr, "%s: writing %s: %s\n", prog, out, strerror(errno));
            tmp_discard(tmp);
            tmp = NULL;
            goto done;
        }
    } else if (!write_results(stdout, json, idx, batch, res, tag, &sel) || fflush(stdout) != 0) {
        fprintf(stderr, "%s: writing the run: %s\n", prog, strerror(errno));
        goto done;
    } else if (!index_whole(idx, "writing the run")) {
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
        fprintf(stderr, "counters:");
        for (size_t i = 0; i < ncn; i++) fprintf(stderr, " %s %llu", cn[i].name, (unsigned long long)cn[i].value);
        fputc('\n', stderr);
    }
    if (verbose)
        fprintf(stderr, "searched %zu queries (%s, k %u) in %.3f s: %.1f queries/s, %zu hits, %zu queries without results\n",
                nq, cls_mode_name(p.mode), p.k, t_search, t_search > 0 ? (double)nq / t_search : 0.0, hits, empty);
    else if (empty) /* a run without those queries' lines would look like a dropped input */
        fprintf(stderr, "%s: note: %zu of %zu %s matched no document (%s): no lines for %s\n", prog, empty, nq,
                nq == 1 ? "query" : "queries", cls_mode_name(p.mode), empty == 1 ? "it" : "them");
    rc = 0;
done:
    free(query);
    tmp_release(tmp);
    free(fields_buf);
    free(sel.utf8);
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

/* One size row as JSON: the figures print_sizes prints. */
static cJSON *sizes_json(const char *codec, const cls_index_stats *st)
{
    double P = st->num_postings ? (double)st->num_postings : 1.0;
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "codec", codec) && cJSON_AddNumberToObject(o, "block_size", st->block_size) &&
        cJSON_AddNumberToObject(o, "bits_per_doc", (double)st->doc_bits / P) &&
        cJSON_AddNumberToObject(o, "bits_per_freq", (double)st->freq_bits / P) &&
        cJSON_AddNumberToObject(o, "meta_bits_per_posting", 8.0 * (double)st->meta_bytes / P) &&
        cJSON_AddNumberToObject(o, "bits_per_posting",
                                (8.0 * (double)st->postings_bytes + 8.0 * (double)st->meta_bytes) / P) &&
        cJSON_AddNumberToObject(o, "bytes", (double)(st->postings_bytes + st->meta_bytes)))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* How many of the N documents have stored field f, and the bytes of their values. */
static void field_counts(const cls_index *idx, uint32_t N, uint32_t f, uint64_t *docs, uint64_t *bytes)
{
    *docs = *bytes = 0;
    for (uint32_t d = 0; d < N; d++) {
        size_t len;
        if (cls_index_field(idx, d, f, &len)) *docs += 1, *bytes += len;
    }
}

/* stats --json's "collection", "roots" and "fields": where the collection came from and what
 * each stored field holds. */
static int collection_json(cJSON *o, const cls_index *idx, uint32_t N)
{
    cJSON *roots = NULL, *fields = NULL;
    if (!cJSON_AddStringToObject(o, "collection", cls_index_collection(idx)) ||
        !(roots = cJSON_AddArrayToObject(o, "roots")) || !(fields = cJSON_AddArrayToObject(o, "fields")))
        return 0;
    for (uint32_t i = 0; i < cls_index_root_count(idx); i++) {
        cJSON *r = cJSON_CreateString(cls_index_root(idx, i));
        if (!r || !cJSON_AddItemToArray(roots, r)) return 0;
    }
    for (uint32_t f = 0; f < cls_index_field_count(idx); f++) {
        uint64_t docs, bytes;
        field_counts(idx, N, f, &docs, &bytes);
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(fields, e) || !cJSON_AddStringToObject(e, "name", cls_index_field_name(idx, f)) ||
            !cJSON_AddNumberToObject(e, "documents", (double)docs) || !cJSON_AddNumberToObject(e, "bytes", (double)bytes))
            return 0;
    }
    return 1;
}

static void print_collection(const cls_index *idx, uint32_t N)
{
    const char *coll = cls_index_collection(idx);
    uint32_t nr = cls_index_root_count(idx), nf = cls_index_field_count(idx);
    if (*coll) printf("collection       %s, %u root%s\n", coll, nr, nr == 1 ? "" : "s");
    else printf("collection       not recorded\n");
    for (uint32_t i = 0; i < nr; i++) printf("root             %s\n", cls_index_root(idx, i));
    if (nf == 0) printf("stored fields    none\n");
    for (uint32_t f = 0; f < nf; f++) {
        uint64_t docs, bytes;
        field_counts(idx, N, f, &docs, &bytes);
        printf("%-16s %s: %llu of %u documents, %llu bytes\n", f ? "" : "stored fields", cls_index_field_name(idx, f),
               (unsigned long long)docs, N, (unsigned long long)bytes);
    }
}

static int cmd_stats(int argc, char **argv)
{
    static const char *use = "stats: usage: clsearch stats INDEX [--codecs] [--json]%s";
    const char *path = NULL;
    int all = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--codecs") == 0) all = 1;
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (argv[i][0] == '-' || path) return usage_error(use, "");
        else path = argv[i];
    }
    if (!path) return usage_error(use, "");
    cls_index *idx;
    cls_status s = cls_index_open(path, &idx);
    if (s != CLS_OK) return fail(s, "opening the index");
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    if (!index_whole(idx, "stats")) { /* and again once all is read, before anything is said */
        cls_index_close(idx);
        return 1;
    }
    cls_analyzer_opts an;
    cls_index_analyzer(idx, &an);
    int depth = cdc_get(st.codec) && cdc_get(st.codec)->uses_depth;
    static const uint32_t sizes[] = {64, 128, 256, 512};
    if (json) {
        /* one object on one line: the figures of the text, sizes as an array of rows */
        cJSON *o = cJSON_CreateObject(), *a = NULL, *rows = NULL;
        int ok = o && cJSON_AddStringToObject(o, "index", path) && cJSON_AddNumberToObject(o, "documents", st.num_docs) &&
                 cJSON_AddNumberToObject(o, "terms", st.num_terms) &&
                 cJSON_AddNumberToObject(o, "postings", (double)st.num_postings) &&
                 cJSON_AddNumberToObject(o, "tokens", (double)st.num_tokens) &&
                 cJSON_AddNumberToObject(o, "avg_doc_len", st.avg_doc_len) &&
                 cJSON_AddStringToObject(o, "codec", cls_codec_name(st.codec)) &&
                 cJSON_AddNumberToObject(o, "block_size", st.block_size) &&
                 (!depth || cJSON_AddNumberToObject(o, "pfor_depth", st.pfor_depth)) &&
                 cJSON_AddStringToObject(o, "scoring", cls_scoring_name(cls_index_scoring(idx))) &&
                 cJSON_AddNumberToObject(o, "blocks", (double)st.num_blocks) &&
                 cJSON_AddNumberToObject(o, "postings_bytes", (double)st.postings_bytes) &&
                 cJSON_AddNumberToObject(o, "file_bytes", (double)st.file_bytes) &&
                 (a = cJSON_AddObjectToObject(o, "analyzer")) != NULL &&
                 cJSON_AddBoolToObject(a, "possessive", an.possessive) &&
                 cJSON_AddBoolToObject(a, "lowercase", an.lowercase) &&
                 cJSON_AddBoolToObject(a, "stopwords", an.stopwords) && cJSON_AddBoolToObject(a, "stem", an.stem) &&
                 collection_json(o, idx, st.num_docs) && (rows = cJSON_AddArrayToObject(o, "sizes")) != NULL;
        cJSON *row = ok ? sizes_json(cls_codec_name(st.codec), &st) : NULL;
        ok = row && cJSON_AddItemToArray(rows, row);
        for (int c = 0; ok && all && c < CLS_NUM_CODECS; c++)
            for (int k = 0; ok && k < 4; k++) {
                cls_index_stats cs;
                if ((s = cls_index_codec_stats(idx, (cls_codec)c, sizes[k], 1, &cs)) != CLS_OK) {
                    cJSON_Delete(o);
                    cls_index_close(idx);
                    return fail(s, "re-encoding");
                }
                row = sizes_json(cls_codec_name((cls_codec)c), &cs);
                ok = row && cJSON_AddItemToArray(rows, row);
            }
        int whole = index_whole(idx, "stats");
        cls_index_close(idx);
        if (!whole) {
            cJSON_Delete(o);
            return 1;
        }
        if (!ok) {
            cJSON_Delete(o);
            return fail(CLS_E_NOMEM, "stats");
        }
        if (!put_json_line(stdout, o) || fflush(stdout) != 0) {
            fprintf(stderr, "%s: stats: writing: %s\n", prog, strerror(errno));
            return 1;
        }
        return 0;
    }
    printf("documents        %u\nterms            %u\npostings         %llu\ntokens           %llu\n"
           "avg doc length   %.2f\ncodec            %s (block size %u",
           st.num_docs, st.num_terms, (unsigned long long)st.num_postings, (unsigned long long)st.num_tokens,
           st.avg_doc_len, cls_codec_name(st.codec), st.block_size);
    if (depth) printf(", exception depth %u", st.pfor_depth);
    double per_posting = st.num_postings ? 8.0 / (double)st.num_postings : 0.0;
    printf(")\nscoring          %s\nblocks           %llu\n"
           "postings bytes   %llu (%.2f bits per posting: the blocks' docID-gap and frequency streams)\n"
           "block records    %llu bytes (%.2f bits per posting: %zu bytes a block: first and last docID, where its "
           "streams start, the codec's words, its largest score)\n"
           "file bytes       %llu (both, the dictionary, document lengths, names and stored fields)\n"
           "analyzer         possessive=%d lowercase=%d stopwords=%d stem=%d\n",
           cls_scoring_name(cls_index_scoring(idx)), (unsigned long long)st.num_blocks, (unsigned long long)st.postings_bytes,
           per_posting * (double)st.postings_bytes, (unsigned long long)st.meta_bytes, per_posting * (double)st.meta_bytes,
           st.num_blocks ? (size_t)(st.meta_bytes / st.num_blocks) : (size_t)0, (unsigned long long)st.file_bytes,
           an.possessive, an.lowercase, an.stopwords, an.stem);
    print_collection(idx, st.num_docs);
    putchar('\n');
    printf("bits per posting of the docID gaps (doc), the frequencies (freq) and the block records (records); bytes:\n"
           "postings and block records together\n");
    printf("%-14s %6s %9s %9s %9s %9s %14s\n", "codec", "block", "doc", "freq", "records", "total", "bytes");
    char label[32];
    snprintf(label, sizeof label, "%s%s", cls_codec_name(st.codec), all ? " (this)" : "");
    print_sizes(label, &st);
    /* --codecs: what every codec and block size would take, re-encoded from this index */
    for (int c = 0; all && c < CLS_NUM_CODECS; c++)
        for (int k = 0; k < 4; k++) {
            cls_index_stats cs;
            if ((s = cls_index_codec_stats(idx, (cls_codec)c, sizes[k], 1, &cs)) != CLS_OK) {
                cls_index_close(idx);
                return fail(s, "re-encoding");
            }
            print_sizes(cls_codec_name((cls_codec)c), &cs);
        }
    int whole = index_whole(idx, "stats");
    cls_index_close(idx);
    return whole ? 0 : 1;
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
    while ((opt = getopt_long(argc, argv, ":v", lo, NULL)) != -1) {
        switch (opt) {
        case 'v': verbose = 1; break;
        case 1:
            if (!parse_u64(optarg, 1, 1024, &threads))
                return usage_error("check: --threads takes a number from 1 to 1024, not '%s'", optarg);
            break;
        default: return bad_option(argc, argv, opt);
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
        fprintf(stderr, "opened %s in %.3f s: header, section table, every section checksum but the postings', %u "
                "documents, %u terms, %llu block records, %u stored fields\n", path, t1 - t0, st.num_docs, st.num_terms,
                (unsigned long long)st.num_blocks, cls_index_field_count(idx));
    s = cls_index_check(idx, nth);
    double t2 = now();
    cls_index_close(idx);
    if (s != CLS_OK) return fail(s, "checking the index");
    if (verbose)
        fprintf(stderr, "checked in %.3f s on %u thread(s): postings checksum (%llu bytes), %llu blocks decoded "
                "(%llu postings, both streams, exact extents), max_score recomputed, every stored value's place\n",
                t2 - t1, nth,
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
    while ((c = getopt_long(argc, argv, ":o:", lo, NULL)) != -1) {
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
        default: return bad_option(argc, argv, c);
        }
    }
    if (!out || optind != argc - 1)
        return usage_error("recode: usage: clsearch recode INDEX -o OUT [--codec C] [--block N] [--pfor-depth D]%s", "");
    if (guard_output("recode", out, OF_INDEX, argv + optind, 1)) return 1;
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
    while ((opt = getopt_long(argc, argv, ":o:qv", lo, NULL)) != -1) {
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
        default: return bad_option(argc, argv, opt);
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
        /* DIR/corpus.jsonl and DIR/topics.tsv, as any output, where DIR exists (else it is made) */
        struct stat dst;
        if (stat(out, &dst) == 0 && S_ISDIR(dst.st_mode)) {
            char corpus[4200], tsv[4200];
            snprintf(corpus, sizeof corpus, "%s/corpus.jsonl", out);
            snprintf(tsv, sizeof tsv, "%s/topics.tsv", out);
            if (guard_output("generate", corpus, OF_JSONL, NULL, 0) || guard_output("generate", tsv, OF_TOPICS, NULL, 0))
                return 1;
        }
        s = gen_corpus(&o, out);
        if (s != CLS_OK) return fail(s, "generating the collection");
        return 0;
    }
    if (guard_output("generate", index, OF_INDEX, NULL, 0) ||
        (topics && guard_output("generate", topics, OF_TOPICS, (char *[]){(char *)index}, 1)))
        return 1;
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
                             "[--pfor-depth D] [--impact] [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive] [-v]%s";
    static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"codec", required_argument, 0, 1},
                                       {"block", required_argument, 0, 2}, {"pfor-depth", required_argument, 0, 3},
                                       {"no-stem", no_argument, 0, 4}, {"no-stopwords", no_argument, 0, 5},
                                       {"no-lowercase", no_argument, 0, 6}, {"no-possessive", no_argument, 0, 7},
                                       {"impact", no_argument, 0, 8}, {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};
    const char *out = NULL;
    int verbose = 0, opt;
    cls_scoring scoring = CLS_SCORING_BM25;
    unsigned long long v;
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    cls_build_opts o;
    cls_build_defaults(&o);
    while ((opt = getopt_long(argc, argv, ":o:v", lo, NULL)) != -1) {
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
        case 8: scoring = CLS_SCORING_IMPACT; break;
        default: return bad_option(argc, argv, opt);
        }
    }
    if (!out || optind != argc - 1) return usage_error(use, "");
    if (guard_output("ciff-import", out, OF_INDEX, argv + optind, 1)) return 1;
    double t0 = now();
    cls_status s = cls_ciff_import_scored(argv[optind], &an, &o, scoring, out);
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
    while ((opt = getopt_long(argc, argv, ":o:v", lo, NULL)) != -1) {
        switch (opt) {
        case 'o': out = optarg; break;
        case 'v': verbose = 1; break;
        case 1: desc = optarg; break;
        default: return bad_option(argc, argv, opt);
        }
    }
    if (!out || optind != argc - 1) return usage_error(use, "");
    if (guard_output("ciff-export", out, OF_CIFF, argv + optind, 1)) return 1;
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
    cls_scoring scoring = cls_index_scoring(idx);
    cls_index_close(idx);
    if (s != CLS_OK) return fail(s, "exporting CIFF");
    /* CIFF cannot say so itself: without this, a re-import would score the impacts as BM25 */
    if (scoring == CLS_SCORING_IMPACT)
        fprintf(stderr, "%s: ciff-export: note: %s is impact-scored and CIFF does not record that: import %s with "
                "--impact\n", prog, argv[optind], out);
    if (verbose) fprintf(stderr, "exported %s to %s in %.2f s\n", argv[optind], out, now() - t0);
    return 0;
}

/* ---- serve -------------------------------------------------------------------------------- */

#ifdef CLSEARCH_SERVE
/* The query server (serve/serve.h) until SIGTERM or SIGINT, then a graceful stop: the queued
 * queries are searched and answered, and the exit status is 0. */
static int cmd_serve(int argc, char **argv)
{
    /* Blocked before any thread exists (the engine's runtime starts some), so that every thread
     * inherits the mask and the signal waits for sigwait here instead of killing the process. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    const char *index_path = NULL, *device = NULL;
    srv_opts so;
    srv_defaults(&so);
    int conns_given = 0;
    cls_engine_opts eo;
    cls_engine_opts_init(&eo);
    unsigned long long v;
    float f;
    int opt;
    static const struct option lo[] = {{"index", required_argument, 0, 'x'}, {"device", required_argument, 0, 'd'},
                                       {"listen", required_argument, 0, 1}, {"max-batch", required_argument, 0, 2},
                                       {"max-wait-ms", required_argument, 0, 3}, {"threads", required_argument, 0, 4},
                                       {"max-queue", required_argument, 0, 5}, {"max-k", required_argument, 0, 6},
                                       {"timeout", required_argument, 0, 7}, {"device-mem", required_argument, 0, 8},
                                       {"request-timeout", required_argument, 0, 9},
                                       {"max-conns", required_argument, 0, 10},
                                       {"max-conns-per-ip", required_argument, 0, 11}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, ":x:d:", lo, NULL)) != -1) {
        switch (opt) {
        case 'x': index_path = optarg; break;
        case 'd': device = optarg; break;
        case 1: so.listen = optarg; break;
        case 2:
            if (!parse_u64(optarg, 1, 65536, &v)) return usage_error("serve: --max-batch takes 1 to 65536 queries, not '%s'", optarg);
            so.max_batch = (unsigned)v;
            break;
        case 3:
            if (!parse_float(optarg, &f) || !(f >= 0 && f <= 10000))
                return usage_error("serve: --max-wait-ms takes 0 to 10000 milliseconds, not '%s'", optarg);
            so.max_wait_ms = f;
            break;
        case 4:
            if (!parse_u64(optarg, 1, 64, &v)) return usage_error("serve: --threads takes 1 to 64, not '%s'", optarg);
            so.threads = (unsigned)v;
            break;
        case 5:
            if (!parse_u64(optarg, 1, 1048576, &v)) return usage_error("serve: --max-queue takes 1 to 1048576 queries, not '%s'", optarg);
            so.max_queue = (unsigned)v;
            break;
        case 6:
            if (!parse_u64(optarg, 1, CLS_MAX_K, &v)) return usage_error("serve: --max-k takes 1 to 100000, not '%s'", optarg);
            so.max_k = (unsigned)v;
            break;
        case 7:
            if (!parse_u64(optarg, 1, 3600, &v)) return usage_error("serve: --timeout takes 1 to 3600 seconds, not '%s'", optarg);
            so.timeout_s = (unsigned)v;
            break;
        case 8:
            if (cls_parse_bytes(optarg, &eo.device_mem) != CLS_OK || eo.device_mem == 0)
                return usage_error("serve: --device-mem takes a byte count above 0 (digits, then optionally K, M, G "
                                   "or T), not '%s'", optarg);
            break;
        case 9:
            if (!parse_u64(optarg, 1, 3600, &v))
                return usage_error("serve: --request-timeout takes 1 to 3600 seconds, not '%s'", optarg);
            so.request_timeout_s = (unsigned)v;
            break;
        case 10:
            if (!parse_u64(optarg, 1, 65536, &v)) return usage_error("serve: --max-conns takes 1 to 65536, not '%s'", optarg);
            so.max_conns = (unsigned)v;
            conns_given = 1;
            break;
        case 11:
            if (!parse_u64(optarg, 1, 65536, &v))
                return usage_error("serve: --max-conns-per-ip takes 1 to 65536, not '%s'", optarg);
            so.max_conns_per_ip = (unsigned)v;
            break;
        default: return bad_option(argc, argv, opt);
        }
    }
    if (optind < argc) return usage_error("serve: unexpected argument '%s'", argv[optind]);
    if (!index_path) return usage_error("serve: -x INDEX is required%s", "");
    unsigned fit = srv_conns_fit();
    if (!conns_given && fit < so.max_conns) {
        if (fit < 16) {
            fprintf(stderr, "%s: serve: the hard limit on open files (ulimit -Hn) leaves room for %u connections\n", prog, fit);
            return 1;
        }
        fprintf(stderr, "%s: serve: note: --max-conns %u, not %u: the most the hard limit on open files (ulimit -Hn) "
                "leaves room for\n", prog, fit, so.max_conns);
        so.max_conns = fit;
    }
    cls_index *idx = NULL;
    cls_engine *eng = NULL;
    srv *server = NULL;
    int rc = 1;
    cls_status s = cls_index_open(index_path, &idx);
    if (s != CLS_OK) {
        fail(s, "opening the index");
        goto done;
    }
    eo.device = device;
    if ((s = cls_engine_create_opts(idx, &eo, &eng)) != CLS_OK) {
        fail(s, "starting the engine");
        goto done;
    }
    if ((s = srv_start(idx, eng, &so, &server)) != CLS_OK) {
        fail(s, "serve");
        goto done;
    }
    const char *d = cls_engine_describe(eng);
    fprintf(stderr, "%s: serve: %s, %.*s; batches of up to %u queries or %g ms; %u HTTP threads\n", prog, index_path,
            (int)strcspn(d, "\n"), d, so.max_batch, so.max_wait_ms, so.threads);
    /* one line on stdout, for a script (or the tests) to learn the port */
    printf("listening on %s\n", srv_url(server));
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    srv_stats st;
    srv_get_stats(server, &st);
    fprintf(stderr, "%s: serve: %s: no new connections; finishing %llu queued queries\n", prog,
            sig == SIGTERM ? "SIGTERM" : "SIGINT", (unsigned long long)st.queued);
    srv_stop(server, &st);
    fprintf(stderr, "%s: serve: stopped: %llu search requests answered, %llu queries in %llu batches, %llu error "
            "responses, %llu responses cut off by their client\n", prog, (unsigned long long)st.requests,
            (unsigned long long)st.queries, (unsigned long long)st.batches, (unsigned long long)st.errors,
            (unsigned long long)st.aborted);
    rc = 0;
done:
    cls_engine_free(eng);
    cls_index_close(idx);
    return rc;
}
#endif

/* ---- help -------------------------------------------------------------------------------- */

/* One command's usage: its lines of `clsearch help`, which prints them all, and all that
 * `clsearch CMD --help` prints (with the codecs where the command takes --codec). */
typedef struct usage_entry {
    const char *cmd;   /* "search", "bench decode" */
    const char *text;  /* %1$s: the codec names */
} usage_entry;

static const usage_entry usages[] = {
    {"devices",
     "  clsearch devices [-v] [--json]              list OpenCL platforms and devices\n"
     "                  -v: the kernel parameters in force on each device;\n"
     "                  --json: one JSON object a line, a device each (no line when there is none)\n"},
    {"index",
     "  clsearch index -c {jsonl,beir,html,trec,smart,files} -o INDEX INPUT...\n"
     "                  [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive]\n"
     "                  [--threads N] [--codec %1$s] [--block 64|128|256|512]\n"
     "                  [--pfor-depth 0..3] [--store FIELD,...|none] [-q|--quiet] [-v|--verbose]\n"
     "                  [--allow-duplicate-ids] [--allow-empty] [--follow-links] [--force]\n"
     "                  a document id given twice is an error unless --allow-duplicate-ids (the\n"
     "                  first is kept); an INPUT without documents is an error unless --allow-empty;\n"
     "                  -o must not name an input or an existing non-index file unless --force,\n"
     "                  nor a read-only file\n"
     "                  INPUT: files, folders, .gz, archives (.tar[.gz|.xz|...], .zip), each read to its\n"
     "                  end (a tar cut short or a zip without its central directory is an error; a\n"
     "                  zip must be a file, not compressed nor a pipe); a folder is read within it:\n"
     "                  a symbolic link leading out of it is skipped (a note says how many) unless\n"
     "                  --follow-links, which follows every link, to files and folders, each folder\n"
     "                  once; links to folders are followed only then;\n"
     "                  --store: the per-document fields kept for search's --fields and --json:\n"
     "                  jsonl, beir: any top-level key (a non-string value as its JSON text);\n"
     "                  html: title, path; trec: any element of a <DOC> (headline, ...); smart:\n"
     "                  title (.T), authors (.A), bibliography (.B); files: path (the absolute path,\n"
     "                  ARCHIVE:ENTRY inside an archive). Default: title for beir, html and smart,\n"
     "                  path for files, none for jsonl and trec. The inputs, made absolute, are\n"
     "                  recorded as the collection's roots (stats shows them);\n"
     "                  files: a folder tree, archive or file of plain text, docno = relative path\n"
     "                  (%%XX-escaped), *.gz decompressed, binary files skipped;\n"
     "                  --threads: analysis threads (default: all cores); -q, --quiet: no progress\n"
     "                  line (shown when stderr is a terminal) and no notes; -v: summary and timings;\n"
     "                  INDEX's folder must exist and be writable (checked before any input is read)\n"},
    {"search",
     "  clsearch search -x INDEX {-q TOPICS | QUERY...} [-f {auto,tsv,anserini,trec,smart,mq}] [-k K]\n"
     "                  [-m MODE] [--k1 0.9] [--b 0.4] [-d DEVICE] [-o RUN] [--tag TAG] [--json] [-v]\n"
     "                  [--device-mem BYTES] [--batch-ms MS] [--fields FIELD,...|none]\n"
     "                  -q, --topics TOPICS: a topics file, '-' for standard input (a pipe works,\n"
     "                  in any format -f auto recognises); reading no topic is an error;\n"
     "                  QUERY...: instead of -q, one query, the words joined by spaces, qid 1\n"
     "                  (--qid ID names it otherwise); a query's terms weigh 1 each and repeats add,\n"
     "                  term^W weighs every term the analyzer makes of 'term' W (a decimal number\n"
     "                  from 1e-9 to 1e9: 'apple^2.5 pie'); a bad weight is an error naming the query;\n"
     "                  -o RUN: write the run there (its folder is checked first), else standard output;\n"
     "                  never over the index, the topics, a read-only file or an existing file\n"
     "                  that is not a run (--force lifts all but the read-only rule); qids must differ;\n"
     "                  --json: one JSON object a hit, {\"qid\", \"rank\", \"docno\", \"score\"},\n"
     "                  instead of TREC run lines (qid Q0 docno rank score tag), with \"fields\":\n"
     "                  {\"title\": ..., ...} when the index stores fields (all, or those of --fields;\n"
     "                  null: the document lacks it);\n"
     "                  --fields: stored fields (index --store; stats lists them) to print: after\n"
     "                  each run line's six columns a tab, then the values separated by tabs (\\t,\n"
     "                  \\n, \\r, \\\\ escaped; absent: empty), a file for reading, not trec_eval;\n"
     "                  DEVICE: auto, gpu, cpu, ref, or P:D (default $CLSEARCH_DEVICE, else auto);\n"
     "                  the first search on a device compiles its kernels and says so on stderr;\n"
     "                  --device-mem BYTES (e.g. 8G; default $CLSEARCH_DEVICE_MEM, else the device's):\n"
     "                  the device memory the engine may take; an index taking more than half of it\n"
     "                  has its lists cached on the device (LRU by bytes), uploaded as batches need them;\n"
     "                  --batch-ms MS (default $CLSEARCH_BATCH_MS, else 25): the time a device batch\n"
     "                  aims at, past 1,024 queries (the cost model: the rate measured on earlier batches)\n"},
    {"stats",
     "  clsearch stats INDEX [--codecs] [--json]    sizes; --codecs: every codec and block size;\n"
     "                  the collection's format and roots, the stored fields (documents having each);\n"
     "                  --json: the same as one JSON object on one line (\"sizes\": the index's own\n"
     "                  codec first, then with --codecs every codec and block size)\n"},
    {"check",
     "  clsearch check INDEX [--threads N] [-v]     verifies what opening leaves to first use: the postings\n"
     "                  checksum, every block decoded strictly, every max_score; prints 'INDEX: ok' or\n"
     "                  the first damage (section, term, block) and exits 1; --threads: default all cores;\n"
     "                  -v: what was checked and how long it took\n"},
    {"recode",
     "  clsearch recode INDEX -o OUT [--codec %1$s] [--block 64|128|256|512] [--force]\n"
     "                  [--pfor-depth 0..3]         the same index in another codec or block size\n"},
    {"generate",
     "  clsearch generate -o DIR [--scale S] [--docs N] [--queries N] [--vocab N] [--doc-len N] [--seed S]\n"
     "                  [--force]\n"
     "                  a generated text collection: DIR/corpus.jsonl and DIR/topics.tsv (existing ones\n"
     "                  of another kind are not replaced without --force, read-only ones never)\n"
     "  clsearch generate --index FILE [--topics FILE] [--scale small|medium|gov2] [--docs N] [--queries N]\n"
     "                  [--vocab N] [--doc-len N] [--seed S] [--threads N] [--codec C] [--block N]\n"
     "                  [--pfor-depth D] [-q|--quiet] [-v] [--force]\n"
     "                  the same collection straight into an index, no text, on all cores (--threads);\n"
     "                  small 20k documents, medium 2M, gov2 25.2M (~6e9 postings); -q: no progress or totals\n"},
    {"ciff-import",
     "  clsearch ciff-import FILE.ciff[.gz] -o INDEX [--codec C] [--block N] [--pfor-depth D] [--impact]\n"
     "                  [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive] [-v] [--force]\n"
     "                  CIFF (Anserini, PISA, Lucene) to an index; the analyzer flags are what\n"
     "                  queries will use, so give those the CIFF's terms were made with;\n"
     "                  --impact: the tf fields are quantized impacts (SPLADE, uniCOIL: Anserini's\n"
     "                  -impact, PISA's quantized scorer): a document scores the sum of query weight\n"
     "                  x impact (no idf, no length norm; --k1, --b ignored); CIFF does not record it\n"},
    {"ciff-export", "  clsearch ciff-export INDEX -o FILE.ciff [--description TEXT] [-v] [--force]\n"
                    "                  an impact index exports its impacts as tf (import it with --impact)\n"},
    {"compare", "  clsearch compare RUN_A RUN_B                same docnos in the same order, scores within 1e-5\n"},
    {"serve",
     "  clsearch serve -x INDEX [-d DEVICE] [--listen ADDR:PORT] [--max-batch N] [--max-wait-ms T]\n"
     "                  [--threads N] [--max-queue N] [--max-k K] [--timeout S] [--request-timeout S]\n"
     "                  [--max-conns N] [--max-conns-per-ip N] [--device-mem BYTES]\n"
     "                  the query server: HTTP and JSON, concurrent requests searched together in\n"
     "                  device batches of up to N queries (default 128), the first waiting at most T ms\n"
     "                  (default 5); prints 'listening on URL' (--listen default 127.0.0.1:8080, port 0:\n"
     "                  any free one); SIGTERM or SIGINT: stops accepting, answers every request received\n"
     "                  (503 to those not yet queued), closes idle connections, exits 0;\n"
     "                  POST /search {\"query\": \"text\", \"k\": 10, \"mode\": \"or\"} or\n"
     "                  {\"queries\": [{\"qid\": \"1\", \"query\": \"text\"}, ...], ...}; GET /search?q=text&k=10;\n"
     "                  GET /health; GET /metrics (Prometheus text); bad requests get a 4xx JSON error;\n"
     "                  --threads: HTTP threads (default the cores, at most 4); --max-queue: queries waiting\n"
     "                  at most, more get 503 (default 4096); --max-k: the largest k asked (default 1000);\n"
     "                  --timeout: a connection without a request line for S s is closed, bytes trickled\n"
     "                  or not (default 30), and the longest wait for requests to finish at shutdown;\n"
     "                  --request-timeout: a request must arrive whole within S s of its request line, and\n"
     "                  its answer be taken within S s (default 10); --max-conns: connections at most\n"
     "                  (default 1024), --max-conns-per-ip: from one address (default 256); a connection\n"
     "                  past either closes the oldest of its scope without a whole request, or is answered\n"
     "                  503 when every one has a request being answered\n"},
    {"bench copy",
     "  clsearch bench copy [-d DEVICES] [-r N] [--mib N] [--json FILE]\n"
     "                  the devices' memory-bandwidth ceiling (copy kernel, bytes read + written)\n"},
    {"bench decode",
     "  clsearch bench decode [-d ref,DEVICES] [-r N] [--select 1,0.05] [--algo hs,we,shfl|all]\n"
     "                  [--ceiling GBPS] [--json FILE] [--plot DIR] INDEX...\n"
     "                  decoding speed of whole lists and scattered blocks per scan variant, checked against ref\n"},
    {"bench e2e",
     "  clsearch bench e2e -x INDEX -q TOPICS [-d ref,DEVICES] [-m or,and,and-or] [-k 10,100,1000]\n"
     "                  [-b 1,16,256,1024,4096,16384] [--seconds S] [--json FILE]\n"
     "                  queries/s and latency p50/p95/p99 by batch size, transfers apart\n"},
    {"bench topk",
     "  clsearch bench topk [-d DEVICES] [-c ROWSxN:K,...] [-r N] [--json FILE]\n"
     "                  top-k selection alone on dense score rows, every row checked on the host\n"},
    {"bench scan",
     "  clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--method lookback,3pass] [--algo all|hs,we,shfl]\n"
     "                  [--wg N,...] [--items N,...] [--json FILE]\n"
     "                  device-wide prefix sum alone (single pass with look-back, or three passes), per\n"
     "                  variant, checked on the host\n"},
    {"bench intersect",
     "  clsearch bench intersect [-d DEVICES] [--terms 2] [--short 1000,10000] [--ratios 1,10,100,1000]\n"
     "                  [--batch 1,64,1024,16384] [--wg 64,128,256,512] [-r N] [--mib N] [--json FILE]\n"
     "                  AND-query list intersection alone, per work-group size, checked on the host\n"},
    {"bench score",
     "  clsearch bench score [-d DEVICES] [--mode and,or] [--cands 1e3,...] [--lists 1e4,...] [--batch N,...]\n"
     "                  [--wg 64,128,256,512] [-r N] [--mib N] [--json FILE]\n"
     "                  BM25 scoring alone (candidates; dense rows), per work-group size, checked on the host\n"},
    {"bench serve",
     "  clsearch bench serve -x INDEX -q TOPICS [-d DEVICE] [-c 1,4,16,64] [--max-batch 1,16,128]\n"
     "                  [--max-wait-ms 0,5] [-k 10] [-m or] [--seconds S] [--json FILE]\n"
     "                  the query server in-process on a loopback port, driven by C keep-alive clients:\n"
     "                  queries/s against latency p50/p99 for each batching setting and client count\n"},
    {"tune",
     "  clsearch tune [-d DEVICE] [-o FILE] [-r N] [--quick] [--json FILE] [--force]\n"
     "                  sweeps the kernel variants on the device, writes the tuning file the engine loads\n"
     "                  (checked first: a file of another kind is not replaced without --force, a\n"
     "                  read-only one never)\n"
     "  clsearch tune --list                        the registry of tunable parameters\n"},
    {"help", "  clsearch help, clsearch CMD --help          all commands, or one\n"},
    {"version", "  clsearch version                            the version\n"},
};
#define NUM_USAGES (sizeof usages / sizeof usages[0])

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

static void print_codecs(void)
{
    printf("Codecs (--codec):\n");
    for (int c = 0; c < CLS_NUM_CODECS; c++) {
        const cdc_codec *d = cdc_get((cls_codec)c);
        printf("  %-8s %s\n", d->name, d->help);
    }
}

static void print_environment(void)
{
    printf("Environment: CLSEARCH_DEVICE, CLSEARCH_CACHE_DIR (program binaries), CLSEARCH_KERNEL_DIR\n"
           "(kernel sources instead of the embedded ones), CLSEARCH_TUNING (tuning file; 'none' ignores it;\n"
           "default CACHE_DIR/tuning.json), CLSEARCH_PARAMS (NAME=VALUE,... over the tuned values),\n"
           "CLSEARCH_PROGRAM_CACHE (binary, driver or auto: which cache keeps compiled programs),\n"
           "CLSEARCH_COMPILER (the kernel compiler process; 'none': compile in this process).\n");
}

/* One entry's lines, the search modes after search's. */
static void print_usage(const usage_entry *u)
{
    char codecs[256];
    codec_names(codecs, sizeof codecs);
    printf(u->text, codecs);
    if (strcmp(u->cmd, "search") == 0)
        for (cls_mode m = 0; cls_mode_name(m); m++)
            printf("                  -m %-7s %s%s\n", cls_mode_name(m), cls_mode_help(m),
                   m == CLS_MODE_OR ? " (default)" : "");
}

static void help(void)
{
    printf("clsearch %s: query processing on OpenCL devices\n\n", cls_version());
    for (size_t i = 0; i < NUM_USAGES; i++) print_usage(&usages[i]);
    printf("\nEvery command takes -h, --help: its own usage. Exit status: 0 success, 1 failure, 2 bad usage.\n\n");
    print_codecs();
    printf("\n");
    print_environment();
}

/* `clsearch CMD --help`: cmd's usage ("bench": every suite's) and what it refers to. 0 when
 * cmd has an entry. */
static int command_help(const char *cmd)
{
    size_t n = strlen(cmd), found = 0;
    for (size_t i = 0; i < NUM_USAGES; i++) {
        const char *c = usages[i].cmd;
        if (strcmp(c, cmd) == 0 || (strncmp(c, cmd, n) == 0 && c[n] == ' ')) {
            if (!found) printf("usage:\n");
            print_usage(&usages[i]);
            found++;
        }
    }
    if (!found) return 1;
    if (strstr(cmd, "index") || strstr(cmd, "recode") || strstr(cmd, "generate") || strstr(cmd, "ciff-import")) {
        printf("\n");
        print_codecs();
    }
    if (strncmp(cmd, "bench", 5) == 0 || strcmp(cmd, "tune") == 0)
        printf("\n--json FILE: the suite's JSON lines after FILE's own, FILE replaced once the suite is done;\n"
               "never one of the suite's inputs, nor a file that is not JSON lines without --force (which\n"
               "writes over it), nor a read-only file.\n");
    if (strcmp(cmd, "search") == 0 || strcmp(cmd, "devices") == 0 || strcmp(cmd, "tune") == 0 ||
        strncmp(cmd, "bench", 5) == 0) {
        printf("\n");
        print_environment();
    }
    return 0;
}

/* The command whose name is nearest to a mistyped one (at most two letters added, removed,
 * changed or swapped), or NULL: for "did you mean". */
static const char *nearest_command(const char *typed)
{
    const char *best = NULL;
    size_t best_d = 3, n = strlen(typed);
    if (n > 30) return NULL;
    for (size_t i = 0; i < NUM_USAGES; i++) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(usages[i].cmd, " "), usages[i].cmd);
        size_t m = strlen(name);
        /* optimal string alignment distance: insertions, deletions, substitutions, transpositions */
        size_t d[32][32];
        for (size_t a = 0; a <= n; a++) d[a][0] = a;
        for (size_t b = 0; b <= m; b++) d[0][b] = b;
        for (size_t a = 1; a <= n; a++)
            for (size_t b = 1; b <= m; b++) {
                size_t v = d[a - 1][b - 1] + (typed[a - 1] != name[b - 1]);
                if (d[a - 1][b] + 1 < v) v = d[a - 1][b] + 1;
                if (d[a][b - 1] + 1 < v) v = d[a][b - 1] + 1;
                if (a > 1 && b > 1 && typed[a - 1] == name[b - 2] && typed[a - 2] == name[b - 1] && d[a - 2][b - 2] + 1 < v)
                    v = d[a - 2][b - 2] + 1;
                d[a][b] = v;
            }
        if (d[n][m] < best_d) {
            best_d = d[n][m];
            best = usages[i].cmd;
        }
    }
    if (!best) return NULL;
    static char out[32];
    snprintf(out, sizeof out, "%.*s", (int)strcspn(best, " "), best);
    return out;
}

/* Whether the arguments after the command ask for help: -h or --help before any "--". */
static int asks_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
    }
    return 0;
}

/* Notices from the library (include/clsearch.h, cls_set_notice) on stderr: today the one that a
 * kernel program is being compiled, not loaded from the cache, which takes seconds. An engine
 * builds two programs and tune many, all with the same notice: it is printed once. */
static void on_notice(void *user, const char *line)
{
    static char last[1024];
    (void)user;
    if (strncmp(last, line, sizeof last - 1) == 0) return;
    snprintf(last, sizeof last, "%s", line);
    fprintf(stderr, "%s: %s\n", prog, line);
    fflush(stderr);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        help();
        return 2;
    }
    const char *cmd = argv[1];
    argc--;
    argv++;
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        /* help CMD [SUITE]: that command's usage */
        if (argc > 1 && !asks_help(argc, argv)) {
            char which[128];
            snprintf(which, sizeof which, "%s%s%s", argv[1], argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
            return command_help(which) ? usage_error("help: no command '%s'", which) : 0;
        }
        help();
        return 0;
    }
    if (strcmp(cmd, "bench") == 0) {
        /* bench SUITE --help: the suite's usage; bench --help, or help with no suite: all of them */
        if (asks_help(argc, argv)) {
            char suite[64];
            snprintf(suite, sizeof suite, "bench %s", argv[1]);
            if (command_help(suite) != 0) command_help("bench");
            return 0;
        }
    } else if (asks_help(argc, argv) && command_help(cmd) == 0) {
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("clsearch %s\n", cls_version());
        return 0;
    }
    snprintf(cur_cmd, sizeof cur_cmd, "%s", cmd);
    /* --force (guard_output) goes with every command that writes a file; taken off here, up to
     * a "--", so that each command's options stay its own */
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc) argv[kept++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--force") == 0) of_set_force(1);
        else argv[kept++] = argv[i];
    }
    argc = kept;
    argv[argc] = NULL;
    cls_set_notice(on_notice, NULL);
    /* the commands here say themselves what getopt refused (bad_option); the suites of bench/ let
     * getopt say it */
    opterr = strcmp(cmd, "bench") == 0 || strcmp(cmd, "tune") == 0;
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
#ifdef CLSEARCH_SERVE
    if (strcmp(cmd, "serve") == 0) return cmd_serve(argc, argv);
#else
    if (strcmp(cmd, "serve") == 0 || (strcmp(cmd, "bench") == 0 && argc > 1 && strcmp(argv[1], "serve") == 0)) {
        fprintf(stderr, "%s: %s: this clsearch was built without the server (CMake option CLSEARCH_SERVE=OFF)\n",
                prog, strcmp(cmd, "serve") == 0 ? "serve" : "bench serve");
        return 1;
    }
#endif
    if (strcmp(cmd, "tune") == 0) return bench_tune(argc, argv);
    if (strcmp(cmd, "bench") == 0) {
        if (argc < 2)
            return usage_error("bench: usage: clsearch bench {copy,decode,e2e,topk,scan,intersect,score,serve} [options]%s", "");
        if (strcmp(argv[1], "copy") == 0) return bench_copy(argc - 1, argv + 1);
        if (strcmp(argv[1], "decode") == 0) return bench_decode(argc - 1, argv + 1);
        if (strcmp(argv[1], "e2e") == 0) return bench_e2e(argc - 1, argv + 1);
        if (strcmp(argv[1], "topk") == 0) return bench_topk(argc - 1, argv + 1);
        if (strcmp(argv[1], "scan") == 0) return bench_scan(argc - 1, argv + 1);
        if (strcmp(argv[1], "intersect") == 0) return bench_intersect(argc - 1, argv + 1);
        if (strcmp(argv[1], "score") == 0) return bench_score(argc - 1, argv + 1);
#ifdef CLSEARCH_SERVE
        if (strcmp(argv[1], "serve") == 0) return bench_serve(argc - 1, argv + 1);
#endif
        return usage_error("bench: unknown suite '%s' (copy, decode, e2e, topk, scan, intersect, score, serve)", argv[1]);
    }
    cur_cmd[0] = '\0'; /* no such command's --help: the list of them */
    const char *near = nearest_command(cmd);
    if (near) fprintf(stderr, "%s: unknown command '%s': did you mean '%s'?\n", prog, cmd, near);
    else fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
    fprintf(stderr, "(see '%s --help')\n", prog);
    return 2;
}

/* Every command's standard output is checked once it is done: a write that failed (a full disk,
 * /dev/full, a closed pipe) is an error and exit 1, whatever the command printed. */
int main(int argc, char **argv)
{
    fault_setup(); /* a malformed CLSEARCH_FAULT stops every command, not only those that count */
    int rc = dispatch(argc, argv);
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
    if (bad && rc == 0) { /* a command that failed has said why already */
        fprintf(stderr, "%s: writing to standard output: %s\n", prog, strerror(e ? e : EIO));
        rc = 1;
    }
    return rc;
}
