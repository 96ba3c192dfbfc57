/* Corpus and topics readers: JSONL / BEIR / gzip, HTML folders and archives (markup removal,
 * entities, order), TSV and Anserini topics, and the failures each must report. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clsearch.h"
#include "corpus.h"
#include "testutil.h"

/* ---- Collecting callbacks ---------------------------------------------------------------- */

typedef struct coll {
    size_t n, cap;
    char **ids, **texts;
    size_t stop_after; /* 0: never stop */
    int set_msg;       /* when stopping, leave a message of our own */
} coll;

static void coll_free(coll *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->ids[i]);
        free(c->texts[i]);
    }
    free(c->ids);
    free(c->texts);
    memset(c, 0, sizeof *c);
}

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    ck_assert(p != NULL);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void coll_add(coll *c, const char *id, size_t il, const char *t, size_t tl)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->ids = realloc(c->ids, c->cap * sizeof *c->ids);
        c->texts = realloc(c->texts, c->cap * sizeof *c->texts);
        ck_assert(c->ids && c->texts);
    }
    c->ids[c->n] = dupn(id, il);
    c->texts[c->n] = dupn(t, tl);
    c->n++;
}

static int on_doc(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    coll *c = user;
    coll_add(c, docno, dl, text, tl);
    if (c->stop_after && c->n >= c->stop_after) {
        if (c->set_msg) {
            /* A callback reports its own reason through the library's error slot (here by
             * provoking a failing call). */
            cls_corpus_read(CLS_CORPUS_JSONL, "/nonexistent/for-message", on_doc, NULL);
        }
        return 1;
    }
    return 0;
}

static int on_topic(void *user, const char *qid, const char *text)
{
    coll *c = user;
    coll_add(c, qid, strlen(qid), text, strlen(text));
    return c->stop_after && c->n >= c->stop_after;
}

/* ---- Fixtures ------------------------------------------------------------------------------ */

static const char *write_tmp(const char *name, const char *content)
{
    const char *p = tu_tmp_path(name);
    tu_write_file(p, content, strlen(content));
    return p;
}

static void mkdir_p(const char *path)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_in(const char *dir, const char *rel, const char *content)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdir_p(p);
    *slash = '/';
    tu_write_file(p, content, strlen(content));
}

static const char *gzip_file(const char *path)
{
    static char gz[4300];
    char cmd[8500];
    snprintf(cmd, sizeof cmd, "gzip -kf '%s'", path);
    ck_assert_msg(system(cmd) == 0, "gzip failed for %s", path);
    snprintf(gz, sizeof gz, "%s.gz", path);
    return gz;
}

/* ---- JSONL and BEIR ------------------------------------------------------------------------- */

START_TEST(jsonl_happy)
{
    const char *p = write_tmp("c.jsonl",
                              "{\"id\": \"d1\", \"contents\": \"hello world\"}\n"
                              "\n"
                              "   \r\n"
                              "{\"contents\": \"caf\\u00e9 \\\"q\\\"\", \"id\": 42}\r\n"
                              "{\"id\":\"d3\",\"contents\":\"\",\"extra\":[1,2]}");
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, p, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 3);
    ck_assert_str_eq(c.ids[0], "d1");
    ck_assert_str_eq(c.texts[0], "hello world");
    ck_assert_str_eq(c.ids[1], "42");
    ck_assert_str_eq(c.texts[1], "caf\xC3\xA9 \"q\"");
    ck_assert_str_eq(c.ids[2], "d3");
    ck_assert_str_eq(c.texts[2], "");
    coll_free(&c);
}
END_TEST

START_TEST(jsonl_nul_escape_keeps_text)
{
    /* "\u0000" must not cut the document short; an escaped backslash before "u0000" is text. */
    const char *p = write_tmp("nul.jsonl",
                              "{\"id\":\"a\",\"contents\":\"one\\u0000two \\\\u0000 three\"}\n");
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, p, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.texts[0], "one two \\u0000 three");
    coll_free(&c);
}
END_TEST

