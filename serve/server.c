/* The HTTP side of the server (libmicrohttpd; serve.h says why that library): routes, request
 * bodies within their limits, admission into the batcher's queue, answers, start and graceful
 * stop. A search request is checked completely before it is admitted; once admitted its
 * connection is suspended, so no HTTP thread waits on the device, and the batcher resumes it. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "srv_internal.h"
#include "util/err.h"
#include "util/utf8.h"
#include "util/vec.h"

void srv_defaults(srv_opts *o)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (srv_opts){.listen = "127.0.0.1:8080",
                    .max_batch = 128,
                    .max_wait_ms = 5,
                    .deadline_ms = 0,
                    .inflight = 1,
                    .threads = cores < 1 ? 1 : cores > 4 ? 4 : (unsigned)cores,
                    .max_queue = 4096,
                    .max_k = 1000,
                    .timeout_s = 30,
                    .request_timeout_s = 10,
                    .max_conns = 1024,
                    .max_conns_per_ip = 256,
                    .max_body = 1u << 20,
                    .max_queries = 1024,
                    .max_query_len = 4096,
                    .max_hits = 100000};
}

static cls_status check_opts(const srv_opts *o)
{
    if (!o->listen) return err_set(CLS_E_ARG, "no listening address");
    if (o->max_batch < 1 || o->max_batch > 65536) return err_set(CLS_E_ARG, "max batch %u: 1 to 65536", o->max_batch);
    if (!(o->max_wait_ms >= 0 && o->max_wait_ms <= 10000))
        return err_set(CLS_E_ARG, "max wait %g ms: 0 to 10000", o->max_wait_ms);
    if (!(o->deadline_ms >= 0 && o->deadline_ms <= 600000))
        return err_set(CLS_E_ARG, "deadline %g ms: 0 to 600000 (0: none)", o->deadline_ms);
    if (o->inflight < 1 || o->inflight > 8) return err_set(CLS_E_ARG, "searches in flight a device %u: 1 to 8", o->inflight);
    if (o->threads < 1 || o->threads > 64) return err_set(CLS_E_ARG, "threads %u: 1 to 64", o->threads);
    if (o->max_queue < 1 || o->max_queue > 1048576) return err_set(CLS_E_ARG, "max queue %u: 1 to 1048576", o->max_queue);
    if (o->max_k < 1 || o->max_k > CLS_MAX_K) return err_set(CLS_E_ARG, "max k %u: 1 to %u", o->max_k, CLS_MAX_K);
    if (o->timeout_s < 1 || o->timeout_s > 3600) return err_set(CLS_E_ARG, "timeout %u s: 1 to 3600", o->timeout_s);
    if (o->request_timeout_s < 1 || o->request_timeout_s > 3600)
        return err_set(CLS_E_ARG, "request timeout %u s: 1 to 3600", o->request_timeout_s);
    if (o->max_conns < 1 || o->max_conns > 65536) return err_set(CLS_E_ARG, "max conns %u: 1 to 65536", o->max_conns);
    if (o->max_conns_per_ip < 1 || o->max_conns_per_ip > 65536)
        return err_set(CLS_E_ARG, "max conns per ip %u: 1 to 65536", o->max_conns_per_ip);
    if (o->max_body < 2 || o->max_queries < 1 || o->max_query_len < 1 || o->max_hits < 1)
        return err_set(CLS_E_ARG, "a request limit is 0");
    return CLS_OK;
}

/* "ADDR:PORT" to a socket address: ADDR an IPv4 address, [IPv6] or a name (the first address it
 * resolves to), empty for every IPv4 interface. */
static cls_status parse_listen(const char *spec, struct sockaddr_storage *sa)
{
    const char *colon = strrchr(spec, ':');
    char host[256], *end;
    if (!colon || (size_t)(colon - spec) >= sizeof host)
        return err_set(CLS_E_ARG, "listen address '%s': give ADDR:PORT (127.0.0.1:8080, [::1]:8080, :8080)", spec);
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+')
        return err_set(CLS_E_ARG, "listen address '%s': the port must be a number from 0 to 65535", spec);
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') h[hl - 1] = '\0', h++;
    else if (strchr(h, ':')) return err_set(CLS_E_ARG, "listen address '%s': write an IPv6 address in brackets, [::1]:PORT", spec);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
    int rc = getaddrinfo(*h ? h : "0.0.0.0", NULL, &hints, &ai);
    if (rc != 0) return err_set(CLS_E_ARG, "listen address '%s': %s", spec, gai_strerror(rc));
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (sa->ss_family == AF_INET) ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
    else if (sa->ss_family == AF_INET6) ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
    else return err_set(CLS_E_ARG, "listen address '%s': neither IPv4 nor IPv6", spec);
    return CLS_OK;
}

