/* cls_engine: picks the reference engine or the OpenCL engine from a device spec and forwards
 * to it through its ops table. There is no fallback: a spec that names an OpenCL device either
 * gets it or fails. */
#include "engine/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "engine/dev_engine.h"
#include "engine/rerank.h"
#include "index/index_shard.h"
#include "util/err.h"
#include "util/tmpfile.h"

struct cls_engine {
    const cls_index *idx;
    int ref;                 /* the reference engine (no programs, no cache) */
    const executor_ops *xops[64]; /* each executor's kind (MULTI_MAX) */
    sched *sched;            /* its searches over its executors */
    char *desc;              /* cls_engine_describe's text (heap: its length follows the paths and notes) */
    size_t desc_len;
    cls_index *shards[64];   /* a sharded engine's shards, executor i's (closed after them) */
    unsigned nshards;
    cls_batch *one; /* cls_engine_search_text's batch (NULL until first used), */
    pthread_mutex_t one_mu; /* held from its analysis to the end of its search */
    rerank_stage *stage;    /* the second ranking stage, every executor's (rerank.h) */
};

static cls_status ref_search_op(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    return ref_search(impl, b, p, r);
}
static void ref_free_op(void *impl) { ref_free(impl); }

static const executor_ops REF_OPS = {.search = ref_search_op, .free = ref_free_op};

static cls_status host_search_op(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    return host_search(impl, b, p, r);
}
static void host_free_op(void *impl) { host_free(impl); }
static size_t host_counters_op(const void *impl, const cls_counter **c) { return host_counters(impl, c); }
static unsigned host_width_op(const void *impl) { return host_threads(impl); }

static cls_status host_prepare_op(void *impl, const cls_search_params *p, uint64_t nq)
{
    return host_search_prepare(impl, p, nq);
}
static cls_status host_order_op(void *impl, const cls_batch *b, const uint32_t **order)
{
    return host_search_order(impl, b, order);
}
static cls_status host_run_op(void *impl, const cls_batch *b, const uint32_t *order, uint64_t n, cls_results *r)
{
    return host_search_run(impl, b, order, n, r);
}
static void host_finish_op(void *impl) { host_search_finish(impl); }
static uint32_t host_k_op(const void *impl) { return host_search_k(impl); }

static const executor_ops HOST_OPS = {.search = host_search_op,
                                      .prepare = host_prepare_op,
                                      .order = host_order_op,
                                      .run = host_run_op,
                                      .finish = host_finish_op,
                                      .k = host_k_op,
                                      .free = host_free_op,
                                      .counters = host_counters_op,
                                      .width = host_width_op};

/* "host" (every online core) or "host:N" (N threads): 1 and *threads, else 0 (not the host). */
static int host_spec(const char *device, unsigned *threads, cls_status *s)
{
    *s = CLS_OK;
    if (strncmp(device, "host", 4) != 0 || (device[4] && device[4] != ':')) return 0;
    *threads = host_threads_default();
    if (device[4] == ':') {
        char *end;
        unsigned long v = strtoul(device + 5, &end, 10);
        if (!device[5] || *end || device[5] == '-' || device[5] == '+' || v < 1 || v > 1024)
            *s = err_set(CLS_E_ARG, "device '%s': host:N takes 1 to 1024 threads", device);
        *threads = (unsigned)v;
    }
    return 1;
}

static cls_status clx_search_op(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    return clx_search(impl, b, p, r);
}
static cls_status clx_prepare_op(void *impl, const cls_search_params *p, uint64_t nq)
{
    return clx_search_prepare(impl, p, nq);
}
static cls_status clx_order_op(void *impl, const cls_batch *b, const uint32_t **order)
{
    return clx_search_order(impl, b, order);
}
static cls_status clx_run_op(void *impl, const cls_batch *b, const uint32_t *order, uint64_t n, cls_results *r)
{
    return clx_search_run(impl, b, order, n, r);
}
static void clx_finish_op(void *impl) { clx_search_finish(impl); }
static uint32_t clx_k_op(const void *impl) { return clx_search_k(impl); }
static void clx_free_op(void *impl) { clx_free(impl); }
static void clx_build_times_op(const void *impl, double *seconds, int *from_cache)
{
    clx_build_times(impl, seconds, from_cache);
}
static size_t clx_profile_op(const void *impl, const cls_profile_step **steps, uint32_t *batches)
{
    return clx_profile(impl, steps, batches);
}

