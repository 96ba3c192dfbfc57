/* The clsearch command, run as a separate process: every failure gives a non-zero exit (2 for bad
 * usage, 1 otherwise), a message on stderr that says what went wrong, no crash and no partial
 * output file; queries that match nothing are not failures; compare and devices behave. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cJSON.h>

#include "clsearch.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* A private folder per test, so "no leftover temporary file" checks see only this test's files. */
static char work[4096];

static void make_work(void)
{
    snprintf(work, sizeof work, "%s", tu_tmp_path("cli"));
    ck_assert_msg(mkdir(work, 0755) == 0, "mkdir %s: %s", work, strerror(errno));
}

/* Removes the test's folder; called at the end of a passing test (a failing one leaves it for a
 * look). */
static void rm_work(void)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    ck_assert_int_eq(system(cmd), 0);
}

/* work/name. Each call gets its own string, valid for the rest of the test (kept reachable in a
 * static table, so no leak report). */
static const char *wp(const char *name)
{
    static char *kept[1024];
    static size_t nkept;
    ck_assert(nkept < sizeof kept / sizeof *kept);
    size_t len = strlen(work) + strlen(name) + 2;
    char *p = malloc(len);
    ck_assert(p != NULL);
    snprintf(p, len, "%s/%s", work, name);
    kept[nkept++] = p;
    return p;
}

static void put(const char *name, const char *text) { tu_write_file(wp(name), text, strlen(text)); }

