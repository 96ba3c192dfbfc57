/* Concurrency, against the reference engine: many threads searching through one engine (the
 * POCL device's, $CLS_TEST_DEVICE, and the reference engine's), many threads keeping several
 * asynchronous searches in flight on one device set (three executors), many threads each with its own
 * engine over one index starting together on an empty program cache, and many processes
 * starting together on an empty program cache. Every result of every search equals what a
 * reference engine that nothing else touches returns for the same batch and parameters: the
 * same hits in the same order and the same score bits.
 *
 * The ThreadSanitizer build (-DCLSEARCH_TSAN=ON, tools/test.sh's build-tsan) runs this suite and
 * nothing else: a data race in the library fails it there even where the results come out
 * right. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clsearch.h"
#include "engine/engine.h"
#include "generate.h"
#include "testutil.h"

#define THREADS 8
#define PROCESSES 8

/* ---- the collection and its reference answers ------------------------------------------------ */

/* Every mode at a small and a large k, at the default BM25 parameters and at others, so that
 * searches running side by side disagree about the norms the engine holds. */
#define NPARAMS 12
static cls_search_params params[NPARAMS];

static cls_index *idx;
static cls_batch *batch;
static cls_results *ref[NPARAMS]; /* a reference engine's answer to batch under params[i] */
static char **texts;              /* the topics' texts, for cls_engine_search_text */
static size_t ntexts;
static char index_path[4096], topics_path[4096];

static int add_topic(void *u, const char *qid, const char *text)
{
    if (cls_batch_add(batch, qid, text) != CLS_OK) return 1;
    char **t = realloc(texts, (ntexts + 1) * sizeof *texts);
    if (!t) return 1;
    texts = t;
    texts[ntexts++] = tu_strdup(text);
    return 0;
}

/* A generated collection of 4,000 documents (the dense OR row: no partition kernels to build)
 * and 150 queries, with the reference engine's answers; the queries find hits in every mode. */
static void fixture(void)
{
    gen_opts g;
    gen_defaults(&g);
    g.seed = 1307;
    g.num_docs = 4000;
    g.num_queries = 150;
    g.vocab_size = 3000;
    cls_build_opts b = {0};
    cls_build_defaults(&b);
    snprintf(index_path, sizeof index_path, "%s", tu_tmp_path("conc.idx"));
    snprintf(topics_path, sizeof topics_path, "%s", tu_tmp_path("conc.topics"));
    ck_assert_msg(gen_index(&g, &b, index_path, topics_path) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_index_open(index_path, &idx) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_batch_create(idx, &batch), CLS_OK);
    ck_assert_msg(cls_topics_read(CLS_TOPICS_TSV, topics_path, add_topic, NULL) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(cls_batch_count(batch), ntexts);
    static const cls_mode modes[] = {CLS_MODE_OR, CLS_MODE_AND, CLS_MODE_AND_OR};
    static const uint32_t ks[] = {10, 1000};
    static const float bm25[][2] = {{0.9f, 0.4f}, {1.2f, 0.75f}};
    cls_engine *re;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &re), CLS_OK);
    for (int i = 0; i < NPARAMS; i++) {
        cls_search_defaults(&params[i]);
        params[i].mode = modes[i % 3];
        params[i].k = ks[i / 3 % 2];
        params[i].k1 = bm25[i / 6][0];
        params[i].b = bm25[i / 6][1];
        ck_assert_int_eq(cls_results_create(&ref[i]), CLS_OK);
        ck_assert_msg(cls_engine_search(re, batch, &params[i], ref[i]) == CLS_OK, "%s", cls_last_error());
        /* never a vacuous comparison: some query of every parameter set has hits */
        size_t hits = 0;
        for (size_t q = 0; q < ntexts; q++) {
            size_t n;
            const uint32_t *d;
            const float *s;
            cls_results_get(ref[i], q, &n, &d, &s);
            hits += n;
        }
        ck_assert_msg(hits > 0, "parameter set %d: the reference finds nothing", i);
    }
    cls_engine_free(re);
}

static void fixture_free(void)
{
    for (int i = 0; i < NPARAMS; i++) cls_results_free(ref[i]);
    for (size_t i = 0; i < ntexts; i++) free(texts[i]);
    free(texts);
    texts = NULL;
    ntexts = 0;
    cls_batch_free(batch);
    cls_index_close(idx);
    remove(index_path);
    remove(topics_path);
}

/* Query q of a (qa) against query q of b (qb): the same docIDs in order and the same score bits.
 * 0, or 1 with the first difference in why. Only reads the results: threads call it. */