START_TEST(beir_happy)
{
    const char *p = write_tmp("b.jsonl",
                              "{\"_id\": \"x1\", \"title\": \"A Title\", \"text\": \"body one\"}\n"
                              "{\"_id\": \"x2\", \"title\": \"\", \"text\": \"body two\"}\n"
                              "{\"_id\": \"x3\", \"text\": \"body three\", \"metadata\": {}}\n"
                              "{\"_id\": 7, \"title\": null, \"text\": \"body four\"}\n");
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_BEIR, p, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 4);
    ck_assert_str_eq(c.ids[0], "x1");
    ck_assert_str_eq(c.texts[0], "A Title\nbody one");
    ck_assert_str_eq(c.texts[1], "body two");
    ck_assert_str_eq(c.ids[2], "x3");
    ck_assert_str_eq(c.texts[2], "body three");
    ck_assert_str_eq(c.ids[3], "7");
    coll_free(&c);

    /* A JSONL-format line is not BEIR: "_id" is missing. */
    p = write_tmp("b2.jsonl", "{\"id\": \"d1\", \"contents\": \"x\"}\n");
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_BEIR, p, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), ":1: missing \"_id\""));
    coll_free(&c);
}
END_TEST

START_TEST(jsonl_gz_and_long_lines)
{
    /* A 3 MB line spans many 64 KiB decompression chunks. */
    size_t big = 3u << 20;
    char *body = malloc(big + 200);
    ck_assert(body != NULL);
    int k = sprintf(body, "{\"id\":\"long\",\"contents\":\"");
    for (size_t i = 0; i < big; i++) body[k + i] = (char)('a' + i % 26);
    strcpy(body + k + big, "\"}\n{\"id\":\"short\",\"contents\":\"tail\"}\n");
    const char *p = tu_tmp_path("long.jsonl");
    tu_write_file(p, body, strlen(body));
    free(body);

    for (int pass = 0; pass < 2; pass++) {
        const char *path = pass ? gzip_file(p) : p;
        coll c = {0};
        ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, path, on_doc, &c), CLS_OK);
        ck_assert_uint_eq(c.n, 2);
        ck_assert_str_eq(c.ids[0], "long");
        ck_assert_uint_eq(strlen(c.texts[0]), big);
        ck_assert_int_eq(c.texts[0][big - 1], 'a' + (big - 1) % 26);
        ck_assert_str_eq(c.ids[1], "short");
        ck_assert_str_eq(c.texts[1], "tail");
        coll_free(&c);
    }

    /* Malformed input inside a .gz still names the file and the decompressed line. */
    const char *bad = write_tmp("bad.jsonl", "{\"id\":\"a\",\"contents\":\"x\"}\n{oops}\n");
    const char *badgz = gzip_file(bad);
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, badgz, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), ".gz:2:"));
    coll_free(&c);

    /* An empty .gz (zero decompressed bytes) is an empty corpus. */
    const char *empty = write_tmp("empty.jsonl", "");
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, gzip_file(empty), on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(jsonl_folder_sorted)
{
    const char *d = tu_tmp_path("jdir");
    mkdir_p(d);
    /* Byte order of the relative path: "a.jsonl" < "a/z.jsonl" ('.' < '/') < "b.jsonl.gz". */
    write_in(d, "b.jsonl", "{\"id\":\"b\",\"contents\":\"B\"}\n");
    write_in(d, "a/z.jsonl", "{\"id\":\"az\",\"contents\":\"AZ\"}\n");
    write_in(d, "a.jsonl", "{\"id\":\"a1\",\"contents\":\"A\"}\n{\"id\":\"a2\",\"contents\":\"A\"}\n");
    write_in(d, ".hidden", "not json");
    char b[4200];
    snprintf(b, sizeof b, "%s/b.jsonl", d);
    gzip_file(b);
    remove(b);
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, d, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 4);
    ck_assert_str_eq(c.ids[0], "a1");
    ck_assert_str_eq(c.ids[1], "a2");
    ck_assert_str_eq(c.ids[2], "az");
    ck_assert_str_eq(c.ids[3], "b");
    coll_free(&c);
}
END_TEST

static void expect_bad(cls_corpus_format fmt, const char *content, const char *needle)
{
    const char *p = write_tmp("bad.jsonl", content);
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(fmt, p, on_doc, &c), CLS_E_FORMAT);
    ck_assert_msg(strstr(cls_last_error(), p) != NULL, "no path in: %s", cls_last_error());
    ck_assert_msg(strstr(cls_last_error(), needle) != NULL, "expected \"%s\" in: %s", needle,
                  cls_last_error());
    coll_free(&c);
}