/* libmicrohttpd's messages: kept while starting (the last one names why a start failed), then
 * printed, prefixed so that they read as the server's. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
    srv *s = cls;
    if (!s->serving) {
        vsnprintf(s->start_log, sizeof s->start_log, fmt, ap);
        s->start_log[strcspn(s->start_log, "\n")] = '\0';
        return;
    }
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    fprintf(stderr, "clsearch: serve: libmicrohttpd: %s\n", line);
}

/* ---- answers -------------------------------------------------------------------------------- */

static srv_route route_of(const char *url)
{
    if (strcmp(url, "/search") == 0) return ROUTE_SEARCH;
    if (strcmp(url, "/health") == 0) return ROUTE_HEALTH;
    if (strcmp(url, "/metrics") == 0) return ROUTE_METRICS;
    return ROUTE_OTHER;
}

/* Queues body (malloc'ed; taken) as the answer; NULL body: out of memory, the connection is closed. */
static enum MHD_Result respond(srv_req *r, int status, char *body, size_t len, const char *type)
{
    srv *s = r->srv;
    if (!body) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    int ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_YES;
    if (status == 405)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                           r->route == ROUTE_SEARCH ? "GET, POST" : "GET, HEAD") == MHD_YES;
    if (status == 503) ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1") == MHD_YES;
    /* stopping: the client sends nothing more on this connection; over a limit: it makes room */
    if (s->stopping || (r->sc && r->sc->over))
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    enum MHD_Result ret = ok ? MHD_queue_response(r->conn, (unsigned)status, resp) : MHD_NO;
    MHD_destroy_response(resp);
    if (ret == MHD_YES) {
        r->status = status; /* counted by on_completed once it has left whole */
        r->latency_s = srv_now() - r->t0;
        conn_phase(s, r->sc, CONN_SENDING);
    }
    return ret;
}

static enum MHD_Result respond_error(srv_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result respond_error(srv_req *r, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = 0;
    char *body = req_error_json(status, msg, &len);
    return respond(r, status, body, len, "application/json");
}

/* "executors": each executor's queries, and whether it was set aside and why (one for a single
 * device; a device set aside leaves the server serving on the others, so it stays healthy). */
static int add_executors(cJSON *o, cls_engine *eng)
{
    size_t nx = cls_engine_executors(eng, NULL, 0);
    cls_executor_info *x = calloc(nx ? nx : 1, sizeof *x);
    cJSON *a = x ? cJSON_AddArrayToObject(o, "executors") : NULL;
    if (a) cls_engine_executors(eng, x, nx);
    int ok = a != NULL;
    for (size_t i = 0; ok && i < nx; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            ok = 0;
            break;
        }
        ok = cJSON_AddStringToObject(e, "name", x[i].name) && cJSON_AddNumberToObject(e, "queries", (double)x[i].queries) &&
             cJSON_AddNumberToObject(e, "searches", (double)x[i].searches) &&
             cJSON_AddNumberToObject(e, "stolen", (double)x[i].stolen) &&
             cJSON_AddNumberToObject(e, "late", (double)x[i].late) && cJSON_AddBoolToObject(e, "busy", x[i].busy) &&
             cJSON_AddStringToObject(e, "model", x[i].model) &&
             cJSON_AddNumberToObject(e, "model_error", x[i].model_error) &&
             cJSON_AddBoolToObject(e, "set_aside", x[i].set_aside) &&
             (!x[i].set_aside || cJSON_AddStringToObject(e, "why", x[i].why));
    }
    free(x);
    return ok;
}