/* Names in work containing ".tmp." (temporary files the command should have removed). */
static int leftover_tmp(void)
{
    DIR *d = opendir(work);
    ck_assert(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* Formats the arguments and runs the command; *err receives stderr. */
static int cli(const char **err, const char *fmt, ...)
{
    char args[6000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tu_run_cli(args, err);
}


/* Whether two files hold the same bytes, and at least one. */
static int same_nonempty_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
    int same = la > 0 && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A failure: exit want (or any of 1..127 when want is 0), needle (and needle2, if any) on
 * stderr, and, when out is given, no file at out and no temporary file left in the folder. */
static void expect_fail(int rc, const char *err, int want, const char *needle, const char *needle2, const char *out,
                        const char *what)
{
    ck_assert_msg(rc > 0 && rc < 128, "%s: exit %d (stderr: %s)", what, rc, err);
    if (want) ck_assert_msg(rc == want, "%s: exit %d, expected %d (stderr: %s)", what, rc, want, err);
    ck_assert_msg(strncmp(err, "clsearch: ", 10) == 0, "%s: stderr does not start with 'clsearch: ': %s", what, err);
    ck_assert_msg(strstr(err, needle) != NULL, "%s: stderr lacks '%s': %s", what, needle, err);
    if (needle2) ck_assert_msg(strstr(err, needle2) != NULL, "%s: stderr lacks '%s': %s", what, needle2, err);
    ck_assert_msg(strstr(err, "AddressSanitizer") == NULL && strstr(err, "runtime error") == NULL,
                  "%s: sanitizer report: %s", what, err);
    if (out) {
        ck_assert_msg(!tu_exists(out), "%s: output %s exists after the failure", what, out);
        ck_assert_msg(leftover_tmp() == 0, "%s: a temporary file is left in %s", what, work);
    }
}

/* The small collection: "apple" (stemmed) is in d1, d2, d4; "juice" in d2, d5. */
static const char *CORPUS =
    "{\"id\": \"d1\", \"contents\": \"The apple pie recipe with apples\"}\n"
    "{\"id\": \"d2\", \"contents\": \"Banana bread and apple juice\"}\n"
    "{\"id\": \"d3\", \"contents\": \"Cherry tart\"}\n"
    "{\"id\": \"d4\", \"contents\": \"An apple a day keeps the doctor away\"}\n"
    "{\"id\": \"d5\", \"contents\": \"Grape juice and cherry soda\"}\n";

/* Writes the corpus and indexes it through the command; returns the index path. */
static const char *make_index(void)
{
    put("corpus.jsonl", CORPUS);
    const char *idx = wp("c.idx"), *err;
    int rc = cli(&err, "index -c jsonl -o '%s' '%s'", idx, wp("corpus.jsonl"));
    ck_assert_msg(rc == 0, "index: exit %d: %s", rc, err);
    ck_assert(tu_exists(idx));
    return idx;
}

/* Lines of a run file whose first field is qid; docnos of those lines appended to seen. */
static int run_lines(const char *run, const char *qid, char *seen, size_t cap)
{
    FILE *f = fopen(run, "r");
    ck_assert_msg(f != NULL, "cannot open run %s", run);
    char line[1024], q[256], q0[16], doc[256], tag[256];
    long rank;
    double score;
    int n = 0;
    if (seen) seen[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(sscanf(line, "%255s %15s %255s %ld %lf %255s", q, q0, doc, &rank, &score, tag) == 6,
                      "bad run line: %s", line);
        ck_assert_str_eq(q0, "Q0");
        if (strcmp(q, qid) != 0) continue;
        n++;
        ck_assert_int_eq(rank, n);
        ck_assert(score > 0);
        if (seen) {
            strncat(seen, doc, cap - strlen(seen) - 2);
            strncat(seen, " ", cap - strlen(seen) - 1);
        }
    }
    fclose(f);
    return n;
}

/* ---- index ------------------------------------------------------------------------------- */

START_TEST(index_errors)
{
    make_work();
    const char *out = wp("out.idx"), *err;
    int rc;

    /* a malformed third line: its line number in the message */
    put("bad.jsonl", "{\"id\": \"a\", \"contents\": \"one\"}\n"
                     "{\"id\": \"b\", \"contents\": \"two\"}\n"
                     "{\"id\": \"c\", \"contents\": \"unterminated}\n"
                     "{\"id\": \"d\", \"contents\": \"four\"}\n");
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", out, wp("bad.jsonl"));
    expect_fail(rc, err, 1, "bad.jsonl:3: not valid JSON", "nothing written", out, "malformed JSONL line");

    /* a good file, then a bad one: still nothing written */
    put("good.jsonl", CORPUS);
    rc = cli(&err, "index -c jsonl -o '%s' '%s' '%s'", out, wp("good.jsonl"), wp("bad.jsonl"));
    expect_fail(rc, err, 1, "bad.jsonl:3:", "nothing written", out, "good then malformed");

    /* a wrong field: the line number again */
    put("nocontents.jsonl", "{\"id\": \"a\", \"contents\": \"one\"}\n{\"id\": \"b\", \"text\": \"two\"}\n");
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", out, wp("nocontents.jsonl"));
    expect_fail(rc, err, 1, ":2: missing \"contents\"", NULL, out, "missing contents");

    /* a docno with a space */
    put("spacedocno.jsonl", "{\"id\": \"a b\", \"contents\": \"one\"}\n");
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", out, wp("spacedocno.jsonl"));
    expect_fail(rc, err, 1, "docno", NULL, out, "docno with a space");

    /* a missing file */
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", out, wp("missing.jsonl"));
    expect_fail(rc, err, 1, "missing.jsonl", "No such file", out, "missing corpus");

    /* an unknown format: usage error */
    rc = cli(&err, "index -c xml -o '%s' '%s'", out, wp("good.jsonl"));
    expect_fail(rc, err, 2, "unknown collection format 'xml'", NULL, out, "unknown -c");
    rc = cli(&err, "index -o '%s' '%s'", out, wp("good.jsonl"));
    expect_fail(rc, err, 2, "-c", NULL, out, "no -c");
    rc = cli(&err, "index -c jsonl '%s'", wp("good.jsonl"));
    expect_fail(rc, err, 2, "-o INDEX is required", NULL, NULL, "no -o");
    rc = cli(&err, "index -c jsonl -o '%s'", out);
    expect_fail(rc, err, 2, "no INPUT", NULL, out, "no input");

    /* BEIR without _id on line 2 */
    put("beir.jsonl", "{\"_id\": \"x1\", \"title\": \"T\", \"text\": \"body one\"}\n"
                      "{\"title\": \"T2\", \"text\": \"body two\"}\n");
    rc = cli(&err, "index -c beir -o '%s' '%s'", out, wp("beir.jsonl"));
    expect_fail(rc, err, 1, "beir.jsonl:2: missing \"_id\"", NULL, out, "BEIR without _id");

    /* an output path in a missing folder: the index is not written, and the message says where */
    const char *deep = wp("nofolder/out.idx");
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", deep, wp("good.jsonl"));
    expect_fail(rc, err, 1, "nofolder", "cannot write", NULL, "-o in a missing folder");
    ck_assert(!tu_exists(wp("nofolder")));
    ck_assert_int_eq(leftover_tmp(), 0);
    /* ... and it is found before any input is read: a missing input is not what it reports */
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", deep, wp("missing.jsonl"));
    expect_fail(rc, err, 1, "index: cannot write", "nofolder: No such file or directory", NULL, "-o checked first");
    ck_assert_msg(strstr(err, "missing.jsonl") == NULL, "the input was read before the output was checked: %s", err);
    /* an output that is a folder */
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", work, wp("good.jsonl"));
    expect_fail(rc, err, 1, "it is a folder", NULL, NULL, "-o onto a folder");

    /* and the good file alone works, leaving only the index */
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", out, wp("good.jsonl"));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert(tu_exists(out));
    ck_assert_int_eq(leftover_tmp(), 0);
    rm_work();
}
END_TEST

/* What index says: the summary line with tokens and both rates (without -q, on a file as on a
 * terminal), and with -v each stage of the build and the peak memory, with --shards the cut too;
 * the numbers only read, never judged (tests never time anything). */
START_TEST(index_reports_stages)
{
    make_work();
    put("corpus.jsonl", CORPUS);
    const char *err;
    int rc = cli(&err, "index -v -c jsonl -o '%s' '%s'", wp("v.idx"), wp("corpus.jsonl"));
    ck_assert_msg(rc == 0, "index -v: exit %d: %s", rc, err);
    const char *want[] = {"indexed 5 documents", " tokens in ", " MB/s, ", " M tokens/s, ",
                          "stage reading and analysis: ", "stage analysis still in flight: ",
                          "stage sorting runs (overlapping the analysis; budget ",
                          "stage inversion (dictionary and last run sorted by term): ",
                          "stage merging and encoding (bp, block 128): ", "stage layout (chunks in order): ",
                          "stage writing: ", "peak memory: ", "stored fields:"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(strstr(err, want[i]), "index -v: no '%s' in: %s", want[i], err);
    ck_assert_msg(!strstr(err, "stage cutting"), "%s", err);
    /* the summary counts the corpus's tokens (stopwords out: 19 indexed) */
    unsigned long long tokens = 0;
    const char *sum = strstr(err, "), ");
    ck_assert_msg(sum && sscanf(sum, "), %llu tokens in", &tokens) == 1 && tokens == 19, "%s", err);
    /* the peak is a positive number of MB */
    double peak = 0;
    ck_assert_msg(sscanf(strstr(err, "peak memory: "), "peak memory: %lf MB", &peak) == 1 && peak > 0, "%s", err);
    /* without -v: the summary line only; -q: nothing */
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", wp("v.idx"), wp("corpus.jsonl"));
    ck_assert_msg(rc == 0 && strstr(err, "M tokens/s") && !strstr(err, "stage ") && !strstr(err, "peak memory"), "%s",
                  err);
    rc = cli(&err, "index -q -c jsonl -o '%s' '%s'", wp("v.idx"), wp("corpus.jsonl"));
    ck_assert_msg(rc == 0 && err[0] == '\0', "%s", err);
    /* --shards: the cut is a stage, the set is what was written */
    rc = cli(&err, "index -v --shards 2 -c jsonl -o '%s' '%s'", wp("s"), wp("corpus.jsonl"));
    ck_assert_msg(rc == 0, "index -v --shards: exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "stage cutting into 2 shards: ") && strstr(err, "(2 shards): ") &&
                  strstr(err, "s.1: documents") && strstr(err, "peak memory: "), "%s", err);
    ck_assert(tu_exists(wp("s.0")) && tu_exists(wp("s.1")) && !tu_exists(wp("s")));
    ck_assert_int_eq(leftover_tmp(), 0);
    rm_work();
}
END_TEST


/* Inputs read whole or not at all: an archive cut short (a tar between two entries, as a file
 * and through a pipe) and a zip through a pipe are errors naming the input, an input without
 * documents is one unless --allow-empty, and none of them writes or replaces the output. */
START_TEST(index_inputs_whole)
{
    make_work();
    const char *out = wp("out.idx"), *err;
    int rc;
    char cmd[9000];

    /* a tar of two pages, and its first page alone: cut where the second entry starts */
    ck_assert_int_eq(mkdir(wp("pages"), 0755), 0);
    put("pages/a.html", "<html><title>a</title>first page</html>");
    put("pages/b.html", "<html><title>b</title>second page</html>");
    snprintf(cmd, sizeof cmd, "tar --format=gnu -cf '%s' -C '%s' a.html b.html && head -c 1024 '%s' > '%s'",
             wp("pages.tar"), wp("pages"), wp("pages.tar"), wp("cut.tar"));
    ck_assert_int_eq(system(cmd), 0);
    rc = cli(&err, "index -q -c html -o '%s' '%s'", out, wp("pages.tar"));
    ck_assert_msg(rc == 0, "the whole tar: exit %d: %s", rc, err);
    ck_assert_int_eq(rename(out, wp("keep.idx")), 0);
    rc = cli(&err, "index -c html -o '%s' '%s'", out, wp("cut.tar"));
    expect_fail(rc, err, 1, "cut.tar: the tar archive ends without its two end-of-archive blocks", "nothing written",
                out, "a tar cut between two entries");
    rc = tu_cli(wp("cut.tar"), NULL, &err, "index -c html -o '%s' /dev/stdin", out);
    expect_fail(rc, err, 1, "/dev/stdin: the tar archive ends without", NULL, out, "the cut tar through a pipe");
    rc = tu_cli(wp("pages.tar"), NULL, &err, "index -q -c html -o '%s' /dev/stdin", out);
    ck_assert_msg(rc == 0, "the whole tar through a pipe: exit %d: %s", rc, err);
    remove(out);

    /* a zip through a pipe: its entries are listed at its end */
    struct archive *a = archive_write_new();
    ck_assert_int_eq(archive_write_set_format_zip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open_filename(a, wp("pages.zip")), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    static const char page[] = "<html><title>z</title>zipped page</html>";
    archive_entry_set_pathname(e, "z.html");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, sizeof page - 1);
    ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_data(a, page, sizeof page - 1), (la_ssize_t)sizeof page - 1);
    archive_entry_free(e);
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    rc = cli(&err, "index -q -c html -o '%s' '%s'", out, wp("pages.zip"));
    ck_assert_msg(rc == 0, "the zip: exit %d: %s", rc, err);
    remove(out);
    rc = tu_cli(wp("pages.zip"), NULL, &err, "index -c html -o '%s' /dev/stdin", out);
    expect_fail(rc, err, 1, "/dev/stdin: a zip archive compressed or read from a pipe", NULL, out, "a zip through a pipe");

    /* inputs without documents: an empty JSONL file (alone, or after a good one), a folder with no
     * page; the index already there stays as it was */
    put("good.jsonl", CORPUS);
    put("empty.jsonl", "");
    ck_assert_int_eq(mkdir(wp("nopages"), 0755), 0);
    put("nopages/notes.txt", "not a page");
    ck_assert_int_eq(rename(wp("keep.idx"), out), 0);
    size_t keep_len;
    unsigned char *keep = tu_read_file(out, &keep_len);
    struct {
        const char *fmt, *first, *second, *needle;
    } empties[] = {{"jsonl", "empty.jsonl", NULL, "empty.jsonl holds no jsonl documents"},
                   {"jsonl", "good.jsonl", "empty.jsonl", "empty.jsonl holds no jsonl documents"},
                   {"html", "nopages", NULL, "nopages holds no html documents"}};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        const char *second = empties[i].second ? wp(empties[i].second) : "";
        rc = cli(&err, "index -c %s -o '%s' '%s' %s%s%s", empties[i].fmt, out, wp(empties[i].first),
                 *second ? "'" : "", second, *second ? "'" : "");
        ck_assert_msg(rc == 1 && strstr(err, empties[i].needle) && strstr(err, "--allow-empty") &&
                          strstr(err, "nothing written"),
                      "%s: exit %d: %s", empties[i].needle, rc, err);
        size_t now_len;
        unsigned char *now = tu_read_file(out, &now_len);
        ck_assert_msg(now_len == keep_len && memcmp(now, keep, keep_len) == 0, "%s: the index was replaced",
                      empties[i].needle);
        free(now);
        ck_assert_int_eq(leftover_tmp(), 0);
    }
    free(keep);
    remove(out);
    rc = cli(&err, "index -c jsonl -o '%s' '%s'", out, wp("empty.jsonl"));
    expect_fail(rc, err, 1, "holds no jsonl documents", NULL, out, "empty JSONL, no index before");
    rc = cli(&err, "index -q -c jsonl --allow-empty -o '%s' '%s'", out, wp("empty.jsonl"));
    ck_assert_msg(rc == 0 && tu_exists(out), "--allow-empty: exit %d: %s", rc, err);
    rc = tu_cli(NULL, wp("stats.txt"), &err, "stats '%s'", out);
    ck_assert_msg(rc == 0 && strstr(slurp(wp("stats.txt")), "documents") != NULL, "stats: exit %d: %s", rc, err);
    rm_work();
}
END_TEST

/* -c files reads a folder within it: a link out of it (x -> /etc/passwd) is skipped with a note,
 * a link inside is read as its target; --follow-links reads them all. */
START_TEST(index_files_links)
{
    make_work();
    const char *out = wp("out.idx"), *err;
    ck_assert(mkdir(wp("tree"), 0755) == 0 && mkdir(wp("outside"), 0755) == 0 && mkdir(wp("only"), 0755) == 0);
    put("tree/a.txt", "alpha words");
    put("outside/secret.txt", "secret words");
    ck_assert_int_eq(symlink("/etc/passwd", wp("tree/x")), 0);
    ck_assert_int_eq(symlink("../outside/secret.txt", wp("tree/s.txt")), 0);
    ck_assert_int_eq(symlink("a.txt", wp("tree/in.txt")), 0);
    int rc = cli(&err, "index -c files -o '%s' '%s'", out, wp("tree"));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "skipped 2 symbolic links leading out of the input folder (--follow-links"), "%s", err);
    rc = tu_cli(NULL, wp("run.txt"), &err, "search -x '%s' -d ref -k 10 'secret alpha root'", out);
    ck_assert_msg(rc == 0, "search: exit %d: %s", rc, err);
    const char *run = slurp(wp("run.txt"));
    ck_assert_msg(strstr(run, " a.txt ") && strstr(run, " in.txt ") && !strstr(run, " x ") && !strstr(run, " s.txt "),
                  "%s", run);
    rc = cli(&err, "index -c files --follow-links -o '%s' '%s'", out, wp("tree"));
    ck_assert_msg(rc == 0 && !strstr(err, "note:"), "--follow-links: exit %d: %s", rc, err);
    rc = tu_cli(NULL, wp("run.txt"), &err, "search -x '%s' -d ref -k 10 'secret alpha root'", out);
    run = slurp(wp("run.txt"));
    ck_assert_msg(rc == 0 && strstr(run, " x ") && strstr(run, " s.txt "), "--follow-links: %s", run);
    /* only links out of a folder that is otherwise empty: no documents, and the message says why */
    put("only/.keep", "");
    ck_assert_int_eq(symlink("/etc/passwd", wp("only/x")), 0);
    rc = cli(&err, "index -c files -o '%s' '%s'", out, wp("only"));
    ck_assert_msg(rc == 1 && strstr(err, "1 link leading out of it skipped: --follow-links"), "exit %d: %s", rc, err);
    rm_work();
}
END_TEST

