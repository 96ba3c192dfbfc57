/* The commands that look without changing anything: devices (the OpenCL devices and their
 * parameters), stats (an index's figures and sizes), check (every block of an index verified)
 * and compare (two runs, line by line). */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "codec/codec.h"

/* ---- devices ------------------------------------------------------------------------------ */

/* devices --json: one object a device, then the host executor's (id "host", type "host"). */
static int devices_json(const cls_device_info *list, size_t n, int verbose)
{
    for (size_t i = 0; i < n; i++) {
        const cls_device_info *d = &list[i];
        char id[32], params[1024];
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
    /* the host executor: not an OpenCL device, but one -d takes */
    cJSON *o = cJSON_CreateObject();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!o || !cJSON_AddStringToObject(o, "id", "host") || !cJSON_AddStringToObject(o, "name", "host executor") ||
        !cJSON_AddStringToObject(o, "type", "host") ||
        !cJSON_AddNumberToObject(o, "compute_units", cores > 0 ? (double)cores : 1)) {
        cJSON_Delete(o);
        return 0;
    }
    if (!put_json_line(stdout, o)) return 0;
    return fflush(stdout) == 0;
}

int cmd_devices(int argc, char **argv)
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
        if (n == 0) fprintf(stderr, "%s: no OpenCL platform found; '-d host' and '-d ref' still run\n", prog);
        int ok = devices_json(list, n, verbose);
        cls_devices_free(list);
        if (!ok) fprintf(stderr, "%s: devices: writing the list: %s\n", prog, errno ? strerror(errno) : "out of memory");
        return ok ? 0 : 1;
    }
    if (n == 0) printf("no OpenCL platform found; '-d host' and '-d ref' still run\n");
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
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("host executor (-d host, or host:N for N threads): %ld online cores, plain C over the index's blocks\n",
           cores > 0 ? cores : 1);
    if (verbose) {
        printf("\nkernel parameters in force:\n");
        for (size_t i = 0; i < n; i++) {
            char params[1024];
            cls_device_params(&list[i], params, sizeof params);
            printf("  %u:%u  %s\n", list[i].platform, list[i].device, params);
        }
    }
    cls_devices_free(list);
    return 0;
}

/* ---- stats -------------------------------------------------------------------------------- */

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

/* A shard's place in its collection (clsearch shard): its documents as the whole index numbers
 * them, which its docIDs plus its base are. */
static void print_shard(const cls_index *idx, uint32_t N)
{
    uint32_t base, coll, shard, shards;
    if (!cls_index_shard_info(idx, &base, &coll, &shard, &shards)) return;
    if (N) printf("shard            %u of %u: documents %u..%u of %u\n", shard, shards, base, base + N - 1, coll);
    else printf("shard            %u of %u: no documents (an empty range at %u of %u)\n", shard, shards, base, coll);
}

/* stats --json's "shard": {"shard", "shards", "doc_base", "collection_documents"}, for a shard only. */
static int shard_json(cJSON *o, const cls_index *idx)
{
    uint32_t base, coll, shard, shards;
    if (!cls_index_shard_info(idx, &base, &coll, &shard, &shards)) return 1;
    cJSON *sh = cJSON_AddObjectToObject(o, "shard");
    return sh && cJSON_AddNumberToObject(sh, "shard", shard) && cJSON_AddNumberToObject(sh, "shards", shards) &&
           cJSON_AddNumberToObject(sh, "doc_base", base) && cJSON_AddNumberToObject(sh, "collection_documents", coll);
}

/* The block sizes --codecs re-encodes with, for every codec. */
static const uint32_t stats_sizes[] = {64, 128, 256, 512};

/* stats --json: one object on one line, the figures of the text, sizes as an array of rows.
 * Closes idx; returns the exit status. */