START_TEST(jsonl_malformed)
{
    const char *ok = "{\"id\":\"a\",\"contents\":\"x\"}\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%s\n%snot json\n", ok, ok);
    expect_bad(CLS_CORPUS_JSONL, buf, ":4: not valid JSON");
    expect_bad(CLS_CORPUS_JSONL, "{\"contents\":\"x\"}\n", ":1: missing \"id\"");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":[1],\"contents\":\"x\"}\n", ":1: \"id\" is not");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":true,\"contents\":\"x\"}\n", ":1: \"id\" is not");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":1.5,\"contents\":\"x\"}\n", ":1: numeric \"id\"");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":\"\",\"contents\":\"x\"}\n", ":1: empty \"id\"");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":\"a\",\"contents\":3}\n", ":1: \"contents\" is not");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":\"a\"}\n", ":1: missing \"contents\"");
    expect_bad(CLS_CORPUS_JSONL, "[1,2]\n", ":1: not a JSON object");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":\"a\",\"contents\":\"x\"} trailing\n",
               ":1: text after");
    expect_bad(CLS_CORPUS_JSONL, "{\"id\":\"a\",\"contents\":\"x\"\n", ":1: not valid JSON");
    expect_bad(CLS_CORPUS_BEIR, "{\"_id\":\"a\",\"title\":5,\"text\":\"x\"}\n",
               ":1: \"title\" is not");
    expect_bad(CLS_CORPUS_BEIR, "{\"_id\":\"a\",\"title\":\"t\"}\n", ":1: missing \"text\"");

    /* A raw NUL byte is refused, not truncated. */
    const char raw[] = "{\"id\":\"a\",\"contents\":\"x\0y\"}\n";
    const char *p = tu_tmp_path("nul.jsonl");
    tu_write_file(p, raw, sizeof raw - 1);
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, p, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), ":1: NUL byte"));
}
END_TEST

START_TEST(missing_paths)
{
    coll c = {0};
    const char *p = "/nonexistent/clsearch/corpus.jsonl";
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, p, on_doc, &c), CLS_E_IO);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), p));
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "No such file"));
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, "/nonexistent/x.jsonl.gz", on_doc, &c),
                     CLS_E_IO);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, "/nonexistent/x.tar.gz", on_doc, &c),
                     CLS_E_IO);
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, "/nonexistent/t.tsv", on_topic, &c),
                     CLS_E_IO);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "/nonexistent/t.tsv"));
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_ANSERINI, "/nonexistent/t.txt", on_topic, &c),
                     CLS_E_IO);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, NULL, on_doc, &c), CLS_E_ARG);
    ck_assert_int_eq(cls_corpus_read((cls_corpus_format)99, "/tmp", on_doc, &c), CLS_E_ARG);
    ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(callback_stops)
{
    const char *p = write_tmp("s.jsonl", "{\"id\":\"a\",\"contents\":\"x\"}\n"
                                         "{\"id\":\"b\",\"contents\":\"x\"}\n"
                                         "{\"id\":\"c\",\"contents\":\"x\"}\n");
    coll c = {.stop_after = 2};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, p, on_doc, &c), CLS_E_ARG);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(cls_last_error(), "stopped by caller");
    coll_free(&c);

    /* The callback's own message survives. */
    c = (coll){.stop_after = 1, .set_msg = 1};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, p, on_doc, &c), CLS_E_ARG);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "for-message"));
    coll_free(&c);

    const char *t = write_tmp("s.tsv", "1\tone\n2\ttwo\n");
    c = (coll){.stop_after = 1};
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, t, on_topic, &c), CLS_E_ARG);
    ck_assert_uint_eq(c.n, 1);
    coll_free(&c);
}
END_TEST

/* ---- HTML ------------------------------------------------------------------------------------ */

static char *html_text(const char *html)
{
    size_t n = strlen(html);
    char *b = dupn(html, n);
    b[crp_html_to_text(b, n)] = '\0';
    return b;
}

static void expect_text(const char *html, const char *want)
{
    char *got = html_text(html);
    ck_assert_msg(strcmp(got, want) == 0, "html \"%s\" -> \"%s\", want \"%s\"", html, got, want);
    free(got);
}