/* ---- search failures ---------------------------------------------------------------------- */

START_TEST(search_errors)
{
    make_work();
    const char *idx = make_index(), *run = wp("run.txt"), *err;
    put("topics.tsv", "q1\tapple\nq2\tjuice\n");
    const char *topics = wp("topics.tsv");
    int rc;

    /* a truncated index */
    struct stat st;
    ck_assert_int_eq(stat(idx, &st), 0);
    FILE *src = fopen(idx, "rb");
    ck_assert(src != NULL);
    char *bytes = malloc((size_t)st.st_size);
    ck_assert(fread(bytes, 1, (size_t)st.st_size, src) == (size_t)st.st_size);
    fclose(src);
    const size_t cuts[] = {0, 10, 64, 400, (size_t)st.st_size / 2};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        tu_write_file(wp("trunc.idx"), bytes, cuts[i]);
        rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", wp("trunc.idx"), topics, run);
        expect_fail(rc, err, 1, "opening the index", "damaged or foreign file", run, "truncated index");
    }
    tu_write_file(wp("trunc.idx"), bytes, (size_t)st.st_size / 2);
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", wp("trunc.idx"), topics, run);
    expect_fail(rc, err, 1, "truncated", NULL, run, "truncated index (mid-file)");
    free(bytes);

    /* a file that is not an index */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", wp("corpus.jsonl"), topics, run);
    expect_fail(rc, err, 1, "not a clsearch index", NULL, run, "non-index file");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", wp("missing.idx"), topics, run);
    expect_fail(rc, err, 1, "missing.idx", "No such file", run, "missing index");

    /* devices that do not exist */
    rc = cli(&err, "search -x '%s' -q '%s' -d 9:9 -o '%s'", idx, topics, run);
    ck_assert_msg(strstr(err, "no OpenCL platform") != NULL || strstr(err, "'9:9'") != NULL, "-d 9:9: %s", err);
    expect_fail(rc, err, 1, "starting the engine", "no such OpenCL device", run, "-d 9:9");
    rc = cli(&err, "search -x '%s' -q '%s' -d bogus -o '%s'", idx, topics, run);
    expect_fail(rc, err, 1, "unknown device 'bogus'", NULL, run, "-d bogus");

    /* k and mode out of range: usage errors */
    static const char *bad_k[] = {"0", "-3", "abc", "100001", "", "1.5", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_k / sizeof *bad_k; i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "k must be a whole number from 1 to 100000, not '%s'", bad_k[i]);
        rc = cli(&err, "search -x '%s' -q '%s' -d ref -k '%s' -o '%s'", idx, topics, bad_k[i], run);
        expect_fail(rc, err, 2, needle, NULL, run, "bad -k");
    }
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -m xor -o '%s'", idx, topics, run);
    expect_fail(rc, err, 2, "unknown query mode 'xor' (or, and, and-or)", NULL, run, "-m xor");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -f csv -o '%s'", idx, topics, run);
    expect_fail(rc, err, 2, "unknown topics format 'csv'", NULL, run, "-f csv");
    rc = cli(&err, "search -x '%s' -d ref -o '%s'", idx, run);
    expect_fail(rc, err, 2, "-q TOPICS", NULL, run, "no -q");

    /* topics in the wrong format */
    put("anserini.txt", "<DOC>\n<DOCNO> 1 </DOCNO>\napple pie\n</DOC>\n");
    rc = cli(&err, "search -x '%s' -q '%s' -f tsv -d ref -o '%s'", idx, wp("anserini.txt"), run);
    expect_fail(rc, err, 1, "anserini.txt:1: expected qid<TAB>text", "reading topics", run, "<DOC> file as TSV");
    put("notab.tsv", "q1\tapple\nq2 apple pie\nq3\tjuice\n");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("notab.tsv"), run);
    expect_fail(rc, err, 1, "notab.tsv:2: expected qid<TAB>text", NULL, run, "TSV line without a tab");
    put("notdoc.txt", "q1\tapple\n");
    rc = cli(&err, "search -x '%s' -q '%s' -f anserini -d ref -o '%s'", idx, wp("notdoc.txt"), run);
    expect_fail(rc, err, 1, "notdoc.txt:1:", "reading topics", run, "TSV file as <DOC>");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("missing.tsv"), run);
    expect_fail(rc, err, 1, "missing.tsv", "No such file", run, "missing topics");

    /* a malformed weight (term^w): exit 1 naming the query and the token, no run */
    static const char *bad_w[] = {"apple^0", "apple^-1", "apple^abc", "apple^", "^"};
    for (size_t i = 0; i < sizeof bad_w / sizeof *bad_w; i++) {
        char text[64], needle[96];
        snprintf(text, sizeof text, "q1\tapple^2 juice\nq2\tjuice %s pie\n", bad_w[i]);
        snprintf(needle, sizeof needle, "query 'q2': bad weight in '%s'", bad_w[i]);
        put("weights.tsv", text);
        rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("weights.tsv"), run);
        expect_fail(rc, err, 1, needle, NULL, run, "a bad weight");
    }

    /* the run path in a missing folder: exit 1, nothing created */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, topics, wp("nofolder/run.txt"));
    expect_fail(rc, err, 1, "nofolder", NULL, NULL, "-o in a missing folder");
    ck_assert(!tu_exists(wp("nofolder")));
    ck_assert_int_eq(leftover_tmp(), 0);

    /* ... checked before the index is opened: a missing index is not what it reports */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", wp("missing.idx"), topics, wp("nofolder/run.txt"));
    expect_fail(rc, err, 1, "search: cannot write", "nofolder: No such file or directory", NULL, "-o checked first");
    ck_assert_msg(strstr(err, "missing.idx") == NULL, "the index was opened before the output was checked: %s", err);

    /* the run path is a folder: refused before the search, no temporary file */
    ck_assert_int_eq(mkdir(wp("rundir"), 0755), 0);
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, topics, wp("rundir"));
    expect_fail(rc, err, 1, "rundir", "it is a folder", NULL, "-o onto a folder");
    ck_assert_int_eq(leftover_tmp(), 0);
    /* the run to stdout, and stdout full: the write error is reported */
    if (tu_exists("/dev/full")) {
        rc = tu_cli(NULL, "/dev/full", &err, "search -x '%s' -q '%s' -d ref", idx, topics);
        expect_fail(rc, err, 1, "writing the run", "No space left", NULL, "stdout full");
    }

    /* after all that, the same search succeeds and leaves only the run */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, topics, run);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_int_eq(run_lines(run, "q1", NULL, 0), 3);
    ck_assert_int_eq(leftover_tmp(), 0);
    rm_work();
}
END_TEST

/* ---- queries without results, and k beyond the matches ------------------------------------- */

static void check_search(const char *device)
{
    const char *idx = wp("c.idx"), *topics = wp("topics.tsv"), *err;
    char run[4200], seen[1024];
    snprintf(run, sizeof run, "%s/run-%s.txt", work, device);
    int rc = cli(&err, "search -x '%s' -q '%s' -d %s -k 10 -v -o '%s'", idx, topics, device, run);
    ck_assert_msg(rc == 0, "-d %s: exit %d: %s", device, rc, err);
    static const char *none[] = {"qe", "qs", "qu", "qp"};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_msg(run_lines(run, none[i], NULL, 0) == 0, "-d %s: %s has results", device, none[i]);
        char needle[64];
        snprintf(needle, sizeof needle, "query %s: no results", none[i]);
        ck_assert_msg(strstr(err, needle) != NULL, "-d %s: stderr lacks '%s': %s", device, needle, err);
    }
    ck_assert_msg(strstr(err, "query qa: no results") == NULL, "-d %s: %s", device, err);
    /* k 10 > matches: all of them */
    ck_assert_int_eq(run_lines(run, "qa", seen, sizeof seen), 3);
    ck_assert_msg(strstr(seen, "d1 ") && strstr(seen, "d2 ") && strstr(seen, "d4 "), "qa: %s", seen);
    ck_assert_int_eq(run_lines(run, "qj", NULL, 0), 4);
    ck_assert_int_eq(leftover_tmp(), 0);

    /* AND: only d2 has both; k 2 cuts qa to two */
    snprintf(run, sizeof run, "%s/run-%s-and.txt", work, device);
    rc = cli(&err, "search -x '%s' -q '%s' -d %s -k 2 -m and -o '%s'", idx, topics, device, run);
    ck_assert_msg(rc == 0, "-d %s -m and: exit %d: %s", device, rc, err);
    ck_assert_int_eq(run_lines(run, "qj", seen, sizeof seen), 1);
    ck_assert_str_eq(seen, "d2 ");
    ck_assert_int_eq(run_lines(run, "qa", NULL, 0), 2);
    ck_assert_int_eq(run_lines(run, "qe", NULL, 0), 0);
}

