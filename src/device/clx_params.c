/* Kernel parameters: the registry of tunables, the built-in database with per-vendor and
 * generic fallbacks (as CLBlast keeps one), the measured tuning file that `clsearch tune`
 * writes, and the CLSEARCH_PARAMS override for trying one variant by hand.
 *
 * Where the values in force come from, in order (each later step overrides the earlier):
 *   1. the built-in database: first entry whose vendor and device type match, down to the
 *      generic defaults, so any OpenCL device gets working parameters;
 *   2. the tuning file (clx_tuning_path: $CLSEARCH_TUNING, else tuning.json in the cache
 *      folder; CLSEARCH_TUNING=none ignores it), when it holds an entry for exactly this
 *      device name and driver version;
 *   3. CLSEARCH_PARAMS="NAME=VALUE,..." from the environment.
 * Every value is then checked against the registry and the device (a work-group size the
 * device cannot run, or the NVIDIA-only scan on another vendor's compiler, is an error that
 * names its source, never a silent substitute). `clsearch devices -v` and `-v` on search show
 * the values and the source. */
#include <cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/abi.h"
#include "device/clx.h"
#include "index/index.h"
#include "util/err.h"
#include "util/vec.h"

/* ---- The registry ----------------------------------------------------------------------- */

#define PARAM_FIELD(f) offsetof(clx_params, f)
/* local memory or_score takes besides its accumulators, at most (cl/or_parts.cl: or_score's
 * __local arrays): the candidate scan (a block's size, up to IDX_MAX_BLOCK words), the radix
 * select's histogram, ABI_OR_TT terms' 9-word records, and its few shared words with room to
 * spare (96) */
#define OR_LOCAL_EXTRA ((IDX_MAX_BLOCK + ABI_KTH_BINS + 9u * ABI_OR_TT + 96u) * 4u)
/* or_score's accumulators (4 bytes a document) and their bitmap (a bit a document) */
#define OR_LOCAL(log) (((uint64_t)4 << (log)) + ((uint64_t)1 << (log)) / 8)

static const clx_tunable registry[] = {
    {"WG_INTERSECT", "intersect", "work-items per query in intersect_and", PARAM_FIELD(wg_intersect), 1,
     {32, 64, 128, 256, 512, 1024}, 6},
    {"WG_SCORE", "score", "work-items per query in score_and and score_or", PARAM_FIELD(wg_score), 1,
     {32, 64, 128, 256, 512, 1024}, 6},
    {"WG_TOPK", "topk", "work-items per group in topk_select (segments: AND's work units, OR's pools), topk_team "
     "and topk_wide", PARAM_FIELD(wg_topk), 1, {32, 64, 128, 256, 512, 1024}, 6},
    {"WG_ROWS", "topk", "work-items per dense row in topk_rows", PARAM_FIELD(wg_rows), 1,
     {32, 64, 128, 256, 512, 1024}, 6},
    {"WG_SCAN_ALGO", "decode intersect topk scan",
     "in-group prefix sum: 0 Hillis-Steele, 1 work-efficient, 2 NVIDIA warp shuffles (inline PTX)",
     PARAM_FIELD(wg_scan_algo), 0, {0, 1, 2}, 3},
    {"SCAN_WG", "scan", "work-items per group of the device-wide scan", PARAM_FIELD(scan_wg), 1,
     {64, 128, 256, 512, 1024}, 5},
    {"SCAN_ITEMS", "scan", "elements per work-item of the device-wide scan", PARAM_FIELD(scan_items), 0,
     {2, 4, 8, 16}, 4},
    {"COPY_VEC", "copy", "vector width (uints per load and store) of the copy kernels", PARAM_FIELD(copy_vec), 0,
     {1, 2, 4, 8, 16}, 5},
    {"OR_PART_LOG", "or", "log2 of the documents per OR partition (local-memory accumulators of 4 bytes and a bitmap bit each)",
     PARAM_FIELD(or_part_log), 0, {10, 11, 12, 13}, 4},
    {"OR_DENSE_LOG", "or",
     "OR ranks a collection of at most 2^N documents with one dense row a query, a larger one by partitions "
     "(0: partitions always; 32: the dense row always)",
     PARAM_FIELD(or_dense_log), 0, {12, 14, 16, 18, 20}, 5},
    {"OR_HASH_RATIO", "or",
     "OR by partitions accumulates a query whose lists hold at most N postings together per partition of the "
     "collection in a hash table of its own instead (0: never)",
     PARAM_FIELD(or_hash_ratio), 0, {0, 4, 8, 16, 32, 64}, 6},
    {"OR_SEARCH_COST", "or",
     "or_score gives a partition's candidates their exact sums by binary search in a term's postings where "
     "candidates x log2(postings) x N stay below its postings, else by reading them in order (0: always search)",
     PARAM_FIELD(or_search_cost), 0, {1, 4, 16}, 3},
    {"HOST_WAIT", "host",
     "how a host thread waits for a batch's results: 0 the driver's wait (clWaitForEvents; NVIDIA's spins a core "
     "while the device works), 1 asleep until a completion callback",
     PARAM_FIELD(host_wait), 0, {0, 1}, 2},
    {"WG_TREES", "trees", "work-items per group of the tree-ensemble kernels (cl/trees.cl)", PARAM_FIELD(wg_trees), 1,
     {32, 64, 128, 256, 512}, 5},
    {"TREES_LAYOUT", "trees",
     "tree ensembles: 0 a node walk of any tree, 1 complete level-order arrays (trees of depth 12 at most; deeper "
     "ones walk nodes)", PARAM_FIELD(trees_layout), 0, {0, 1}, 2},
    {"TREES_DOCS", "trees", "documents per work-item of the level-order tree kernels", PARAM_FIELD(trees_docs), 0,
     {1, 2, 4}, 3},
    {"TREES_ROWS_LOCAL", "trees",
     "1: the level-order tree kernels copy a work-group's feature rows into local memory first (where they fit)",
     PARAM_FIELD(trees_rows_local), 0, {0, 1}, 2},
    {"TREES_TILE", "trees",
     "trees staged in local memory at a time beside the rows by the level-order kernel (0: trees read from global "
     "memory; fewer where they do not fit)", PARAM_FIELD(trees_tile), 0, {0, 4, 8, 16}, 4},
    {"WG_ENCODE", "encode", "work-items per block (and per list) in the index writer's encoders (cl/encode.cl)",
     PARAM_FIELD(wg_encode), 1, {32, 64, 128, 256}, 4},
};