static enum MHD_Result answer_health(srv_req *r)
{
    srv *s = r->srv;
    cls_index_stats st;
    cls_index_get_stats(s->idx, &st);
    /* a file that shrank under the server answers every search with 500: not healthy */
    int stopping = s->stopping, shrunk = cls_index_intact(s->idx) != CLS_OK;
    cJSON *o = cJSON_CreateObject(), *ix = cJSON_CreateObject();
    if (ix && !cJSON_AddItemToObject(o, "index", ix)) cJSON_Delete(ix), ix = NULL;
    char *body = NULL;
    if (o && ix && cJSON_AddStringToObject(o, "status", shrunk ? "index file shrank" : stopping ? "stopping" : "ok") &&
        cJSON_AddStringToObject(o, "version", cls_version()) && cJSON_AddStringToObject(o, "device", s->device_utf8) &&
        cJSON_AddNumberToObject(ix, "docs", st.num_docs) && cJSON_AddNumberToObject(ix, "terms", st.num_terms) &&
        cJSON_AddNumberToObject(ix, "postings", (double)st.num_postings) &&
        cJSON_AddStringToObject(ix, "codec", cls_codec_name(st.codec)) &&
        cJSON_AddNumberToObject(o, "max_batch", s->o.max_batch) && cJSON_AddNumberToObject(o, "max_wait_ms", s->o.max_wait_ms) &&
        cJSON_AddNumberToObject(o, "inflight", s->o.inflight) &&
        cJSON_AddBoolToObject(o, "wait_when_idle", s->o.wait_when_idle) &&
        cJSON_AddNumberToObject(o, "deadline_ms", s->o.deadline_ms) && add_executors(o, s->eng))
        body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return respond(r, stopping || shrunk ? 503 : 200, body, body ? strlen(body) : 0, "application/json");
}

