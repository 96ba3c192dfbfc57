/* cls_engine: picks the reference engine or the OpenCL engine from a device spec and forwards
 * to it through its ops table. There is no fallback: a spec that names an OpenCL device either
 * gets it or fails. */
#include "engine/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "util/err.h"

struct cls_engine {
    const cls_index *idx;
    const engine_ops *ops;
    void *impl;
    char desc[2048];
    cls_batch *one; /* cls_engine_search_text's batch (NULL until first used) */
    /* One search at a time, so that threads may share an engine (clsearch.h): both engines keep
     * per-search state (the reference engine's accumulators; the device's queue, batch buffers,
     * list cache, cost model and profile) and one device queue gains nothing from being fed by
     * two threads at once. Held across the whole search, search_text's batch included. */
    pthread_mutex_t mu;
};

static cls_status ref_search_op(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    return ref_search(impl, b, p, r);
}
static void ref_free_op(void *impl) { ref_free(impl); }

static const engine_ops REF_OPS = {.search = ref_search_op, .free = ref_free_op};

static cls_status clx_search_op(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    return clx_search(impl, b, p, r);
}
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

static const engine_ops CLX_OPS = {.search = clx_search_op,
                                   .free = clx_free_op,
                                   .build_times = clx_build_times_op,
                                   .profile = clx_profile_op,
                                   .counters = clx_counters_op};

static cls_status multi_search_op(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    return multi_search(impl, b, p, r);
}
static void multi_free_op(void *impl) { multi_free(impl); }
static void multi_build_times_op(const void *impl, double *seconds, int *from_cache)
{
    multi_build_times(impl, seconds, from_cache);
}
static size_t multi_profile_op(const void *impl, const cls_profile_step **steps, uint32_t *batches)
{
    return multi_profile(impl, steps, batches);
}
static size_t multi_counters_op(const void *impl, const cls_counter **counters) { return multi_counters(impl, counters); }

static const engine_ops MULTI_OPS = {.search = multi_search_op,
                                     .free = multi_free_op,
                                     .build_times = multi_build_times_op,
                                     .profile = multi_profile_op,
                                     .counters = multi_counters_op};

/* The executors a device spec names: a list "A,B,..." (each auto, gpu, cpu or P:D; one may come
 * twice: two executors on it), or "gpu" on a host of several GPUs, every one of them (P:D each);
 * else the spec itself, one. specs point into buf or at device; *n at most MULTI_MAX. */
#define MULTI_MAX 64u
static cls_status device_specs(const char *device, char *buf, size_t len, const char **specs, unsigned *n)
{
    *n = 0;
    if (strchr(device, ',')) {
        if (strlen(device) >= len) return err_set(CLS_E_ARG, "device list '%.60s...' is too long", device);
        strcpy(buf, device);
        for (char *p = buf, *next; p; p = next) {
            next = strchr(p, ',');
            if (next) *next++ = '\0';
            if (!*p || strcmp(p, "ref") == 0 || *n == MULTI_MAX)
                return err_set(CLS_E_ARG, "device list '%s': %s", device,
                               *n == MULTI_MAX ? "more than 64 devices"
                               : *p        ? "the reference engine is not a device of a list"
                                           : "an empty item");
            specs[(*n)++] = p;
        }
        return CLS_OK;
    }
    specs[(*n)++] = device;
    if (strcmp(device, "gpu") != 0) return CLS_OK;
    cls_device_info *list = NULL;
    size_t nd = 0, ngpu = 0, at = 0;
    cls_status s = cls_devices_list(&list, &nd);
    if (s != CLS_OK) return s;
    for (size_t i = 0; i < nd; i++) ngpu += list[i].is_gpu != 0;
    if (ngpu > 1) {
        *n = 0;
        for (size_t i = 0; i < nd && *n < MULTI_MAX && at + 24 < len; i++) {
            if (!list[i].is_gpu) continue;
            specs[(*n)++] = buf + at;
            at += (size_t)snprintf(buf + at, len - at, "%u:%u", list[i].platform, list[i].device) + 1;
        }
    }
    cls_devices_free(list);
    return CLS_OK;
}


void cls_search_defaults(cls_search_params *p)
{
    p->k = 1000;
    p->mode = CLS_MODE_OR;
    p->k1 = 0.9f;
    p->b = 0.4f;
}