START_TEST(search_no_results_and_large_k)
{
    make_work();
    make_index();
    put("topics.tsv", "qe\t\n"                      /* empty */
                      "qs\tthe of and to a\n"       /* all stopwords */
                      "qa\tapple\n"
                      "qu\tzyzzyx qwertyuiop\n"     /* only unknown terms */
                      "qp\t  ,.;!  \n"              /* punctuation only */
                      "qj\tapple juice\n");
    check_search("ref");
    check_search("cpu");
    /* the two engines agree: compare (scores within 1e-5) says so, and the runs are the same
     * bytes, since the device's scores are the reference's bit for bit (test_kernels checks the
     * bits; a run holds six decimals). check_search has seen hits in both. */
    const char *err;
    int rc = cli(&err, "compare '%s' '%s'", wp("run-ref.txt"), wp("run-cpu.txt"));
    ck_assert_msg(rc == 0, "compare ref cpu: exit %d: %s", rc, err);
    rc = cli(&err, "compare '%s' '%s'", wp("run-ref-and.txt"), wp("run-cpu-and.txt"));
    ck_assert_msg(rc == 0, "compare ref cpu (and): exit %d: %s", rc, err);
    ck_assert_msg(same_nonempty_file(wp("run-ref.txt"), wp("run-cpu.txt")), "the ref and cpu runs differ");
    ck_assert_msg(same_nonempty_file(wp("run-ref-and.txt"), wp("run-cpu-and.txt")), "the ref and cpu AND runs differ");
    /* the largest k on the reference engine: still all matches */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -k 100000 -o '%s'", wp("c.idx"), wp("topics.tsv"), wp("big.txt"));
    ck_assert_msg(rc == 0, "k 100000: exit %d: %s", rc, err);
    ck_assert_int_eq(run_lines(wp("big.txt"), "qa", NULL, 0), 3);
    ck_assert_int_eq(run_lines(wp("big.txt"), "qj", NULL, 0), 4);
    rm_work();
}
END_TEST

/* An index of no documents, and one of documents without terms: every query is empty. (The
 * second corpus starts with a document without terms, which the builder must handle too.) */
START_TEST(search_empty_indexes)
{
    make_work();
    put("topics.tsv", "qa\tapple\nqe\t\n");
    const char *err;
    int rc;
    put("none.jsonl", "");
    put("noterms.jsonl", "{\"id\": \"a\", \"contents\": \"\"}\n{\"id\": \"b\", \"contents\": \"the of\"}\n");
    static const char *names[] = {"none", "noterms"}, *devs[] = {"ref", "cpu"};
    for (size_t i = 0; i < 2; i++) {
        char corpus[64], index[64];
        snprintf(corpus, sizeof corpus, "%s.jsonl", names[i]);
        snprintf(index, sizeof index, "%s.idx", names[i]);
        rc = cli(&err, "index -c jsonl --allow-empty -o '%s' '%s'", wp(index), wp(corpus));
        ck_assert_msg(rc == 0, "index %s: exit %d: %s", names[i], rc, err);
        for (size_t j = 0; j < 2; j++) {
            const char *run = wp("empty-run.txt");
            rc = cli(&err, "search -x '%s' -q '%s' -d %s -v -o '%s'", wp(index), wp("topics.tsv"), devs[j], run);
            ck_assert_msg(rc == 0, "%s -d %s: exit %d: %s", names[i], devs[j], rc, err);
            ck_assert_msg(strstr(err, "query qa: no results") != NULL, "%s -d %s: %s", names[i], devs[j], err);
            ck_assert_str_eq(slurp(run), "");
            remove(run);
        }
    }
    rm_work();
}
END_TEST

/* ---- check ---------------------------------------------------------------------------------- */

/* check on a good index: exit 0, "INDEX: ok" on stdout, -v says what it checked. On a copy with a
 * flipped byte in the postings words (which opening does not hash): it still opens (stats works),
 * but check exits 1 naming the section, and so do searches, on ref and on the device, before
 * reading a posting. Usage errors exit 2. */
START_TEST(check_good_and_damaged)
{
    make_work();
    const char *idx = make_index(), *err;
    put("topics.tsv", "qa\tapple\n");
    int rc = tu_cli(NULL, wp("check.txt"), &err, "check '%s'", idx);
    ck_assert_msg(rc == 0, "check: exit %d: %s", rc, err);
    char want[4200];
    snprintf(want, sizeof want, "%s: ok\n", idx);
    ck_assert_str_eq(slurp(wp("check.txt")), want);
    rc = cli(&err, "check '%s' -v --threads 3", idx);
    ck_assert_msg(rc == 0 && strstr(err, "opened") && strstr(err, "checked in") && strstr(err, "3 thread"),
                  "check -v: exit %d: %s", rc, err);

    /* the postings section: entry 8 of the table after the 128-byte header */
    size_t len;
    unsigned char *img = tu_read_file(idx, &len);
    uint64_t off, size;
    memcpy(&off, img + 128 + 7 * 32 + 8, 8);
    memcpy(&size, img + 128 + 7 * 32 + 16, 8);
    ck_assert(size > 0 && off + size <= len);
    img[off + size / 2] ^= 0x5A;
    const char *bad = wp("bad.idx");
    tu_write_file(bad, img, len);
    free(img);
    rc = cli(&err, "stats '%s'", bad);
    ck_assert_msg(rc == 0, "stats of a file with damaged postings: exit %d: %s", rc, err);
    rc = cli(&err, "check '%s'", bad);
    expect_fail(rc, err, 1, "checking the index", "section 'postings': checksum mismatch", NULL, "check damaged");
    static const char *devs[] = {"ref", "cpu"};
    for (int i = 0; i < 2; i++) {
        const char *run = wp("run.txt");
        rc = cli(&err, "search -x '%s' -q '%s' -d %s -o '%s'", bad, wp("topics.tsv"), devs[i], run);
        expect_fail(rc, err, 1, "section 'postings': checksum mismatch", NULL, run, devs[i]);
    }

    rc = cli(&err, "check");
    expect_fail(rc, err, 2, "usage: clsearch check", NULL, NULL, "check without an index");
    rc = cli(&err, "check '%s' --threads 0", idx);
    expect_fail(rc, err, 2, "--threads", NULL, NULL, "check --threads 0");
    rc = cli(&err, "check '%s' '%s'", idx, bad);
    expect_fail(rc, err, 2, "usage: clsearch check", NULL, NULL, "check with two indexes");
    rc = cli(&err, "check '%s'", wp("missing.idx"));
    expect_fail(rc, err, 1, "opening the index", "missing.idx", NULL, "check a missing file");
    rm_work();
}
END_TEST

/* ---- generate, compare, devices ------------------------------------------------------------ */

START_TEST(generate_under_a_file)
{
    make_work();
    put("plain", "a regular file\n");
    const char *err;
    int rc = cli(&err, "generate -o '%s' --docs 10 --queries 2", wp("plain/sub"));
    expect_fail(rc, err, 1, "Not a directory", "generating the collection", NULL, "generate under a file");
    rc = cli(&err, "generate -o '%s' --docs 10 --queries 2", wp("plain"));
    expect_fail(rc, err, 1, "Not a directory", NULL, NULL, "generate onto a file");
    ck_assert_str_eq(slurp(wp("plain")), "a regular file\n");
    ck_assert_int_eq(leftover_tmp(), 0);
    rc = cli(&err, "generate -o '%s' --docs 0", wp("gen"));
    expect_fail(rc, err, 2, "--docs", NULL, wp("gen"), "generate --docs 0");
    /* and into a fresh folder it works */
    rc = cli(&err, "generate -o '%s' --docs 10 --queries 2", wp("gen"));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert(tu_exists(wp("gen/corpus.jsonl")) && tu_exists(wp("gen/topics.tsv")));
    rm_work();
}
END_TEST

START_TEST(compare_runs)
{
    make_work();
    put("a.txt", "1 Q0 d1 1 2.500000 x\n1 Q0 d2 2 1.250000 x\n2 Q0 d3 1 0.700000 x\n");
    put("a2.txt", "1 Q0 d1 1 2.500000 other\n1 Q0 d2 2 1.250000 other\n2 Q0 d3 1 0.700000 other\n");
    put("docno.txt", "1 Q0 d1 1 2.500000 x\n1 Q0 d9 2 1.250000 x\n2 Q0 d3 1 0.700000 x\n");
    put("score.txt", "1 Q0 d1 1 2.500000 x\n1 Q0 d2 2 1.350000 x\n2 Q0 d3 1 0.700000 x\n");
    put("short.txt", "1 Q0 d1 1 2.500000 x\n1 Q0 d2 2 1.250000 x\n");
    put("junk.txt", "this is not a run\n");
    const char *out = wp("stdout.txt"), *err;
    int rc = tu_cli(NULL, out, &err, "compare '%s' '%s'", wp("a.txt"), wp("a.txt"));
    ck_assert_msg(rc == 0, "identical: exit %d: %s", rc, err);
    ck_assert(strstr(slurp(out), "identical") != NULL);
    rc = tu_cli(NULL, out, &err, "compare '%s' '%s'", wp("a.txt"), wp("a2.txt"));
    ck_assert_msg(rc == 0, "identical but for the tag: exit %d: %s", rc, err);
    static const char *differ[] = {"docno.txt", "score.txt", "short.txt"};
    for (size_t i = 0; i < 3; i++) {
        rc = tu_cli(NULL, out, &err, "compare '%s' '%s'", wp("a.txt"), wp(differ[i]));
        ck_assert_msg(rc == 1, "%s: exit %d: %s", differ[i], rc, err);
        ck_assert_msg(strstr(slurp(out), "differ") != NULL, "%s: %s", differ[i], slurp(out));
        rc = tu_cli(NULL, out, &err, "compare '%s' '%s'", wp(differ[i]), wp("a.txt"));
        ck_assert_msg(rc == 1, "%s reversed: exit %d: %s", differ[i], rc, err);
    }
    put("empty.txt", "");
    rc = tu_cli(NULL, out, &err, "compare '%s' '%s'", wp("empty.txt"), wp("a.txt"));
    ck_assert_msg(rc == 1, "empty against a run: exit %d: %s", rc, err);
    rc = tu_cli(NULL, out, &err, "compare '%s' '%s'", wp("empty.txt"), wp("empty.txt"));
    ck_assert_msg(rc == 0, "two empty runs: exit %d: %s", rc, err);
    rc = cli(&err, "compare '%s' '%s'", wp("a.txt"), wp("junk.txt"));
    expect_fail(rc, err, 1, "not a TREC run line", NULL, NULL, "compare junk");
    rc = cli(&err, "compare '%s' '%s'", wp("a.txt"), wp("missing.txt"));
    expect_fail(rc, err, 1, "missing.txt", NULL, NULL, "compare missing");
    rc = cli(&err, "compare '%s'", wp("a.txt"));
    expect_fail(rc, err, 2, "usage", NULL, NULL, "compare one run");
    rm_work();
}
END_TEST

