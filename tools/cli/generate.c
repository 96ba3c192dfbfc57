/* The generate command: a synthetic collection, as text (corpus.jsonl and topics.tsv) or straight
 * into an index with its topics, at a named scale (gen/generate.h). */
#define _DEFAULT_SOURCE /* getopt_long */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "generate.h"

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

/* What `generate` was asked; set_* say which of the scale's figures an option replaces. */
typedef struct gen_args {
    const char *out, *index, *topics, *scale;
    int quiet, verbose, index_only;
    unsigned long long docs, queries, vocab, seed, doc_len;
    int set_docs, set_queries, set_vocab, set_seed, set_doc_len;
    cls_build_opts bo;
} gen_args;

/* generate's options into a; 0, or the exit status of a refusal. */
static int gen_options(int argc, char **argv, gen_args *a)
{
    unsigned long long v;
    int opt;
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
        case 'o': a->out = optarg; break;
        case 'q': a->quiet = 1; break;
        case 'v': a->verbose = 1; break;
        case 1:
            if (!parse_u64(optarg, 1, 4000000000ull, &a->docs)) return usage_error("generate: --docs takes a positive number, not '%s'", optarg);
            a->set_docs = 1;
            break;
        case 2:
            if (!parse_u64(optarg, 0, 100000000ull, &a->queries)) return usage_error("generate: --queries takes a number, not '%s'", optarg);
            a->set_queries = 1;
            break;
        case 3:
            if (!parse_u64(optarg, 100, 100000000ull, &a->vocab)) return usage_error("generate: --vocab takes a number >= 100, not '%s'", optarg);
            a->set_vocab = 1;
            break;
        case 4:
            if (!parse_u64(optarg, 0, ~0ull, &a->seed)) return usage_error("generate: --seed takes a number, not '%s'", optarg);
            a->set_seed = 1;
            break;
        case 5:
            if (!parse_u64(optarg, 1, 1000000, &a->doc_len)) return usage_error("generate: --doc-len takes a positive number, not '%s'", optarg);
            a->set_doc_len = 1;
            break;
        case 6: a->index = optarg; break;
        case 7: a->topics = optarg; break;
        case 8: a->scale = optarg; break;
        case 9:
            if (!parse_u64(optarg, 1, 1024, &v)) return usage_error("generate: --threads takes a number from 1 to 1024, not '%s'", optarg);
            a->bo.threads = (unsigned)v;
            a->index_only = 1;
            break;
        case 10:
            if (cls_codec_parse(optarg, &a->bo.codec) != CLS_OK) return usage_error("generate: %s", cls_last_error());
            a->index_only = 1;
            break;
        case 11:
            if (!parse_u64(optarg, 1, 1u << 20, &v)) return usage_error("generate: --block takes 64, 128, 256 or 512, not '%s'", optarg);
            a->bo.block_size = (uint32_t)v;
            a->index_only = 1;
            break;
        case 12:
            if (!parse_u64(optarg, 0, 1000, &v)) return usage_error("generate: --pfor-depth takes 0 to 3, not '%s'", optarg);
            a->bo.pfor_depth = (unsigned)v;
            a->index_only = 1;
            break;
        default: return bad_option(argc, argv, opt);
        }
    }
    return 0;
}

/* generate's arguments into a and the generator's options into o; 0, or the exit status of a
 * refusal. */