cls_status params_check(const cls_search_params *p)
{
    if (!p) return err_set(CLS_E_ARG, "search parameters are NULL");
    if (p->k < 1 || p->k > CLS_MAX_K)
        return err_set(CLS_E_ARG, "k must be between 1 and %u, not %u", CLS_MAX_K, p->k);
    if (!query_algo_for((int)p->mode)) return err_set(CLS_E_ARG, "unknown query mode %d", (int)p->mode);
    if (!(p->k1 >= 0 && p->k1 <= 100)) return err_set(CLS_E_ARG, "BM25 k1 must be in [0, 100]");
    if (!(p->b >= 0 && p->b <= 1)) return err_set(CLS_E_ARG, "BM25 b must be in [0, 1]");
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
    if (pthread_mutex_init(&e->mu, NULL) != 0) {
        free(e);
        return err_set(CLS_E_NOMEM, "cls_engine_create: no mutex for the engine");
    }
    e->idx = idx;
    cls_status s;
    if (strcmp(device, "ref") == 0) {
        ref_engine *re = NULL;
        s = ref_create(idx, &re);
        e->ops = &REF_OPS;
        e->impl = re;
        snprintf(e->desc, sizeof e->desc, "device: reference engine (plain C, one query at a time; %s)", why);
    } else {
        char buf[1024], d[sizeof e->desc - 96];
        const char *specs[MULTI_MAX];
        unsigned n = 0;
        opts.device = device;
        s = device_specs(device, buf, sizeof buf, specs, &n);
        if (s == CLS_OK && n == 1) {
            clx_engine *ce = NULL;
            s = clx_create(idx, specs[0], prm, &opts, &ce, d, sizeof d);
            e->ops = &CLX_OPS;
            e->impl = ce;
        } else if (s == CLS_OK) {
            multi_engine *me = NULL;
            s = multi_create(idx, specs, n, prm, &opts, &me, d, sizeof d);
            e->ops = &MULTI_OPS;
            e->impl = me;
        }
        if (s == CLS_OK) snprintf(e->desc, sizeof e->desc, "%s [device spec '%s' %s]", d, device, why);
    }
    if (s != CLS_OK) {
        pthread_mutex_destroy(&e->mu);
        free(e);
        return s;
    }
    *out = e;
    return CLS_OK;
}

void cls_engine_free(cls_engine *e)
{
    if (!e) return;
    e->ops->free(e->impl);
    cls_batch_free(e->one);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

const char *cls_engine_describe(const cls_engine *e) { return e->desc; }

size_t cls_engine_profile(const cls_engine *e, const cls_profile_step **steps, uint32_t *batches)
{
    *steps = NULL;
    if (batches) *batches = 0;
    return e->ops->profile ? e->ops->profile(e->impl, steps, batches) : 0;
}

size_t cls_engine_counters(const cls_engine *e, const cls_counter **counters)
{
    *counters = NULL;
    return e->ops->counters ? e->ops->counters(e->impl, counters) : 0;
}

void cls_engine_build_times(const cls_engine *e, double *seconds, int *from_cache)
{
    *seconds = 0;
    *from_cache = 0;
    if (e->ops->build_times) e->ops->build_times(e->impl, seconds, from_cache);
}

cls_status cls_engine_search(cls_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    if (!e || !b || !r) return err_set(CLS_E_ARG, "cls_engine_search: NULL argument");
    if (b->idx != e->idx) return err_set(CLS_E_ARG, "the batch was analysed against another index");
    cls_status s = params_check(p);
    if (s != CLS_OK) return s;
    pthread_mutex_lock(&e->mu);
    s = e->ops->search(e->impl, b, p, r);
    pthread_mutex_unlock(&e->mu);
    /* a device engine whose postings are resident may not have read the file at all: a file that
     * shrank under it fails the search all the same (cls_index_intact: a flag load when intact) */
    if (s == CLS_OK) s = cls_index_intact(e->idx);
    return s;
}

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
    pthread_mutex_lock(&e->mu);
    if (!e->one) s = cls_batch_create(e->idx, &e->one);
    if (s == CLS_OK) {
        cls_batch_clear(e->one);
        s = cls_batch_add(e->one, "1", text);
    }
    if (s == CLS_OK) s = e->ops->search(e->impl, e->one, p, r);
    pthread_mutex_unlock(&e->mu);
    if (s == CLS_OK) s = cls_index_intact(e->idx);
    return s;
}

clx_engine *engine_clx(cls_engine *e)
{
    return e->ops == &CLX_OPS ? e->impl : e->ops == &MULTI_OPS ? multi_executor(e->impl, 0) : NULL;
}

multi_engine *engine_multi(cls_engine *e) { return e->ops == &MULTI_OPS ? e->impl : NULL; }