static size_t clx_counters_op(const void *impl, const cls_counter **counters) { return clx_counters(impl, counters); }

static const executor_ops CLX_OPS = {.search = clx_search_op,
                                     .prepare = clx_prepare_op,
                                     .order = clx_order_op,
                                     .run = clx_run_op,
                                     .finish = clx_finish_op,
                                     .k = clx_k_op,
                                     .free = clx_free_op,
                                     .build_times = clx_build_times_op,
                                     .profile = clx_profile_op,
                                     .counters = clx_counters_op};

/* The executors a device spec names: a list "A,B,..." (each auto, gpu, cpu or P:D; one may come
 * twice: two executors on it), or "gpu" on a host of several GPUs, every one of them (P:D each);
 * else the spec itself, one. specs point into buf or at device; *n at most MULTI_MAX. */
#define MULTI_MAX 64u
static cls_status device_specs(const char *device, char *buf, size_t len, const char **specs, unsigned *n)
{
    unsigned hosts = 0;
    *n = 0;
    if (strchr(device, ',')) {
        if (strlen(device) >= len) return err_set(CLS_E_ARG, "device list '%.60s...' is too long", device);
        strcpy(buf, device);
        for (char *p = buf, *next; p; p = next) {
            next = strchr(p, ',');
            if (next) *next++ = '\0';
            unsigned threads;
            cls_status hs;
            int host = host_spec(p, &threads, &hs);
            if (!*p || strcmp(p, "ref") == 0 || strcmp(p, "all") == 0 || *n == MULTI_MAX || (host && hosts++))
                return err_set(CLS_E_ARG, "device list '%s': %s", device,
                               *n == MULTI_MAX          ? "more than 64 devices"
                               : strcmp(p, "ref") == 0  ? "the reference engine is not a device of a list"
                               : strcmp(p, "all") == 0  ? "'all' stands alone"
                               : host                   ? "the host executor comes once (it takes every core given)"
                                                        : "an empty item");
            if (host && hs != CLS_OK) return hs;
            specs[(*n)++] = p;
        }
        return CLS_OK;
    }
    specs[(*n)++] = device;
    int all = strcmp(device, "all") == 0;
    if (strcmp(device, "gpu") != 0 && !all) return CLS_OK;
    cls_device_info *list = NULL;
    size_t nd = 0, ngpu = 0, at = 0;
    cls_status s = cls_devices_list(&list, &nd);
    if (s != CLS_OK) return s;
    for (size_t i = 0; i < nd; i++) ngpu += list[i].is_gpu != 0;
    if (ngpu > 1 || all) {
        *n = 0;
        if (all) { /* the host executor on the cores the devices' threads leave, one a GPU */
            unsigned cores = host_threads_default();
            specs[(*n)++] = buf;
            at += (size_t)snprintf(buf, len, "host:%u", cores > ngpu ? cores - (unsigned)ngpu : 1) + 1;
        }
        for (size_t i = 0; i < nd && *n < MULTI_MAX && at + 24 < len; i++) {
            if (!list[i].is_gpu) continue;
            specs[(*n)++] = buf + at;
            at += (size_t)snprintf(buf + at, len - at, "%u:%u", list[i].platform, list[i].device) + 1;
        }
    }
    cls_devices_free(list);
    return CLS_OK;
}

/* The description's buffer, room for every executor's device line and the first's whole text
 * (paths of the tuning file and program cache included: never cut short). */
static cls_status desc_alloc(cls_engine *e, unsigned executors)
{
    e->desc_len = EXEC_DESC_LEN + 2048 + (size_t)executors * 1024;
    e->desc = calloc(1, e->desc_len);
    return e->desc ? CLS_OK : err_set(CLS_E_NOMEM, "cls_engine_create: out of memory for the description");
}

/* One executor's creation, on a thread of its own when every device of a list takes launches
 * from several threads (each uploads and checks its copy of the index). */
typedef struct exec_make {
    const cls_index *idx;
    const char *spec;
    const struct clx_params *prm;
    const cls_engine_opts *o;
    clx_engine *x;   /* an OpenCL device's executor, */
    host_engine *h;  /* or the host's */
    cls_status s;
    int on_thread; /* made on a thread of its own, to be joined */
    int nice;      /* the host executor's helpers' niceness (beside devices) */
    char desc[EXEC_DESC_LEN];
    char err[1024];
} exec_make;