/* Whether clinfo lists an OpenCL platform (-1: clinfo is not installed). */
static int clinfo_platforms(void)
{
    FILE *p = popen("clinfo -l 2>/dev/null", "r");
    if (!p) return -1;
    char line[512];
    int n = 0, any = 0;
    while (fgets(line, sizeof line, p)) {
        any = 1;
        n += strncmp(line, "Platform #", 10) == 0;
    }
    int st = pclose(p);
    if (!any && (!WIFEXITED(st) || WEXITSTATUS(st) == 127)) return -1;
    return n;
}

START_TEST(devices_lists_pocl)
{
    make_work();
    const char *out = wp("devices.txt"), *err;
    int rc = tu_cli(NULL, out, &err, "devices");
    ck_assert_msg(rc == 0, "devices: exit %d: %s", rc, err);
    const char *text = slurp(out);
    int np = clinfo_platforms();
    /* the suite needs an OpenCL device (check_search runs -d cpu): one is listed, whether or
     * not clinfo is installed to say which platform it should be */
    ck_assert_msg(strstr(text, "device 0:0") != NULL, "devices: %s", text);
    if (np > 0) ck_assert_msg(strstr(text, "Portable Computing Language") != NULL, "devices: %s", text);
    else fprintf(stderr, "note: clinfo lists no platform; not checking that device 0:0 is POCL's\n");
    rc = tu_cli(NULL, out, &err, "devices -v");
    ck_assert_msg(rc == 0, "devices -v: exit %d: %s", rc, err);
    /* unknown commands are usage errors */
    rc = cli(&err, "frobnicate");
    expect_fail(rc, err, 2, "unknown command 'frobnicate'", "(see 'clsearch --help')", NULL, "unknown command");
    ck_assert_msg(strstr(err, "did you mean") == NULL, "unknown command: a guess for 'frobnicate': %s", err);
    /* a command mistyped by a letter or two: the nearest one named, and the list of commands */
    rc = cli(&err, "serach -x x.idx q");
    expect_fail(rc, err, 2, "unknown command 'serach': did you mean 'search'?", "(see 'clsearch --help')", NULL,
                "mistyped command");
    rm_work();
}
END_TEST

/* No OpenCL platform at all: devices says so, ref still runs, every OpenCL spec fails clearly. */
START_TEST(no_platform)
{
    make_work();
    const char *idx = make_index(), *err, *out = wp("none.run");
    put("topics.tsv", "1\tapple\n");
    ck_assert_int_eq(mkdir(wp("no-vendors"), 0755), 0);
    setenv("OCL_ICD_VENDORS", wp("no-vendors"), 1);
    const char *listing = wp("devices.txt");
    int rc = tu_cli(NULL, listing, &err, "devices");
    ck_assert_msg(rc == 0, "devices: exit %d: %s", rc, err);
    if (strstr(slurp(listing), "no OpenCL platform") == NULL) {
        /* some ICD loaders still find platforms through other settings (OCL_ICD_FILENAMES) */
        fprintf(stderr, "SKIP: this ICD loader still lists platforms with OCL_ICD_VENDORS empty\n");
        unsetenv("OCL_ICD_VENDORS");
        rm_work();
        return;
    }
    const char *specs[] = {"auto", "gpu", "cpu", "0:0"};
    for (int i = 0; i < 4; i++) {
        rc = cli(&err, "search -x '%s' -q '%s' -d %s -o '%s'", idx, wp("topics.tsv"), specs[i], out);
        expect_fail(rc, err, 1, "no OpenCL platform", "-d ref", out, specs[i]);
    }
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("topics.tsv"), out);
    ck_assert_msg(rc == 0 && tu_exists(out), "ref without OpenCL: exit %d: %s", rc, err);
    unsetenv("OCL_ICD_VENDORS");
    rm_work();
}
END_TEST

/* A kernel that does not compile: the error names clBuildProgram and carries the build log. */
START_TEST(build_failure_shows_log)
{
    make_work();
    const char *idx = make_index(), *err, *out = wp("bad.run");
    put("topics.tsv", "1\tapple\n");
    const char *src = getenv("CLS_SOURCE_DIR");
    ck_assert(src != NULL);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp -r '%s/cl' '%s' && echo 'this_is_not_opencl x;' >> '%s/or.cl'", src, wp("badcl"),
             wp("badcl"));
    ck_assert_int_eq(system(cmd), 0);
    setenv("CLSEARCH_KERNEL_DIR", wp("badcl"), 1);
    int rc = cli(&err, "search -x '%s' -q '%s' -d cpu -o '%s'", idx, wp("topics.tsv"), out);
    unsetenv("CLSEARCH_KERNEL_DIR");
    /* No OpenCL platform is a failure here, not a skip: the suite needs the device (check_search). */
    ck_assert_msg(!strstr(err, "no OpenCL platform"), "broken kernel: no OpenCL platform to build it on: %s", err);
    /* the OpenCL compiler may print to stderr itself first, so look for our line anywhere */
    ck_assert_msg(rc == 1, "broken kernel: exit %d: %s", rc, err);
    /* "compiling the kernel program of or.cl, ... for device 0:0 NAME: clBuildProgram failed" where
     * the compiler process built it, or that call's message alone in this process */
    ck_assert_msg(strstr(err, "clsearch: starting the engine: kernel build failed: ") != NULL &&
                      strstr(err, "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE") != NULL &&
                      strstr(err, "build log:") != NULL && strstr(err, "this_is_not_opencl") != NULL,
                  "broken kernel: the message lacks the call or the build log: %s", err);
    ck_assert(!tu_exists(out) && leftover_tmp() == 0);
    rm_work();
}
END_TEST

/* Runs written to /dev/null, /dev/stdout or through a link go through the node, never over
 * it: a temporary renamed over /dev/null once replaced the device itself. */
START_TEST(search_to_devices_and_links)
{
    make_work();
    const char *idx = make_index(), *err;
    put("topics.tsv", "1\tapple\n");
    int rc = cli(&err, "search -x '%s' -q '%s' -d ref -o /dev/null", idx, wp("topics.tsv"));
    ck_assert_msg(rc == 0, "-o /dev/null: exit %d: %s", rc, err);
    struct stat st;
    ck_assert(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    const char *out = wp("through-stdout.run");
    rc = tu_cli(NULL, out, &err, "search -x '%s' -q '%s' -d ref -o /dev/stdout", idx, wp("topics.tsv"));
    ck_assert_msg(rc == 0, "-o /dev/stdout: exit %d: %s", rc, err);
    ck_assert_msg(strstr(slurp(out), "1 Q0 d") != NULL, "the run did not reach stdout");
    ck_assert(lstat("/dev/stdout", &st) != 0 || !S_ISREG(st.st_mode));
    /* a link to a regular file (an earlier run): the file is written, the link stays a link */
    put("target.run", "1 Q0 old 1 1.5 earlier\n");
    ck_assert_int_eq(symlink(wp("target.run"), wp("link.run")), 0);
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("topics.tsv"), wp("link.run"));
    ck_assert_msg(rc == 0, "-o link: exit %d: %s", rc, err);
    ck_assert(lstat(wp("link.run"), &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert(strstr(slurp(wp("target.run")), "1 Q0 d") != NULL);
    remove(wp("link.run"));
    rm_work();
}
END_TEST

/* ---- topics from standard input, a query on the command line ------------------------------- */


/* A copy of the file's text (slurp's buffer is reused). */
static char *slurp_dup(const char *path) { return tu_strdup(slurp(path)); }

/* Topics piped in: '-q -' and '-q /dev/stdin' read every topic, in TSV and in another format
 * (-f auto tells it from the first line without losing it), and give the run the same topics
 * from a file give. Empty topics, from a file or a pipe, are an error that says so. */
START_TEST(search_topics_from_a_pipe)
{
    make_work();
    const char *idx = make_index(), *err;
    put("topics.tsv", "q1\tapple\nq2\tjuice\n");
    put("topics.trec", "<top>\n<num> Number: 101\n<title> apple\n</top>\n<top>\n<num> Number: 102\n"
                       "<title> juice\n</top>\n");
    static const char *files[] = {"topics.tsv", "topics.trec"};
    for (int i = 0; i < 2; i++) {
        const char *t = wp(files[i]);
        int rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, t, wp("file.run"));
        ck_assert_msg(rc == 0, "%s from the file: exit %d: %s", files[i], rc, err);
        char *want = slurp_dup(wp("file.run"));
        ck_assert_msg(strlen(want) > 0 && strstr(want, "d2") != NULL, "%s: run: %s", files[i], want);
        static const char *ways[] = {"-q -", "-q /dev/stdin", "--topics -", "--topics=-"};
        for (int w = 0; w < 4; w++) {
            rc = tu_cli(t, wp("pipe.run"), &err, "search -x '%s' %s -d ref", idx, ways[w]);
            ck_assert_msg(rc == 0, "%s %s: exit %d: %s", files[i], ways[w], rc, err);
            ck_assert_msg(strcmp(slurp(wp("pipe.run")), want) == 0, "%s %s: the run differs:\n%s\nfrom the file:\n%s",
                          files[i], ways[w], slurp(wp("pipe.run")), want);
        }
        /* the format named, through the pipe */
        rc = tu_cli(t, wp("pipe.run"), &err, "search -x '%s' -q - -f %s -d ref", idx, i ? "trec" : "tsv");
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("pipe.run")), want) == 0, "%s -f: exit %d: %s", files[i], rc, err);
        free(want);
    }
    /* no topics: an empty file, blank lines, an empty pipe */
    put("empty.tsv", "");
    put("blank.tsv", "\n  \n\t\n");
    int rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("empty.tsv"), wp("none.run"));
    expect_fail(rc, err, 1, "empty.tsv holds no topic", NULL, wp("none.run"), "empty topics file");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("blank.tsv"), wp("none.run"));
    expect_fail(rc, err, 1, "blank.tsv holds no topic", NULL, wp("none.run"), "blank topics file");
    rc = tu_cli(wp("empty.tsv"), wp("pipe.run"), &err, "search -x '%s' -q - -d ref", idx);
    expect_fail(rc, err, 1, "standard input holds no topic", NULL, NULL, "empty pipe");
    ck_assert_str_eq(slurp(wp("pipe.run")), "");
    /* a malformed line through the pipe: its number */
    put("bad.tsv", "q1\tapple\nno tab\n");
    rc = tu_cli(wp("bad.tsv"), wp("pipe.run"), &err, "search -x '%s' -q - -d ref", idx);
    expect_fail(rc, err, 1, "/dev/stdin:2: expected qid<TAB>text", NULL, NULL, "bad line in a pipe");
    rm_work();
}
END_TEST