static int stats_json(cls_index *idx, const char *path, const cls_index_stats *st, const cls_analyzer_opts *an,
                      int depth, int all)
{
    cJSON *o = cJSON_CreateObject(), *a = NULL, *rows = NULL;
    int ok = o && cJSON_AddStringToObject(o, "index", path) && cJSON_AddNumberToObject(o, "documents", st->num_docs) &&
             cJSON_AddNumberToObject(o, "terms", st->num_terms) &&
             cJSON_AddNumberToObject(o, "postings", (double)st->num_postings) &&
             cJSON_AddNumberToObject(o, "tokens", (double)st->num_tokens) &&
             cJSON_AddNumberToObject(o, "avg_doc_len", st->avg_doc_len) &&
             cJSON_AddStringToObject(o, "codec", cls_codec_name(st->codec)) &&
             cJSON_AddNumberToObject(o, "block_size", st->block_size) &&
             (!depth || cJSON_AddNumberToObject(o, "pfor_depth", st->pfor_depth)) &&
             cJSON_AddStringToObject(o, "scoring", cls_scoring_name(cls_index_scoring(idx))) &&
             cJSON_AddNumberToObject(o, "blocks", (double)st->num_blocks) &&
             cJSON_AddNumberToObject(o, "postings_bytes", (double)st->postings_bytes) &&
             cJSON_AddNumberToObject(o, "file_bytes", (double)st->file_bytes) &&
             (a = cJSON_AddObjectToObject(o, "analyzer")) != NULL &&
             cJSON_AddBoolToObject(a, "possessive", an->possessive) &&
             cJSON_AddBoolToObject(a, "lowercase", an->lowercase) &&
             cJSON_AddBoolToObject(a, "stopwords", an->stopwords) && cJSON_AddBoolToObject(a, "stem", an->stem) &&
             shard_json(o, idx) && collection_json(o, idx, st->num_docs) && (rows = cJSON_AddArrayToObject(o, "sizes")) != NULL;
    cJSON *row = ok ? sizes_json(cls_codec_name(st->codec), st) : NULL;
    ok = row && cJSON_AddItemToArray(rows, row);
    for (int c = 0; ok && all && c < CLS_NUM_CODECS; c++)
        for (int k = 0; ok && k < 4; k++) {
            cls_index_stats cs;
            cls_status s = cls_index_codec_stats(idx, (cls_codec)c, stats_sizes[k], 1, &cs);
            if (s != CLS_OK) {
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

/* stats as text: the figures, the collection, then a table of sizes. Closes idx; returns the
 * exit status. */
static int stats_text(cls_index *idx, const cls_index_stats *st, const cls_analyzer_opts *an, int depth, int all)
{
    printf("documents        %u\nterms            %u\npostings         %llu\ntokens           %llu\n"
           "avg doc length   %.2f\ncodec            %s (block size %u",
           st->num_docs, st->num_terms, (unsigned long long)st->num_postings, (unsigned long long)st->num_tokens,
           st->avg_doc_len, cls_codec_name(st->codec), st->block_size);
    if (depth) printf(", exception depth %u", st->pfor_depth);
    double per_posting = st->num_postings ? 8.0 / (double)st->num_postings : 0.0;
    printf(")\nscoring          %s\nblocks           %llu\n"
           "postings bytes   %llu (%.2f bits per posting: the blocks' docID-gap and frequency streams)\n"
           "block records    %llu bytes (%.2f bits per posting: %zu bytes a block: first and last docID, where its "
           "streams start, the codec's words, its largest score)\n"
           "file bytes       %llu (both, the dictionary, document lengths, names and stored fields)\n"
           "analyzer         possessive=%d lowercase=%d stopwords=%d stem=%d\n",
           cls_scoring_name(cls_index_scoring(idx)), (unsigned long long)st->num_blocks,
           (unsigned long long)st->postings_bytes, per_posting * (double)st->postings_bytes,
           (unsigned long long)st->meta_bytes, per_posting * (double)st->meta_bytes,
           st->num_blocks ? (size_t)(st->meta_bytes / st->num_blocks) : (size_t)0, (unsigned long long)st->file_bytes,
           an->possessive, an->lowercase, an->stopwords, an->stem);
    print_shard(idx, st->num_docs);
    print_collection(idx, st->num_docs);
    putchar('\n');
    printf("bits per posting of the docID gaps (doc), the frequencies (freq) and the block records (records); bytes:\n"
           "postings and block records together\n");
    printf("%-14s %6s %9s %9s %9s %9s %14s\n", "codec", "block", "doc", "freq", "records", "total", "bytes");
    char label[32];
    snprintf(label, sizeof label, "%s%s", cls_codec_name(st->codec), all ? " (this)" : "");
    print_sizes(label, st);
    /* --codecs: what every codec and block size would take, re-encoded from this index */
    for (int c = 0; all && c < CLS_NUM_CODECS; c++)
        for (int k = 0; k < 4; k++) {
            cls_index_stats cs;
            cls_status s = cls_index_codec_stats(idx, (cls_codec)c, stats_sizes[k], 1, &cs);
            if (s != CLS_OK) {
                cls_index_close(idx);
                return fail(s, "re-encoding");
            }
            print_sizes(cls_codec_name((cls_codec)c), &cs);
        }
    int whole = index_whole(idx, "stats");
    cls_index_close(idx);
    return whole ? 0 : 1;
}

int cmd_stats(int argc, char **argv)
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
    return json ? stats_json(idx, path, &st, &an, depth, all) : stats_text(idx, &st, &an, depth, all);
}

/* ---- check -------------------------------------------------------------------------------- */

/* check: what opening leaves to first use, for every block (cls_index_check). */
int cmd_check(int argc, char **argv)
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

/* ---- compare ------------------------------------------------------------------------------ */

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

int cmd_compare(int argc, char **argv)
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