static int differ(const cls_results *a, size_t qa, const cls_results *b, size_t qb, char *why, size_t len)
{
    size_t na, nb;
    const uint32_t *da, *db;
    const float *sa, *sb;
    cls_results_get(a, qa, &na, &da, &sa);
    cls_results_get(b, qb, &nb, &db, &sb);
    if (na != nb) return snprintf(why, len, "%zu hits against the reference's %zu", na, nb), 1;
    for (size_t j = 0; j < na; j++)
        if (da[j] != db[j] || memcmp(&sa[j], &sb[j], sizeof *sa) != 0)
            return snprintf(why, len, "rank %zu: doc %u score %.9g against the reference's doc %u score %.9g", j + 1,
                            da[j], (double)sa[j], db[j], (double)sb[j]),
                   1;
    return 0;
}

/* ---- threads ----------------------------------------------------------------------------------- */

typedef struct worker {
    unsigned id;
    cls_engine *engine;         /* shared; NULL: the worker creates its own on spec */
    const char *spec;
    pthread_barrier_t *start;   /* every worker begins at once */
    unsigned rounds, sets;      /* each round: sets parameter sets, from the worker's own on */
    unsigned inflight;          /* 0: synchronous searches; else cls_engine_submit, this many at once */
    unsigned searches;          /* done and checked */
    char error[1024];           /* the first failure; "" when none */
} worker;

static void record(worker *w, const char *what, int c)
{
    if (!w->error[0])
        snprintf(w->error, sizeof w->error, "thread %u, %s, k %u, k1 %g: %s", w->id, cls_mode_name(params[c].mode),
                 params[c].k, (double)params[c].k1, what);
}

/* The results of a search of batch under params[c], checked query by query. */
static void check_results(worker *w, int c, const cls_results *r)
{
    char why[512], what[640];
    if (cls_results_count(r) != ntexts) {
        snprintf(what, sizeof what, "%zu queries answered of %zu", cls_results_count(r), ntexts);
        record(w, what, c);
        return;
    }
    for (size_t q = 0; q < ntexts; q++)
        if (differ(r, q, ref[c], q, why, sizeof why)) {
            snprintf(what, sizeof what, "query %s: %s", cls_batch_qid(batch, q), why);
            record(w, what, c);
            return;
        }
    w->searches++;
}

/* One batch search under params[c] (r: the worker's own results), checked query by query. */
static void search_checked(worker *w, cls_engine *e, int c, cls_results *r)
{
    char what[640];
    if (cls_engine_search(e, batch, &params[c], r) != CLS_OK) {
        snprintf(what, sizeof what, "cls_engine_search: %s", cls_last_error());
        record(w, what, c);
        return;
    }
    check_results(w, c, r);
}

/* One query through cls_engine_search_text, whose batch the engine keeps and every thread reuses. */
static void search_text_checked(worker *w, cls_engine *e, int c, size_t q, cls_results *r)
{
    char why[512], what[640];
    if (cls_engine_search_text(e, texts[q], &params[c], r) != CLS_OK) {
        snprintf(what, sizeof what, "cls_engine_search_text: %s", cls_last_error());
        record(w, what, c);
    } else if (cls_results_count(r) != 1 || differ(r, 0, ref[c], q, why, sizeof why)) {
        snprintf(what, sizeof what, "query %s alone: %s", cls_batch_qid(batch, q),
                 cls_results_count(r) != 1 ? "not one result" : why);
        record(w, what, c);
    } else {
        w->searches++;
    }
}

/* w->inflight searches submitted at once under consecutive parameter sets from c0, then waited
 * for (the last first, so that some finish long before their wait) and checked. */
static void submit_checked(worker *w, cls_engine *e, int c0, cls_results **rs)
{
    cls_search *in[4] = {0};
    char what[640];
    for (unsigned i = 0; i < w->inflight; i++) {
        int c = (c0 + (int)i) % NPARAMS;
        if (cls_engine_submit(e, batch, &params[c], rs[i], &in[i]) != CLS_OK) {
            snprintf(what, sizeof what, "cls_engine_submit: %s", cls_last_error());
            record(w, what, c);
        }
    }
    for (unsigned i = w->inflight; i-- > 0;) {
        int c = (c0 + (int)i) % NPARAMS;
        if (!in[i]) continue;
        if (i % 2 == 0)
            while (!cls_search_done(in[i])) sched_yield();
        if (cls_search_wait(in[i]) != CLS_OK) {
            snprintf(what, sizeof what, "cls_search_wait: %s", cls_last_error());
            record(w, what, c);
        } else {
            check_results(w, c, rs[i]);
        }
        cls_search_free(in[i]);
    }
}