/* The niceness of the host executor's helper threads beside devices (host_create says why). */
#define HOST_NICE 5

/* The host executor's description: its line, then its algorithms. */
static void host_describe(const host_engine *h, char *buf, size_t len)
{
    int err, nice = host_nice(h, &err);
    char pri[160] = "";
    if (nice && !err) snprintf(pri, sizeof pri, "; its helper threads at nice +%d, the devices' threads first", nice);
    else if (nice) snprintf(pri, sizeof pri, "; its helper threads not made nicer (+%d): %s", nice, strerror(err));
    snprintf(buf, len,
             "device: host executor, %u threads of %u online cores (plain C over the index's blocks, a query a "
             "thread; exact to the reference engine%s)\n"
             "kernels: and=block-max AND (the shortest list drives, blocks skipped by their last docID and by "
             "max_score), or=MaxScore (non-essential terms looked up only while a document may still enter the k "
             "best; regions whose blocks cannot, skipped), and-or=and's k, then or over the documents without every "
             "term; bounds from the blocks' max_score where a search's k1 and b are the index's, else every "
             "candidate scored",
             host_threads(h), host_threads_default(), pri);
}

static void *exec_make_run(void *arg)
{
    exec_make *m = arg;
    unsigned threads;
    if (host_spec(m->spec, &threads, &m->s)) {
        if (m->s == CLS_OK) m->s = host_create(m->idx, threads, m->nice, &m->h);
        if (m->s == CLS_OK) host_describe(m->h, m->desc, sizeof m->desc);
    } else {
        m->s = clx_create(m->idx, m->spec, m->prm, m->o, &m->x, m->desc, sizeof m->desc);
    }
    if (m->s != CLS_OK) snprintf(m->err, sizeof m->err, "%s", cls_last_error());
    return NULL;
}

/* The executors of a device list, each a clx_engine with its own context, queue, pinned buffers
 * and copy of the index (replicated placement; a context shared by several GPUs runs each
 * slower). The first is made here; where its device takes launches from several threads the
 * others are made at once, a thread each, else one after another. desc: a line per executor's
 * device, then the first's kernels, lists and programs. On failure impls holds those made (the
 * caller frees them) and *made their number. *serial: some device takes no launches from several
 * threads (clx_threaded_launches). */
static cls_status executors_create(const cls_index *const *idx, const char *const *specs, unsigned n,
                                   const struct clx_params *prm, const cls_engine_opts *o, void **impls,
                                   const executor_ops **ops, int *serial, unsigned *made, const char *placed,
                                   char *desc, size_t desc_len)
{
    *made = 0;
    int any_serial = 0;
    exec_make *m = calloc(n, sizeof *m);
    pthread_t *th = calloc(n, sizeof *th);
    if (!m || !th) {
        free(m);
        free(th);
        return err_set(CLS_E_NOMEM, "out of memory for %u executors", n);
    }
    /* the host executor beside devices: its helper threads nicer than theirs (host_create) */
    int devices = 0, host = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned t;
        cls_status hs;
        if (host_spec(specs[i], &t, &hs)) host = 1;
        else devices = 1;
    }
    for (unsigned i = 0; i < n; i++)
        m[i] = (exec_make){.idx = idx[i], .spec = specs[i], .prm = prm, .o = o, .nice = host && devices ? HOST_NICE : 0};
    exec_make_run(&m[0]);
    int threaded = m[0].s == CLS_OK && (m[0].h || clx_threaded_launches(&m[0].x->dc.dev.info));
    for (unsigned i = 1; i < n && threaded; i++) {
        clx_device d;
        unsigned t;
        cls_status hs;
        threaded = host_spec(specs[i], &t, &hs) || (clx_select(specs[i], &d) == CLS_OK && clx_threaded_launches(&d.info));
    }
    for (unsigned i = 1; i < n && m[0].s == CLS_OK; i++) {
        m[i].on_thread = threaded && pthread_create(&th[i], NULL, exec_make_run, &m[i]) == 0;
        if (!m[i].on_thread) exec_make_run(&m[i]);
    }
    for (unsigned i = 1; i < n; i++)
        if (m[i].on_thread) pthread_join(th[i], NULL);
    cls_status s = CLS_OK;
    for (unsigned i = 0; i < n; i++) {
        if (m[i].x || m[i].h) {
            /* a device that takes no launches from several threads runs its executors one at a time */
            serial[*made] = m[i].x && !clx_threaded_launches(&m[i].x->dc.dev.info);
            any_serial |= serial[*made];
            ops[*made] = m[i].x ? &CLX_OPS : &HOST_OPS;
            impls[(*made)++] = m[i].x ? (void *)m[i].x : (void *)m[i].h;
        }
        if (s == CLS_OK && m[i].s != CLS_OK && (i == 0 || m[0].s == CLS_OK)) {
            s = err_set(m[i].s, "%s", m[i].err);
            if (n > 1) s = err_wrap(s, "executor %u of %u ('%s'): ", i, n, specs[i]);
        }
    }
    if (s == CLS_OK && n == 1) snprintf(desc, desc_len, "%s", m[0].desc);
    if (s == CLS_OK && n > 1) {
        size_t at = (size_t)snprintf(desc, desc_len, "devices: %u executors, %s\n", n, placed);
        const char *rest = "";
        for (unsigned i = 0; i < n; i++) {
            /* each executor's device line; the kernels, lists and programs once, the first's */
            char *nl = strchr(m[i].desc, '\n');
            if (nl) *nl = '\0';
            if (i == 0 && nl) rest = nl + 1;
            if (at < desc_len) at += (size_t)snprintf(desc + at, desc_len - at, "[%u] %s\n", i, m[i].desc);
        }
        if (any_serial && at < desc_len)
            at += (size_t)snprintf(desc + at, desc_len - at, "a device's executors run one at a time (it takes no "
                                   "launches from several threads: clx_threaded_launches)\n");
        if (at < desc_len) snprintf(desc + at, desc_len - at, "%s", rest);
    }
    free(m);
    free(th);
    return s;
}