static int gen_parse(int argc, char **argv, gen_args *a, gen_opts *o)
{
    memset(a, 0, sizeof *a);
    a->scale = "small";
    cls_build_defaults(&a->bo);
    int rc = gen_options(argc, argv, a);
    if (rc != 0) return rc;
    if (optind != argc) return usage_error("generate: unexpected argument '%s'", argv[optind]);
    if (a->out && a->index) return usage_error("generate: give -o DIR (text) or --index FILE, not both%s", "");
    if (!a->out && !a->index) return usage_error("generate: -o DIR (a text collection) or --index FILE is required%s", "");
    if (!a->index && (a->topics || a->index_only))
        return usage_error("generate: --topics, --threads, --codec, --block and --pfor-depth go with --index "
                           "(-o DIR writes DIR/topics.tsv)%s", "");
    if (gen_scale(a->scale, o) != CLS_OK) return usage_error("generate: unknown --scale '%s' (small, medium, gov2)", a->scale);
    if (a->set_docs) o->num_docs = (uint32_t)a->docs;
    if (a->set_queries) o->num_queries = (uint32_t)a->queries;
    if (a->set_vocab) o->vocab_size = (uint32_t)a->vocab;
    if (a->set_seed) o->seed = a->seed;
    if (a->set_doc_len) o->mean_doc_len = (double)a->doc_len;
    return 0;
}

/* -o DIR: DIR/corpus.jsonl and DIR/topics.tsv, as any output, where DIR exists (else it is
 * made). */
static int generate_text(const gen_args *a, const gen_opts *o)
{
    struct stat dst;
    if (stat(a->out, &dst) == 0 && S_ISDIR(dst.st_mode)) {
        char corpus[4200], tsv[4200];
        snprintf(corpus, sizeof corpus, "%s/corpus.jsonl", a->out);
        snprintf(tsv, sizeof tsv, "%s/topics.tsv", a->out);
        if (guard_output("generate", corpus, OF_JSONL, NULL, 0) || guard_output("generate", tsv, OF_TOPICS, NULL, 0))
            return 1;
    }
    cls_status s = gen_corpus(o, a->out);
    if (s != CLS_OK) return fail(s, "generating the collection");
    return 0;
}

/* --index FILE [--topics FILE]: the collection straight into an index, with a progress line on
 * a terminal and the totals after. */
static int generate_index(const gen_args *a, const gen_opts *o)
{
    if (guard_output("generate", a->index, OF_INDEX, NULL, 0) ||
        (a->topics && guard_output("generate", a->topics, OF_TOPICS, (char *[]){(char *)a->index}, 1)))
        return 1;
    gen_progress p = {!a->quiet && isatty(2), 0, now()};
    gen_index_info info;
    cls_status s = gen_index_ex(o, &a->bo, a->index, a->topics, on_gen_progress, &p, &info);
    if (p.drawn) fputc('\n', stderr);
    if (s != CLS_OK) return fail(s, "generating the index");
    double el = now() - p.t0;
    if (a->quiet) return 0;
    struct stat st;
    unsigned long long bytes = stat(a->index, &st) == 0 ? (unsigned long long)st.st_size : 0ull;
    fprintf(stderr, "generated %s: %u documents, %u terms, %llu tokens, %llu postings (%.1f a document) into %s "
            "(%s, block %u, %.2f GB) in %.1f s on %u thread%s: %.1f M postings/s\n",
            a->scale, info.num_docs, info.num_terms, (unsigned long long)info.num_tokens,
            (unsigned long long)info.num_postings, info.num_docs ? (double)info.num_postings / info.num_docs : 0.0,
            a->index, cls_codec_name(a->bo.codec), a->bo.block_size, (double)bytes / 1e9, el, info.threads,
            info.threads == 1 ? "" : "s", el > 0 ? (double)info.num_postings / el / 1e6 : 0.0);
    if (a->topics) fprintf(stderr, "topics: %u queries in %s\n", o->num_queries, a->topics);
    if (a->verbose)
        fprintf(stderr, "set-up %.2f s, counting %.2f s, filling %.2f s, encoding %.2f s, writing %.2f s, "
                "topics %.2f s\n", info.seconds_setup, info.seconds_count, info.seconds_fill,
                info.seconds_encode, info.seconds_write, info.seconds_topics);
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    gen_args a;
    gen_opts o;
    int rc = gen_parse(argc, argv, &a, &o);
    if (rc != 0) return rc;
    return a.out ? generate_text(&a, &o) : generate_index(&a, &o);
}