/* sets parameter sets a round, each worker starting at its own, so that different modes, k and
 * BM25 parameters meet on the engine; odd workers also search one query at a time between
 * batches. */
static void *work(void *arg)
{
    worker *w = arg;
    cls_results *r = NULL, *rs[4] = {0};
    cls_engine *own = NULL;
    int bad = 0;
    for (unsigned i = 0; i < w->inflight; i++) bad |= cls_results_create(&rs[i]) != CLS_OK;
    if (bad || cls_results_create(&r) != CLS_OK) {
        snprintf(w->error, sizeof w->error, "thread %u: cls_results_create: %s", w->id, cls_last_error());
        pthread_barrier_wait(w->start);
        return NULL;
    }
    pthread_barrier_wait(w->start);
    cls_engine *e = w->engine;
    if (!e) {
        if (cls_engine_create(idx, w->spec, &own) != CLS_OK) {
            snprintf(w->error, sizeof w->error, "thread %u: cls_engine_create(%s): %s", w->id, w->spec, cls_last_error());
            cls_results_free(r);
            return NULL;
        }
        e = own;
    }
    for (unsigned round = 0; round < w->rounds && !w->error[0]; round++)
        for (int j = 0; j < (int)w->sets && !w->error[0]; j++) {
            int c = (int)((w->id + (unsigned)j) % NPARAMS);
            if (w->inflight && j % 2 == 0) submit_checked(w, e, c, rs);
            else search_checked(w, e, c, r);
            if (w->id % 2 && !w->error[0]) search_text_checked(w, e, c, (w->id * 37 + (unsigned)j * 11) % ntexts, r);
        }
    cls_engine_free(own);
    cls_results_free(r);
    for (unsigned i = 0; i < w->inflight; i++) cls_results_free(rs[i]);
    return NULL;
}

/* n workers, on the shared engine e or (e NULL) each on its own engine on spec, each searching
 * rounds x sets times (inflight: as run_workers_async); all must pass. */
static void run_workers_async(cls_engine *e, const char *spec, unsigned n, unsigned rounds, unsigned sets,
                              unsigned inflight)
{
    worker w[THREADS];
    pthread_t t[THREADS];
    pthread_barrier_t start;
    ck_assert(n <= THREADS);
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, n), 0);
    for (unsigned i = 0; i < n; i++) {
        w[i] = (worker){.id = i, .engine = e, .spec = spec, .start = &start, .rounds = rounds, .sets = sets,
                        .inflight = inflight};
        ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    unsigned searches = 0, want = 0;
    for (unsigned i = 0; i < n; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        searches += w[i].searches;
        for (unsigned j = 0; j < sets; j++)
            want += rounds * (inflight && j % 2 == 0 ? inflight : 1) + (i % 2 ? rounds : 0);
    }
    pthread_barrier_destroy(&start);
    for (unsigned i = 0; i < n; i++) ck_assert_msg(!w[i].error[0], "%s", w[i].error);
    ck_assert_uint_eq(searches, want);
}

static void run_workers(cls_engine *e, const char *spec, unsigned n, unsigned rounds, unsigned sets)
{
    run_workers_async(e, spec, n, rounds, sets, 0);
}

START_TEST(threads_share_a_device_engine)
{
    fixture();
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &e) == CLS_OK, "%s", cls_last_error());
    run_workers(e, NULL, THREADS, 2, NPARAMS);
    cls_engine_free(e);
    fixture_free();
}
END_TEST

/* An engine over the device list spec, searches split from 16 queries, shared by THREADS / 2
 * threads keeping `inflight` searches in flight. */
static void threads_submit_to(const char *spec, unsigned inflight)
{
    fixture();
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, spec, &e) == CLS_OK, "%s: %s", spec, cls_last_error());
    sched_set_split_min(engine_sched(e), 16);
    sched_set_split_always(engine_sched(e), 1);
    run_workers_async(e, NULL, THREADS / 2, 1, NPARAMS, inflight);
    cls_engine_free(e);
    fixture_free();
}

/* A device set of three executors on the test device, shared by threads that keep three
 * searches in flight (cls_engine_submit) between synchronous ones and single queries: searches
 * run whole on an executor or split over the free ones (parts of 16 queries and more), side by
 * side with other threads' searches, and every result is the reference's. */
START_TEST(threads_submit_to_a_device_set)
{
    char spec[256];
    snprintf(spec, sizeof spec, "%s,%s,%s", tu_device(), tu_device(), tu_device());
    threads_submit_to(spec, 3);
}
END_TEST

/* The host executor (three threads) beside the test device, shared by threads that keep searches
 * in flight between synchronous ones: the host's pool and the scheduler's split between the two
 * kinds under many callers, every result the reference's. */