void cls_search_defaults(cls_search_params *p)
{
    p->k = 1000;
    p->mode = CLS_MODE_OR;
    p->k1 = 0.9f;
    p->b = 0.4f;
    p->deadline_ms = 0;
    p->rerank = NULL;
    p->rerank_depth = 0;
}

cls_status params_check(const cls_search_params *p)
{
    if (!p) return err_set(CLS_E_ARG, "search parameters are NULL");
    if (p->k < 1 || p->k > CLS_MAX_K)
        return err_set(CLS_E_ARG, "k must be between 1 and %u, not %u", CLS_MAX_K, p->k);
    if (!query_algo_for((int)p->mode)) return err_set(CLS_E_ARG, "unknown query mode %d", (int)p->mode);
    if (!(p->k1 >= 0 && p->k1 <= 100)) return err_set(CLS_E_ARG, "BM25 k1 must be in [0, 100]");
    if (!(p->b >= 0 && p->b <= 1)) return err_set(CLS_E_ARG, "BM25 b must be in [0, 1]");
    if (!(p->deadline_ms >= 0 && p->deadline_ms <= 1e9))
        return err_set(CLS_E_ARG, "deadline_ms must be in [0, 1e9] (0: none)");
    return CLS_OK;
}

cls_status cls_engine_create(const cls_index *idx, const char *device, cls_engine **out)
{
    return engine_create_with(idx, device, NULL, out);
}

void cls_engine_opts_init(cls_engine_opts *o)
{
    if (o) *o = (cls_engine_opts){0};
}

cls_status cls_engine_create_opts(const cls_index *idx, const cls_engine_opts *o, cls_engine **out)
{
    return engine_create_full(idx, o, NULL, out);
}

cls_status engine_create_with(const cls_index *idx, const char *device, const struct clx_params *prm, cls_engine **out)
{
    cls_engine_opts o = {.device = device};
    return engine_create_full(idx, &o, prm, out);
}

/* A byte count: digits, then optionally K, M, G or T (powers of 1024). */
static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-') return 0;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    case 'T': case 't': shift = 40; end++; break;
    default: break;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift))) return 0;
    *out = (uint64_t)v << shift;
    return 1;
}

cls_status cls_parse_bytes(const char *text, uint64_t *bytes)
{
    if (!text || !bytes || !parse_bytes(text, bytes))
        return err_set(CLS_E_ARG, "'%s' is not a byte count (digits, then optionally K, M, G or T)", text ? text : "(null)");
    return CLS_OK;
}

cls_status cls_placement_parse(const char *name, cls_placement *out)
{
    static const char *const names[] = {"auto", "replicate", "shard"};
    for (int i = 0; i < 3 && name && out; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (cls_placement)i;
            return CLS_OK;
        }
    return err_set(CLS_E_ARG, "placement '%s': auto, replicate or shard", name ? name : "(null)");
}

