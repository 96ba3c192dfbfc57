/* The server's counters and their Prometheus text exposition (format 0.0.4): what /metrics
 * answers. Every count is updated under one mutex; the HTTP threads and the batcher touch it once
 * a response or a batch, so it is never contended for long. Latency quantiles come from a ring of
 * the last LAT_RING search requests, sorted when scraped: fixed memory, recent behaviour. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_internal.h"
#include "util/vec.h"

/* The status codes counted, in the order of srv_metrics.http's second index; the last is "other". */
static const int codes[NUM_CODES] = {200, 400, 404, 405, 413, 500, 503, 0};
static const char *const routes[NUM_ROUTES] = {"/search", "/health", "/metrics", "other"};

int metrics_init(srv_metrics *m)
{
    memset(m, 0, sizeof *m);
    return pthread_mutex_init(&m->mu, NULL) == 0;
}

void metrics_destroy(srv_metrics *m) { pthread_mutex_destroy(&m->mu); }

void metrics_response(srv_metrics *m, srv_route route, int code, double latency_s)
{
    unsigned c = 0;
    while (c < NUM_CODES - 1 && codes[c] != code) c++;
    pthread_mutex_lock(&m->mu);
    m->http[route][c]++;
    if (route == ROUTE_SEARCH && code == 200) {
        m->lat[m->lat_at] = latency_s;
        m->lat_at = (m->lat_at + 1) % LAT_RING;
        if (m->lat_n < LAT_RING) m->lat_n++;
        m->lat_count++;
        m->lat_sum += latency_s;
    }
    pthread_mutex_unlock(&m->mu);
}

void metrics_aborted(srv_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->aborted++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_batch(srv_metrics *m, size_t n, double search_s, const cls_profile_step *steps, size_t nsteps)
{
    unsigned b = 0; /* the bucket: the first power of two >= n; the last is +Inf */
    while (b < 17 && ((size_t)1 << b) < n) b++;
    pthread_mutex_lock(&m->mu);
    m->queries += n;
    m->batches++;
    m->batch_hist[b]++;
    m->batch_sum += (double)n;
    m->search_s += search_s;
    for (size_t i = 0; i < nsteps; i++) {
        size_t j = 0;
        while (j < m->nsteps && strcmp(m->steps[j].name, steps[i].name) != 0) j++;
        if (j == m->nsteps) {
            if (j == MAX_STEPS) continue; /* more step names than room: the engine grew; not counted */
            snprintf(m->steps[j].name, sizeof m->steps[j].name, "%s", steps[i].name);
            m->steps[j].transfer = steps[i].transfer;
            m->nsteps++;
        }
        m->steps[j].seconds += steps[i].seconds;
        m->steps[j].bytes += steps[i].bytes;
    }
    pthread_mutex_unlock(&m->mu);
}

void metrics_stats(srv_metrics *m, srv_stats *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&m->mu);
    st->requests = m->http[ROUTE_SEARCH][0];
    for (unsigned r = 0; r < NUM_ROUTES; r++)
        for (unsigned c = 1; c < NUM_CODES; c++) st->errors += m->http[r][c];
    st->aborted = m->aborted;
    st->queries = m->queries;
    st->batches = m->batches;
    st->search_s = m->search_s;
    for (size_t j = 0; j < m->nsteps; j++) st->device_s += m->steps[j].seconds;
    pthread_mutex_unlock(&m->mu);
}