/* A query on the command line: the words after the options, one query, qid "1" (or --qid), the
 * run a topics file with that query gives, on the reference engine and on the device. */
START_TEST(search_one_query_on_the_command_line)
{
    make_work();
    const char *idx = make_index(), *err;
    put("one.tsv", "1\tapple juice\n");
    put("named.tsv", "my-q\tapple juice\n");
    static const char *devs[] = {"ref", "cpu"};
    for (int d = 0; d < 2; d++) {
        int rc = cli(&err, "search -x '%s' -q '%s' -d %s -o '%s'", idx, wp("one.tsv"), devs[d], wp("file.run"));
        ck_assert_msg(rc == 0, "from the file: exit %d: %s", rc, err);
        char *want = slurp_dup(wp("file.run"));
        ck_assert_msg(run_lines(wp("file.run"), "1", NULL, 0) == 4, "-d %s: %s", devs[d], want);
        /* one argument, two arguments, options after the words: the same query */
        rc = tu_cli(NULL, wp("arg.run"), &err, "search -x '%s' -d %s 'apple juice'", idx, devs[d]);
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("arg.run")), want) == 0, "one argument: exit %d: %s", rc, err);
        rc = tu_cli(NULL, wp("arg.run"), &err, "search -x '%s' apple juice -d %s", idx, devs[d]);
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("arg.run")), want) == 0, "two arguments: exit %d: %s", rc, err);
        rc = cli(&err, "search -x '%s' -d %s -o '%s' -- apple juice", idx, devs[d], wp("arg.run"));
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("arg.run")), want) == 0, "after --: exit %d: %s", rc, err);
        free(want);
        rc = cli(&err, "search -x '%s' -q '%s' -d %s -o '%s'", idx, wp("named.tsv"), devs[d], wp("file.run"));
        ck_assert_msg(rc == 0, "named, from the file: exit %d: %s", rc, err);
        want = slurp_dup(wp("file.run"));
        rc = cli(&err, "search -x '%s' -d %s --qid my-q -o '%s' apple juice", idx, devs[d], wp("arg.run"));
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("arg.run")), want) == 0, "--qid: exit %d: %s", rc, err);
        free(want);
    }
    /* a weighted term is its repeats: apple^2 is apple apple, on both engines */
    for (int d = 0; d < 2; d++) {
        int rc = tu_cli(NULL, wp("rep.run"), &err, "search -x '%s' -d %s 'apple apple juice'", idx, devs[d]);
        ck_assert_msg(rc == 0, "repeats: exit %d: %s", rc, err);
        char *want = slurp_dup(wp("rep.run"));
        rc = tu_cli(NULL, wp("arg.run"), &err, "search -x '%s' -d %s 'apple^2 juice^1'", idx, devs[d]);
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("arg.run")), want) == 0, "apple^2: exit %d: %s", rc, err);
        rc = tu_cli(NULL, wp("arg.run"), &err, "search -x '%s' -d %s 'apple juice'", idx, devs[d]);
        ck_assert_msg(rc == 0 && strcmp(slurp(wp("arg.run")), want) != 0, "apple^2 weighs like apple: %s", want);
        free(want);
    }
    /* a query that matches nothing: no lines, exit 0 */
    int rc = tu_cli(NULL, wp("arg.run"), &err, "search -x '%s' -d ref zyzzyx", idx);
    ck_assert_msg(rc == 0, "no match: exit %d: %s", rc, err);
    ck_assert_str_eq(slurp(wp("arg.run")), "");
    /* usage errors: both a query and -q, -f with a query, --qid without one, a bad --qid */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref apple", idx, wp("one.tsv"));
    expect_fail(rc, err, 2, "give -q TOPICS or a query, not both", NULL, NULL, "query and -q");
    rc = cli(&err, "search -x '%s' -f tsv -d ref apple", idx);
    expect_fail(rc, err, 2, "-f tsv goes with -q TOPICS", NULL, NULL, "-f with a query");
    rc = cli(&err, "search -x '%s' -q '%s' --qid x -d ref", idx, wp("one.tsv"));
    expect_fail(rc, err, 2, "--qid x names a query given on the command line", NULL, NULL, "--qid with -q");
    rc = cli(&err, "search -x '%s' --qid 'a b' -d ref apple", idx);
    expect_fail(rc, err, 2, "white space", NULL, NULL, "--qid with a space");
    rm_work();
}
END_TEST

typedef struct cand {
    char qid[32], docno[64];
    int pos;      /* qid:N, the topic's place (features writes the qid after the docno) */
    double score; /* the model's, as predict prints it (%.9g: the float exactly) */
} cand;

static int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    int q = a->pos - b->pos;
    if (q) return q;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return strcmp(a->docno, b->docno); /* generated docnos follow docIDs */
}

/* search --rerank: the same run, byte for byte, on ref, host:2 and POCL, and the pipeline by
 * hand (features at the depth, predict, a sort by score then docID, the top k); --json carries
 * both scores, -v names the model, the depth and where it ran; the refusals write nothing. */
START_TEST(search_rerank)
{
    make_work();
    const char *err;
    char model[4096], wide[4096];
    const char *src = getenv("CLS_SOURCE_DIR");
    snprintf(model, sizeof model, "%s/tests/data/ltr/cacm_lgb.txt", src ? src : "..");
    snprintf(wide, sizeof wide, "%s/tests/data/ltr/lgb_reg.txt", src ? src : "..");
    int rc = cli(&err, "generate -o '%s' --docs 2000 --queries 16 --seed 3", wp("gen"));
    ck_assert_msg(rc == 0, "generate: %s", err);
    char corpus[4096], topics[4096], idx[4096];
    snprintf(corpus, sizeof corpus, "%s/corpus.jsonl", wp("gen"));
    snprintf(topics, sizeof topics, "%s/topics.tsv", wp("gen"));
    snprintf(idx, sizeof idx, "%s", wp("gen.idx"));
    rc = cli(&err, "index -q -c jsonl -o '%s' '%s'", idx, corpus);
    ck_assert_msg(rc == 0, "index: %s", err);
    static const char *devs[] = {"ref", "host:2", "cpu"};
    char *want = NULL;
    for (int d = 0; d < 3; d++) {
        rc = cli(&err, "search -x '%s' -q '%s' -d %s -k 10 --rerank '%s' --rerank-depth 30 -o '%s'", idx, topics,
                 devs[d], model, wp("rr.run"));
        ck_assert_msg(rc == 0, "-d %s: exit %d: %s", devs[d], rc, err);
        if (!want) want = slurp_dup(wp("rr.run"));
        else ck_assert_msg(strcmp(slurp(wp("rr.run")), want) == 0, "-d %s differs from ref", devs[d]);
    }
    ck_assert(strlen(want) > 0);
    /* by hand: features at depth 30 (qrels judge one pair: features asks for some), predict, sort */
    put("one.qrels", "1 0 G00000000 1\n");
    rc = cli(&err, "features -x '%s' -q '%s' --qrels '%s' -k 30 -d ref -o '%s'", idx, topics, wp("one.qrels"),
             wp("f.svm"));
    ck_assert_msg(rc == 0, "features: %s", err);
    rc = cli(&err, "predict -m '%s' -o '%s' '%s'", model, wp("f.pred"), wp("f.svm"));
    ck_assert_msg(rc == 0, "predict: %s", err);
    FILE *fs = fopen(wp("f.svm"), "r"), *fp = fopen(wp("f.pred"), "r");
    ck_assert(fs && fp);
    size_t n = 0, cap = 1024;
    cand *c = malloc(cap * sizeof *c);
    ck_assert(c);
    char line[8192], pl[128];
    while (fgets(line, sizeof line, fs)) {
        if (line[0] == '#') continue;
        ck_assert(n < cap && fgets(pl, sizeof pl, fp));
        const char *q = strstr(line, "qid:"), *hash = strrchr(line, '#');
        ck_assert(q && hash);
        ck_assert_int_eq(sscanf(q + 4, "%d", &c[n].pos), 1);
        ck_assert_int_eq(sscanf(hash + 1, "%63s %31s", c[n].docno, c[n].qid), 2);
        c[n].score = strtod(pl, NULL);
        n++;
    }
    fclose(fs);
    fclose(fp);
    qsort(c, n, sizeof *c, cand_cmp);
    char *hand = calloc(1, 1 << 20);
    ck_assert(hand);
    size_t at = 0;
    for (size_t i = 0, rank = 0; i < n; i++) {
        rank = i > 0 && strcmp(c[i].qid, c[i - 1].qid) == 0 ? rank + 1 : 1;
        if (rank <= 10)
            at += (size_t)snprintf(hand + at, (1 << 20) - at, "%s Q0 %s %zu %.6f clsearch\n", c[i].qid, c[i].docno, rank,
                                   (double)(float)c[i].score);
    }
    ck_assert_msg(strcmp(hand, want) == 0, "by hand:\n%.2000s\nsearch --rerank:\n%.2000s", hand, want);
    free(hand);
    free(c);
    /* --json: both scores; -v: the model, depth and where */
    rc = tu_cli(NULL, wp("rr.json"), &err, "search -x '%s' -q '%s' -d ref -k 3 --rerank '%s' --json -v", idx, topics,
                model);
    ck_assert_msg(rc == 0, "--json: %s", err);
    ck_assert_msg(strstr(slurp(wp("rr.json")), "\"first_score\":"), "%s", slurp(wp("rr.json")));
    ck_assert_msg(strstr(err, "rerank: model LightGBM") && strstr(err, "the top 1000") && strstr(err, "on the host"),
                  "%s", err);
    rc = tu_cli(NULL, wp("rr.json"), &err, "search -x '%s' -q '%s' -d cpu -k 3 --rerank '%s' -v", idx, topics, model);
    ck_assert_msg(rc == 0 && strstr(err, "scored on the device") && strstr(err, "features "), "%s", err);
    /* refusals: nothing written */
    rc = cli(&err, "search -x '%s' -q '%s' -d ref --rerank '%s' -o '%s'", idx, topics, wide, wp("no.run"));
    expect_fail(rc, err, 1, "feature table has", "reads feature 300", wp("no.run"), "a wide model");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref --rerank '%s' -o '%s'", idx, topics, wp("absent.txt"), wp("no.run"));
    expect_fail(rc, err, 1, "absent.txt", NULL, wp("no.run"), "an absent model");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref --rerank-depth 5 -o '%s'", idx, topics, wp("no.run"));
    expect_fail(rc, err, 2, "--rerank-depth goes with --rerank", NULL, wp("no.run"), "a depth alone");
    rc = cli(&err, "search -x '%s' -q '%s' -d ref --rerank '%s' --rerank-depth 0 -o '%s'", idx, topics, model,
             wp("no.run"));
    expect_fail(rc, err, 2, "--rerank-depth must be", NULL, wp("no.run"), "depth 0");
    free(want);
    rm_work();
}
END_TEST

