/* The query server, `clsearch serve`, as a separate process on POCL ($CLS_TEST_DEVICE, default
 * cpu) on a free loopback port: concurrent requests get exactly the hits `clsearch search --json`
 * prints for the same index, topics, k and mode (one-query and many-query requests, two parameter
 * sets in one queue); bad requests get their 4xx JSON error; /health and /metrics answer; SIGTERM
 * answers every queued query (gathered into one batch per parameter set) and exits 0. The data
 * part does the same with CACM's topics. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "clsearch.h"
#include "generate.h"
#include "http_client.h"
#include "testutil.h"

static double srv_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the server process -------------------------------------------------------------------- */

typedef struct server {
    pid_t pid;
    unsigned port;
    int out;            /* its stdout (kept open: it may write there again) */
    char err_path[4096];
} server;

static const char *server_stderr(const server *sv)
{
    static char buf[16384];
    buf[0] = '\0';
    FILE *f = fopen(sv->err_path, "rb");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

/* Starts `clsearch serve -x idx -d DEVICE --listen 127.0.0.1:0 extra` and reads the port from its
 * "listening on" line; dev NULL: the test device. */
static void start_server_on(server *sv, const char *idx, const char *dev, const char *extra)
{
    const char *bin = getenv("CLSEARCH_BIN");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "exec '%s' serve -x '%s' -d %s --listen 127.0.0.1:0 %s", bin ? bin : "clsearch", idx,
             dev ? dev : tu_device(), extra);
    snprintf(sv->err_path, sizeof sv->err_path, "%s", tu_tmp_path("serve.stderr"));
    int p[2];
    ck_assert(pipe(p) == 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(sv->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(p[1], 1) < 0 || dup2(fd, 2) < 0) _exit(127);
        close(p[0]);
        close(p[1]);
        close(fd);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    sv->pid = pid;
    sv->out = p[0];
    char line[256];
    size_t n = 0;
    /* the engine may compile its kernels first (a cold cache, under a sanitizer): minutes at most */
    while (n < sizeof line - 1 && (n == 0 || line[n - 1] != '\n')) {
        struct pollfd pf = {p[0], POLLIN, 0};
        ck_assert_msg(poll(&pf, 1, 300000) == 1, "serve printed no address in 300 s: %s", server_stderr(sv));
        ssize_t k = read(p[0], line + n, 1);
        ck_assert_msg(k == 1, "serve exited before listening: %s", server_stderr(sv));
        n++;
    }
    line[n] = '\0';
    ck_assert_msg(sscanf(line, "listening on http://127.0.0.1:%u", &sv->port) == 1 && sv->port > 0,
                  "not an address line: %s", line);
}

static void start_server(server *sv, const char *idx, const char *extra) { start_server_on(sv, idx, NULL, extra); }

/* SIGTERM, then the exit status (a signal: 128 + its number). */
static int stop_server(server *sv)
{
    ck_assert(kill(sv->pid, SIGTERM) == 0);
    int st;
    ck_assert(waitpid(sv->pid, &st, 0) == sv->pid);
    close(sv->out);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (rc != 0) fprintf(stderr, "serve ended with %d; what it printed:\n%s\n", rc, server_stderr(sv));
    return rc;
}

/* Stops sv and requires its exit 0, with its stderr in the message where not. */
static void stop_cleanly(server *sv)
{
    int rc = stop_server(sv);
    ck_assert_msg(rc == 0, "exit %d after SIGTERM: %s", rc, server_stderr(sv));
}

/* One request on a fresh connection; the answer's status, *body its text (a static copy). */
static int http(const server *sv, const char *method, const char *path, const char *body, const char **resp)
{
    static char copy[1 << 16];
    hc_conn c;
    ck_assert_msg(hc_connect(&c, "127.0.0.1", sv->port, 120) == 0, "connect: %s", strerror(errno));
    int st;
    const char *r;
    size_t rl;
    ck_assert_msg(hc_request(&c, method, path, body, body ? strlen(body) : 0, &st, &r, &rl) == 0,
                  "%s %s: no answer", method, path);
    snprintf(copy, sizeof copy, "%s", r);
    hc_close(&c);
    if (resp) *resp = copy;
    return st;
}

/* ---- expected hits: `clsearch search --json` ------------------------------------------------ */

typedef struct topics {
    char **qid, **text;
    size_t n;
} topics;

static int on_topic(void *u, const char *qid, const char *text)
{
    topics *t = u;
    t->qid = realloc(t->qid, (t->n + 1) * sizeof *t->qid);
    t->text = realloc(t->text, (t->n + 1) * sizeof *t->text);
    ck_assert(t->qid && t->text);
    t->qid[t->n] = tu_strdup(qid);
    t->text[t->n] = tu_strdup(text);
    t->n++;
    return 0;
}

static void read_topics(const char *path, topics *t)
{
    memset(t, 0, sizeof *t);
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_AUTO, path, on_topic, t), CLS_OK);
    ck_assert(t->n > 0);
}

static void free_topics(topics *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->qid[i]), free(t->text[i]);
    free(t->qid), free(t->text);
}

/* Per topic, the lines `search --json extra` prints for it (joined, each ending in '\n'). */
static char **expected_with(const char *idx, const char *topics_path, const topics *t, unsigned k, const char *mode,
                            const char *extra)
{
    const char *out = tu_tmp_path("expected.json"), *err;
    char args[8192];
    snprintf(args, sizeof args, "search -x '%s' -q '%s' -k %u -m %s -d %s --json %s", idx, topics_path, k, mode,
             tu_device(), extra);
    int rc = tu_run_cli_to(args, out, &err);
    ck_assert_msg(rc == 0, "search: exit %d: %s", rc, err);
    char **want = calloc(t->n, sizeof *want);
    ck_assert(want);
    for (size_t i = 0; i < t->n; i++) want[i] = tu_strdup("");
    FILE *f = fopen(out, "r");
    ck_assert(f);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        cJSON *o = cJSON_Parse(line);
        ck_assert_msg(o && cJSON_IsString(cJSON_GetObjectItem(o, "qid")), "bad line: %s", line);
        const char *q = cJSON_GetObjectItem(o, "qid")->valuestring;
        size_t i = 0;
        while (i < t->n && strcmp(t->qid[i], q) != 0) i++;
        ck_assert_msg(i < t->n, "search printed qid %s, not a topic", q);
        size_t a = strlen(want[i]), b = strlen(line);
        want[i] = realloc(want[i], a + b + 1);
        ck_assert(want[i]);
        memcpy(want[i] + a, line, b + 1);
        cJSON_Delete(o);
    }
    fclose(f);
    remove(out);
    return want;
}

static char **expected(const char *idx, const char *topics_path, const topics *t, unsigned k, const char *mode)
{
    return expected_with(idx, topics_path, t, k, mode, "");
}