typedef struct text {
    char *p;
    size_t len, cap;
    int ok;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    for (int tries = 0; t->ok && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) t->ok = 0;
        else if (t->p && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        } else if (!vec_reserve(&t->p, &t->cap, t->len + (size_t)n + 1, 1)) t->ok = 0;
    }
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label(text *t, const char *v)
{
    for (; *v && t->ok; v++) {
        if (*v == '\\' || *v == '"') put(t, "\\%c", *v);
        else if (*v == '\n') put(t, "\\n");
        else put(t, "%c", *v);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void metrics_deadline(srv_metrics *m, int late)
{
    pthread_mutex_lock(&m->mu);
    m->due++;
    m->late += late != 0;
    pthread_mutex_unlock(&m->mu);
}

/* The metrics each executor of the engine has, a row each (cls_executor_info). */
typedef struct executor_metric {
    const char *name, *type, *help;
    double (*value)(const cls_executor_info *x);
} executor_metric;

static double x_queries(const cls_executor_info *x) { return (double)x->queries; }
static double x_searches(const cls_executor_info *x) { return (double)x->searches; }
static double x_stolen(const cls_executor_info *x) { return (double)x->stolen; }
static double x_late(const cls_executor_info *x) { return (double)x->late; }
static double x_model_error(const cls_executor_info *x) { return x->model_error; }
static double x_set_aside(const cls_executor_info *x) { return x->set_aside; }

static const executor_metric per_executor[] = {
    {"clsearch_executor_queries_total", "counter",
     "Queries each executor of the engine answered (one per device of a device list).", x_queries},
    {"clsearch_executor_searches_total", "counter", "Searches (or parts of one) each executor ran.", x_searches},
    {"clsearch_executor_stolen_total", "counter",
     "Searches an executor ran that another, had both been free, was predicted to finish sooner (taken from a busy "
     "executor's queue).",
     x_stolen},
    {"clsearch_executor_late_total", "counter", "Searches each executor finished after their deadline.", x_late},
    {"clsearch_executor_model_error", "gauge",
     "Relative error of each executor's cost model, the decayed mean of |predicted - measured| / measured over its "
     "recent runs (0: not yet measured).",
     x_model_error},
    {"clsearch_executor_set_aside", "gauge",
     "1 for an executor set aside after failing a batch that another then ran (/health says why).", x_set_aside},
};

char *metrics_text(srv_metrics *m, const char *device, size_t queued, size_t conns, const uint64_t closed[NUM_CLOSED],
                   const cls_executor_info *x, size_t nx, size_t *len)
{
    double *lat = malloc(LAT_RING * sizeof *lat);
    text t = {NULL, 0, 0, lat != NULL};
    pthread_mutex_lock(&m->mu);
    put(&t, "# HELP clsearch_info The server: library version and device.\n# TYPE clsearch_info gauge\n"
            "clsearch_info{version=\"%s\",device=\"", cls_version());
    put_label(&t, device);
    put(&t, "\"} 1\n");
    put(&t, "# HELP clsearch_http_requests_total HTTP responses sent whole, by path and status.\n"
            "# TYPE clsearch_http_requests_total counter\n");
    for (unsigned r = 0; r < NUM_ROUTES; r++)
        for (unsigned c = 0; c < NUM_CODES; c++)
            if (m->http[r][c] || (r == ROUTE_SEARCH && c == 0)) {
                if (codes[c]) put(&t, "clsearch_http_requests_total{path=\"%s\",code=\"%d\"} %llu\n", routes[r], codes[c],
                                  (unsigned long long)m->http[r][c]);
                else put(&t, "clsearch_http_requests_total{path=\"%s\",code=\"other\"} %llu\n", routes[r],
                         (unsigned long long)m->http[r][c]);
            }
    put(&t, "# HELP clsearch_http_responses_aborted_total Responses queued and cut off by a closed connection.\n"
            "# TYPE clsearch_http_responses_aborted_total counter\nclsearch_http_responses_aborted_total %llu\n",
        (unsigned long long)m->aborted);
    put(&t, "# HELP clsearch_connections Connections open.\n# TYPE clsearch_connections gauge\n"
            "clsearch_connections %zu\n", conns);
    static const char *const why[NUM_CLOSED] = {"idle_timeout", "request_timeout", "answer_timeout", "room",
                                                "shutdown"};
    put(&t, "# HELP clsearch_connections_closed_total Connections the server closed: no request line within "
            "--timeout, a request or answer past --request-timeout, the oldest without a whole request closed "
            "for a new one over a limit, idle at shutdown.\n# TYPE clsearch_connections_closed_total counter\n");
    for (unsigned i = 0; i < NUM_CLOSED; i++)
        put(&t, "clsearch_connections_closed_total{reason=\"%s\"} %llu\n", why[i], (unsigned long long)closed[i]);
    put(&t, "# HELP clsearch_queries_total Queries searched.\n# TYPE clsearch_queries_total counter\n"
            "clsearch_queries_total %llu\n", (unsigned long long)m->queries);
    put(&t, "# HELP clsearch_queue_queries Queries waiting for a batch.\n# TYPE clsearch_queue_queries gauge\n"
            "clsearch_queue_queries %zu\n", queued);
    put(&t, "# HELP clsearch_batch_queries Queries per device batch (one cls_engine_search).\n"
            "# TYPE clsearch_batch_queries histogram\n");
    uint64_t cum = 0;
    for (unsigned b = 0; b < 18; b++) {
        cum += m->batch_hist[b];
        if (b < 17) put(&t, "clsearch_batch_queries_bucket{le=\"%u\"} %llu\n", 1u << b, (unsigned long long)cum);
        else put(&t, "clsearch_batch_queries_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    put(&t, "clsearch_batch_queries_sum %.0f\nclsearch_batch_queries_count %llu\n", m->batch_sum,
        (unsigned long long)m->batches);
    size_t n = m->lat_n;
    if (lat) memcpy(lat, m->lat, n * sizeof *lat);
    put(&t, "# HELP clsearch_request_seconds Search request latency, headers in to response queued (quantiles "
            "over the last %d requests).\n# TYPE clsearch_request_seconds summary\n", LAT_RING);
    if (lat) qsort(lat, n, sizeof *lat, cmp_double);
    static const double qs[] = {0.5, 0.9, 0.99};
    for (unsigned i = 0; i < 3 && lat; i++) {
        if (n) put(&t, "clsearch_request_seconds{quantile=\"%g\"} %.6f\n", qs[i], lat[(size_t)(qs[i] * (double)(n - 1) + 0.5)]);
        else put(&t, "clsearch_request_seconds{quantile=\"%g\"} NaN\n", qs[i]);
    }
    put(&t, "clsearch_request_seconds_sum %.6f\nclsearch_request_seconds_count %llu\n", m->lat_sum,
        (unsigned long long)m->lat_count);
    put(&t, "# HELP clsearch_deadline_requests_total Search requests answered that had a deadline (their "
            "deadline_ms, or --deadline-ms).\n# TYPE clsearch_deadline_requests_total counter\n"
            "clsearch_deadline_requests_total %llu\n", (unsigned long long)m->due);
    put(&t, "# HELP clsearch_deadline_misses_total Of those, the ones answered after their deadline.\n"
            "# TYPE clsearch_deadline_misses_total counter\nclsearch_deadline_misses_total %llu\n",
        (unsigned long long)m->late);
    put(&t, "# HELP clsearch_search_seconds_total Wall time of the searches, submission to answer.\n"
            "# TYPE clsearch_search_seconds_total counter\nclsearch_search_seconds_total %.6f\n", m->search_s);
    put(&t, "# HELP clsearch_device_seconds_total Device time by step (OpenCL profiling events; none on the "
            "reference engine).\n# TYPE clsearch_device_seconds_total counter\n");
    for (size_t j = 0; j < m->nsteps; j++) {
        put(&t, "clsearch_device_seconds_total{step=\"");
        put_label(&t, m->steps[j].name);
        put(&t, "\",kind=\"%s\"} %.6f\n", m->steps[j].transfer ? "transfer" : "kernel", m->steps[j].seconds);
    }
    put(&t, "# HELP clsearch_device_bytes_total Bytes moved between host and device, by step.\n"
            "# TYPE clsearch_device_bytes_total counter\n");
    for (size_t j = 0; j < m->nsteps; j++)
        if (m->steps[j].transfer) {
            put(&t, "clsearch_device_bytes_total{step=\"");
            put_label(&t, m->steps[j].name);
            put(&t, "\"} %llu\n", (unsigned long long)m->steps[j].bytes);
        }
    for (size_t r = 0; r < sizeof per_executor / sizeof *per_executor; r++) {
        const executor_metric *em = &per_executor[r];
        put(&t, "# HELP %s %s\n# TYPE %s %s\n", em->name, em->help, em->name, em->type);
        for (size_t i = 0; i < nx; i++) put(&t, "%s{executor=\"%zu\"} %.15g\n", em->name, i, em->value(&x[i]));
    }
    pthread_mutex_unlock(&m->mu);
    free(lat);
    if (!t.ok) {
        free(t.p);
        return NULL;
    }
    *len = t.len;
    return t.p;
}