const clx_tunable *clx_tunables(size_t *n)
{
    *n = sizeof registry / sizeof registry[0];
    return registry;
}

const clx_tunable *clx_tunable_find(const char *name)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i].name, name) == 0) return &registry[i];
    return NULL;
}

unsigned *clx_param_slot(clx_params *p, const clx_tunable *t) { return (unsigned *)((char *)p + t->offset); }

int clx_is_nvidia(const cls_device_info *info) { return strstr(info->vendor, "NVIDIA") != NULL; }

int clx_is_pocl(const cls_device_info *info) { return strstr(info->platform_name, "Portable Computing Language") != NULL; }

const char *clx_compiler_defines(const cls_device_info *info) { return clx_is_pocl(info) ? " -DCLS_POCL=1" : ""; }

/* POCL 3.1's process-wide cache of compiled kernels fails an assertion (pocl_release_dlhandle_cache,
 * "found->ref_count > 0") when engines of one process launch kernels from several threads at once. */
int clx_threaded_launches(const cls_device_info *info) { return !clx_is_pocl(info); }

cls_status clx_params_check(const cls_device_info *info, const clx_params *p, const char *from)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++) {
        const clx_tunable *t = &registry[i];
        unsigned v = *clx_param_slot((clx_params *)p, t);
        if (t->pow2_wg) {
            if (v < 1 || (v & (v - 1)) || v > info->max_work_group)
                return err_set(CLS_E_ARG, "%s: %s=%u is not a power of two the device runs (max work-group %zu)",
                               from, t->name, v, info->max_work_group);
        } else if (strcmp(t->name, "SCAN_ITEMS") == 0 && (v < 1 || v > 64)) {
            return err_set(CLS_E_ARG, "%s: SCAN_ITEMS=%u (1..64)", from, v);
        }
    }
    if (p->copy_vec != 1 && p->copy_vec != 2 && p->copy_vec != 4 && p->copy_vec != 8 && p->copy_vec != 16)
        return err_set(CLS_E_ARG, "%s: COPY_VEC=%u (1, 2, 4, 8 or 16)", from, p->copy_vec);
    /* or_score's local memory: the partition's accumulators and, at most, the radix select's
     * histogram, the candidate scan and the term records; 15 at most, as or_decode keeps a
     * document's place within its partition in 16 bits, 0xFFFF meaning none (ABI_OR_NO_SLOT) */
    if (p->or_part_log < 5 || p->or_part_log > 15 || OR_LOCAL(p->or_part_log) + OR_LOCAL_EXTRA > info->local_mem)
        return err_set(CLS_E_ARG, "%s: OR_PART_LOG=%u: 5..15, with 2^%u accumulators and their bitmap (%llu bytes) and %u bytes more "
                       "within the device's %llu bytes of local memory", from, p->or_part_log, p->or_part_log,
                       (unsigned long long)OR_LOCAL(p->or_part_log > 15 ? 15 : p->or_part_log), OR_LOCAL_EXTRA,
                       (unsigned long long)info->local_mem);
    if (p->or_dense_log > 32) return err_set(CLS_E_ARG, "%s: OR_DENSE_LOG=%u (0..32)", from, p->or_dense_log);
    if (p->or_hash_ratio > 4096) return err_set(CLS_E_ARG, "%s: OR_HASH_RATIO=%u (0..4096)", from, p->or_hash_ratio);
    if (p->or_search_cost > 65536) return err_set(CLS_E_ARG, "%s: OR_SEARCH_COST=%u (0..65536)", from, p->or_search_cost);
    if (p->host_wait > 1) return err_set(CLS_E_ARG, "%s: HOST_WAIT=%u (0 or 1)", from, p->host_wait);
    if (p->wg_scan_algo > 2) return err_set(CLS_E_ARG, "%s: WG_SCAN_ALGO=%u (0, 1 or 2)", from, p->wg_scan_algo);
    if (p->trees_layout > 1) return err_set(CLS_E_ARG, "%s: TREES_LAYOUT=%u (0 or 1)", from, p->trees_layout);
    if (p->trees_docs != 1 && p->trees_docs != 2 && p->trees_docs != 4)
        return err_set(CLS_E_ARG, "%s: TREES_DOCS=%u (1, 2 or 4)", from, p->trees_docs);
    if (p->trees_rows_local > 1) return err_set(CLS_E_ARG, "%s: TREES_ROWS_LOCAL=%u (0 or 1)", from, p->trees_rows_local);
    if (p->trees_tile > 1024) return err_set(CLS_E_ARG, "%s: TREES_TILE=%u (0..1024)", from, p->trees_tile);
    if (p->wg_scan_algo == 2) {
        if (!clx_is_nvidia(info))
            return err_set(CLS_E_ARG, "%s: WG_SCAN_ALGO=2 (warp shuffles in inline PTX) needs an NVIDIA device, "
                           "not %s", from, info->name);
        if (p->wg_intersect < 32 || p->wg_topk < 32 || p->wg_rows < 32 || p->scan_wg < 32 || p->wg_encode < 32)
            return err_set(CLS_E_ARG, "%s: WG_SCAN_ALGO=2 needs work-groups of at least one 32-wide warp", from);
    }
    return CLS_OK;
}