static void free_lines(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* One result of the server's answer as `search --json`'s lines for its query. */
static char *as_lines(const cJSON *result)
{
    const cJSON *qid = cJSON_GetObjectItem(result, "qid"), *hits = cJSON_GetObjectItem(result, "hits");
    ck_assert(cJSON_IsString(qid) && cJSON_IsArray(hits));
    char *s = tu_strdup("");
    const cJSON *h;
    cJSON_ArrayForEach(h, hits)
    {
        cJSON *o = cJSON_CreateObject();
        ck_assert(o && cJSON_AddStringToObject(o, "qid", qid->valuestring) &&
                  cJSON_AddNumberToObject(o, "rank", cJSON_GetObjectItem(h, "rank")->valuedouble) &&
                  cJSON_AddStringToObject(o, "docno", cJSON_GetObjectItem(h, "docno")->valuestring) &&
                  cJSON_AddNumberToObject(o, "score", cJSON_GetObjectItem(h, "score")->valuedouble));
        const cJSON *first = cJSON_GetObjectItem(h, "first_score"); /* reranked, as search --json */
        if (first) ck_assert(cJSON_AddNumberToObject(o, "first_score", first->valuedouble));
        const cJSON *fields = cJSON_GetObjectItem(h, "fields"); /* stored fields, as search --json */
        if (fields) ck_assert(cJSON_AddItemToObject(o, "fields", cJSON_Duplicate(fields, 1)));
        char *line = cJSON_PrintUnformatted(o);
        size_t a = strlen(s), b = strlen(line);
        s = realloc(s, a + b + 2);
        ck_assert(s);
        memcpy(s + a, line, b);
        s[a + b] = '\n';
        s[a + b + 1] = '\0';
        free(line);
        cJSON_Delete(o);
    }
    return s;
}

/* ---- concurrent clients --------------------------------------------------------------------- */

/* A request of queries [first, first + n) of t, with k and mode ("queries" when many is set). */
static char *request_body(const topics *t, size_t first, size_t n, unsigned k, const char *mode, int many)
{
    cJSON *o = cJSON_CreateObject(), *qs = NULL;
    ck_assert(o);
    if (many) ck_assert((qs = cJSON_AddArrayToObject(o, "queries")) != NULL);
    for (size_t i = first; i < first + n; i++) {
        cJSON *q = many ? cJSON_CreateObject() : o;
        ck_assert(q && cJSON_AddStringToObject(q, "qid", t->qid[i]) && cJSON_AddStringToObject(q, "query", t->text[i]));
        if (many) ck_assert(cJSON_AddItemToArray(qs, q));
    }
    ck_assert(cJSON_AddNumberToObject(o, "k", k) && cJSON_AddStringToObject(o, "mode", mode));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    ck_assert(s);
    return s;
}

/* One client thread: its requests in turn on one keep-alive connection; the answers' lines are
 * put in got[] by topic (each topic belongs to one thread). */
typedef struct job {
    const server *sv;
    const topics *t;
    size_t first, step; /* its topics: first, first + step, ... */
    unsigned k;
    const char *mode;
    size_t per_request; /* 1: {"query"}; more: {"queries": [...]} of up to that many */
    char **got;
    size_t batch_queries; /* of the last answer */
    int status;           /* the first status other than 200, else 200 */
    char why[512];
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    hc_conn c;
    j->status = 200;
    if (hc_connect(&c, "127.0.0.1", j->sv->port, 120) != 0) {
        j->status = -1;
        snprintf(j->why, sizeof j->why, "connect: %s", strerror(errno));
        return NULL;
    }
    for (size_t i = j->first; i < j->t->n && j->status == 200;) {
        /* topics i, i + step, ... as consecutive entries: a request holds per_request of them */
        size_t idx[64], n = 0;
        for (; n < j->per_request && i < j->t->n; i += j->step) idx[n++] = i;
        topics sub = {NULL, NULL, n};
        char *qid[64], *text[64];
        for (size_t a = 0; a < n; a++) qid[a] = j->t->qid[idx[a]], text[a] = j->t->text[idx[a]];
        sub.qid = qid, sub.text = text;
        char *body = request_body(&sub, 0, n, j->k, j->mode, j->per_request > 1);
        int st;
        const char *resp;
        size_t rl;
        if (hc_request(&c, "POST", "/search", body, strlen(body), &st, &resp, &rl) != 0) st = -1;
        free(body);
        if (st != 200) {
            j->status = st;
            snprintf(j->why, sizeof j->why, "%.500s", st < 0 ? "no answer" : resp);
            break;
        }
        cJSON *o = cJSON_Parse(resp);
        const cJSON *rs = o ? cJSON_GetObjectItem(o, "results") : NULL;
        if (!rs || cJSON_GetArraySize(rs) != (int)n) {
            j->status = -2;
            snprintf(j->why, sizeof j->why, "not %zu results: %.400s", n, resp);
            cJSON_Delete(o);
            break;
        }
        for (size_t a = 0; a < n; a++) j->got[idx[a]] = as_lines(cJSON_GetArrayItem(rs, (int)a));
        j->batch_queries = (size_t)cJSON_GetObjectItem(o, "batch_queries")->valuedouble;
        cJSON_Delete(o);
    }
    hc_close(&c);
    return NULL;
}

static void compare(const topics *t, char **want, char **got, const char *what)
{
    for (size_t i = 0; i < t->n; i++) {
        ck_assert_msg(got[i] != NULL, "%s: topic %s got no answer", what, t->qid[i]);
        ck_assert_msg(strcmp(got[i], want[i]) == 0, "%s: topic %s: the server answered\n%s\nsearch printed\n%s", what,
                      t->qid[i], got[i], want[i]);
    }
}

/* A metric's value in the /metrics text (the first line starting with name and a space). */
static double metric(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ') return atof(p + n + 1);
    return -1;
}

/* /metrics once the metric name reads want, polled for up to 10 s: a response is counted once it
 * has left whole, which the client may see a moment before the server's thread counts it. */
static const char *metrics_when(const server *sv, const char *name, double want)
{
    const char *m = NULL;
    for (int tries = 0; tries < 500; tries++) {
        ck_assert_int_eq(http(sv, "GET", "/metrics", NULL, &m), 200);
        if (metric(m, name) == want) break;
        usleep(20000);
    }
    return m;
}

/* A generated collection straight into an index, with its topics. */
static void make_collection(char **idx, char **topics_path, uint32_t docs, uint32_t queries)
{
    gen_opts o;
    gen_defaults(&o);
    o.num_docs = docs;
    o.num_queries = queries;
    o.vocab_size = 5000;
    cls_build_opts b;
    cls_build_defaults(&b);
    b.threads = 1;
    *idx = tu_strdup(tu_tmp_path("serve.idx"));
    *topics_path = tu_strdup(tu_tmp_path("serve.tsv"));
    ck_assert_msg(gen_index(&o, &b, *idx, *topics_path) == CLS_OK, "gen_index: %s", cls_last_error());
}

/* Runs the topics through the server from `clients` threads, half the threads one query a request
 * at k1/mode1, the other half many queries a request at k2/mode2, every topic in both; each answer
 * is compared with search's. */
static void concurrent_equal(const server *sv, const char *idx, const char *topics_path, unsigned clients,
                             unsigned k1, const char *mode1, unsigned k2, const char *mode2)
{
    topics t;
    read_topics(topics_path, &t);
    char **want1 = expected(idx, topics_path, &t, k1, mode1), **want2 = expected(idx, topics_path, &t, k2, mode2);
    char **got1 = calloc(t.n, sizeof *got1), **got2 = calloc(t.n, sizeof *got2);
    job *jobs = calloc(2 * clients, sizeof *jobs);
    pthread_t *th = calloc(2 * clients, sizeof *th);
    ck_assert(got1 && got2 && jobs && th);
    for (unsigned c = 0; c < 2 * clients; c++) {
        int many = c % 2;
        jobs[c] = (job){.sv = sv, .t = &t, .first = c / 2, .step = clients, .k = many ? k2 : k1,
                        .mode = many ? mode2 : mode1, .per_request = many ? 3 : 1, .got = many ? got2 : got1};
        ck_assert(pthread_create(&th[c], NULL, run_job, &jobs[c]) == 0);
    }
    for (unsigned c = 0; c < 2 * clients; c++) {
        pthread_join(th[c], NULL);
        ck_assert_msg(jobs[c].status == 200, "client %u: status %d: %s", c, jobs[c].status, jobs[c].why);
    }
    char what[128];
    snprintf(what, sizeof what, "one query a request, k %u, %s", k1, mode1);
    compare(&t, want1, got1, what);
    snprintf(what, sizeof what, "three queries a request, k %u, %s", k2, mode2);
    compare(&t, want2, got2, what);
    /* every query was searched once per parameter set */
    const char *m;
    ck_assert_int_eq(http(sv, "GET", "/metrics", NULL, &m), 200);
    ck_assert_msg(metric(m, "clsearch_queries_total") == 2.0 * (double)t.n, "queries counted: %s", m);
    free_lines(want1, t.n), free_lines(want2, t.n), free_lines(got1, t.n), free_lines(got2, t.n);
    free(jobs), free(th);
    free_topics(&t);
}

/* ---- cases ---------------------------------------------------------------------------------- */

/* A server over a device set (three executors of the test device): answers under concurrency
 * equal `search --json`, several batches in flight at once; /health lists the executors and
 * /metrics counts each one's queries, together every query searched. */
START_TEST(serve_device_set_answers_equal_search)
{
    char *idx, *tp;
    make_collection(&idx, &tp, 3000, 48);
    server sv;
    char dev[256];
    snprintf(dev, sizeof dev, "%s,%s,%s", tu_device(), tu_device(), tu_device());
    start_server_on(&sv, idx, dev, "--max-batch 8 --max-wait-ms 1 --threads 4");
    concurrent_equal(&sv, idx, tp, 6, 10, "or", 5, "and-or");
    const char *r;
    ck_assert_int_eq(http(&sv, "GET", "/health", NULL, &r), 200);
    cJSON *o = cJSON_Parse(r);
    ck_assert(o);
    cJSON *ex = cJSON_GetObjectItem(o, "executors");
    ck_assert_msg(cJSON_GetArraySize(ex) == 3, "%s", r);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(ex, 2), "set_aside")));
    cJSON_Delete(o);
    ck_assert_int_eq(http(&sv, "GET", "/metrics", NULL, &r), 200);
    double total = 0, each = 0;
    const char *q = strstr(r, "\nclsearch_queries_total ");
    ck_assert(q && sscanf(q, "\nclsearch_queries_total %lf", &total) == 1 && total > 0);
    for (int i = 0; i < 3; i++) {
        char key[64];
        double v = -1;
        snprintf(key, sizeof key, "clsearch_executor_queries_total{executor=\"%d\"} ", i);
        const char *at = strstr(r, key);
        ck_assert_msg(at && sscanf(at + strlen(key), "%lf", &v) == 1, "%s", key);
        each += v;
    }
    ck_assert_msg(each == total, "executors %g, queries %g", each, total);
    stop_cleanly(&sv);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