START_TEST(threads_share_the_host_executor_and_a_device)
{
    char spec[256];
    snprintf(spec, sizeof spec, "host:3,%s", tu_device());
    threads_submit_to(spec, 2);
}
END_TEST

START_TEST(threads_share_a_reference_engine)
{
    fixture();
    cls_engine *e;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &e), CLS_OK);
    /* three sets a thread: the eight threads still cover all twelve, at a quarter of the work
     * (the reference engine is the slow one, the more so under ThreadSanitizer) */
    run_workers(e, NULL, THREADS, 1, 3);
    cls_engine_free(e);
    fixture_free();
}
END_TEST

/* Each thread its own engine on the one index, created at once on an empty program cache: the
 * threads compile (or find) the same programs side by side. */
START_TEST(threads_each_own_engine_one_index)
{
    const char *dir = tu_tmp_path("conc-cache");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", dir, 1);
    fixture();
    run_workers(NULL, tu_device(), THREADS, 1, NPARAMS);
    fixture_free();
}
END_TEST

/* ---- processes ----------------------------------------------------------------------------------- */

/* PROCESSES commands started at once on an empty program cache, in the combinations of mode (each
 * the library names) and k in turn; each run equals, byte for byte, the reference engine's run of
 * its combination (the same tag, so the same text). */
#define COMBOS (2 * CLS_NUM_MODES)
static const char *combo_mode(int c) { return cls_mode_name((cls_mode)(c % CLS_NUM_MODES)); }
static int combo_k(int c) { return c < CLS_NUM_MODES ? 1000 : 10; }

START_TEST(processes_share_the_program_cache)
{
    fixture();
    const char *dir = tu_tmp_path("conc-pcache");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", dir, 1);
    char runs[PROCESSES][4096], refs[COMBOS][4096];
    const char *err;
    for (int c = 0; c < COMBOS; c++) {
        snprintf(refs[c], sizeof refs[c], "%s", tu_tmp_path("conc.ref"));
        int rc = tu_cli(NULL, "/dev/null", &err, "search -x '%s' -q '%s' -d ref -m %s -k %d -o '%s'", index_path,
                        topics_path, combo_mode(c), combo_k(c), refs[c]);
        ck_assert_msg(rc == 0, "the reference run: exit %d: %s", rc, err);
    }
    for (int i = 0; i < PROCESSES; i++) snprintf(runs[i], sizeof runs[i], "%s", tu_tmp_path("conc.run"));
    pid_t kids[PROCESSES];
    for (int i = 0; i < PROCESSES; i++) {
        kids[i] = fork();
        ck_assert(kids[i] >= 0);
        if (kids[i] == 0) {
            const char *e;
            int c = i % COMBOS;
            int rc = tu_cli(NULL, "/dev/null", &e, "search -x '%s' -q '%s' -d '%s' -m %s -k %d -o '%s'", index_path,
                            topics_path, tu_device(), combo_mode(c), combo_k(c), runs[i]);
            if (rc != 0) fprintf(stderr, "process %d: exit %d: %s\n", i, rc, e);
            _exit(rc == 0 ? 0 : 1);
        }
    }
    for (int i = 0; i < PROCESSES; i++) {
        int st;
        ck_assert(waitpid(kids[i], &st, 0) == kids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d failed", i);
    }
    for (int i = 0; i < PROCESSES; i++) {
        int c = i % COMBOS;
        size_t nr, nf;
        unsigned char *run = tu_read_file(runs[i], &nr), *want = tu_read_file(refs[c], &nf);
        ck_assert_msg(nf > 0, "the reference run %s is empty", refs[c]);
        ck_assert_msg(nr == nf && memcmp(run, want, nr) == 0, "process %d (%s, k %d): its run differs from the reference's",
                      i, combo_mode(c), combo_k(c));
        free(run);
        free(want);
        remove(runs[i]);
    }
    for (int c = 0; c < COMBOS; c++) remove(refs[c]);
    fixture_free();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("concurrency");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, threads_share_a_device_engine);
    tcase_add_test(tc, threads_submit_to_a_device_set);
    tcase_add_test(tc, threads_share_the_host_executor_and_a_device);
    tcase_add_test(tc, threads_share_a_reference_engine);
    tcase_add_test(tc, threads_each_own_engine_one_index);
    suite_add_tcase(s, tc);
    TCase *pc = tcase_create("processes");
    tcase_set_timeout(pc, 600);
    tcase_add_test(pc, processes_share_the_program_cache);
    suite_add_tcase(s, pc);
    return s;
}

int main(int argc, char **argv) { return tu_main(argc, argv, suite, NULL, NULL); }