/* ---- 1. The built-in database ------------------------------------------------------------ */

typedef struct entry {
    const char *vendor; /* substring of CL_DEVICE_VENDOR, NULL = any */
    int gpu;            /* 1 GPU, 0 CPU/other, -1 any */
    clx_params p;       /* source unused */
    const char *label;
} entry;

static const entry db[] = {
    /* NVIDIA: WG_INTERSECT 1024 and the warp-shuffle scan, from gov2-scale AND
     * (docs/PERFORMANCE.md, "Conjunctive queries at scale: fused matching, block-max pruning,
     * device-planned units"): select_blocks and match_and run on WG_INTERSECT, and 1024 items
     * walk a long list's blocks in a quarter of the steps of 256, which the whole AND path's
     * throughput shows. */
    /* WG_TOPK 512 and WG_ROWS 256: dense rows and segments want different widths. topk_rows
     * ranks dense rows faster with 256 work-items than with 512, while AND at k 1000, whose work
     * units topk_select ranks, takes less kernel time with WG_TOPK 512 than with 256
     * (docs/PERFORMANCE.md, "Ranked OR by docID-range partitions, decoding in the partitions",
     * and "Figures moved from code comments"). */
    /* OR_HASH_RATIO 32 from OR on gov2 and the 1M collection (src/algo/or.c: the rule;
     * docs/PERFORMANCE.md, "Ranked OR: hashing or partitions, chosen per query"); the other
     * entries take it without a sweep of their own. */
    /* OR_SEARCH_COST 4: the choice hardly matters on gov2 at k 10, so 4, the middle of the values
     * tried, stays (docs/PERFORMANCE.md, "Ranked OR: essential terms within a partition, tickets
     * for listed queries"). */
    /* Tree ensembles (cl/trees.cl): level-order trees, a work-group's rows and tiles of 8 trees in
     * local memory, 64 work-items of one document each, the fastest of the variants measured on
     * the H100 (docs/PERFORMANCE.md, "Tree ensembles on the H100"): the walks are chains of
     * dependent loads, so the most work-groups a multiprocessor's local memory holds wins over
     * larger tiles or several documents a work-item. The other GPU entries take it unmeasured. */
    /* WG_ENCODE 64 everywhere: a start, not a measurement; `clsearch bench encode --wg` sweeps it
     * on an index's real lists, and its figures decide each entry. */
    {.vendor = "NVIDIA",
     .gpu = 1,
     .p = {.wg_intersect = 1024, .wg_score = 256, .wg_topk = 512, .wg_scan_algo = 2, .scan_wg = 256, .scan_items = 8,
           .copy_vec = 4, .or_part_log = 12, .or_dense_log = 16, .wg_rows = 256, .or_hash_ratio = 32,
           .or_search_cost = 4, .host_wait = 0,
           .wg_trees = 64, .trees_layout = 1, .trees_docs = 1, .trees_rows_local = 1, .trees_tile = 8, .wg_encode = 64},
     .label = "vendor default: NVIDIA GPU"},
    {.vendor = "Advanced Micro Devices",
     .gpu = 1,
     .p = {.wg_intersect = 256, .wg_score = 256, .wg_topk = 256, .wg_scan_algo = 0, .scan_wg = 256, .scan_items = 8,
           .copy_vec = 4, .or_part_log = 12, .or_dense_log = 16, .wg_rows = 256, .or_hash_ratio = 32,
           .or_search_cost = 4, .host_wait = 0,
           .wg_trees = 64, .trees_layout = 1, .trees_docs = 1, .trees_rows_local = 1, .trees_tile = 8, .wg_encode = 64},
     .label = "vendor default: AMD GPU"},
    {.vendor = "AMD",
     .gpu = 1,
     .p = {.wg_intersect = 256, .wg_score = 256, .wg_topk = 256, .wg_scan_algo = 0, .scan_wg = 256, .scan_items = 8,
           .copy_vec = 4, .or_part_log = 12, .or_dense_log = 16, .wg_rows = 256, .or_hash_ratio = 32,
           .or_search_cost = 4, .host_wait = 0,
           .wg_trees = 64, .trees_layout = 1, .trees_docs = 1, .trees_rows_local = 1, .trees_tile = 8, .wg_encode = 64},
     .label = "vendor default: AMD GPU"},
    {.vendor = NULL,
     .gpu = 1,
     .p = {.wg_intersect = 256, .wg_score = 256, .wg_topk = 256, .wg_scan_algo = 0, .scan_wg = 256, .scan_items = 8,
           .copy_vec = 4, .or_part_log = 12, .or_dense_log = 16, .wg_rows = 256, .or_hash_ratio = 32,
           .or_search_cost = 4, .host_wait = 0,
           .wg_trees = 64, .trees_layout = 1, .trees_docs = 1, .trees_rows_local = 1, .trees_tile = 8, .wg_encode = 64},
     .label = "generic default: GPU"},
    /* CPU devices run a work-group on one core: smaller groups, fewer barrier-bound steps. */
    {.vendor = NULL,
     .gpu = 0,
     .p = {.wg_intersect = 64, .wg_score = 64, .wg_topk = 64, .wg_scan_algo = 0, .scan_wg = 64, .scan_items = 16,
           .copy_vec = 4, .or_part_log = 12, .or_dense_log = 16, .wg_rows = 64, .or_hash_ratio = 32,
           .or_search_cost = 4, .host_wait = 0,
           .wg_trees = 64, .trees_layout = 1, .trees_docs = 1, .trees_rows_local = 0, .trees_tile = 0, .wg_encode = 64},
     .label = "generic default: CPU"},
    {.vendor = NULL,
     .gpu = -1,
     .p = {.wg_intersect = 128, .wg_score = 128, .wg_topk = 128, .wg_scan_algo = 0, .scan_wg = 128, .scan_items = 8,
           .copy_vec = 4, .or_part_log = 12, .or_dense_log = 16, .wg_rows = 128, .or_hash_ratio = 32,
           .or_search_cost = 4, .host_wait = 0,
           .wg_trees = 64, .trees_layout = 1, .trees_docs = 1, .trees_rows_local = 0, .trees_tile = 0, .wg_encode = 64},
     .label = "generic default"},
};

