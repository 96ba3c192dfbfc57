/* kernel_variants DIR: writes, for tools/amdgpu-check.sh, every kernel program variant the
 * parameter database and `clsearch tune` can select on an AMD GPU, each as the exact source the
 * library hands the OpenCL compiler, with its build options; and first checks that the
 * database never selects, and clx_params_check refuses, the NVIDIA-only WG_SCAN_ALGO=2 there.
 *
 * DIR/NN-family.cl is one program's source; DIR/variants.txt has one line per variant:
 * "NN-family.cl<TAB>options". Exit 0 on success, 1 (with a message) on a failed check.
 *
 * DIR/NN-codec-decoding.cl is the program of the kernels that decode blocks themselves (OR's
 * or_parts.cl); DIR/NN-codec-check.cl the engine's check program (decode.cl's check_blocks, built
 * with -DDECODE_CHECK=1).
 *
 * Variants cover each value of each parameter at least once, not the full cross product (which
 * would be thousands of compilations): decode, every codec at every block size, the scan
 * algorithms alternating and pfor at each depth; query, each work-group size in each of the
 * three families with both scan algorithms, a third of them scoring impacts (-DSCORE_IMPACT=1),
 * plus the AMD database entry; scan, each SCAN_WG and SCAN_ITEMS; copy, each COPY_VEC; encode,
 * every codec at every block size and each WG_ENCODE. Candidate values come from the registry
 * (clx_params.c), so a new candidate is compiled without touching this file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clx_scan.h" /* bench_kernels: the benchmarks' own sources (bench/cl) */
#include "codec/codec.h"
#include "device/clx.h"
#include "algo/algo.h"

extern const clx_source cls_embedded_kernels[]; /* the library's own (cl/), tools/embed_cl.cmake */

static const char *dir;
static FILE *list;
static unsigned nvariants;

static const clx_source *find(const clx_source *table, const char *name)
{
    for (const clx_source *t = table; t && t->name; t++)
        if (strcmp(t->name, name) == 0) return t;
    return NULL;
}

/* One program: abi.h, common.cl, then the family files, each followed by a newline, as
 * load_sources() in src/device/clx_program.c assembles it (the bench table first, as
 * clx_build_ex looks there before the library's own). */
static int emit(const char *family, const char *const *files, const char *options)
{
    char name[64], path[4200];
    snprintf(name, sizeof name, "%03u-%s.cl", nvariants++, family);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "kernel_variants: cannot write %s\n", path);
        return 0;
    }
    const char *head[] = {"abi.h", "common.cl"};
    int ok = 1;
    for (size_t i = 0; ok && i < 2 + 16 && (i < 2 || files[i - 2]); i++) {
        const char *fn = i < 2 ? head[i] : files[i - 2];
        const clx_source *s = find(bench_kernels, fn);
        if (!s) s = find(cls_embedded_kernels, fn);
        if (!s) {
            fprintf(stderr, "kernel_variants: no kernel source called %s is compiled in\n", fn);
            ok = 0;
            break;
        }
        ok = fwrite(s->src, 1, s->len, f) == s->len && fputc('\n', f) != EOF;
    }
    ok = (fclose(f) == 0) && ok;
    if (ok) fprintf(list, "%s\t%s\n", name, options);
    return ok;
}

static const clx_tunable *tun(const char *name)
{
    const clx_tunable *t = clx_tunable_find(name);
    if (!t) {
        fprintf(stderr, "kernel_variants: the registry has no %s\n", name);
        exit(1);
    }
    return t;
}

/* The scan algorithms `clsearch tune` sweeps on this device: clx_scan_algos_for's list. */
static unsigned scan_algos(const cls_device_info *amd, unsigned *out)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", clx_scan_algos_for(amd));
    unsigned n = 0;
    for (char *sp = NULL, *t = strtok_r(buf, ",", &sp); t; t = strtok_r(NULL, ",", &sp)) {
        int a = clx_scan_algo_parse(t);
        if (a < 0) continue;
        out[n++] = (unsigned)a;
    }
    return n;
}

/* The database and the checks on an AMD GPU: its entry never picks the PTX scan, the checker
 * refuses it, tune never sweeps it; an NVIDIA GPU is allowed it (so the refusal is the vendor's). */