static enum MHD_Result answer_metrics(srv_req *r)
{
    srv *s = r->srv;
    pthread_mutex_lock(&s->mu);
    size_t queued = s->pending;
    pthread_mutex_unlock(&s->mu);
    uint64_t closed[NUM_CLOSED];
    conn_closed_counts(s, closed);
    size_t len = 0;
    size_t nx = cls_engine_executors(s->eng, NULL, 0);
    cls_executor_info *x = calloc(nx ? nx : 1, sizeof *x);
    if (x) cls_engine_executors(s->eng, x, nx);
    char *body = x ? metrics_text(&s->m, s->device, queued, conn_count(s), closed, x, nx, &len) : NULL;
    free(x);
    return respond(r, 200, body, len, "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result answer_search(srv_req *r)
{
    /* docnos and fields come from the index's mapping, and a search may have failed on what it
     * read: a file shrunk meanwhile (zeros past the cut) is the error to give */
    size_t len = 0;
    char *body = r->http == 200 ? req_format(r, r->srv->idx, srv_now() - r->t0, &len) : NULL;
    cls_status st = cls_index_intact(r->srv->idx);
    if (st != CLS_OK) {
        free(body);
        return respond_error(r, 500, "searching: %s: %s", cls_status_str(st), cls_last_error());
    }
    if (r->http != 200) return respond_error(r, r->http, "%s", r->error);
    return respond(r, 200, body, len, "application/json");
}

/* GET /search's arguments as the object a POST body holds: q (or query), qid and mode as
 * strings, k, k1 and b as numbers (400 when they are not); others go in as they are, and
 * req_from_json names them. */
typedef struct args_ctx {
    cJSON *o;
    char bad[128];
} args_ctx;

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                              const char *value, size_t value_size)
{
    args_ctx *a = cls;
    (void)kind;
    if (!value) value = "", value_size = 0;
    /* %00 decodes to a NUL, where a C string would end */
    if (strlen(key) != key_size || strlen(value) != value_size) {
        snprintf(a->bad, sizeof a->bad, "argument %.64s holds a NUL character (%%00)",
                 strlen(key) != key_size ? "name" : key);
        return MHD_NO;
    }
    const char *name = strcmp(key, "q") == 0 ? "query" : key;
    cJSON *v;
    if (strcmp(name, "k") == 0 || strcmp(name, "k1") == 0 || strcmp(name, "b") == 0 || strcmp(name, "deadline_ms") == 0) {
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        if (!*value || *end || errno) {
            snprintf(a->bad, sizeof a->bad, "%s=%.64s is not a number", key, value);
            return MHD_NO;
        }
        v = cJSON_CreateNumber(d);
    } else {
        v = cJSON_CreateString(value);
    }
    if (!v || !cJSON_AddItemToObject(a->o, name, v)) {
        cJSON_Delete(v);
        snprintf(a->bad, sizeof a->bad, "out of memory");
        return MHD_NO;
    }
    return MHD_YES;
}

/* A search request whose body (or arguments) is in: checked, then admitted into the queue with
 * its connection suspended, or answered at once. */
static enum MHD_Result handle_search(srv_req *r, const char *method)
{
    srv *s = r->srv;
    char err[512] = "";
    cJSON *doc;
    long nul_at = 0;
    if (r->body_over) return respond_error(r, 413, "the body is over %zu bytes", s->o.max_body);
    if (s->stopping) return respond_error(r, 503, "shutting down");
    if (strcmp(method, MHD_HTTP_METHOD_POST) == 0) {
        if (r->body_len == 0) return respond_error(r, 400, "a JSON body is required: {\"query\": \"...\"}");
        const char *end = NULL;
        doc = cJSON_ParseWithLengthOpts(r->body, r->body_len, &end, 0);
        if (!doc)
            return respond_error(r, 400, "malformed JSON at byte %zu of %zu",
                                 end && end >= r->body ? (size_t)(end - r->body) : 0, r->body_len);
        if (end && (size_t)(end - r->body) < r->body_len && strspn(end, " \t\r\n") < r->body_len - (size_t)(end - r->body)) {
            cJSON_Delete(doc);
            return respond_error(r, 400, "malformed JSON: text after the object at byte %zu", (size_t)(end - r->body));
        }
        nul_at = json_nul_string(r->body, end ? (size_t)(end - r->body) : r->body_len);
        free(r->body);
        r->body = NULL;
    } else {
        args_ctx a = {cJSON_CreateObject(), ""};
        if (!a.o) return respond_error(r, 503, "out of memory");
        MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, on_arg, &a);
        if (*a.bad) {
            cJSON_Delete(a.o);
            return respond_error(r, 400, "%s", a.bad);
        }
        doc = a.o;
    }
    int status = req_from_json(r, doc, nul_at, &s->o, err, sizeof err);
    if (status) return respond_error(r, status, "%s", err);
    /* admission: the queue's room is taken before the connection is suspended and the request
     * linked in, so the batcher (which waits while pending is not 0) cannot finish between */
    pthread_mutex_lock(&s->mu);
    int stopping = s->stopping, full = s->pending + r->nq > s->o.max_queue;
    if (!stopping && !full) s->pending += r->nq;
    size_t pending = s->pending;
    pthread_mutex_unlock(&s->mu);
    if (stopping) return respond_error(r, 503, "shutting down");
    if (full) return respond_error(r, 503, "the queue is full (%zu queries waiting, at most %u)", pending, s->o.max_queue);
    MHD_suspend_connection(r->conn);
    r->state = REQ_QUEUED;
    r->t_queued = srv_now();
    r->t_due = r->p.deadline_ms > 0 ? r->t_queued + r->p.deadline_ms * 1e-3 : INFINITY;
    pthread_mutex_lock(&s->mu);
    batcher_queue(s, r);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    srv *s = cls;
    srv_req *r = *con_cls;
    (void)version;
    if (!r) { /* the headers are in */
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        r->srv = s;
        r->conn = c;
        r->t0 = srv_now();
        r->route = route_of(url);
        r->sc = conn_of(c);
        *con_cls = r;
        if (r->sc && r->sc->over == OVER_IP)
            return respond_error(r, 503, "too many connections from this address (%zu open, at most %u)",
                                 r->sc->over_count, s->o.max_conns_per_ip);
        if (r->sc && r->sc->over == OVER_ALL)
            return respond_error(r, 503, "too many connections (%zu open, at most %u, each with a request being "
                                 "answered)", r->sc->over_count, s->o.max_conns);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (r->route == ROUTE_SEARCH && cl && strtoull(cl, NULL, 10) > s->o.max_body)
            /* answered before the body is read: libmicrohttpd closes the connection after */
            return respond_error(r, 413, "the body is %.32s bytes, over %zu", cl, s->o.max_body);
        return MHD_YES;
    }
    if (*upload_size) { /* a piece of the body */
        if (!r->body_over && r->body_len + *upload_size > s->o.max_body) {
            r->body_over = 1; /* a body without Content-Length grew too large: the rest is dropped */
            free(r->body);
            r->body = NULL;
            r->body_len = r->body_cap = 0;
        }
        if (!r->body_over) {
            if (!vec_reserve(&r->body, &r->body_cap, r->body_len + *upload_size + 1, 1)) return MHD_NO;
            memcpy(r->body + r->body_len, upload, *upload_size);
            r->body_len += *upload_size;
            r->body[r->body_len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->state == REQ_DONE) return answer_search(r);
    conn_phase(s, r->sc, -1); /* the request is whole: no deadline while it is answered */
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0, head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    switch (r->route) {
    case ROUTE_SEARCH:
        if (!get && strcmp(method, MHD_HTTP_METHOD_POST) != 0)
            return respond_error(r, 405, "%.32s is not allowed on /search: GET or POST", method);
        return handle_search(r, method);
    case ROUTE_HEALTH:
    case ROUTE_METRICS:
        if (!get && !head) return respond_error(r, 405, "%.32s is not allowed on %s: GET", method, url);
        return r->route == ROUTE_HEALTH ? answer_health(r) : answer_metrics(r);
    default: return respond_error(r, 404, "no such path: %.200s (/search, /health, /metrics)", url);
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    srv *s = cls;
    srv_req *r = *con_cls;
    *con_cls = NULL;
    /* counted here, not when queued: an answer cut off by a closed connection never reached its
     * client, and /metrics is to agree with what clients received */
    if (r && r->status) {
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) metrics_response(&s->m, r->route, r->status, r->latency_s);
        else metrics_aborted(&s->m);
    }
    conn_phase(s, r ? r->sc : conn_of(c), CONN_IDLE);
    req_free(r);
}

/* ---- start and stop ------------------------------------------------------------------------- */

static void stop_watchdog(srv *s)
{
    if (!s->watchdog_started) return;
    pthread_mutex_lock(&s->cmu);
    s->watch_stop = 1;
    pthread_cond_broadcast(&s->cwake);
    pthread_mutex_unlock(&s->cmu);
    pthread_join(s->watchdog, NULL);
    s->watchdog_started = 0;
}

/* libmicrohttpd's own connection limit: --max-conns and a reserve for the connections opened
 * while those closed to make room for them are closing (conns.c). */
static unsigned hard_limit(const srv_opts *o) { return o->max_conns + o->max_conns / 8 + 16; }

/* Every connection is a descriptor: the soft limit on open files is raised to what the
 * connection limit needs (the hard limit allows as much as the system lets this process have);
 * a server that hit the limit would stop accepting, answering nobody. */
unsigned srv_conns_fit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= (rlim_t)1 << 20)
        return 65536;
    /* the largest c with hard_limit(c) + 256 <= the hard limit */
    uint64_t room = rl.rlim_max > 272 ? (uint64_t)rl.rlim_max - 272 : 0, c = room * 8 / 9;
    while (c > 0 && c + c / 8 + 16 + 256 > (uint64_t)rl.rlim_max) c--;
    return c > 65536 ? 65536 : (unsigned)c;
}