START_TEST(html_markup_and_entities)
{
    expect_text("<html><pre>a</pre></html>", "  a  ");
    expect_text("a<br>b", "a b");
    expect_text("x<script type=\"t\">var s = '<b>';</script>y", "x y");
    expect_text("x<SCRIPT>if (a<b) {}</SCRIPT >y", "x y");
    expect_text("x<style>p { color: red }</style>y", "x y");
    expect_text("x<scripts>kept</scripts>y", "x kept y");
    expect_text("x<script>never closed", "x ");
    expect_text("a<!-- c > d -->b", "a b");
    expect_text("a<!---->b<!-->c", "a b c");
    expect_text("<!DOCTYPE html>a<?xml x?>b", " a b");
    expect_text("<a title=\"x>y\" href='q>'>link</a>", " link ");
    expect_text("1 <= m <= n and 1 < 2, <1)", "1 <= m <= n and 1 < 2, <1)");
    expect_text("a </ b> c</>d", "a   c d");
    expect_text("a<", "a<");
    expect_text("a<b", "a ");
    expect_text("AT&amp;T &lt;x&gt; &quot;q&quot; it&apos;s a&nbsp;b &AMP;", "AT&T <x> \"q\" it's a b &");
    expect_text("&#65;&#x42;&#X43;&#100 &#233; &#x20AC; &#x1F600;",
                "ABCd \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    expect_text("&#0; &#xD800; &#99999999999; &#146;",
                "\xEF\xBF\xBD \xEF\xBF\xBD \xEF\xBF\xBD \xE2\x80\x99");
    expect_text("& &amp &unknown; &#; &#x; fish&chips", "& &amp &unknown; &#; &#x; fish&chips");
    expect_text("&lt;b&gt;not a tag&lt;/b&gt;", "<b>not a tag</b>");
}
END_TEST

START_TEST(html_folder_sorted)
{
    const char *d = tu_tmp_path("hdir");
    mkdir_p(d);
    write_in(d, "z.html", "<p>zed</p>");
    write_in(d, "sub/b.htm", "<p>bee &amp; co</p>");
    write_in(d, "sub/a.HTML", "<p>ay</p><script>drop()</script>");
    write_in(d, "a.html", "<p>first</p>");
    write_in(d, "notes.txt", "not html");
    write_in(d, "sub/deeper/c.html", "<b>c</b>");
    write_in(d, "._junk.html", "resource fork");
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, d, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 5);
    ck_assert_str_eq(c.ids[0], "a");
    ck_assert_str_eq(c.ids[1], "a"); /* sub/a.HTML */
    ck_assert_str_eq(c.texts[1], " ay  "); /* the script element is one space */
    ck_assert_str_eq(c.ids[2], "b");
    ck_assert_str_eq(c.texts[2], " bee & co ");
    ck_assert_str_eq(c.ids[3], "c");
    ck_assert_str_eq(c.ids[4], "z");
    coll_free(&c);

    /* A single HTML file is a one-document corpus. */
    char one[4200];
    snprintf(one, sizeof one, "%s/z.html", d);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, one, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.ids[0], "z");
    ck_assert_str_eq(c.texts[0], " zed ");
    coll_free(&c);
}
END_TEST

START_TEST(html_oversized_file)
{
    /* A sparse 1 GiB + 1 file costs no disk and is refused before anything is read. */
    const char *d = tu_tmp_path("hbig");
    mkdir_p(d);
    char p[4200];
    snprintf(p, sizeof p, "%s/huge.html", d);
    FILE *f = fopen(p, "wb");
    ck_assert(f != NULL);
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)CRP_MAX_DOC_BYTES + 1), 0);
    fclose(f);
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, d, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "huge.html"));
    ck_assert_uint_eq(c.n, 0);
    remove(p);
}
END_TEST

/* Writes an archive with libarchive: format "zip" or "gnutar" (gzip-compressed if gz). */
static void write_archive(const char *path, const char *format, int gz)
{
    struct archive *a = archive_write_new();
    ck_assert(a != NULL);
    ck_assert_int_eq(archive_write_set_format_by_name(a, format), ARCHIVE_OK);
    if (gz) ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    static const struct {
        const char *name, *data;
        int dir;
    } ents[] = {{"docs/", NULL, 1},
                {"docs/B-2.html", "<p>second &amp; more</p>", 0},
                {"docs/readme.txt", "skip me", 0},
                {"docs/A-1.htm", "<html><pre>first</pre></html>", 0},
                {"__MACOSX/docs/._A-1.htm", "fork", 0}};
    for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, ents[i].name);
        archive_entry_set_filetype(e, ents[i].dir ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, ents[i].data ? (la_int64_t)strlen(ents[i].data) : 0);
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        if (ents[i].data)
            ck_assert_int_eq(archive_write_data(a, ents[i].data, strlen(ents[i].data)),
                             (la_ssize_t)strlen(ents[i].data));
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