START_TEST(serve_answers_equal_search)
{
    char *idx, *tp;
    make_collection(&idx, &tp, 3000, 48);
    server sv;
    start_server(&sv, idx, "--max-batch 16 --max-wait-ms 2 --threads 2");
    concurrent_equal(&sv, idx, tp, 4, 10, "or", 5, "and");
    /* GET /search: one query from the arguments, answered as the same query POSTed */
    topics t;
    read_topics(tp, &t);
    char path[2048] = "/search?k=7&mode=and-or&qid=g1&q=", *at = path + strlen(path);
    for (const unsigned char *c = (const unsigned char *)t.text[0]; *c && at < path + sizeof path - 4; c++)
        at += (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ? snprintf(at, 2, "%c", *c) : snprintf(at, 4, "%%%02X", *c);
    const char *r;
    ck_assert_int_eq(http(&sv, "GET", path, NULL, &r), 200);
    cJSON *o = cJSON_Parse(r);
    ck_assert(o);
    char *get = as_lines(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "results"), 0));
    cJSON_Delete(o);
    char *g1 = "g1";
    topics one = {&g1, t.text, 1};
    char *body = request_body(&one, 0, 1, 7, "and-or", 0);
    ck_assert_int_eq(http(&sv, "POST", "/search", body, &r), 200);
    o = cJSON_Parse(r);
    ck_assert(o);
    char *post = as_lines(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "results"), 0));
    cJSON_Delete(o);
    static const char first_hit[] = "{\"qid\":\"g1\",\"rank\":1,";
    ck_assert_msg(strncmp(get, first_hit, strlen(first_hit)) == 0 && strcmp(get, post) == 0,
                  "GET answered\n%s\nPOST answered\n%s", get, post);
    free(get), free(post), free(body);
    free_topics(&t);
    stop_cleanly(&sv);
    ck_assert_msg(strstr(server_stderr(&sv), "stopped:") != NULL, "%s", server_stderr(&sv));
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

/* Each bad request: its status and a JSON error saying so. */
static void expect_error(const server *sv, const char *method, const char *path, const char *body, int want,
                         const char *needle)
{
    const char *r;
    int st = http(sv, method, path, body, &r);
    ck_assert_msg(st == want, "%s %s %.80s: status %d, not %d: %s", method, path, body ? body : "", st, want, r);
    cJSON *o = cJSON_Parse(r);
    ck_assert_msg(o && cJSON_IsString(cJSON_GetObjectItem(o, "error")), "%s %s: not a JSON error: %s", method, path, r);
    ck_assert_int_eq((int)cJSON_GetObjectItem(o, "status")->valuedouble, want);
    ck_assert_msg(strstr(cJSON_GetObjectItem(o, "error")->valuestring, needle) != NULL, "%s %s: '%s' not in %s", method,
                  path, needle, r);
    cJSON_Delete(o);
}

/* Deadlines and routing: a server over the host executor and a device with --deadline-ms answers
 * as `search --json` does; a request past its deadline is answered, marked late and counted in
 * /metrics, one within it not; /health names each executor with its cost model; a bad
 * deadline_ms is refused. */
START_TEST(serve_deadlines)
{
    char *idx, *tp;
    make_collection(&idx, &tp, 3000, 48);
    server sv;
    char dev[256];
    snprintf(dev, sizeof dev, "host:1,%s", tu_device());
    start_server_on(&sv, idx, dev, "--max-batch 8 --max-wait-ms 1 --threads 4 --deadline-ms 600000");
    concurrent_equal(&sv, idx, tp, 4, 10, "or", 5, "and");
    const char *r;
    static const char *const bodies[2] = {"{\"query\": \"w1 w2\", \"deadline_ms\": 0.001}", "{\"query\": \"w1 w2\"}"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(http(&sv, "POST", "/search", bodies[i], &r), 200);
        cJSON *o = cJSON_Parse(r);
        ck_assert(o);
        ck_assert_msg(cJSON_IsBool(cJSON_GetObjectItem(o, "late")) &&
                          cJSON_IsTrue(cJSON_GetObjectItem(o, "late")) == (i == 0),
                      "%s: %s", bodies[i], r);
        ck_assert_msg(cJSON_GetObjectItem(o, "deadline_ms")->valuedouble == (i == 0 ? 0.001 : 600000), "%s", r);
        cJSON_Delete(o);
    }
    ck_assert_int_eq(http(&sv, "GET", "/metrics", NULL, &r), 200);
    ck_assert_msg(metric(r, "clsearch_deadline_misses_total") >= 1, "%s", r);
    ck_assert_msg(metric(r, "clsearch_deadline_requests_total") >= metric(r, "clsearch_queries_total") / 5, "%s", r);
    ck_assert_msg(strstr(r, "clsearch_executor_model_error{executor=\"1\"}"), "%s", r);
    ck_assert_int_eq(http(&sv, "GET", "/health", NULL, &r), 200);
    cJSON *o = cJSON_Parse(r);
    ck_assert(o);
    cJSON *ex = cJSON_GetObjectItem(o, "executors");
    ck_assert_msg(cJSON_GetArraySize(ex) == 2, "%s", r);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(ex, 0), "name")->valuestring, "host:1");
    ck_assert_msg(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(ex, 0), "model")->valuestring, "M/s"), "%s", r);
    ck_assert(cJSON_GetObjectItem(o, "deadline_ms")->valuedouble == 600000);
    cJSON_Delete(o);
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"deadline_ms\": -1}", 400, "deadline_ms");
    expect_error(&sv, "GET", "/search?q=a&deadline_ms=soon", NULL, 400, "deadline_ms");
    stop_cleanly(&sv);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