static cls_status room_for_files(const srv_opts *o)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)hard_limit(o) + 256; /* the index, the device runtime, the standard streams */
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return CLS_OK;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        return err_set(CLS_E_ARG, "--max-conns %u needs %llu open files; the hard limit is %llu (ulimit -Hn): lower "
                       "--max-conns or raise the limit", o->max_conns, (unsigned long long)need,
                       (unsigned long long)rl.rlim_max);
    rlim_t cur = rl.rlim_cur;
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return err_set(CLS_E_IO, "--max-conns %u needs %llu open files; raising the limit from %llu: %s", o->max_conns,
                       (unsigned long long)need, (unsigned long long)cur, strerror(errno));
    return CLS_OK;
}

static void srv_free(srv *s)
{
    if (s->batcher_started) {
        pthread_mutex_lock(&s->mu);
        s->stopping = 1;
        pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->batcher, NULL);
    }
    stop_watchdog(s);
    batcher_slots_free(s);
    metrics_destroy(&s->m);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->cwake);
    pthread_mutex_destroy(&s->cmu);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

cls_status srv_start(const cls_index *idx, cls_engine *eng, const srv_opts *o, srv **out)
{
    *out = NULL;
    if (!idx || !eng || !o) return err_set(CLS_E_ARG, "srv_start: NULL argument");
    cls_status st = check_opts(o);
    struct sockaddr_storage sa;
    if (st != CLS_OK || (st = parse_listen(o->listen, &sa)) != CLS_OK || (st = room_for_files(o)) != CLS_OK) return st;
    srv *s = calloc(1, sizeof *s);
    if (!s) return err_set(CLS_E_NOMEM, "starting the server: out of memory");
    s->o = *o;
    if (s->o.max_queries > s->o.max_queue) s->o.max_queries = s->o.max_queue; /* a request must fit the queue */
    s->idx = idx;
    s->eng = eng;
    const char *d = cls_engine_describe(eng);
    snprintf(s->device, sizeof s->device, "%.*s", (int)strcspn(d, "\n"), d);
    if (strncmp(s->device, "device: ", 8) == 0) memmove(s->device, s->device + 8, strlen(s->device + 8) + 1);
    /* a driver's name, for /health's JSON: made UTF-8 once */
    char *buf = NULL;
    size_t cap = 0;
    const char *u = utf8_json(s->device, strlen(s->device), &buf, &cap);
    snprintf(s->device_utf8, sizeof s->device_utf8, "%s", u ? u : "?");
    free(buf);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&s->mu, NULL) == 0 && pthread_cond_init(&s->work, &ca) == 0 &&
             pthread_mutex_init(&s->cmu, NULL) == 0 && pthread_cond_init(&s->cwake, &ca) == 0 && metrics_init(&s->m);
    pthread_condattr_destroy(&ca);
    if (!ok) {
        free(s);
        return err_set(CLS_E_NOMEM, "starting the server: no mutex");
    }
    if ((st = batcher_slots_create(s)) != CLS_OK) {
        srv_free(s);
        return st;
    }
    if (pthread_create(&s->batcher, NULL, batcher_main, s) != 0) {
        srv_free(s);
        return err_set(CLS_E_NOMEM, "starting the server: no thread for the batcher");
    }
    s->batcher_started = 1;
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s) != 0) {
        srv_free(s);
        return err_set(CLS_E_NOMEM, "starting the server: no thread for the connections' deadlines");
    }
    s->watchdog_started = 1;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (sa.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_log, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE, s->o.threads,
                            MHD_OPTION_CONNECTION_TIMEOUT, s->o.timeout_s, MHD_OPTION_CONNECTION_LIMIT,
                            hard_limit(&s->o), MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s, MHD_OPTION_URI_LOG_CALLBACK,
                            conn_request_line, s, MHD_OPTION_END);
    if (!s->d) {
        char why[sizeof s->start_log];
        snprintf(why, sizeof why, "%s", *s->start_log ? s->start_log : "libmicrohttpd refused");
        srv_free(s);
        return err_set(CLS_E_IO, "cannot listen on %s: %s", o->listen, why);
    }
    s->serving = 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa.ss_family == AF_INET) inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
    else inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
    snprintf(s->url, sizeof s->url, sa.ss_family == AF_INET6 ? "http://[%s]:%u" : "http://%s:%u", host, s->port);
    *out = s;
    return CLS_OK;
}

unsigned srv_port(const srv *s) { return s->port; }
const char *srv_url(const srv *s) { return s->url; }

void srv_get_stats(srv *s, srv_stats *st)
{
    metrics_stats(&s->m, st);
    pthread_mutex_lock(&s->mu);
    st->queued = s->pending;
    pthread_mutex_unlock(&s->mu);
}

void srv_stop(srv *s, srv_stats *final)
{
    if (!s) return;
    /* No new connection from here on. The listening socket may only be closed after
     * MHD_stop_daemon; shut down now, it refuses connections at once instead of leaving them in
     * its backlog while the queue drains. */
    MHD_socket fd = MHD_quiesce_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET) shutdown(fd, SHUT_RDWR);
    double deadline = srv_now() + s->o.timeout_s;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1; /* requests arriving on open connections are answered 503, Connection: close */
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->batcher, NULL); /* every admitted query searched and its connection resumed */
    s->batcher_started = 0;
    /* every request received is answered before its connection closes: libmicrohttpd's stop
     * closes connections whatever they hold, so it comes once they are closed (or the time is up) */
    conns_drain(s, deadline);
    stop_watchdog(s);
    MHD_stop_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    if (final) srv_get_stats(s, final);
    srv_free(s);
}
