/* The commands that write an index: index (a collection read, analyzed and inverted) and recode
 * (an index written again in another codec or block size). */
#define _DEFAULT_SOURCE /* getopt_long */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "index/index_write.h"
#include "util/err.h"

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

/* One line, redrawn in place: documents, input MB, MB/s and tokens/s since the start (the tokens
 * of the documents inverted so far: with threads, a few batches behind the reading), and for the
 * current input its percentage and the time left at its rate so far. */
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
    double mtok = (double)idx_builder_tokens(c->b) / 1e6;
    fprintf(stderr, "\r%llu documents  %.1f MB  %.1f MB/s  %.2f M tokens/s", c->docs, mb, el > 0 ? mb / el : 0.0,
            el > 0 ? mtok / el : 0.0);
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


/* What `index` was asked: its options and inputs. */
typedef struct index_args {
    const char *fmt, *out, *store;
    cls_corpus_format cf;
    int verbose, quiet, allow_dups, allow_empty, follow_links;
    uint32_t shards;         /* --shards: OUT.0 .. OUT.<shards-1> instead of OUT; 0: one index */
    cls_analyzer_opts an;
    cls_build_opts bo;
    uint64_t memory;         /* --memory, in bytes; 0: the builder's default */
    char **inputs;
    int ninputs;
} index_args;

static const name_value corpus_formats[] = {
    {"jsonl", CLS_CORPUS_JSONL}, {"beir", CLS_CORPUS_BEIR},   {"html", CLS_CORPUS_HTML},
    {"trec", CLS_CORPUS_TREC},   {"smart", CLS_CORPUS_SMART}, {"files", CLS_CORPUS_FILES},
};

/* index's options into a; 0, or the exit status of a refusal. */
static int index_parse(int argc, char **argv, index_args *a)
{
    unsigned long long v;
    int opt, cf;
    cls_status s;
    memset(a, 0, sizeof *a);
    cls_analyzer_defaults(&a->an);
    cls_build_defaults(&a->bo);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    a->bo.threads = cores < 1 ? 1u : cores > 1024 ? 1024u : (unsigned)cores;
    static const struct option lo[] = {{"collection", required_argument, 0, 'c'}, {"output", required_argument, 0, 'o'},
                                       CLI_ANALYZER_OPTIONS,
                                       {"threads", required_argument, 0, 5}, {"codec", required_argument, 0, 6},
                                       {"block", required_argument, 0, 7}, {"pfor-depth", required_argument, 0, 8},
                                       {"store", required_argument, 0, 9}, {"allow-duplicate-ids", no_argument, 0, 10},
                                       {"allow-empty", no_argument, 0, 11}, {"follow-links", no_argument, 0, 12},
                                       {"shards", required_argument, 0, 13}, {"memory", required_argument, 0, 14},
                                       {"device", required_argument, 0, 'd'},
                                       {"verbose", no_argument, 0, 'v'}, {"quiet", no_argument, 0, 'q'}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, ":c:o:d:vq", lo, NULL)) != -1) {
        if (analyzer_option(opt, &a->an)) continue;
        switch (opt) {
        case 'c': a->fmt = optarg; break;
        case 9: a->store = optarg; break;
        case 10: a->allow_dups = 1; break;
        case 11: a->allow_empty = 1; break;
        case 12: a->follow_links = 1; break;
        case 'o': a->out = optarg; break;
        case 'd': a->bo.device = optarg; break; /* argv outlives the build */
        case 'v': a->verbose = 1; break;
        case 'q': a->quiet = 1; break;
        case 13:
            if (!parse_u64(optarg, 1, CLS_MAX_SHARDS, &v))
                return usage_error("index: --shards takes a number of shards from 1 to 1024, not '%s'", optarg);
            a->shards = (uint32_t)v;
            break;
        case 14:
            if (!parse_u64(optarg, 1, (uint64_t)1 << 24, &v))
                return usage_error("index: --memory takes megabytes from 1 to 16777216, not '%s'", optarg);
            a->memory = (uint64_t)v << 20;
            break;
        case 5:
            if (!parse_u64(optarg, 1, 1024, &v)) {
                fprintf(stderr, "%s: index: --threads takes a number from 1 to 1024, not '%s'\n", prog, optarg);
                return 1;
            }
            a->bo.threads = (unsigned)v;
            break;
        case 6:
            if ((s = cls_codec_parse(optarg, &a->bo.codec)) != CLS_OK) return fail(s, "index --codec");
            break;
        case 7:
            if (!parse_u64(optarg, 1, 1u << 20, &v)) {
                fprintf(stderr, "%s: index: --block takes 64, 128, 256 or 512, not '%s'\n", prog, optarg);
                return 1;
            }
            a->bo.block_size = (uint32_t)v;
            break;
        case 8:
            if (!parse_u64(optarg, 0, 1000, &v)) {
                fprintf(stderr, "%s: index: --pfor-depth takes a number from 0 to 3, not '%s'\n", prog, optarg);
                return 1;
            }
            a->bo.pfor_depth = (unsigned)v;
            break;
        default: return bad_option(argc, argv, opt);
        }
    }
    if (!a->fmt) return usage_error("index: -c {jsonl,beir,html,trec,smart,files} is required%s", "");
    if (!name_lookup(corpus_formats, sizeof corpus_formats / sizeof corpus_formats[0], a->fmt, &cf))
        return usage_error("index: unknown collection format '%s' (jsonl, beir, html, trec, smart, files)", a->fmt);
    a->cf = (cls_corpus_format)cf;
    if (!a->out) return usage_error("index: -o INDEX is required%s", "");
    if (optind >= argc) return usage_error("index: no INPUT given%s", "");
    a->inputs = argv + optind;
    a->ninputs = argc - optind;
    return 0;
}