static unsigned cap(unsigned v, size_t max)
{
    while (v > 1 && v > max) v >>= 1;
    return v;
}

void clx_params_default(const cls_device_info *info, clx_params *p)
{
    for (size_t i = 0; i < sizeof db / sizeof db[0]; i++) {
        const entry *e = &db[i];
        if (e->vendor && !strstr(info->vendor, e->vendor)) continue;
        if (e->gpu != -1 && e->gpu != info->is_gpu) continue;
        *p = e->p;
        /* Defaults bend to small devices; only measured or hand-set values are held to the letter. */
        for (size_t j = 0; j < sizeof registry / sizeof registry[0]; j++)
            if (registry[j].pow2_wg) *clx_param_slot(p, &registry[j]) = cap(*clx_param_slot(p, &registry[j]), info->max_work_group);
        while (p->or_part_log > 5 && OR_LOCAL(p->or_part_log) + OR_LOCAL_EXTRA > info->local_mem) p->or_part_log--;
        snprintf(p->source, sizeof p->source, "%s", e->label);
        return;
    }
}

/* ---- 2. The tuning file ------------------------------------------------------------------- */

int clx_tuning_path(char *buf, size_t len)
{
    const char *env = getenv("CLSEARCH_TUNING");
    if (env && strcmp(env, "none") == 0) return 0; /* tuning files ignored (clsearch tune's sweeps) */
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return 1;
    }
    char dir[4096];
    if (!clx_cache_dir(dir, sizeof dir)) return 0;
    snprintf(buf, len, "%s/tuning.json", dir);
    return 1;
}