/* Whether a device list holds the index sharded (cls_placement), and why, for the description.
 * The fit is dev_engine.c's place_index's: the lists, block records and norms within half of the
 * device memory the engine may take. */
static cls_status choose_placement(const cls_index *idx, const char *const *specs, unsigned n,
                                   const cls_engine_opts *o, int *shard, char *why, size_t len)
{
    *shard = 0;
    if (n < 2) {
        snprintf(why, len, "the index on the one device");
        if (o->placement == CLS_PLACEMENT_SHARD) snprintf(why, len, "the index whole: one device is one shard");
        return CLS_OK;
    }
    int host = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned t;
        cls_status hs;
        host |= host_spec(specs[i], &t, &hs);
    }
    if (host) {
        /* the host reads the index where it lies; the devices hold it whole, in their list cache
         * where it does not fit */
        if (o->placement == CLS_PLACEMENT_SHARD)
            return err_set(CLS_E_ARG, "a device list with the host executor holds the index replicated, never sharded");
        snprintf(why, len, "the index replicated on each (the host executor's list: never sharded); a search runs "
                           "whole on one, or split over those free in the shares their cost models say end together");
        return CLS_OK;
    }
    if (o->placement == CLS_PLACEMENT_REPLICATE) {
        snprintf(why, len, "the index replicated on each (asked); a search runs whole on one, or split over those "
                           "free in the shares their cost models say end together");
        return CLS_OK;
    }
    uint64_t need = idx->num_words * 4 + idx->num_blocks * (uint64_t)sizeof(idx_block) + ((uint64_t)idx->num_docs + 1) * 4;
    uint64_t least = UINT64_MAX;
    for (unsigned i = 0; i < n && o->placement == CLS_PLACEMENT_AUTO; i++) {
        clx_device d;
        cls_status s = clx_select(specs[i], &d);
        if (s != CLS_OK) return err_wrap(s, "executor %u of %u ('%s'): ", i, n, specs[i]);
        uint64_t mem = o->device_mem && o->device_mem < d.info.global_mem ? o->device_mem : d.info.global_mem;
        if (mem < least) least = mem;
    }
    *shard = o->placement == CLS_PLACEMENT_SHARD || need > least / 2;
    if (*shard)
        snprintf(why, len, "the index sharded by documents (%s); every search runs on each, their top k merged",
                 o->placement == CLS_PLACEMENT_SHARD ? "asked"
                                                     : "it does not fit every device: more than half of the least one's memory");
    else
        snprintf(why, len, "the index replicated on each (it fits every device); a search runs whole on one, or "
                           "split over those free in the shares their cost models say end together");
    return CLS_OK;
}

/* One shard's file, written on a thread of its own (shards_create). */
typedef struct shard_make {
    const cls_index *idx;
    uint32_t i, n, lo, hi;
    char *tmp;       /* the shard's file, listed for removal on a signal (util/tmpfile.h) */
    char path[4096];
    cls_status s;
    char err[1024];
} shard_make;

static void *shard_make_run(void *arg)
{
    shard_make *m = arg;
    m->s = cls_index_shard_write(m->idx, m->i, m->n, m->lo, m->hi, m->path);
    if (m->s != CLS_OK) snprintf(m->err, sizeof m->err, "%s", cls_last_error());
    return NULL;
}

/* The shards of a sharded engine: idx's documents cut into *n ranges balanced by their lengths
 * (idx_shard_balance over the tokens, which needs no pass over the postings, unlike
 * cls_index_shard_bounds), each written at once on a thread of its own next to
 * $CLSEARCH_SHARD_DIR, $TMPDIR or /tmp (listed for removal should a signal stop the process
 * meanwhile), opened and unlinked (the mapping stays). An empty range
 * gets no shard and its device no executor: *n and specs shrink to the shards made; base[i] is
 * shard i's first document. */