/* Each input read into the builder, in turn; counts gathers what the readers skipped. 0, or the
 * exit status of a failure (the builder freed, nothing written). */
static int index_read(index_ctx *c, const index_args *a, const char **fields, size_t nfields,
                      cls_corpus_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    cls_corpus_follow_links(a->follow_links);
    for (int i = 0; i < a->ninputs; i++) {
        const char *input = a->inputs[i];
        c->input = i + 1;
        c->t_input = now();
        c->bytes_done = 0;
        unsigned long long docs_before = c->docs;
        cls_status s = cls_corpus_read_fields(a->cf, input, fields, nfields, on_doc, c, on_progress, c);
        if (c->err != CLS_OK) s = c->err;
        cls_corpus_counts one;
        cls_corpus_last_counts(&one);
        /* an input that gives nothing is most likely the wrong format or folder, not a collection */
        if (s == CLS_OK && c->docs == docs_before && !a->allow_empty) {
            char why[160] = "";
            if (one.skipped_binary)
                snprintf(why, sizeof why, " (%llu binary file%s skipped)", (unsigned long long)one.skipped_binary,
                         one.skipped_binary == 1 ? "" : "s");
            else if (one.skipped_links)
                snprintf(why, sizeof why, " (%llu link%s leading out of it skipped: --follow-links)",
                         (unsigned long long)one.skipped_links, one.skipped_links == 1 ? "" : "s");
            s = err_set(CLS_E_FORMAT, "%s holds no %s documents%s; --allow-empty indexes an input without any",
                        input, a->fmt, why);
        }
        if (s == CLS_OK) s = cls_builder_add_root(c->b, a->cf, input); /* what `stats` shows as the root */
        if (s != CLS_OK) {
            char what[4200];
            snprintf(what, sizeof what, "indexing %s (nothing written)", input);
            return index_fail(c, s, what);
        }
        c->bytes_before += c->bytes_done;
        counts->skipped_binary += one.skipped_binary;
        counts->truncated += one.truncated;
        counts->skipped_links += one.skipped_links;
    }
    return 0;
}

/* Where the build went, for the report: each stage's time and what was written. */
typedef struct index_done {
    double t_read;         /* reading and analysis, while the documents were fed to the builder */
    idx_build_times build; /* cls_builder_write's stages */
    double t_cut;          /* --shards: the whole index cut into its shards */
    uint64_t tokens, dups;
    const char *names;     /* --shards: the shards' names, cap bytes apart (shard_set_names) */
    size_t cap;
} index_done;

/* The bytes written: the index, or every shard of the set. */
static double output_mb(const index_args *a, const index_done *d)
{
    struct stat ost;
    if (!a->shards) return stat(a->out, &ost) == 0 ? (double)ost.st_size / 1e6 : 0.0;
    double mb = 0;
    for (uint32_t i = 0; i < a->shards; i++)
        if (stat(d->names + (size_t)i * d->cap, &ost) == 0) mb += (double)ost.st_size / 1e6;
    return mb;
}

/* The largest resident set of the process so far (getrusage: Linux counts it in KiB). */
static double peak_mb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 / 1e6 : 0.0;
}

/* What index says once the index is written: the summary line (unless -q), each stage's time,
 * the peak memory and the stored fields (-v), and notes on what was skipped. */
