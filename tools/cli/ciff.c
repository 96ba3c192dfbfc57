/* CIFF, the Common Index File Format (Anserini, PISA, Lucene): ciff-import writes an index from
 * a CIFF file, ciff-export a CIFF file from an index. */
#define _DEFAULT_SOURCE /* getopt_long */
#include "cli.h"

int cmd_ciff_import(int argc, char **argv)
{
    static const char *use = "ciff-import: usage: clsearch ciff-import FILE.ciff -o INDEX [--codec C] [--block N] "
                             "[--pfor-depth D] [--impact] [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive] [-v]%s";
    static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"codec", required_argument, 0, 1},
                                       {"block", required_argument, 0, 2}, {"pfor-depth", required_argument, 0, 3},
                                       CLI_ANALYZER_OPTIONS,
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
        if (analyzer_option(opt, &an)) continue;
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

int cmd_ciff_export(int argc, char **argv)
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