START_TEST(html_archives)
{
    static const struct {
        const char *name, *format;
        int gz;
    } kinds[] = {{"h.zip", "zip", 0}, {"h.tar", "gnutar", 0}, {"h.tgz", "gnutar", 1},
                 {"h.tar.gz", "gnutar", 1}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const char *p = tu_tmp_path(kinds[k].name);
        char named[4200];
        snprintf(named, sizeof named, "%s.%s", p, kinds[k].name); /* keep the real suffix */
        write_archive(named, kinds[k].format, kinds[k].gz);
        coll c = {0};
        ck_assert_msg(cls_corpus_read(CLS_CORPUS_HTML, named, on_doc, &c) == CLS_OK, "%s: %s",
                      named, cls_last_error());
        ck_assert_uint_eq(c.n, 2);
        /* Archive order, not sorted order. */
        ck_assert_str_eq(c.ids[0], "B-2");
        ck_assert_str_eq(c.texts[0], " second & more ");
        ck_assert_str_eq(c.ids[1], "A-1");
        ck_assert_str_eq(c.texts[1], "  first  ");
        coll_free(&c);
    }

    /* Not an archive at all. */
    const char *junk = write_tmp("junk.tar", "this is not a tar file, just some words\n");
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, junk, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), junk));
}
END_TEST

/* Is needle inside s[0..n)? (memmem is a GNU extension.) */
static int contains(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, needle, k) == 0) return 1;
    return 0;
}

typedef struct cacm_state {
    int seen;
    int first_ok;
} cacm_state;

static int on_cacm(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    cacm_state *cs = user;
    char want[32];
    snprintf(want, sizeof want, "CACM-%04d", ++cs->seen);
    /* The tarball lists CACM-0001 ... CACM-3204 in order; archive order is kept. */
    ck_assert_msg(dl == strlen(want) && memcmp(docno, want, dl) == 0, "doc %d is %.*s", cs->seen,
                  (int)dl, docno);
    ck_assert_msg(!contains(text, tl, "<pre>") && !contains(text, tl, "</html>"),
                  "markup left in %s", want);
    if (cs->seen == 1)
        cs->first_ok = contains(text, tl, "Preliminary Report-International Algebraic Language");
    return 0;
}

START_TEST(cacm_tarball)
{
    const char *p = tu_data_path("cacm/cacm.tar.gz");
    if (!p) return; /* tu_data_path printed which path is missing */
    cacm_state cs = {0};
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_HTML, p, on_cacm, &cs) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_int_eq(cs.seen, 3204);
    ck_assert(cs.first_ok);
}
END_TEST

/* ---- Topics ---------------------------------------------------------------------------------- */

START_TEST(topics_tsv)
{
    const char *p = write_tmp("t.tsv", "\n101\tfirst query\n  \n102\tsecond\twith tab\r\n"
                                       " 103 \t\n");
    coll c = {0};
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, p, on_topic, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 3);
    ck_assert_str_eq(c.ids[0], "101");
    ck_assert_str_eq(c.texts[0], "first query");
    ck_assert_str_eq(c.ids[1], "102");
    ck_assert_str_eq(c.texts[1], "second\twith tab");
    ck_assert_str_eq(c.ids[2], "103");
    ck_assert_str_eq(c.texts[2], "");
    coll_free(&c);

    /* Only blank lines: zero topics, no error. So is a .gz copy of the first file. */
    p = write_tmp("blank.tsv", "\n \n\t\n");
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, p, on_topic, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 0);
    p = write_tmp("t.tsv", "7\tseven\n");
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, gzip_file(p), on_topic, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.texts[0], "seven");
    coll_free(&c);

    const char *msmarco = tu_data_path("queries/topics.msmarco-passage.dev-subset.txt");
    if (msmarco) {
        ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, msmarco, on_topic, &c), CLS_OK);
        ck_assert_uint_eq(c.n, 6980);
        coll_free(&c);
    }
}
END_TEST

static void expect_bad_topics(cls_topics_format fmt, const char *content, const char *needle)
{
    const char *p = write_tmp("bad.topics", content);
    coll c = {0};
    ck_assert_int_eq(cls_topics_read(fmt, p, on_topic, &c), CLS_E_FORMAT);
    ck_assert_msg(strstr(cls_last_error(), p) != NULL, "no path in: %s", cls_last_error());
    ck_assert_msg(strstr(cls_last_error(), needle) != NULL, "expected \"%s\" in: %s", needle,
                  cls_last_error());
    coll_free(&c);
}