static cls_status shards_create(cls_engine *e, const cls_index *idx, const char **specs, unsigned *n, uint32_t *base,
                                char *why, size_t len)
{
    uint32_t bounds[MULTI_MAX + 1];
    idx_shard_balance(idx->doclen, idx->num_docs, *n, bounds);
    const char *dir = getenv("CLSEARCH_SHARD_DIR");
    if (!dir || !*dir) dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    shard_make *mk = calloc(*n, sizeof *mk);
    pthread_t *th = calloc(*n, sizeof *th);
    int *on = calloc(*n, sizeof *on);
    cls_status s = mk && th && on ? CLS_OK : err_set(CLS_E_NOMEM, "out of memory for %u shards", *n);
    for (unsigned i = 0; i < *n && s == CLS_OK; i++) {
        mk[i] = (shard_make){.idx = idx, .i = i, .n = *n, .lo = bounds[i], .hi = bounds[i + 1]};
        if (bounds[i] == bounds[i + 1]) continue;
        char base_name[4096];
        if ((size_t)snprintf(base_name, sizeof base_name, "%s/clsearch-shard", dir) >= sizeof mk[i].path - 16) {
            s = err_set(CLS_E_ARG, "the shard folder '%.100s...' is too long", dir);
            break;
        }
        int fd = tmp_create(base_name, &mk[i].tmp);
        if (fd < 0) {
            s = err_set(CLS_E_IO, "making a shard file in %s: %s", dir, strerror(errno));
            break;
        }
        close(fd);
        snprintf(mk[i].path, sizeof mk[i].path, "%s", mk[i].tmp);
        on[i] = pthread_create(&th[i], NULL, shard_make_run, &mk[i]) == 0;
        if (!on[i]) shard_make_run(&mk[i]);
    }
    unsigned m = 0;
    for (unsigned i = 0; mk && i < *n; i++) {
        if (on && on[i]) pthread_join(th[i], NULL);
        if (!mk[i].path[0]) continue;
        cls_status si = CLS_OK;
        if (s == CLS_OK) {
            si = mk[i].s != CLS_OK ? err_set(mk[i].s, "%s", mk[i].err) : cls_index_open(mk[i].path, &e->shards[m]);
            if (si != CLS_OK) s = err_wrap(si, "shard %u of %u (documents %u to %u): ", i, *n, bounds[i], bounds[i + 1]);
        }
        tmp_discard(mk[i].tmp); /* open (or failed): the file goes, the mapping stays */
        if (s != CLS_OK) continue; /* the others' files still go */
        base[m] = bounds[i];
        specs[m] = specs[i];
        e->nshards = ++m;
    }
    free(mk);
    free(th);
    free(on);
    if (s != CLS_OK) return s;
    size_t at = strlen(why);
    for (unsigned i = 0; i < m && at < len; i++)
        at += (size_t)snprintf(why + at, len - at, "%s[%u] documents from %u", i ? ", " : "; ", i, base[i]);
    if (m < *n && at < len) snprintf(why + at, len - at, " (%u empty ranges left out)", *n - m);
    *n = m;
    return CLS_OK;
}