static void index_report(const index_ctx *c, const index_args *a, const char **fields, size_t nfields,
                         const cls_corpus_counts *counts, const index_done *d)
{
    double el = now() - c->t0, mb = (double)c->bytes_before / 1e6, mtok = (double)d->tokens / 1e6;
    if (c->drawn) fputc('\n', stderr);
    char skipped[128] = "";
    if (counts->skipped_binary)
        snprintf(skipped, sizeof skipped, "; skipped %llu binary file%s", (unsigned long long)counts->skipped_binary,
                 counts->skipped_binary == 1 ? "" : "s");
    if (counts->truncated)
        snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "; indexed %llu file%s only up to 64 MiB",
                 (unsigned long long)counts->truncated, counts->truncated == 1 ? "" : "s");
    if (!a->quiet) { /* the one-line summary, on a terminal or not (-q: none) */
        char written[4200];
        if (a->shards)
            snprintf(written, sizeof written, "%s.0 .. %s.%u (%u shard%s)", a->out, a->out, a->shards - 1, a->shards,
                     a->shards == 1 ? "" : "s");
        else
            snprintf(written, sizeof written, "%s", a->out);
        fprintf(stderr, "indexed %llu documents, %.1f MB of input (%.1f MB of text), %llu tokens in %.2f s: %.1f MB/s, "
                "%.2f M tokens/s, %u thread%s%s; %s: %.1f MB\n",
                c->docs, mb, (double)c->text_bytes / 1e6, (unsigned long long)d->tokens, el, el > 0 ? mb / el : 0.0,
                el > 0 ? mtok / el : 0.0, a->bo.threads, a->bo.threads == 1 ? "" : "s", skipped, written,
                output_mb(a, d));
    }
    if (a->verbose) {
        /* the builder's stages where they are: reading overlaps analysis (worker threads) and the
         * appending of each analysed batch's postings; the rest runs one after another */
        fprintf(stderr, "stage reading and analysis: %.2f s\n", d->t_read);
        const idx_build_times *bt = &d->build;
        fprintf(stderr, "stage sorting runs (overlapping the analysis; budget %.0f MB): %llu run%s, %llu spilled "
                "(%.1f MB), %.2f s on the sealing threads, %.2f s waited for\n", (double)bt->memory_budget / 1e6,
                (unsigned long long)bt->runs, bt->runs == 1 ? "" : "s", (unsigned long long)bt->spills,
                (double)bt->spill_bytes / 1e6, bt->spill, bt->spill_wait);
        fprintf(stderr, "stage analysis still in flight: %.2f s\n", bt->drain);
        fprintf(stderr, "stage inversion (dictionary and last run sorted by term): %.2f s\n", bt->invert);
        fprintf(stderr, "stage merging and encoding (%s, block %u): %.2f s on %u thread%s, %u chunk%s (merging %.2f s, "
                "encoding %.2f s, summed over the threads)%s%s\n", cls_codec_name(a->bo.codec), a->bo.block_size,
                bt->w.encode, bt->w.threads, bt->w.threads == 1 ? "" : "s", bt->w.chunks, bt->w.chunks == 1 ? "" : "s",
                bt->w.merge, bt->w.code, bt->w.device[0] ? ", encoded on " : "", bt->w.device);
        fprintf(stderr, "stage layout (chunks in order): %.2f s\n", bt->w.layout);
        fprintf(stderr, "stage writing: %.2f s\n", bt->w.write);
        if (a->shards) fprintf(stderr, "stage cutting into %u shards: %.2f s\n", a->shards, d->t_cut);
        fprintf(stderr, "peak memory: %.1f MB (resident, getrusage)\n", peak_mb());
        fprintf(stderr, "stored fields:");
        for (size_t f = 0; f < nfields; f++)
            fprintf(stderr, "%s %s (%llu of %llu documents)", f ? "," : "", fields[f], c->present[f], c->docs);
        fprintf(stderr, "%s\n", nfields ? "" : " none");
    }
    if (d->dups && !a->quiet)
        fprintf(stderr, "%s: note: skipped %llu document%s whose id was given before (--allow-duplicate-ids kept the "
                "first)\n", prog, (unsigned long long)d->dups, d->dups == 1 ? "" : "s");
    if (counts->skipped_links && !a->quiet)
        fprintf(stderr, "%s: note: skipped %llu symbolic link%s leading out of the input folder (--follow-links "
                "follows them)\n", prog, (unsigned long long)counts->skipped_links, counts->skipped_links == 1 ? "" : "s");
    /* a field asked for by name that no document has is most likely a misspelt key */
    for (size_t f = 0; a->store && !a->quiet && c->docs && f < nfields; f++)
        if (c->present[f] == 0) fprintf(stderr, "%s: note: no document has the field '%s'\n", prog, fields[f]);
}

