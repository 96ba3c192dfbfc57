/* The query server behind `clsearch serve`: HTTP with JSON requests and responses in front of one
 * engine, concurrent requests gathered into device batches (dynamic batching). Not part of
 * libclsearch: a static library (serve/) that the command, the `bench serve` suite and the tests
 * link, so libclsearch.so does not depend on the HTTP library.
 *
 * HTTP library: GNU libmicrohttpd (Debian: libmicrohttpd-dev), chosen over libevent's evhttp and
 * libh2o because it is a small C library made to be embedded, packaged in Debian and Ubuntu for
 * many years, with the three things this server needs built in: an internal thread pool over
 * epoll, suspending a connection while its request waits for the batcher and resuming it from
 * another thread (evhttp would need our own event loop and a cross-thread wake-up; h2o brings an
 * HTTP/2 stack, TLS and libuv that a loopback query service does not use), and per-connection
 * limits and timeouts. It also answers malformed HTTP itself.
 *
 * Threads: libmicrohttpd's pool threads read requests, parse and check their JSON (cJSON) and put
 * them in one bounded queue, earliest deadline first (requests without one after those with one,
 * in arrival order); ONE batcher thread takes queued requests and submits them as one search
 * (cls_engine_submit) once the engine has fewer than --inflight searches a device in flight: at
 * once while an executor of the engine is idle (at low load a request waits for no batch;
 * --wait-when-idle gathers all the same), else
 * up to --max-batch queries or --max-wait-ms since the oldest was queued, whichever comes first.
 * The search carries the earliest deadline of its requests, so the engine takes it in deadline
 * order and on the executor predicted to finish it first. A completer thread per slot waits for
 * its search, copies each request's rows into the request and resumes its connection
 * (batcher.c); a pool thread then writes the response. One search takes one set of parameters
 * (k, mode, k1, b): a batch holds requests with equal parameters only; the first queued request
 * decides them and requests asking for others wait, in order, for a later batch (never
 * reordered among requests of one deadline, never starved by them). A request's queries are
 * never split between batches; one larger than --max-batch is a batch of its own. A request
 * answered after its deadline is answered all the same, and counted (/metrics).
 *
 * The protocol (README.md shows it with curl):
 *   POST /search   {"query": "text", "qid": "1", "k": 10, "mode": "or", "k1": 0.9, "b": 0.4,
 *                   "deadline_ms": 20, "rerank": true}
 *                  or {"queries": [{"qid": "1", "query": "text"}, ...], "k": ..., ...}
 *                  (qid optional: "1", "2", ... by position; k, mode, k1, b optional: 10, or, 0.9,
 *                  0.4; deadline_ms optional: --deadline-ms's; rerank optional, true or false:
 *                  the server's second ranking stage (serve --rerank MODEL: the model it loaded
 *                  at its start, at its --rerank-depth; a client names no file), default true
 *                  when it has one, true without one a 400; any other field is an error)
 *   GET  /search?q=text&qid=1&k=10&mode=or&k1=0.9&b=0.4   the same, one query
 *     200 {"results": [{"qid": "1", "hits": [{"rank": 1, "docno": "d1", "score": 0.44395}, ...]},
 *          ...], "k": 10, "mode": "or", "batch_queries": 12, "queue_ms": 1.2, "search_ms": 3.4,
 *          "total_ms": 4.9}; reranked, each hit's "score" is the model's and "first_score" the
 *          first stage's, and the answer says "rerank": true
 *          scores with six decimals, as `clsearch search --json` and the TREC run print them,
 *          and where the index stores fields, each hit's "fields" as `search --json` has them;
 *          batch_queries: the queries of the device batch it ran in; queue_ms: from queued to
 *          the batch's start; search_ms: the batch's cls_engine_search; total_ms: from the
 *          request's headers to its response
 *   GET  /health   200 {"status": "ok", "device": "...", "index": {...}}
 *   GET  /metrics  Prometheus text: requests by path and status, queries, batches, a histogram
 *                  of batch sizes, request latency (summary over the last 4096 search requests:
 *                  p50, p90, p99), queue length, search wall time, device time by step
 * Errors are JSON, {"error": "what", "status": N}: 400 malformed JSON or a bad field, 404 unknown
 * path, 405 wrong method (with Allow), 413 body, queries, query text or hits over the limits,
 * 500 the engine failed, 503 queue full, too many connections or shutting down (with
 * Retry-After). What is not HTTP, and heads over libmicrohttpd's 32 KiB per connection (414 URI,
 * 431 headers), libmicrohttpd answers itself (HTML bodies, not counted in /metrics). /metrics
 * counts a response once it has left whole (libmicrohttpd's completed callback), so its counts
 * are what clients received; one cut off by a closed connection is counted apart.
 *
 * Text: a request's strings must be UTF-8 without NUL (\u0000): anything else is a 400 naming
 * the field, since a qid or query cannot hold it in C or in a TREC run. A qid given twice in
 * one request is a 400, as `search` refuses a topics file that repeats one. What the server
 * writes is valid UTF-8 whatever the index holds: a docno or stored field that is not has each
 * byte outside a valid sequence replaced by U+FFFD (util/utf8.h), as `search --json` and the
 * Python bindings do.
 *
 * Hostile clients (conns.c): a request must arrive whole within --request-timeout of its request
 * line, and a connection without a request line is closed after --timeout, trickled bytes or
 * not; past --max-conns or --max-conns-per-ip a new connection closes the oldest of the same
 * scope that has no whole request, and is answered 503 where every one is being answered. */