cls_status clx_tuning_load(const char *path, cJSON **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return CLS_OK; /* no file: nothing tuned yet */
        return err_set(CLS_E_IO, "tuning file %s: %s", path, strerror(errno));
    }
    char *buf = NULL;
    size_t n = 0, cap_ = 0;
    for (;;) {
        if (n + 4096 + 1 > (16u << 20)) { /* the buffer would pass 16 MiB */
            free(buf);
            fclose(f);
            return err_set(CLS_E_FORMAT, "tuning file %s: larger than 16 MiB, not a tuning file", path);
        }
        if (!vec_reserve(&buf, &cap_, n + 4096 + 1, 1)) {
            free(buf);
            fclose(f);
            return err_set(CLS_E_NOMEM, "out of memory");
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return err_set(CLS_E_IO, "tuning file %s: read error", path);
    }
    buf[n] = '\0';
    cJSON *j = cJSON_ParseWithLength(buf, n);
    free(buf);
    if (!j || !cJSON_IsObject(j) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "devices"))) {
        cJSON_Delete(j);
        return err_set(CLS_E_FORMAT, "tuning file %s: not a clsearch tuning file (JSON object with a \"devices\" "
                       "array expected; delete it or run clsearch tune again)", path);
    }
    *out = j;
    return CLS_OK;
}

cJSON *clx_tuning_find(const cJSON *root, const cls_device_info *info)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "devices"))
    {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "device");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "driver");
        if (cJSON_IsString(d) && cJSON_IsString(v) && strcmp(d->valuestring, info->name) == 0 &&
            strcmp(v->valuestring, info->driver_version) == 0)
            return (cJSON *)e;
    }
    return NULL;
}

/* Applies the entry's "params" object; every name must be a registered tunable. */
static cls_status from_entry(const cJSON *e, const char *path, clx_params *p)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(e, "params"), *it;
    if (!cJSON_IsObject(params)) return err_set(CLS_E_FORMAT, "tuning file %s: entry without \"params\"", path);
    cJSON_ArrayForEach(it, params)
    {
        const clx_tunable *t = clx_tunable_find(it->string);
        if (!t) return err_set(CLS_E_FORMAT, "tuning file %s: unknown parameter \"%s\"", path, it->string);
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 65536 ||
            it->valuedouble != (double)(unsigned)it->valuedouble)
            return err_set(CLS_E_FORMAT, "tuning file %s: %s is not a whole number", path, it->string);
        *clx_param_slot(p, t) = (unsigned)it->valuedouble;
    }
    const cJSON *when = cJSON_GetObjectItemCaseSensitive(e, "tuned");
    snprintf(p->source, sizeof p->source, "tuning file %.380s (tuned %.40s)", path,
             cJSON_IsString(when) ? when->valuestring : "?");
    return CLS_OK;
}