/* serve --rerank: the server's model re-ranks every request unless it says "rerank": false; the
 * answers equal `search --rerank --json` (score the model's, first_score the first stage's) and,
 * with "rerank": false, plain `search --json`; "rerank" takes true or false only (a client names
 * no file), true on a server without a model is a 400; a model that reads past the index's
 * feature table stops the server at its start. */
START_TEST(serve_rerank)
{
    char *idx, *tp;
    make_collection(&idx, &tp, 1500, 12);
    topics t;
    read_topics(tp, &t);
    char model[4096], extra[8192];
    const char *src = getenv("CLS_SOURCE_DIR");
    snprintf(model, sizeof model, "%s/tests/data/ltr/cacm_lgb.txt", src ? src : "..");
    snprintf(extra, sizeof extra, "--rerank '%s' --rerank-depth 40", model);
    server sv;
    start_server(&sv, idx, extra);
    char **want = expected_with(idx, tp, &t, 5, "or", extra), **plain = expected(idx, tp, &t, 5, "or");
    for (int off = 0; off < 3; off++) {
        /* the server's default (its model), "rerank": true, "rerank": false */
        char *body = request_body(&t, 0, t.n, 5, "or", 1);
        cJSON *o = cJSON_Parse(body);
        ck_assert(o);
        if (off) ck_assert(cJSON_AddBoolToObject(o, "rerank", off == 1));
        char *b2 = cJSON_PrintUnformatted(o);
        const char *r;
        ck_assert_int_eq(http(&sv, "POST", "/search", b2, &r), 200);
        cJSON *a = cJSON_Parse(r);
        ck_assert_msg(a, "%s", r);
        ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItem(a, "rerank")), off != 2);
        const cJSON *res;
        size_t i = 0;
        cJSON_ArrayForEach(res, cJSON_GetObjectItem(a, "results"))
        {
            char *got = as_lines(res);
            ck_assert_msg(strcmp(got, off == 2 ? plain[i] : want[i]) == 0, "rerank %d, topic %s: got\n%swant\n%s", off,
                          t.qid[i], got, off == 2 ? plain[i] : want[i]);
            free(got);
            i++;
        }
        ck_assert_uint_eq(i, t.n);
        cJSON_Delete(a);
        cJSON_Delete(o);
        free(b2);
        free(body);
    }
    const char *r;
    ck_assert_int_eq(http(&sv, "GET", "/search?q=w1+w2&k=3&rerank=false", NULL, &r), 200);
    ck_assert_msg(!strstr(r, "\"rerank\""), "%s", r);
    ck_assert_int_eq(http(&sv, "GET", "/search?q=w1+w2&k=3&rerank=true", NULL, &r), 200);
    ck_assert_msg(strstr(r, "\"rerank\":true"), "%s", r);
    expect_error(&sv, "POST", "/search", "{\"query\": \"w1\", \"rerank\": \"/etc/passwd\"}", 400, "true or false");
    expect_error(&sv, "POST", "/search", "{\"query\": \"w1\", \"rerank\": 1}", 400, "true or false");
    stop_cleanly(&sv);
    start_server_on(&sv, idx, "ref", "");
    expect_error(&sv, "POST", "/search", "{\"query\": \"w1\", \"rerank\": true}", 400, "no model");
    ck_assert_int_eq(http(&sv, "POST", "/search", "{\"query\": \"w1\", \"rerank\": false}", &r), 200);
    stop_cleanly(&sv);
    /* a model of 301 features on an index whose table has 34: refused before listening */
    const char *err;
    int rc = tu_cli(NULL, NULL, &err,
                    "serve -x '%s' -d ref --listen 127.0.0.1:0 --rerank '%s/tests/data/ltr/lgb_reg.txt'", idx,
                    src ? src : "..");
    ck_assert_msg(rc == 1 && strstr(err, "feature table"), "exit %d: %s", rc, err);
    rc = tu_cli(NULL, NULL, &err, "serve -x '%s' -d ref --rerank-depth 5", idx);
    ck_assert_msg(rc == 2 && strstr(err, "--rerank MODEL"), "exit %d: %s", rc, err);
    free_lines(want, t.n);
    free_lines(plain, t.n);
    free_topics(&t);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