/* --device-mem small enough that the lists are cached on the device (-v says so) gives the
 * reference engine's run, as does --batch-ms; bad values are usage errors, and a memory too
 * small for the index's norms is a clear error with no run written. */
START_TEST(search_device_memory_and_batch_time)
{
    make_work();
    const char *err;
    /* a collection of 3,000 generated documents: 1.6 MiB of lists */
    int rc = cli(&err, "generate -o '%s' --docs 3000 --queries 60 --seed 3", wp("gen"));
    ck_assert_msg(rc == 0, "generate: exit %d: %s", rc, err);
    char *idx = strdup(wp("gen.idx")), *topics = strdup(wp("gen/topics.tsv"));
    rc = cli(&err, "index -q -c jsonl -o '%s' '%s'", idx, wp("gen/corpus.jsonl"));
    ck_assert_msg(rc == 0, "index: exit %d: %s", rc, err);
    rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, topics, wp("ref.run"));
    ck_assert_msg(rc == 0, "ref: exit %d: %s", rc, err);
    char *want = slurp_dup(wp("ref.run"));
    ck_assert_msg(strlen(want) > 0, "the reference found nothing");
    rc = cli(&err, "search -x '%s' -q '%s' -d cpu --device-mem 128K --batch-ms 5 -v -o '%s'", idx, topics, wp("c.run"));
    ck_assert_msg(rc == 0, "--device-mem 128K: exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "lists: cached on the device") && strstr(err, "lists_loaded"), "-v: %s", err);
    ck_assert_msg(strcmp(slurp(wp("c.run")), want) == 0, "the cached run differs from the reference's");
    free(want);
    static const char *bad_mem[] = {"0", "-1", "12X", "", "99999999999T"};
    for (size_t i = 0; i < sizeof bad_mem / sizeof *bad_mem; i++) {
        rc = cli(&err, "search -x '%s' -q '%s' -d cpu --device-mem '%s' -o '%s'", idx, topics, bad_mem[i], wp("x.run"));
        expect_fail(rc, err, 2, "--device-mem takes a byte count", NULL, wp("x.run"), bad_mem[i]);
    }
    static const char *bad_ms[] = {"0", "-5", "abc", "70000"};
    for (size_t i = 0; i < sizeof bad_ms / sizeof *bad_ms; i++) {
        rc = cli(&err, "search -x '%s' -q '%s' -d cpu --batch-ms '%s' -o '%s'", idx, topics, bad_ms[i], wp("x.run"));
        expect_fail(rc, err, 2, "--batch-ms takes a number of milliseconds", NULL, wp("x.run"), bad_ms[i]);
    }
    rc = cli(&err, "search -x '%s' -q '%s' -d cpu --device-mem 16 -o '%s'", idx, topics, wp("x.run"));
    expect_fail(rc, err, 1, "starting the engine", "leave no room for posting lists", wp("x.run"), "--device-mem 16");
    /* room for some lists, not for every query's: the query is named, no run is written */
    rc = cli(&err, "search -x '%s' -q '%s' -d cpu --device-mem 64K -o '%s'", idx, topics, wp("x.run"));
    expect_fail(rc, err, 1, "needs more room for its posting lists", "give the engine more device memory", wp("x.run"),
                "--device-mem 64K");
    free(idx);
    free(topics);
    rm_work();
}
END_TEST

/* ---- help ------------------------------------------------------------------------------------ */

/* Every command (and bench suite) answers -h and --help with its own usage on stdout, exit 0,
 * nothing on stderr, whatever else is on the line. */
START_TEST(every_command_has_help)
{
    make_work();
    static const char *cmds[] = {"devices", "index", "search", "stats", "check", "recode", "generate",
                                 "compare", "ciff-import", "ciff-export", "tune", "bench", "bench copy",
                                 "bench decode", "bench e2e", "bench topk", "bench scan", "bench intersect",
                                 "bench score", "serve", "bench serve", "version", "help"};
    const char *out = wp("help.txt"), *err;
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        static const char *flags[] = {"--help", "-h", "-x whatever --help"};
        for (int f = 0; f < 3; f++) {
            int rc = tu_cli(NULL, out, &err, "%s %s", cmds[i], flags[f]);
            ck_assert_msg(rc == 0, "%s %s: exit %d: %s", cmds[i], flags[f], rc, err);
            ck_assert_msg(err[0] == '\0', "%s %s: stderr: %s", cmds[i], flags[f], err);
            const char *text = slurp(out);
            char want[64];
            snprintf(want, sizeof want, "clsearch %s", cmds[i]);
            ck_assert_msg(strstr(text, want) != NULL, "%s %s: no '%s' in:\n%s", cmds[i], flags[f], want, text);
        }
    }
    /* search's own help says what -q is, and index's what -q is there */
    ck_assert_int_eq(tu_cli(NULL, out, &err, "search --help"), 0);
    ck_assert(strstr(slurp(out), "-q, --topics TOPICS") != NULL);
    ck_assert_int_eq(tu_cli(NULL, out, &err, "index --help"), 0);
    ck_assert(strstr(slurp(out), "-q, --quiet") != NULL);
    /* help CMD is the same as CMD --help */
    ck_assert_int_eq(tu_cli(NULL, out, &err, "help search"), 0);
    char *a = slurp_dup(out);
    ck_assert_int_eq(tu_cli(NULL, out, &err, "search --help"), 0);
    ck_assert_str_eq(a, slurp(out));
    free(a);
    int rc = cli(&err, "help frobnicate");
    expect_fail(rc, err, 2, "no command 'frobnicate'", NULL, NULL, "help of an unknown command");
    /* a usage error points at the command's help */
    rc = cli(&err, "search --frobnicate");
    expect_fail(rc, err, 2, "see 'clsearch search --help'", NULL, NULL, "unknown option");
    rm_work();
}
END_TEST

/* ---- --json -------------------------------------------------------------------------------- */

/* Each line of path parsed as a JSON object; returns the number of lines (each checked by fn). */
static int json_lines(const char *path, void (*fn)(const cJSON *o, void *user), void *user)
{
    char *text = slurp_dup(path);
    int n = 0;
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        ck_assert_msg(nl != NULL, "%s: the last line has no newline", path);
        *nl = '\0';
        cJSON *o = cJSON_Parse(line);
        ck_assert_msg(o != NULL && cJSON_IsObject(o), "%s: not a JSON object: %s", path, line);
        fn(o, user);
        cJSON_Delete(o);
        n++;
    }
    free(text);
    return n;
}