cls_status engine_create_full(const cls_index *idx, const cls_engine_opts *o, const struct clx_params *prm,
                              cls_engine **out)
{
    if (!idx || !out) return err_set(CLS_E_ARG, "cls_engine_create: NULL argument");
    *out = NULL;
    cls_engine_opts opts;
    cls_engine_opts_init(&opts);
    if (o) opts = *o;
    const char *device = opts.device;
    const char *env = getenv("CLSEARCH_DEVICE_MEM");
    if (!opts.device_mem && env && *env && !parse_bytes(env, &opts.device_mem))
        return err_set(CLS_E_ARG, "CLSEARCH_DEVICE_MEM='%s' is not a byte count (digits, then optionally K, M, G or T)",
                       env);
    const char *bms = getenv("CLSEARCH_BATCH_MS");
    if (opts.batch_ms == 0 && bms && *bms) {
        char *end;
        opts.batch_ms = strtod(bms, &end);
        if (end == bms || *end || !(opts.batch_ms > 0))
            return err_set(CLS_E_ARG, "CLSEARCH_BATCH_MS='%s' is not a positive number of milliseconds", bms);
    }
    if (!(opts.batch_ms >= 0 && opts.batch_ms <= 60000))
        return err_set(CLS_E_ARG, "a batch's target time must be from 0 to 60000 ms, not %g", opts.batch_ms);
    const char *why = "requested";
    if (!device || !*device) {
        device = getenv("CLSEARCH_DEVICE");
        why = "from CLSEARCH_DEVICE";
        if (!device || !*device) device = "auto", why = "default";
    }
    cls_engine *e = calloc(1, sizeof *e);
    if (!e) return err_set(CLS_E_NOMEM, "cls_engine_create: out of memory");
    if (pthread_mutex_init(&e->one_mu, NULL) != 0) {
        free(e);
        return err_set(CLS_E_NOMEM, "cls_engine_create: no mutex for the engine");
    }
    e->idx = idx;
    cls_status s;
    void *impls[MULTI_MAX] = {0};
    uint32_t shard_base[MULTI_MAX];
    const uint32_t *base = NULL;
    unsigned n = 0;
    int serial[MULTI_MAX] = {0};
    char names[MULTI_MAX][64] = {{0}};
    if (opts.placement != CLS_PLACEMENT_AUTO && opts.placement != CLS_PLACEMENT_REPLICATE &&
        opts.placement != CLS_PLACEMENT_SHARD)
        s = err_set(CLS_E_ARG, "unknown placement %d", (int)opts.placement);
    else if (strcmp(device, "ref") == 0) {
        ref_engine *re = NULL;
        s = ref_create(idx, &re);
        e->ref = 1;
        e->xops[n] = &REF_OPS;
        snprintf(names[n], sizeof names[n], "ref");
        impls[n++] = re;
        if (s == CLS_OK) s = desc_alloc(e, 0);
        if (s == CLS_OK)
            snprintf(e->desc, e->desc_len, "device: reference engine (plain C, one query at a time; %s)", why);
    } else {
        char buf[1024], placed[1024], *d = NULL;
        const char *specs[MULTI_MAX];
        const cls_index *idxs[MULTI_MAX];
        opts.device = device;
        s = device_specs(device, buf, sizeof buf, specs, &n);
        int shard = 0;
        if (s == CLS_OK) s = choose_placement(idx, specs, n, &opts, &shard, placed, sizeof placed);
        unsigned asked = n;
        if (s == CLS_OK && shard) s = shards_create(e, idx, specs, &n, shard_base, placed, sizeof placed);
        if (s == CLS_OK && shard && n == 0) {
            /* no document to cut: the devices hold the (empty) index whole */
            shard = 0;
            n = asked;
            snprintf(placed, sizeof placed, "the index replicated on each (it holds no document to shard)");
        }
        for (unsigned i = 0; i < n; i++) {
            idxs[i] = shard ? e->shards[i] : idx;
            snprintf(names[i], sizeof names[i], "%s", specs[i]);
        }
        unsigned made = 0;
        if (s == CLS_OK) s = desc_alloc(e, n);
        if (s == CLS_OK && !(d = malloc(e->desc_len))) s = err_set(CLS_E_NOMEM, "cls_engine_create: out of memory");
        if (s == CLS_OK)
            s = executors_create(idxs, specs, n, prm, &opts, impls, e->xops, serial, &made, placed, d, e->desc_len);
        if (s != CLS_OK) n = made;
        if (shard) base = shard_base;
        if (s == CLS_OK) snprintf(e->desc, e->desc_len, "%s [device spec '%s' %s]", d, device, why);
        free(d);
    }
    if (s == CLS_OK) s = sched_create(idx, e->xops, impls, serial, n, base, &e->sched);
    for (unsigned i = 0; s == CLS_OK && i < n; i++) sched_set_name(e->sched, i, names[i]);
    if (s == CLS_OK && (s = rerank_create(idx, &e->stage)) != CLS_OK) {
        sched_free(e->sched); /* it owns the executors now */
        n = 0;
    }
    if (s == CLS_OK) sched_set_stage(e->sched, e->stage);
    if (s != CLS_OK) {
        for (unsigned i = 0; i < n; i++)
            if (impls[i]) e->xops[i]->free(impls[i]);
        for (unsigned i = 0; i < e->nshards; i++) cls_index_close(e->shards[i]);
        pthread_mutex_destroy(&e->one_mu);
        free(e->desc);
        free(e);
        return s;
    }
    *out = e;
    return CLS_OK;
}

void cls_engine_free(cls_engine *e)
{
    if (!e) return;
    sched_free(e->sched);
    rerank_free(e->stage);
    for (unsigned i = 0; i < e->nshards; i++) cls_index_close(e->shards[i]);
    cls_batch_free(e->one);
    pthread_mutex_destroy(&e->one_mu);
    free(e->desc);
    free(e);
}

const char *cls_engine_describe(const cls_engine *e) { return e->desc; }

size_t cls_engine_profile(const cls_engine *e, const cls_profile_step **steps, uint32_t *batches)
{
    return sched_profile(e->sched, steps, batches);
}