START_TEST(serve_refuses_bad_requests)
{
    char *idx, *tp;
    const char *err;
    make_collection(&idx, &tp, 500, 4);
    server sv;
    start_server(&sv, idx, "--max-batch 4 --max-wait-ms 0");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\",", 400, "malformed JSON");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\"} x", 400, "text after");
    expect_error(&sv, "POST", "/search", "[1, 2]", 400, "must be a JSON object");
    expect_error(&sv, "POST", "/search", "", 400, "body is required");
    expect_error(&sv, "POST", "/search", "{\"k\": 3}", 400, "exactly one");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"queries\": []}", 400, "exactly one");
    expect_error(&sv, "POST", "/search", "{\"queries\": []}", 400, "non-empty list");
    expect_error(&sv, "POST", "/search", "{\"queries\": [\"a\"]}", 400, "must be an object");
    expect_error(&sv, "POST", "/search", "{\"queries\": [{\"query\": \"a\", \"k\": 1}]}", 400, "unknown field \"k\"");
    expect_error(&sv, "POST", "/search", "{\"query\": 7}", 400, "must be a string");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"k\": 0}", 400, "\"k\" must be a whole number from 1 to 1000");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"k\": 1001}", 400, "from 1 to 1000");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"k\": 2.5}", 400, "whole number");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"mode\": \"xor\"}", 400, "\"mode\" must be one of");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"b\": 2}", 400, "\"b\" must be a number from 0 to 1");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"k1\": -1}", 400, "\"k1\"");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"qid\": \"a b\"}", 400, "without white space");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"top\": 3}", 400, "unknown field \"top\"");
    expect_error(&sv, "POST", "/search", "{\"queries\": [{\"query\": \"a^2\"}, {\"qid\": \"w\", \"query\": \"b^0\"}]}", 400,
                 "query 'w': bad weight in 'b^0'");
    expect_error(&sv, "POST", "/search", "{\"queries\": [{\"query\": \"a\"}], \"qid\": \"1\"}", 400, "goes with");
    expect_error(&sv, "GET", "/search?q=a&k=ten", NULL, 400, "k=ten is not a number");
    expect_error(&sv, "GET", "/search?q=a&size=3", NULL, 400, "unknown field \"size\"");
    expect_error(&sv, "GET", "/search", NULL, 400, "exactly one");
    /* text: UTF-8 without NUL, named by field; qids unique (7 more 400s) */
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"qid\": \"\xff\xfe\"}", 400,
                 "field \"qid\" is not UTF-8 (byte 0xFF at offset 0)");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"qid\": \"a\\u0000b\"}", 400,
                 "field \"qid\" holds a NUL character");
    expect_error(&sv, "POST", "/search", "{\"queries\": [{\"query\": \"a\"}, {\"query\": \"b\\u0000\"}]}", 400,
                 "field \"queries[1].query\" holds a NUL character");
    expect_error(&sv, "POST", "/search", "{\"query\": \"a\", \"q\xc3id\": \"1\"}", 400, "a field name is not UTF-8");
    expect_error(&sv, "POST", "/search", "{\"queries\": [{\"qid\": \"x\", \"query\": \"a\"}, {\"qid\": \"x\", \"query\": \"b\"}]}",
                 400, "query id 'x' is given twice");
    expect_error(&sv, "POST", "/search", "{\"queries\": [{\"query\": \"a\"}, {\"qid\": \"1\", \"query\": \"b\"}]}", 400,
                 "query id '1' is given twice");
    expect_error(&sv, "GET", "/search?q=a&qid=a%00b", NULL, 400, "argument qid holds a NUL character");
    /* an escaped backslash before u0000 is text, not a NUL */
    const char *r;
    ck_assert_int_eq(http(&sv, "POST", "/search", "{\"query\": \"w1\", \"qid\": \"\\\\u0000\"}", &r), 200);
    /* limits: 413 */
    /* a body announced too large is refused from its headers (and the connection closed) */
    hc_conn c;
    int st;
    size_t rl;
    static const char announce[] = "POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 1048586\r\n\r\n";
    ck_assert(hc_connect(&c, "127.0.0.1", sv.port, 120) == 0);
    ck_assert(hc_raw(&c, announce, strlen(announce), &st, &r, &rl) == 0);
    ck_assert_msg(st == 413 && strstr(r, "over 1048576"), "announced: %d %s", st, r);
    hc_close(&c);
    /* a chunked body that grows too large is read to its end, dropped, and refused */
    static const char chunked[] = "POST /search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    size_t big = (1u << 20) + 10, hl = strlen(chunked);
    char *body = malloc(hl + big + 64);
    ck_assert(body);
    memcpy(body, chunked, hl);
    size_t at = hl + (size_t)sprintf(body + hl, "%zx\r\n", big);
    memset(body + at, ' ', big);
    memcpy(body + at + big, "\r\n0\r\n\r\n", 7);
    ck_assert(hc_connect(&c, "127.0.0.1", sv.port, 120) == 0);
    ck_assert(hc_raw(&c, body, at + big + 7, &st, &r, &rl) == 0);
    ck_assert_msg(st == 413 && strstr(r, "the body is over 1048576 bytes"), "chunked: %d %s", st, r);
    hc_close(&c);
    char *text = malloc(5000);
    ck_assert(text);
    memset(text, 'a', 4999);
    text[4999] = '\0';
    snprintf(body, big, "{\"query\": \"%s\"}", text);
    expect_error(&sv, "POST", "/search", body, 413, "at most 4096");
    strcpy(body, "{\"queries\": [");
    for (int i = 0; i < 1025; i++) strcat(body, i ? ",{\"query\":\"a\"}" : "{\"query\":\"a\"}");
    strcat(body, "]}");
    expect_error(&sv, "POST", "/search", body, 413, "1025 queries in one request; at most 1024");
    strcpy(body, "{\"k\": 1000, \"queries\": [");
    for (int i = 0; i < 101; i++) strcat(body, i ? ",{\"query\":\"a\"}" : "{\"query\":\"a\"}");
    strcat(body, "]}");
    expect_error(&sv, "POST", "/search", body, 413, "more than 100000 hits");
    free(body), free(text);
    /* paths and methods */
    expect_error(&sv, "GET", "/nowhere", NULL, 404, "no such path");
    expect_error(&sv, "DELETE", "/search", NULL, 405, "DELETE is not allowed");
    expect_error(&sv, "POST", "/health", "{}", 405, "not allowed on /health");
    expect_error(&sv, "PUT", "/metrics", "{}", 405, "not allowed on /metrics");
    /* 405 says what is allowed */
    ck_assert(hc_connect(&c, "127.0.0.1", sv.port, 120) == 0);
    char allow[64];
    ck_assert(hc_request(&c, "DELETE", "/search", NULL, 0, &st, &r, &rl) == 0 && st == 405);
    ck_assert(hc_header(&c, "Allow", allow, sizeof allow) && strcmp(allow, "GET, POST") == 0);
    /* the connection stays usable after an error */
    ck_assert(hc_request(&c, "GET", "/health", NULL, 0, &st, &r, &rl) == 0 && st == 200);
    hc_close(&c);
    /* not HTTP at all: libmicrohttpd's own 400 (0.9.x), or the connection closed unanswered
     * (1.0, Ubuntu 24.04's); the server serves the next request either way (below) */
    ck_assert(hc_connect(&c, "127.0.0.1", sv.port, 120) == 0);
    st = 0;
    int garbage = hc_raw(&c, "HELLO THERE\r\n\r\n", 15, &st, &r, &rl);
    ck_assert_msg(garbage != 0 || st == 400, "garbage: status %d", st);
    hc_close(&c);
    /* health and metrics */
    ck_assert_int_eq(http(&sv, "GET", "/health", NULL, &r), 200);
    cJSON *o = cJSON_Parse(r);
    ck_assert(o && strcmp(cJSON_GetObjectItem(o, "status")->valuestring, "ok") == 0);
    ck_assert(strlen(cJSON_GetObjectItem(o, "device")->valuestring) > 0);
    ck_assert_int_eq((int)cJSON_GetObjectItem(cJSON_GetObjectItem(o, "index"), "docs")->valuedouble, 500);
    cJSON_Delete(o);
    ck_assert_int_eq(http(&sv, "GET", "/search?q=w1", NULL, &r), 200);
    r = metrics_when(&sv, "clsearch_http_requests_total{path=\"/search\",code=\"200\"}", 2.0);
    ck_assert_msg(metric(r, "clsearch_http_requests_total{path=\"/search\",code=\"400\"}") == 30.0, "%s", r);
    ck_assert(metric(r, "clsearch_http_requests_total{path=\"/search\",code=\"413\"}") == 5.0);
    ck_assert(metric(r, "clsearch_http_requests_total{path=\"/search\",code=\"200\"}") == 2.0);
    ck_assert(metric(r, "clsearch_queries_total") == 2.0 && metric(r, "clsearch_batch_queries_count") == 2.0);
    ck_assert(metric(r, "clsearch_request_seconds_count") == 2.0);
    ck_assert(strstr(r, "clsearch_request_seconds{quantile=\"0.99\"}") != NULL);
    ck_assert(strstr(r, "clsearch_device_seconds_total{step=") != NULL);
    int rc = stop_server(&sv);
    ck_assert_msg(rc == 0, "exit %d after SIGTERM: %s", rc, server_stderr(&sv));
    /* the command's own usage errors, and an address it cannot have */
    rc = tu_run_cli("serve -x nothing --max-batch 0", &err);
    ck_assert_msg(rc == 2 && strstr(err, "--max-batch takes 1 to 65536"), "exit %d: %s", rc, err);
    rc = tu_run_cli("serve --max-wait-ms 5", &err);
    ck_assert_msg(rc == 2 && strstr(err, "-x INDEX is required"), "exit %d: %s", rc, err);
    char args[4200];
    snprintf(args, sizeof args, "serve -x '%s' -d %s --listen 127.0.0.1:99999", idx, tu_device());
    rc = tu_run_cli(args, &err);
    ck_assert_msg(rc == 1 && strstr(err, "port must be a number from 0 to 65535"), "exit %d: %s", rc, err);
    snprintf(args, sizeof args, "serve -x '%s' -d %s --listen 192.0.2.1:0", idx, tu_device());
    rc = tu_run_cli(args, &err);
    ck_assert_msg(rc == 1 && strstr(err, "cannot listen on 192.0.2.1:0"), "exit %d: %s", rc, err);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