/* A search hit: {"qid", "rank", "docno", "score"}, and the same as the run line of that rank. */
static void check_hit(const cJSON *o, void *user)
{
    FILE *run = user;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "qid"), *r = cJSON_GetObjectItemCaseSensitive(o, "rank"),
                *d = cJSON_GetObjectItemCaseSensitive(o, "docno"), *s = cJSON_GetObjectItemCaseSensitive(o, "score");
    ck_assert(cJSON_IsString(q) && cJSON_IsNumber(r) && cJSON_IsString(d) && cJSON_IsNumber(s));
    ck_assert_int_eq(cJSON_GetArraySize(o), 4);
    char line[1024], qid[256], q0[16], doc[256], tag[256];
    long rank;
    double score;
    ck_assert(fgets(line, sizeof line, run) != NULL);
    ck_assert(sscanf(line, "%255s %15s %255s %ld %lf %255s", qid, q0, doc, &rank, &score, tag) == 6);
    ck_assert_str_eq(q->valuestring, qid);
    ck_assert_str_eq(d->valuestring, doc);
    ck_assert_int_eq((long)r->valuedouble, rank);
    ck_assert_double_eq_tol(s->valuedouble, score, 1e-9);
}

static void check_stats(const cJSON *o, void *user)
{
    int *rows = user;
    ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(o, "documents")->valuedouble, 5);
    ck_assert(cJSON_GetObjectItemCaseSensitive(o, "postings")->valuedouble > 0);
    ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "codec")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "analyzer"), "stem")));
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(o, "sizes");
    ck_assert(cJSON_IsArray(sizes));
    *rows = cJSON_GetArraySize(sizes);
}

static void check_device(const cJSON *o, void *user)
{
    int *gpus = user;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id"), *name = cJSON_GetObjectItemCaseSensitive(o, "name"),
                *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    ck_assert(cJSON_IsString(id) && (strchr(id->valuestring, ':') != NULL || strcmp(id->valuestring, "host") == 0));
    ck_assert(cJSON_IsString(name) && name->valuestring[0]);
    ck_assert(cJSON_IsString(type));
    *gpus += strcmp(type->valuestring, "gpu") == 0;
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "compute_units")));
}

/* --json: search (a line a hit, the run's figures), stats (one line) and devices (a line a device)
 * print JSON objects that parse. */
START_TEST(json_output)
{
    make_work();
    const char *idx = make_index(), *err;
    /* a qid and docnos that need escaping in JSON do not occur in runs; the escaping is cJSON's */
    put("topics.tsv", "q\"1\tapple\nq2\tjuice\nq3\tzyzzyx\n");
    int rc = cli(&err, "search -x '%s' -q '%s' -d ref -o '%s'", idx, wp("topics.tsv"), wp("run.txt"));
    ck_assert_msg(rc == 0, "run: exit %d: %s", rc, err);
    static const char *devs[] = {"ref", "cpu"};
    for (int d = 0; d < 2; d++) {
        rc = tu_cli(NULL, wp("hits.jsonl"), &err, "search -x '%s' -q '%s' -d %s --json", idx, wp("topics.tsv"), devs[d]);
        ck_assert_msg(rc == 0, "search --json: exit %d: %s", rc, err);
        FILE *run = fopen(wp("run.txt"), "r");
        ck_assert(run != NULL);
        ck_assert_int_eq(json_lines(wp("hits.jsonl"), check_hit, run), 5);
        fclose(run);
        /* and to a file with -o */
        rc = cli(&err, "search -x '%s' -q '%s' -d %s --json -o '%s'", idx, wp("topics.tsv"), devs[d], wp("o.jsonl"));
        ck_assert_msg(rc == 0 && same_nonempty_file(wp("o.jsonl"), wp("hits.jsonl")), "-o: exit %d: %s", rc, err);
    }
    int rows = 0;
    rc = tu_cli(NULL, wp("stats.jsonl"), &err, "stats --json '%s'", idx);
    ck_assert_msg(rc == 0, "stats --json: exit %d: %s", rc, err);
    ck_assert_int_eq(json_lines(wp("stats.jsonl"), check_stats, &rows), 1);
    ck_assert_int_eq(rows, 1);
    rc = tu_cli(NULL, wp("stats.jsonl"), &err, "stats '%s' --codecs --json", idx);
    ck_assert_msg(rc == 0, "stats --codecs --json: exit %d: %s", rc, err);
    ck_assert_int_eq(json_lines(wp("stats.jsonl"), check_stats, &rows), 1);
    ck_assert_int_eq(rows, 1 + CLS_NUM_CODECS * 4);
    int gpus = 0;
    rc = tu_cli(NULL, wp("devices.jsonl"), &err, "devices --json -v");
    ck_assert_msg(rc == 0, "devices --json: exit %d: %s", rc, err);
    ck_assert_int_ge(json_lines(wp("devices.jsonl"), check_device, &gpus), 1);
    rc = cli(&err, "devices --frobnicate");
    expect_fail(rc, err, 2, "unexpected argument '--frobnicate'", NULL, NULL, "devices with a bad option");
    rm_work();
}
END_TEST

/* ---- outputs checked before the work --------------------------------------------------------- */

/* Every command that writes a file refuses an output in a missing folder at once, before reading
 * its input (a missing input is not what it reports), and leaves nothing behind. */
START_TEST(outputs_checked_first)
{
    make_work();
    const char *idx = make_index(), *err, *out = wp("nofolder/out");
    struct {
        const char *args, *what;
    } cases[] = {
        {"index -c jsonl -o '%s' '%s/missing.jsonl'", "index"},
        {"recode '%2$s/missing.idx' -o '%1$s'", "recode"},
        {"ciff-export '%2$s/missing.idx' -o '%1$s'", "ciff-export"},
        {"ciff-import '%2$s/missing.ciff' -o '%1$s'", "ciff-import"},
        {"generate --index '%s' --docs 10 --queries 2 --vocab 100 --topics '%s/t.tsv'", "generate"},
        {"generate --index '%2$s/g.idx' --topics '%1$s' --docs 10 --queries 2 --vocab 100", "generate"},
        {"search -x '%2$s/missing.idx' -q '%2$s/missing.tsv' -o '%1$s'", "search"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[8300], needle[64];
        snprintf(args, sizeof args, cases[i].args, out, work);
        int rc = cli(&err, "%s", args);
        snprintf(needle, sizeof needle, "%s: cannot write", cases[i].what);
        expect_fail(rc, err, 1, needle, "nofolder: No such file or directory", NULL, args);
        ck_assert_msg(strstr(err, "missing") == NULL, "%s: the input was read first: %s", args, err);
        ck_assert(!tu_exists(wp("nofolder")) && !tu_exists(wp("g.idx")) && !tu_exists(wp("t.tsv")));
        ck_assert_int_eq(leftover_tmp(), 0);
    }
    (void)idx;
    rm_work();
}
END_TEST

/* ---- the compile notice -------------------------------------------------------------------- */

/* The first search on the device with an empty program cache says, once, that it compiles the
 * kernels and where they are cached; the next search, from the cache, says nothing; the
 * reference engine never does. */
START_TEST(search_says_when_it_compiles)
{
    make_work();
    const char *idx = make_index(), *err;
    const char *cache = wp("cache");
    ck_assert_int_eq(mkdir(cache, 0755), 0);
    char *old = getenv("CLSEARCH_CACHE_DIR") ? tu_strdup(getenv("CLSEARCH_CACHE_DIR")) : NULL;
    setenv("CLSEARCH_CACHE_DIR", cache, 1);
    int rc = cli(&err, "search -x '%s' -d cpu -o '%s' apple", idx, wp("run.txt"));
    ck_assert_msg(rc == 0, "cold: exit %d: %s", rc, err);
    char want[4300];
    /* "... and the driver's own cache" where the driver keeps the programs (POCL) */
    snprintf(want, sizeof want, "(once; cached in %s", cache);
    const char *at = strstr(err, "clsearch: compiling kernels for ");
    ck_assert_msg(at != NULL && strstr(at, want) != NULL, "cold start: no notice: %s", err);
    ck_assert_msg(strstr(at + 20, "compiling kernels") == NULL, "the notice came twice: %s", err);
    rc = cli(&err, "search -x '%s' -d cpu -o '%s' apple", idx, wp("run.txt"));
    ck_assert_msg(rc == 0 && strstr(err, "compiling") == NULL, "warm start: exit %d: %s", rc, err);
    rc = cli(&err, "search -x '%s' -d ref -o '%s' apple", idx, wp("run.txt"));
    ck_assert_msg(rc == 0 && err[0] == '\0', "ref: exit %d: %s", rc, err);
    if (old) setenv("CLSEARCH_CACHE_DIR", old, 1);
    else unsetenv("CLSEARCH_CACHE_DIR");
    free(old);
    rm_work();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("errors");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, index_errors);
    tcase_add_test(tc, index_reports_stages);
    tcase_add_test(tc, index_inputs_whole);
    tcase_add_test(tc, index_files_links);
    tcase_add_test(tc, search_errors);
    tcase_add_test(tc, generate_under_a_file);
    tcase_add_test(tc, compare_runs);
    tcase_add_test(tc, devices_lists_pocl);
    tcase_add_test(tc, no_platform);
    tcase_add_test(tc, build_failure_shows_log);
    tcase_add_test(tc, every_command_has_help);
    tcase_add_test(tc, outputs_checked_first);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("results");
    tcase_set_timeout(tr, 300);
    tcase_add_test(tr, search_no_results_and_large_k);
    tcase_add_test(tr, search_to_devices_and_links);
    tcase_add_test(tr, search_empty_indexes);
    tcase_add_test(tr, check_good_and_damaged);
    tcase_add_test(tr, search_topics_from_a_pipe);
    tcase_add_test(tr, search_one_query_on_the_command_line);
    tcase_add_test(tr, search_rerank);
    tcase_add_test(tr, search_device_memory_and_batch_time);
    tcase_add_test(tr, json_output);
    tcase_add_test(tr, search_says_when_it_compiles);
    suite_add_tcase(s, tr);
    return s;
}

int main(void) { return tu_run_suite(suite()); }