/* --shards: the whole index at whole (a temporary file) cut into the set d->names, as `clsearch
 * shard` cuts it. 0, or 1 after the message. */
static int index_cut(index_ctx *c, const index_args *a, const char *whole, index_done *d)
{
    if (c->drawn) fputc('\n', stderr);
    c->drawn = 0;
    double t = now();
    cls_index *idx;
    cls_status s = cls_index_open(whole, &idx);
    if (s != CLS_OK) return fail(s, "opening the index just written");
    int rc = shard_set_write(idx, "index", d->names, d->cap, a->shards, a->verbose);
    cls_index_close(idx);
    d->t_cut = now() - t;
    return rc;
}

/* The builder made and configured, the inputs read, the index written (or, with --shards, written
 * whole to a temporary file and cut into the set names) and reported. 0, or the exit status of
 * a failure. */
static int index_build(const index_args *a, const char **fields, size_t nfields, const char *names, size_t cap)
{
    index_ctx c = {0};
    index_done d = {.names = names, .cap = cap};
    cls_status s = cls_builder_create(&a->an, &c.b);
    if (s != CLS_OK) return fail(s, "index");
    if ((s = cls_builder_configure(c.b, &a->bo)) != CLS_OK || (s = cls_builder_set_fields(c.b, fields, nfields)) != CLS_OK ||
        (s = cls_builder_allow_duplicate_ids(c.b, a->allow_dups)) != CLS_OK ||
        (s = cls_builder_set_memory(c.b, a->memory)) != CLS_OK)
        return index_fail(&c, s, "index");
    c.show = !a->quiet && isatty(2);
    c.ninputs = a->ninputs;
    c.t0 = now();
    cls_corpus_counts counts;
    int rc = index_read(&c, a, fields, nfields, &counts);
    if (rc != 0) return rc;
    d.t_read = now() - c.t0;
    /* --shards: the builder holds the whole collection until it writes, so the index is written
     * whole first, beside the first shard (a temporary file, removed on every path and on a
     * signal), then cut by the code `clsearch shard` runs: the same set, byte for byte */
    of_file whole = {0};
    const char *target = a->out;
    if (a->shards) {
        if ((s = of_open(&whole, names, 0)) != CLS_OK) return index_fail(&c, s, "index --shards");
        fclose(whole.f); /* the builder writes the file itself */
        whole.f = NULL;
        target = whole.tmp;
    }
    if ((s = cls_builder_write(c.b, target)) != CLS_OK) {
        of_discard(&whole);
        return index_fail(&c, s, "writing the index");
    }
    d.dups = cls_builder_duplicates(c.b);
    d.tokens = idx_builder_tokens(c.b);
    idx_builder_times(c.b, &d.build);
    cls_builder_free(c.b);
    c.b = NULL;
    if (a->shards) {
        rc = index_cut(&c, a, whole.tmp, &d);
        of_discard(&whole);
        if (rc != 0) return rc;
    }
    index_report(&c, a, fields, nfields, &counts, &d);
    return 0;
}

int cmd_index(int argc, char **argv)
{
    index_args a;
    int rc = index_parse(argc, argv, &a);
    if (rc != 0) return rc;
    /* the stored fields: each one the reader can supply, checked before anything is read */
    const char *fields[CLS_MAX_FIELDS];
    size_t nfields;
    char *fields_buf;
    rc = split_fields("index: --store", a.store ? a.store : default_store(a.cf), &fields_buf, fields, &nfields);
    for (size_t i = 0; rc == 0 && i < nfields; i++)
        if (cls_corpus_field_check(a.cf, fields[i]) != CLS_OK) rc = usage_error("index: --store: %s", cls_last_error());
    /* the outputs checked before anything is read: the index, or every shard of the set */
    char *names = NULL;
    size_t cap = 0;
    if (rc == 0 && a.shards && !(names = shard_set_names("index", a.out, a.shards, a.inputs, a.ninputs, &cap))) rc = 1;
    if (rc == 0 && !a.shards && guard_output("index", a.out, OF_INDEX, a.inputs, a.ninputs)) rc = 1;
    if (rc == 0) rc = index_build(&a, fields, nfields, names, cap);
    free(names);
    free(fields_buf);
    return rc;
}

int cmd_recode(int argc, char **argv)
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