/* Requests queued behind a long --max-wait-ms: one past the queue's room is refused 503; SIGTERM
 * answers the others at once, the oldest request's parameters in one batch, the other
 * parameters in another, with search's hits; the command exits 0 and the port is closed. */
typedef struct held {
    job j;
    pthread_t t;
} held;

START_TEST(serve_sigterm_answers_the_queue)
{
    char *idx, *tp;
    const char *r;
    make_collection(&idx, &tp, 2000, 12);
    topics t;
    read_topics(tp, &t);
    char **want_or = expected(idx, tp, &t, 10, "or"), **want_and = expected(idx, tp, &t, 5, "and");
    server sv;
    start_server(&sv, idx, "--max-batch 1000 --max-wait-ms 10000 --wait-when-idle --max-queue 11");
    /* five one-query OR requests (topics 0-4), three two-query AND requests (topics 5-10) */
    char **got_or = calloc(t.n, sizeof *got_or), **got_and = calloc(t.n, sizeof *got_and);
    ck_assert(got_or && got_and);
    held h[8];
    topics views[8];
    for (int i = 0; i < 8; i++) {
        int is_and = i >= 5;
        size_t a = is_and ? 5 + (size_t)(i - 5) * 2 : (size_t)i, n = is_and ? 2 : 1;
        views[i] = (topics){t.qid + a, t.text + a, n};
        h[i].j = (job){.sv = &sv, .t = &views[i], .first = 0, .step = 1, .k = is_and ? 5 : 10,
                       .mode = is_and ? "and" : "or", .per_request = n, .got = (is_and ? got_and : got_or) + a};
        ck_assert(pthread_create(&h[i].t, NULL, run_job, &h[i].j) == 0);
    }
    /* wait (not time) until all eleven queries are queued */
    double queued = 0;
    for (int tries = 0; tries < 6000 && queued < 11; tries++) {
        ck_assert_int_eq(http(&sv, "GET", "/metrics", NULL, &r), 200);
        queued = metric(r, "clsearch_queue_queries");
        if (queued < 11) usleep(20000);
    }
    ck_assert_msg(queued == 11, "queued: %g", queued);
    expect_error(&sv, "POST", "/search", "{\"query\": \"w1\"}", 503, "the queue is full");
    ck_assert(kill(sv.pid, SIGTERM) == 0);
    for (int i = 0; i < 8; i++) {
        pthread_join(h[i].t, NULL);
        ck_assert_msg(h[i].j.status == 200, "request %d: status %d: %s", i, h[i].j.status, h[i].j.why);
        ck_assert_msg(h[i].j.batch_queries == (i < 5 ? 5u : 6u), "request %d ran in a batch of %zu", i,
                      h[i].j.batch_queries);
    }
    for (size_t i = 0; i < 11; i++) {
        const char *got = i < 5 ? got_or[i] : got_and[i], *want = i < 5 ? want_or[i] : want_and[i];
        ck_assert_msg(got && strcmp(got, want) == 0, "topic %s: the server answered\n%s\nsearch printed\n%s", t.qid[i],
                      got ? got : "(nothing)", want);
    }
    int st;
    ck_assert(waitpid(sv.pid, &st, 0) == sv.pid);
    close(sv.out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, server_stderr(&sv));
    ck_assert_msg(strstr(server_stderr(&sv), "SIGTERM: no new connections; finishing 11 queued queries"), "%s",
                  server_stderr(&sv));
    hc_conn c;
    ck_assert_msg(hc_connect(&c, "127.0.0.1", sv.port, 5) != 0, "the port still takes connections");
    free_lines(want_or, t.n), free_lines(want_and, t.n), free_lines(got_or, t.n), free_lines(got_and, t.n);
    free_topics(&t);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

/* ---- text that is not UTF-8 -------------------------------------------------------------- */

/* Docnos holding bytes that are not UTF-8 come back as valid JSON, each such byte U+FFFD, the
 * same in the server's answer and in `search --json`; a topics file's qid likewise. */
START_TEST(serve_text_is_utf8)
{
    static const char trec[] = "<DOC>\n<DOCNO> d\xff\xfe" "1 </DOCNO>\n<TEXT>apple pie</TEXT>\n</DOC>\n"
                               "<DOC>\n<DOCNO> d\xe2\x82x </DOCNO>\n<TEXT>apple tart</TEXT>\n</DOC>\n";
    static const char topics_tsv[] = "\xff\xfe\tapple\n";
    char *src = tu_strdup(tu_tmp_path("utf8.trec")), *idx = tu_strdup(tu_tmp_path("utf8.idx"));
    char *tp = tu_strdup(tu_tmp_path("utf8.tsv"));
    tu_write_file(src, trec, strlen(trec));
    tu_write_file(tp, topics_tsv, strlen(topics_tsv));
    const char *err;
    int rc = tu_cli(NULL, NULL, &err, "index -q -c trec -o '%s' '%s'", idx, src);
    ck_assert_msg(rc == 0, "index: exit %d: %s", rc, err);
    const char *out = tu_tmp_path("utf8.json");
    rc = tu_cli(NULL, out, &err, "search -x '%s' -d %s -q '%s' --json", idx, tu_device(), tp);
    ck_assert_msg(rc == 0, "search: exit %d: %s", rc, err);
    size_t len;
    char *lines = (char *)tu_read_file(out, &len);
    /* ranks by score, ties by docID: d\xff\xfe1 first */
    static const char want[] = "{\"qid\":\"\xEF\xBF\xBD\xEF\xBF\xBD\",\"rank\":1,\"docno\":\"d\xEF\xBF\xBD\xEF\xBF\xBD" "1\",";
    ck_assert_msg(strncmp(lines, want, strlen(want)) == 0, "search --json printed %s", lines);
    ck_assert_msg(strstr(lines, "\"docno\":\"d\xEF\xBF\xBD\xEF\xBF\xBDx\"") != NULL, "search --json printed %s", lines);
    server sv;
    start_server(&sv, idx, "--max-wait-ms 0");
    const char *r;
    ck_assert_int_eq(http(&sv, "POST", "/search", "{\"query\": \"apple\"}", &r), 200);
    ck_assert_msg(strstr(r, "{\"rank\":1,\"docno\":\"d\xEF\xBF\xBD\xEF\xBF\xBD" "1\",") &&
                  strstr(r, "\"docno\":\"d\xEF\xBF\xBD\xEF\xBF\xBDx\""), "the server answered %s", r);
    ck_assert_int_eq(stop_server(&sv), 0);
    free(lines);
    remove(src), remove(idx), remove(tp), remove(out), remove(sv.err_path);
    free(src), free(idx), free(tp);
}
END_TEST

/* ---- hostile clients ------------------------------------------------------------------------ */

/* A connection from the loopback address src (Linux routes all of 127/8 to lo, so each address
 * is a client of its own) to the server, with a receive timeout of timeout_s. */
static int connect_from(const char *src, unsigned port, unsigned timeout_s)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    ck_assert(inet_pton(AF_INET, src, &a.sin_addr) == 1);
    ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind %s: %s", src, strerror(errno));
    struct timeval tv = {.tv_sec = timeout_s};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect from %s: %s", src, strerror(errno));
    return fd;
}