START_TEST(topics_tsv_malformed)
{
    expect_bad_topics(CLS_TOPICS_TSV, "1\tok\n\nno tab here\n", ":3: expected qid<TAB>text");
    expect_bad_topics(CLS_TOPICS_TSV, "\tno qid\n", ":1: expected qid<TAB>text");
    expect_bad_topics(CLS_TOPICS_TSV, "  \tno qid\n", ":1: expected qid<TAB>text");
}
END_TEST

START_TEST(topics_anserini)
{
    const char *p = write_tmp("t.txt", "<DOC>\n<DOCNO> 1 </DOCNO>\n\n  What articles\nexist?  \n"
                                       "</DOC>\n\n<DOC><DOCNO>Q2</DOCNO> one line </DOC>\n"
                                       "<doc>\n<docno>\n3\n</docno>\n</doc>\n");
    coll c = {0};
    ck_assert_msg(cls_topics_read(CLS_TOPICS_ANSERINI, p, on_topic, &c) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(c.n, 3);
    ck_assert_str_eq(c.ids[0], "1");
    ck_assert_str_eq(c.texts[0], "What articles exist?");
    ck_assert_str_eq(c.ids[1], "Q2");
    ck_assert_str_eq(c.texts[1], "one line");
    ck_assert_str_eq(c.ids[2], "3");
    ck_assert_str_eq(c.texts[2], "");
    coll_free(&c);

    const char *cacm = tu_data_path("cacm/topics.cacm.txt");
    if (!cacm) return;
    ck_assert_msg(cls_topics_read(CLS_TOPICS_ANSERINI, cacm, on_topic, &c) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(c.n, 64);
    ck_assert_str_eq(c.ids[0], "1");
    ck_assert_str_eq(c.texts[0], "What articles exist which deal with TSS (Time Sharing System), "
                                 "an operating system for IBM computers?");
    ck_assert_str_eq(c.ids[63], "64");
    coll_free(&c);
}
END_TEST

START_TEST(topics_anserini_malformed)
{
    expect_bad_topics(CLS_TOPICS_ANSERINI, "<DOC>\n<DOCNO> 1 </DOCNO>\ntext\n", ":1: <DOC> of topic 1 has no </DOC>");
    expect_bad_topics(CLS_TOPICS_ANSERINI,
                      "<DOC>\n<DOCNO> 1 </DOCNO>\ntext\n<DOC>\n<DOCNO> 2 </DOCNO>\nx\n</DOC>\n",
                      ":4: <DOC> before the </DOC> of topic 1");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "<DOC>\ntext without docno\n</DOC>\n",
                      ":2: missing <DOCNO>");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "<DOC>\n</DOC>\n", ":2: missing <DOCNO>");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "<DOC><DOCNO>  </DOCNO></DOC>\n", ":1: empty <DOCNO>");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "1\tthis is tsv\n2\tmore\n", ":1: text outside <DOC>");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "\n\n", ":2: no <DOC> topics found");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "", ":1: no <DOC> topics found");
    expect_bad_topics(CLS_TOPICS_ANSERINI, "<DOC>\n<DOCNO> 1\n", ":1: <DOC> without a complete");
}
END_TEST

static Suite *corpus_suite(void)
{
    Suite *s = suite_create("corpus");
    TCase *tc = tcase_create("corpus");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, jsonl_happy);
    tcase_add_test(tc, jsonl_nul_escape_keeps_text);
    tcase_add_test(tc, beir_happy);
    tcase_add_test(tc, jsonl_gz_and_long_lines);
    tcase_add_test(tc, jsonl_folder_sorted);
    tcase_add_test(tc, jsonl_malformed);
    tcase_add_test(tc, missing_paths);
    tcase_add_test(tc, callback_stops);
    tcase_add_test(tc, html_markup_and_entities);
    tcase_add_test(tc, html_folder_sorted);
    tcase_add_test(tc, html_oversized_file);
    tcase_add_test(tc, html_archives);
    tcase_add_test(tc, cacm_tarball);
    tcase_add_test(tc, topics_tsv);
    tcase_add_test(tc, topics_tsv_malformed);
    tcase_add_test(tc, topics_anserini);
    tcase_add_test(tc, topics_anserini_malformed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(corpus_suite()); }