/* ---- 3. The override ----------------------------------------------------------------------- */

cls_status clx_params_parse(const char *spec, clx_params *p, const char *from)
{
    char buf[512];
    if (strlen(spec) >= sizeof buf) return err_set(CLS_E_ARG, "%s: too long", from);
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *sp = NULL, *tok = strtok_r(buf, ", ", &sp); tok; tok = strtok_r(NULL, ", ", &sp)) {
        char *eq = strchr(tok, '=');
        if (!eq) return err_set(CLS_E_ARG, "%s: '%s' is not NAME=VALUE", from, tok);
        *eq = '\0';
        const clx_tunable *t = clx_tunable_find(tok);
        if (!t) return err_set(CLS_E_ARG, "%s: unknown parameter '%s' (clsearch tune --list names them)", from, tok);
        char *end;
        errno = 0;
        unsigned long v = strtoul(eq + 1, &end, 10);
        if (errno || end == eq + 1 || *end || v > 65536) return err_set(CLS_E_ARG, "%s: %s='%s'", from, tok, eq + 1);
        *clx_param_slot(p, t) = (unsigned)v;
    }
    return CLS_OK;
}

cls_status clx_params_for(const cls_device_info *info, clx_params *p)
{
    clx_params_default(info, p);
    char path[4200];
    if (clx_tuning_path(path, sizeof path)) {
        cJSON *root;
        cls_status s = clx_tuning_load(path, &root);
        if (s != CLS_OK) return s;
        const cJSON *e = root ? clx_tuning_find(root, info) : NULL;
        if (e) s = from_entry(e, path, p);
        cJSON_Delete(root);
        if (s != CLS_OK) return s;
        if (e && (s = clx_params_check(info, p, path)) != CLS_OK) return s;
    }
    const char *env = getenv("CLSEARCH_PARAMS");
    if (env && *env) {
        cls_status s = clx_params_parse(env, p, "CLSEARCH_PARAMS");
        if (s != CLS_OK) return s;
        size_t used = strlen(p->source);
        snprintf(p->source + used, sizeof p->source - used, ", overridden by CLSEARCH_PARAMS=%s", env);
    }
    return clx_params_check(info, p, p->source);
}

void clx_params_str(const clx_params *p, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof registry / sizeof registry[0] && n < len; i++) {
        int w = snprintf(buf + n, len - n, "%s%s=%u", i ? " " : "", registry[i].name,
                         *clx_param_slot((clx_params *)p, &registry[i]));
        if (w < 0) break;
        n += (size_t)w;
    }
}

void clx_query_options(const clx_params *p, char *buf, size_t len)
{
    snprintf(buf, len, " -DWG_INTERSECT=%u -DWG_SCORE=%u -DWG_TOPK=%u -DWG_ROWS=%u -DWG_SCAN_ALGO=%u", p->wg_intersect,
             p->wg_score, p->wg_topk, p->wg_rows, p->wg_scan_algo);
}

void cls_device_params(const cls_device_info *d, char *buf, size_t len)
{
    clx_params p;
    if (clx_params_for(d, &p) != CLS_OK) {
        snprintf(buf, len, "error: %s", cls_last_error());
        return;
    }
    char s[512];
    clx_params_str(&p, s, sizeof s);
    snprintf(buf, len, "%s\n        from %s", s, p.source);
}

const char *clx_scan_algo_name(unsigned algo)
{
    static const char *const names[] = {"Hillis-Steele", "work-efficient", "warp-shuffle"};
    return algo < 3 ? names[algo] : "?";
}

int clx_scan_algo_parse(const char *s)
{
    static const char *const abbr[] = {"hs", "we", "shfl"};
    for (int a = 0; a < 3; a++)
        if (strcmp(s, abbr[a]) == 0) return a;
    return -1;
}

const char *clx_scan_algos_for(const cls_device_info *info) { return clx_is_nvidia(info) ? "hs,we,shfl" : "hs,we"; }