/* Reads to the end of the stream (the server closes it: every request here says
 * Connection: close): the status, or -1 when nothing came, and the text in body. */
static int read_to_end(int fd, char *body, size_t cap)
{
    size_t n = 0;
    ssize_t k;
    while (n < cap - 1 && (k = read(fd, body + n, cap - 1 - n)) > 0) n += (size_t)k;
    body[n] = '\0';
    int st = -1;
    if (sscanf(body, "HTTP/1.1 %d", &st) != 1) st = -1;
    return st;
}

/* One request from src with Connection: close: its status (-1: none), *secs the time it took. */
static int request_from(const char *src, unsigned port, const char *method, const char *path, const char *body,
                        double *secs, char *resp, size_t cap)
{
    double t0 = srv_clock();
    int fd = connect_from(src, port, 10);
    char req[1024];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, body ? strlen(body) : 0, body ? body : "");
    ck_assert(n > 0 && (size_t)n < sizeof req && write(fd, req, (size_t)n) == n);
    int st = read_to_end(fd, resp, cap);
    close(fd);
    *secs = srv_clock() - t0;
    return st;
}

/* A slow client: a request line and headers that announce a body, then a byte every 300 ms;
 * line_only: a request line that never ends instead. */
typedef struct slow {
    int fd;
    const char *src;
    double opened;
    int line_only;
} slow;

static void slow_open(slow *c, const char *src, unsigned port, int line_only)
{
    static const char head[] = "POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
    c->src = src;
    c->line_only = line_only;
    c->fd = connect_from(src, port, 10);
    c->opened = srv_clock();
    const char *first = line_only ? "GET /" : head;
    ck_assert(write(c->fd, first, strlen(first)) == (ssize_t)strlen(first));
}

/* One byte more on each; a connection the server closed is reopened, as an attacker would, and
 * its lifetime goes into *longest. Returns how many the server closed. */
static int slow_tick(slow *cs, size_t n, unsigned port, double *longest)
{
    int closed = 0;
    for (size_t i = 0; i < n; i++) {
        char b;
        ssize_t k = recv(cs[i].fd, &b, 1, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
            send(cs[i].fd, cs[i].line_only ? "a" : " ", 1, MSG_NOSIGNAL) != 1) {
            double life = srv_clock() - cs[i].opened;
            if (life > *longest) *longest = life;
            close(cs[i].fd);
            slow_open(&cs[i], cs[i].src, port, cs[i].line_only);
            closed++;
        }
    }
    return closed;
}

/* Slow clients cannot hold the server: a request must arrive whole within --request-timeout of
 * its request line and a request line within --timeout, bytes trickled or not; past the
 * connection limits (all of them, and one address's) the oldest connection without a whole
 * request makes room, so /health and /search answer at once, from the slow clients' own address
 * too; a newcomer with nothing to close for it is answered 503. Bounded: 22 sockets, 15 s. */