#ifndef CLS_SERVE_H
#define CLS_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "clsearch.h"

typedef struct srv_opts {
    const char *listen;   /* "ADDR:PORT": an IPv4 address, [IPv6] or a host name; port 0: any free
                           * port (srv_port says which); default "127.0.0.1:8080" */
    unsigned max_batch;   /* queries per device batch, 1..65536; default 128 */
    double max_wait_ms;   /* how long the oldest queued query waits for others while every executor
                           * is busy, 0..10000; default 5 (one idle: the batch goes at once) */
    int wait_when_idle;   /* 1: wait max_wait_ms even while an executor is idle (batches gather
                           * at any load); default 0 */
    double deadline_ms;   /* a request's deadline when it gives none ("deadline_ms"), from its
                           * arrival, 0..600000; 0: none (default) */
    unsigned inflight;    /* searches in flight a device (submitted, not yet ended), 1..8; default 1:
                           * the next batch gathers until a device is free, so a request waits
                           * for at most the search before its own */
    unsigned threads;     /* HTTP threads, 1..64; default the online cores, at most 4 */
    unsigned max_queue;   /* queries waiting at most (more: 503), 1..1048576; default 4096 */
    unsigned max_k;       /* the largest k a request may ask, 1..CLS_MAX_K; default 1000 */
    unsigned timeout_s;   /* how long a connection may stay without a request line (after it
                           * opens, or after its last answer), whatever bytes it trickles; also
                           * the longest wait for requests to finish at shutdown; 1..3600 s;
                           * default 30 */
    unsigned request_timeout_s; /* from a request line to its body's end, and from an answer
                                 * queued to its last byte taken; 1..3600 s; default 10 */
    unsigned max_conns;   /* connections open at most, 1..65536; default 1024 */
    unsigned max_conns_per_ip; /* from one address at most, 1..65536; default 256 */
    size_t max_body;      /* request body bytes; default 1 MiB */
    unsigned max_queries; /* queries per request; default 1024 */
    size_t max_query_len; /* bytes of one query's text; default 4096 */
    size_t max_hits;      /* queries x k of one request; default 100000 */
    const cls_model *rerank; /* the server's second ranking stage (serve --rerank; borrowed, alive
                              * until srv_stop returns), or NULL: none */
    uint32_t rerank_depth;   /* its depth (0: CLS_RERANK_DEPTH) */
} srv_opts;

void srv_defaults(srv_opts *o);
/* The largest max_conns the hard limit on open files leaves room for (65536 where it is higher):
 * the command lowers its default to it, with a note, rather than refuse to start. */
unsigned srv_conns_fit(void);

typedef struct srv srv;

/* Starts serving idx through eng (both borrowed: eng is used by the server's batcher thread
 * alone until srv_stop returns; idx must outlive the server). CLS_E_ARG for a bad option or
 * address, CLS_E_IO when the address cannot be bound, with cls_last_error() saying why. */
cls_status srv_start(const cls_index *idx, cls_engine *eng, const srv_opts *o, srv **out);
/* The port listened on (the one chosen when o->listen asked for port 0). */
unsigned srv_port(const srv *s);
/* The URL listened on, "http://127.0.0.1:PORT" (valid until srv_stop). */
const char *srv_url(const srv *s);

/* Totals since the start, for the command's last line and the benchmark. */
typedef struct srv_stats {
    uint64_t requests;  /* search requests answered 200 (sent whole, as every count here) */
    uint64_t errors;    /* responses of 400 and above, every path */
    uint64_t aborted;   /* responses queued and cut off by a closed connection (not in the above) */
    uint64_t queries;   /* queries searched */
    uint64_t batches;   /* cls_engine_search calls */
    uint64_t queued;    /* queries waiting now */
    double search_s;    /* wall time inside cls_engine_search */
    double device_s;    /* device time of every step (profiling events), transfers included */
} srv_stats;
void srv_get_stats(srv *s, srv_stats *st);

/* Stops gracefully and frees: stops accepting connections, runs every queued query (at once,
 * without waiting for --max-wait-ms) and answers it, answers 503 (Connection: close) requests
 * whose request line arrives on open connections, closes connections idle for a second, and
 * waits up to timeout_s for the others to finish; then closes what is left. Every answer given
 * while stopping closes its connection. final (when not NULL) receives the totals at the end.
 * NULL s: nothing. */
void srv_stop(srv *s, srv_stats *final);

#endif