static int check_params(cls_device_info *amd, clx_params *def)
{
    static const char *const vendors[] = {"Advanced Micro Devices, Inc.", "AMD"};
    int ok = 1;
    for (size_t v = 0; v < 2; v++) {
        snprintf(amd->vendor, sizeof amd->vendor, "%s", vendors[v]);
        clx_params_default(amd, def);
        if (def->wg_scan_algo == 2 || strstr(def->source, "AMD") == NULL) {
            fprintf(stderr, "FAIL: vendor \"%s\": database entry \"%s\" selects WG_SCAN_ALGO=%u\n", vendors[v],
                    def->source, def->wg_scan_algo);
            ok = 0;
        }
        if (clx_params_check(amd, def, "AMD database entry") != CLS_OK) {
            fprintf(stderr, "FAIL: the AMD database entry is refused: %s\n", cls_last_error());
            ok = 0;
        }
        clx_params p = *def;
        p.wg_scan_algo = 2;
        if (clx_params_check(amd, &p, "test") == CLS_OK) {
            fprintf(stderr, "FAIL: clx_params_check accepts WG_SCAN_ALGO=2 on vendor \"%s\"\n", vendors[v]);
            ok = 0;
        }
        if (strstr(clx_scan_algos_for(amd), "shfl")) {
            fprintf(stderr, "FAIL: tune would sweep the PTX scan on vendor \"%s\"\n", vendors[v]);
            ok = 0;
        }
    }
    cls_device_info nv = *amd;
    snprintf(nv.vendor, sizeof nv.vendor, "NVIDIA Corporation");
    clx_params p = *def;
    p.wg_scan_algo = 2;
    if (clx_params_check(&nv, &p, "test") != CLS_OK) {
        fprintf(stderr, "FAIL: WG_SCAN_ALGO=2 refused on NVIDIA too (%s): the AMD refusal proves nothing\n",
                cls_last_error());
        ok = 0;
    }
    if (ok) printf("parameters: the AMD database entry (%s) and tune never select WG_SCAN_ALGO=2; "
                   "clx_params_check refuses it for AMD, allows it for NVIDIA\n", def->source);
    snprintf(amd->vendor, sizeof amd->vendor, "%s", vendors[0]);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 ? stdout : stderr, "usage: kernel_variants DIR\n");
        return argc == 2 ? 0 : 2;
    }
    dir = argv[1];
    cls_device_info amd;
    memset(&amd, 0, sizeof amd);
    snprintf(amd.name, sizeof amd.name, "gfx90a");
    amd.is_gpu = 1;
    amd.max_work_group = 1024; /* what ROCm reports on gfx90a and gfx1100 */
    amd.local_mem = 65536;     /* and its 64 KiB of local memory a work-group (OR_PART_LOG is held to it) */
    clx_params def;
    if (!check_params(&amd, &def)) return 1;

    char path[4200];
    snprintf(path, sizeof path, "%s/variants.txt", dir);
    if (!(list = fopen(path, "w"))) {
        fprintf(stderr, "kernel_variants: cannot write %s\n", path);
        return 1;
    }
    unsigned algos[4], nalgos = scan_algos(&amd, algos);
    char opts[512];
    int ok = 1;

    /* decode: options as dev_engine.c build_programs() writes dopts */
    static const unsigned blocks[] = {64, 128, 256, 512}; /* cls_index_options.block_size */
    unsigned k = 0;
    for (unsigned c = 0; c < CLS_NUM_CODECS; c++) {
        for (unsigned b = 0; b < 4; b++, k++) {
            unsigned depth = cdc_get((cls_codec)c)->uses_depth ? b : 1; /* 0..3 */
            const char *files[] = {cdc_kernel_file((cls_codec)c), "decode.cl", NULL};
            snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DWG_SCAN_ALGO=%u", blocks[b],
                     depth, algos[k % nalgos]);
            ok = ok && emit(cls_codec_name((cls_codec)c), files, opts);
        }
    }

    /* the check program: the decode program's files with -DDECODE_CHECK=1 (check_blocks), every
     * codec at every block size and depth, with the options build_programs() adds to dopts (the
     * correctly rounded division, an impact index's scoring) alternating */
    for (unsigned c = 0, i = 0; c < CLS_NUM_CODECS; c++) {
        for (unsigned b = 0; b < 4; b++, i++) {
            unsigned depth = cdc_get((cls_codec)c)->uses_depth ? b : 1;
            const char *files[] = {cdc_kernel_file((cls_codec)c), "decode.cl", NULL};
            snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DWG_SCAN_ALGO=%u%s%s -DDECODE_CHECK=1",
                     blocks[b], depth, algos[i % nalgos], i % 2 ? "" : " -cl-fp32-correctly-rounded-divide-sqrt",
                     i % 3 == 1 ? " -DSCORE_IMPACT=1" : "");
            char family[64];
            snprintf(family, sizeof family, "%s-check", cls_codec_name((cls_codec)c));
            ok = ok && emit(family, files, opts);
        }
    }

    /* each algorithm's decoding kernels' program (its decode_file after its codec and decode.cl:
     * OR's or_parts.cl), on the decode program's options as build_programs() writes them and the
     * algorithm's own (query_algo.decode_options): each codec once, each candidate of the tunables
     * it names (OR_PART_LOG, OR_SEARCH_COST) */
    const clx_tunable *pl = tun("OR_PART_LOG"), *sc = tun("OR_SEARCH_COST");
    size_t nalgo_d;
    const query_algo *const *qd = query_algos(&nalgo_d);
    unsigned nor = CLS_NUM_CODECS > pl->ncandidates ? CLS_NUM_CODECS : pl->ncandidates;
    for (size_t a = 0; a < nalgo_d; a++) {
        if (!qd[a]->decode_file) continue;
        for (unsigned i = 0; i < nor; i++) {
            cls_codec c = (cls_codec)(i % CLS_NUM_CODECS);
            unsigned block = blocks[i % 4];
            clx_params p = def;
            p.or_part_log = pl->candidates[i % pl->ncandidates];
            p.or_search_cost = sc->candidates[i % sc->ncandidates];
            const char *files[] = {cdc_kernel_file(c), "decode.cl", qd[a]->decode_file, NULL};
            char own[256] = "";
            if (qd[a]->decode_options) qd[a]->decode_options(NULL, &p, block, amd.max_work_group, own, sizeof own);
            snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DWG_SCAN_ALGO=%u%s%s%s", block,
                     cdc_get(c)->uses_depth ? i % 4 : 1u, algos[i % nalgos], i % 2 ? "" : " -cl-fp32-correctly-rounded-divide-sqrt",
                     i % 3 == 1 ? " -DSCORE_IMPACT=1" : "", own);
            char family[64];
            snprintf(family, sizeof family, "%s-%s", cls_codec_name(c), qd[a]->name);
            ok = ok && emit(family, files, opts);
        }
    }

    /* query: every algorithm's file, topk.cl, topk_wide.cl, cache.cl; options as build_programs() writes qopts
     * (the correctly rounded division, asked for where the device offers it, on every other one) */
    size_t nalgo;
    const query_algo *const *qa = query_algos(&nalgo);
    const char *qfiles[32];
    size_t nf = 0;
    for (size_t i = 0; i < nalgo && nf < 28; i++) qfiles[nf++] = qa[i]->kernel_file;
    qfiles[nf++] = "topk.cl";
    qfiles[nf++] = "topk_wide.cl";
    qfiles[nf++] = "cache.cl";
    qfiles[nf] = NULL;
    const clx_tunable *wi = tun("WG_INTERSECT"), *ws = tun("WG_SCORE"), *wt = tun("WG_TOPK"), *wr = tun("WG_ROWS");
    unsigned nq = wi->ncandidates;
    if (ws->ncandidates > nq) nq = ws->ncandidates;
    if (wt->ncandidates > nq) nq = wt->ncandidates;
    for (unsigned i = 0; i <= nq; i++) {
        clx_params p = def; /* i == nq: the database entry itself */
        if (i < nq) {
            p.wg_intersect = wi->candidates[i % wi->ncandidates];
            p.wg_score = ws->candidates[(i + 2) % ws->ncandidates];
            p.wg_topk = wt->candidates[(i + 4) % wt->ncandidates];
            p.wg_rows = wr->candidates[(i + 1) % wr->ncandidates];
            p.wg_scan_algo = algos[i % nalgos];
        }
        snprintf(opts, sizeof opts,
                 "-cl-std=CL1.2 -DWG_INTERSECT=%u -DWG_SCORE=%u -DWG_TOPK=%u -DWG_ROWS=%u -DWG_SCAN_ALGO=%u%s%s",
                 p.wg_intersect, p.wg_score, p.wg_topk, p.wg_rows, p.wg_scan_algo,
                 i % 2 ? "" : " -cl-fp32-correctly-rounded-divide-sqrt",
                 i % 3 == 1 ? " -DSCORE_IMPACT=1" : ""); /* an impact index's scoring (idx_score_option) */
        ok = ok && emit("query", qfiles, opts);
    }

    /* scan (bench/cl/scan.cl): options as bench/clx_scan.c writes them */
    const clx_tunable *sw = tun("SCAN_WG"), *si = tun("SCAN_ITEMS");
    unsigned ns = sw->ncandidates > si->ncandidates ? sw->ncandidates : si->ncandidates;
    static const char *const sfiles[] = {"scan.cl", NULL};
    for (unsigned i = 0; i <= ns; i++) {
        unsigned wg = i < ns ? sw->candidates[i % sw->ncandidates] : def.scan_wg;
        unsigned items = i < ns ? si->candidates[(i + 1) % si->ncandidates] : def.scan_items;
        unsigned algo = i < ns ? algos[i % nalgos] : def.wg_scan_algo;
        snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSCAN_WG=%u -DSCAN_ITEMS=%u -DWG_SCAN_ALGO=%u", wg, items, algo);
        ok = ok && emit("scan", sfiles, opts);
    }

    /* copy (bench/cl/copy.cl): options as bench/bench_copy.c writes them */
    const clx_tunable *cv = tun("COPY_VEC");
    static const char *const cfiles[] = {"copy.cl", NULL};
    for (unsigned i = 0; i < cv->ncandidates; i++) {
        snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DCOPY_VEC=%u", cv->candidates[i]);
        ok = ok && emit("copy", cfiles, opts);
    }
    /* features (cl/features.cl): options as src/rank/features_cl.c writes them */
    static const char *const ffiles[] = {"features.cl", NULL};
    for (unsigned i = 0; i < 4; i++) {
        snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_FEATURES=64%s%s", i % 2 ? "" : " -cl-fp32-correctly-rounded-divide-sqrt",
                 i / 2 ? " -DSCORE_IMPACT=1" : "");
        ok = ok && emit("features", ffiles, opts);
    }
    /* encode (cl/encode.cl): options as src/index/encode_dev.c writes them, every codec at every
     * block size (pfor at each depth), each WG_ENCODE candidate, the scan algorithms, the division
     * and an impact index's scoring alternating */
    const clx_tunable *we = tun("WG_ENCODE");
    static const char *const efiles[] = {"encode.cl", NULL};
    for (unsigned c = 0, i = 0; c < CLS_NUM_CODECS; c++) {
        for (unsigned b = 0; b < 4; b++, i++) {
            snprintf(opts, sizeof opts,
                     "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DENCODE_CODEC=%u -DWG_ENCODE=%u"
                     " -DWG_SCAN_ALGO=%u%s%s",
                     blocks[b], cdc_get((cls_codec)c)->uses_depth ? b : 1u, c, we->candidates[i % we->ncandidates],
                     algos[i % nalgos], i % 2 ? "" : " -cl-fp32-correctly-rounded-divide-sqrt",
                     i % 3 == 1 ? " -DSCORE_IMPACT=1" : "");
            char family[64];
            snprintf(family, sizeof family, "encode-%s", cls_codec_name((cls_codec)c));
            ok = ok && emit(family, efiles, opts);
        }
    }
    /* trees (cl/trees.cl): options as src/rank/rank_dev.c writes them, each WG_TREES and
     * TREES_DOCS of the registry (TREES_LAYOUT, TREES_ROWS_LOCAL and TREES_TILE choose a kernel
     * and its arguments at launch, not the program) */
    const clx_tunable *tw = tun("WG_TREES"), *td = tun("TREES_DOCS");
    static const char *const tfiles[] = {"trees.cl", NULL};
    for (unsigned i = 0; i < tw->ncandidates; i++) {
        snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_TREES=%u -DTREES_DOCS=%u", tw->candidates[i],
                 td->candidates[i % td->ncandidates]);
        ok = ok && emit("trees", tfiles, opts);
    }
    /* the second ranking stage in a device batch (src/engine/dev_rerank.c): the codec's fragment,
     * decode.cl, features.cl and rerank.cl, on the decode program's options with WG_FEATURES and
     * WG_RERANK (halved from 128 where a device's work-groups are smaller): each codec, the block
     * sizes, the division and an impact index's scoring alternating */
    for (unsigned c = 0, i = 0; c < CLS_NUM_CODECS; c++) {
        for (unsigned b = 0; b < 4; b += 2, i++) {
            const char *files[] = {cdc_kernel_file((cls_codec)c), "decode.cl", "features.cl", "rerank.cl", NULL};
            snprintf(opts, sizeof opts,
                     "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DWG_SCAN_ALGO=%u%s%s -DWG_FEATURES=64 -DWG_RERANK=%u",
                     blocks[b + i % 2], cdc_get((cls_codec)c)->uses_depth ? b : 1u, algos[i % nalgos],
                     i % 2 ? "" : " -cl-fp32-correctly-rounded-divide-sqrt", i % 3 == 1 ? " -DSCORE_IMPACT=1" : "",
                     128u >> (i % 3));
            char family[64];
            snprintf(family, sizeof family, "%s-rerank", cls_codec_name((cls_codec)c));
            ok = ok && emit(family, files, opts);
        }
    }
    ok = (fclose(list) == 0) && ok;
    if (!ok) return 1;
    printf("variants: %u programs written to %s\n", nvariants, dir);
    return 0;
}