START_TEST(serve_slow_clients)
{
    char *idx, *tp;
    make_collection(&idx, &tp, 500, 4);
    server sv;
    start_server(&sv, idx, "--max-conns 12 --max-conns-per-ip 4 --request-timeout 2 --timeout 3 --threads 2");
    /* deadlines, below the limits: a trickled body and a trickled request line */
    slow two[2];
    slow_open(&two[0], "127.0.0.3", sv.port, 0);
    slow_open(&two[1], "127.0.0.4", sv.port, 1);
    double t0 = srv_clock(), closed_at[2] = {0, 0};
    while (srv_clock() - t0 < 6 && (!closed_at[0] || !closed_at[1])) {
        for (int i = 0; i < 2; i++) {
            if (closed_at[i]) continue;
            char b;
            ssize_t k = recv(two[i].fd, &b, 1, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                send(two[i].fd, i ? "a" : " ", 1, MSG_NOSIGNAL) != 1)
                closed_at[i] = srv_clock() - two[i].opened;
        }
        usleep(300000);
    }
    close(two[0].fd), close(two[1].fd);
    ck_assert_msg(closed_at[0] >= 1.5 && closed_at[0] <= 3.5, "a trickled body was cut after %.2f s, not about 2",
                  closed_at[0]);
    ck_assert_msg(closed_at[1] >= 2.5 && closed_at[1] <= 4.5, "a trickled request line was cut after %.2f s, not "
                  "about 3", closed_at[1]);
    /* 6 slow clients from 127.0.0.1 (4 allowed), 4 from each of 127.0.0.3 to 127.0.0.5: 18 for 12 */
    static const char *const srcs[] = {"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1",
                                       "127.0.0.3", "127.0.0.3", "127.0.0.3", "127.0.0.3", "127.0.0.4", "127.0.0.4",
                                       "127.0.0.4", "127.0.0.4", "127.0.0.5", "127.0.0.5", "127.0.0.5", "127.0.0.5"};
    enum { NSLOW = sizeof srcs / sizeof *srcs };
    slow cs[NSLOW];
    for (size_t i = 0; i < NSLOW; i++) slow_open(&cs[i], srcs[i], sv.port, i % 5 == 4);
    double longest = 0, worst = 0, secs;
    int answered = 0, closed = 0;
    char resp[65536];
    t0 = srv_clock();
    while (srv_clock() - t0 < 5) {
        closed += slow_tick(cs, NSLOW, sv.port, &longest);
        int st = request_from("127.0.0.1", sv.port, "GET", "/health", NULL, &secs, resp, sizeof resp);
        ck_assert_msg(st == 200, "/health from the slow clients' address: status %d after %.2f s: %s", st, secs, resp);
        worst = secs > worst ? secs : worst;
        st = request_from("127.0.0.2", sv.port, "POST", "/search", "{\"query\": \"w1 w2\"}", &secs, resp, sizeof resp);
        ck_assert_msg(st == 200, "/search: status %d after %.2f s: %s", st, secs, resp);
        worst = secs > worst ? secs : worst;
        answered += 2;
        usleep(300000);
    }
    for (size_t i = 0; i < NSLOW; i++) close(cs[i].fd);
    ck_assert_msg(worst < 1.0, "a well-behaved request took %.2f s", worst);
    ck_assert_msg(closed > 0 && longest <= 4.5, "slow connections: %d closed, the longest open %.2f s", closed, longest);
    const char *m = metrics_when(&sv, "clsearch_http_requests_total{path=\"/health\",code=\"200\"}", answered / 2);
    ck_assert_msg(metric(m, "clsearch_connections_closed_total{reason=\"room\"}") > 0 &&
                  metric(m, "clsearch_connections_closed_total{reason=\"request_timeout\"}") > 0 &&
                  metric(m, "clsearch_connections_closed_total{reason=\"idle_timeout\"}") > 0, "%s", m);
    ck_assert_int_eq(stop_server(&sv), 0);
    /* every connection of an address with a request being answered: the newcomer gets 503 */
    start_server(&sv, idx, "--max-conns-per-ip 2 --max-batch 1000 --max-wait-ms 10000 --wait-when-idle");
    int queued[2];
    static const char req[] = "POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\n{\"query\": \"w1\"}";
    for (int i = 0; i < 2; i++) {
        queued[i] = connect_from("127.0.0.6", sv.port, 60);
        ck_assert(write(queued[i], req, strlen(req)) == (ssize_t)strlen(req));
    }
    metrics_when(&sv, "clsearch_queue_queries", 2);
    int st = request_from("127.0.0.6", sv.port, "GET", "/health", NULL, &secs, resp, sizeof resp);
    ck_assert_msg(st == 503 && strstr(resp, "too many connections from this address (3 open, at most 2") &&
                  strstr(resp, "Connection: close"), "a third connection: %s", resp);
    st = request_from("127.0.0.7", sv.port, "GET", "/health", NULL, &secs, resp, sizeof resp);
    ck_assert_msg(st == 200, "another address: %s", resp);
    ck_assert(kill(sv.pid, SIGTERM) == 0);
    for (int i = 0; i < 2; i++) {
        st = read_to_end(queued[i], resp, sizeof resp);
        ck_assert_msg(st == 200, "a held request at SIGTERM: %s", resp);
        close(queued[i]);
    }
    int ws;
    ck_assert(waitpid(sv.pid, &ws, 0) == sv.pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    close(sv.out);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

/* ---- SIGTERM -------------------------------------------------------------------------------- */

/* A keep-alive client that sends searches until its connection closes: what it got. */
typedef struct hammer {
    unsigned port;
    int ok, busy, unanswered;
    char why[256];
} hammer;

static void *run_hammer(void *arg)
{
    hammer *h = arg;
    hc_conn c;
    if (hc_connect(&c, "127.0.0.1", h->port, 30) != 0) {
        h->unanswered = -1;
        return NULL;
    }
    for (unsigned i = 0; c.fd >= 0; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"query\": \"w%u w%u\", \"k\": 5}", 1 + i % 40, 2 + i % 17);
        int st;
        const char *r;
        size_t rl;
        /* the answer given while stopping says Connection: close, and hc closes its end */
        if (hc_request(&c, "POST", "/search", body, strlen(body), &st, &r, &rl) != 0) {
            h->unanswered++;
            break;
        }
        if (st == 200) h->ok++;
        else if (st == 503) h->busy++;
        else snprintf(h->why, sizeof h->why, "status %d: %.200s", st, r);
    }
    hc_close(&c);
    return NULL;
}

/* SIGTERM while keep-alive clients send searches back to back, one client is half way through
 * its body and another idles: every request received is answered (200, or 503 shutting down)
 * and its connection closed, the idle connection is closed, and the totals the server gives at
 * its exit are what the clients received. */
START_TEST(serve_sigterm_graceful)
{
    char *idx, *tp;
    make_collection(&idx, &tp, 2000, 4);
    server sv;
    start_server(&sv, idx, "--max-batch 8 --max-wait-ms 1 --threads 2");
    enum { NH = 6 };
    hammer h[NH];
    pthread_t th[NH];
    for (int i = 0; i < NH; i++) {
        h[i] = (hammer){.port = sv.port};
        ck_assert(pthread_create(&th[i], NULL, run_hammer, &h[i]) == 0);
    }
    hc_conn idle;
    int st;
    const char *r;
    size_t rl;
    ck_assert(hc_connect(&idle, "127.0.0.1", sv.port, 30) == 0);
    ck_assert(hc_request(&idle, "POST", "/search", "{\"query\": \"w1\"}", 15, &st, &r, &rl) == 0 && st == 200);
    int half = connect_from("127.0.0.1", sv.port, 30);
    static const char head[] = "POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\n{\"query\"";
    ck_assert(write(half, head, strlen(head)) == (ssize_t)strlen(head));
    usleep(800000);
    double t_term = srv_clock();
    ck_assert(kill(sv.pid, SIGTERM) == 0);
    usleep(300000);
    ck_assert(write(half, ": \"w1\"}", 7) == 7);
    char resp[4096];
    st = read_to_end(half, resp, sizeof resp);
    close(half);
    ck_assert_msg(st == 503 && strstr(resp, "shutting down") && strstr(resp, "Connection: close"),
                  "a request half sent at SIGTERM: %s", resp);
    int total_ok = 1, total_busy = 1; /* the idle client's 200, the half-sent request's 503 */
    for (int i = 0; i < NH; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(h[i].unanswered == 0 && !*h[i].why, "client %d: %d requests unanswered (%d answered 200, %d "
                      "503) %s", i, h[i].unanswered, h[i].ok, h[i].busy, h[i].why);
        total_ok += h[i].ok, total_busy += h[i].busy;
    }
    /* the idle connection is closed, not left to the end */
    char b;
    ck_assert_msg(read(idle.fd, &b, 1) == 0, "the idle connection was not closed");
    ck_assert_msg(srv_clock() - t_term < 5, "closed %.2f s after SIGTERM", srv_clock() - t_term);
    hc_close(&idle);
    int ws;
    ck_assert(waitpid(sv.pid, &ws, 0) == sv.pid);
    close(sv.out);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status %d: %s", ws, server_stderr(&sv));
    unsigned long long req = 0, q = 0, b2 = 0, err = 0, cut = 9;
    const char *line = strstr(server_stderr(&sv), "stopped: ");
    ck_assert_msg(line && sscanf(line, "stopped: %llu search requests answered, %llu queries in %llu batches, %llu "
                                 "error responses, %llu responses cut off", &req, &q, &b2, &err, &cut) == 5,
                  "%s", server_stderr(&sv));
    ck_assert_msg(req == (unsigned long long)total_ok && err == (unsigned long long)total_busy && cut == 0,
                  "the server counted %llu answers 200, %llu errors, %llu cut off; the clients received %d and %d: %s",
                  req, err, cut, total_ok, total_busy, line);
    ck_assert_msg(total_ok > 10, "only %d searches before SIGTERM", total_ok);
    remove(idx), remove(tp), remove(sv.err_path);
    free(idx), free(tp);
}
END_TEST

/* CACM's 64 topics, concurrently: OR at k 100 one a request, AND-OR at k 20 three a request. */
START_TEST(serve_cacm)
{
    char *idx = tu_strdup(tu_tmp_path("serve-cacm.idx"));
    const char *err;
    char args[8192];
    snprintf(args, sizeof args, "index -c html -o '%s' '%s' -q", idx, tu_data_path("cacm/cacm.tar.gz"));
    int rc = tu_run_cli(args, &err);
    ck_assert_msg(rc == 0, "index: exit %d: %s", rc, err);
    server sv;
    start_server(&sv, idx, "--max-batch 32 --max-wait-ms 2");
    concurrent_equal(&sv, idx, tu_data_path("cacm/topics.cacm.txt"), 4, 100, "or", 20, "and-or");
    rc = stop_server(&sv);
    ck_assert_msg(rc == 0, "exit %d after SIGTERM: %s", rc, server_stderr(&sv));
    remove(idx), remove(sv.err_path);
    free(idx);
}
END_TEST

static Suite *plain(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("serve");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, serve_answers_equal_search);
    tcase_add_test(tc, serve_device_set_answers_equal_search);
    tcase_add_test(tc, serve_deadlines);
    tcase_add_test(tc, serve_refuses_bad_requests);
    tcase_add_test(tc, serve_rerank);
    tcase_add_test(tc, serve_sigterm_answers_the_queue);
    tcase_add_test(tc, serve_text_is_utf8);
    tcase_add_test(tc, serve_slow_clients);
    tcase_add_test(tc, serve_sigterm_graceful);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data(void)
{
    Suite *s = suite_create("serve_data");
    TCase *tc = tcase_create("cacm");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, serve_cacm);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cacm/cacm.tar.gz", "cacm/topics.cacm.txt", NULL};
    return tu_main(argc, argv, plain, data, needs);
}