size_t cls_engine_counters(const cls_engine *e, const cls_counter **counters)
{
    return sched_counters(e->sched, counters);
}

void cls_engine_build_times(const cls_engine *e, double *seconds, int *from_cache)
{
    sched_build_times(e->sched, seconds, from_cache);
    if (e->ref) *from_cache = 0;
}

static cls_status search_check(const cls_engine *e, const cls_batch *b, const cls_search_params *p, const void *r,
                               const char *fn)
{
    if (!e || !b || !r || !p) return err_set(CLS_E_ARG, "%s: NULL argument", fn);
    if (b->idx != e->idx) return err_set(CLS_E_ARG, "the batch was analysed against another index");
    cls_status s = params_check(p);
    uint32_t first_k = p->rerank ? rerank_depth(p) : p->k; /* what the first stage keeps */
    if (s == CLS_OK && e->nshards && p->mode == CLS_MODE_AND_OR && first_k > CLS_MAX_K / 2)
        return err_set(CLS_E_ARG, "and-or on a sharded engine takes %s up to %u, not %u",
                       p->rerank ? "a rerank depth" : "k", CLS_MAX_K / 2, first_k);
    if (s == CLS_OK) s = rerank_check(e->stage, p);
    return s;
}

cls_status cls_engine_search(cls_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    cls_status s = search_check(e, b, p, r, "cls_engine_search");
    cls_search *j = NULL;
    if (s == CLS_OK) s = sched_submit(e->sched, b, p, r, 0, &j);
    if (s != CLS_OK) return s;
    s = sched_wait(j);
    sched_release(j);
    return s;
}

cls_status cls_engine_submit(cls_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r,
                             cls_search **out)
{
    if (!out) return err_set(CLS_E_ARG, "cls_engine_submit: NULL argument");
    *out = NULL;
    cls_status s = search_check(e, b, p, r, "cls_engine_submit");
    return s == CLS_OK ? sched_submit(e->sched, b, p, r, 1, out) : s;
}

int cls_search_done(const cls_search *j) { return j ? sched_done(j) : 1; }

cls_status cls_search_wait(cls_search *j)
{
    if (!j) return err_set(CLS_E_ARG, "cls_search_wait: NULL argument");
    return sched_wait(j);
}

void cls_search_free(cls_search *j) { sched_release(j); }

size_t cls_search_counters(const cls_search *j, const cls_counter **counters)
{
    return sched_job_counters(j, counters);
}

size_t cls_search_profile(const cls_search *j, const cls_profile_step **steps, uint32_t *batches)
{
    return sched_job_profile(j, steps, batches);
}

size_t cls_engine_executors(cls_engine *e, cls_executor_info *out, size_t max)
{
    unsigned n = sched_executors(e->sched);
    for (unsigned i = 0; i < n && i < max; i++) {
        cls_executor_info *x = &out[i];
        memset(x, 0, sizeof *x);
        sched_executor_state(e->sched, i, x);
    }
    return n;
}

size_t cls_engine_idle(cls_engine *e) { return e ? sched_idle(e->sched) : 0; }

cls_status cls_engine_search_text(cls_engine *e, const char *text, const cls_search_params *p, cls_results *r)
{
    if (!e || !text || !r) return err_set(CLS_E_ARG, "cls_engine_search_text: NULL argument");
    cls_search_params d;
    if (!p) {
        cls_search_defaults(&d);
        p = &d;
    }
    cls_status s = params_check(p);
    if (s != CLS_OK) return s;
    pthread_mutex_lock(&e->one_mu);
    if (!e->one) s = cls_batch_create(e->idx, &e->one);
    if (s == CLS_OK) {
        cls_batch_clear(e->one);
        s = cls_batch_add(e->one, "1", text);
    }
    if (s == CLS_OK) s = cls_engine_search(e, e->one, p, r);
    pthread_mutex_unlock(&e->one_mu);
    return s;
}

clx_engine *engine_clx(cls_engine *e)
{
    for (unsigned i = 0; i < engine_executors(e); i++)
        if (engine_executor(e, i)) return engine_executor(e, i);
    return NULL;
}

unsigned engine_executors(const cls_engine *e) { return sched_executors(e->sched); }

clx_engine *engine_executor(cls_engine *e, unsigned i)
{
    return i < engine_executors(e) && e->xops[i] == &CLX_OPS ? sched_executor(e->sched, i) : NULL;
}

sched *engine_sched(cls_engine *e) { return e->sched; }
