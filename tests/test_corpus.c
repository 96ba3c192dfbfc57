/* Corpus and topics readers: JSONL / BEIR / gzip, HTML folders and archives (markup removal,
 * entities, order), TREC SGML and SMART corpora, TSV, Anserini, TREC, SMART and Million Query
 * topics, and the failures each must report. */
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

/* ---- TREC and SMART corpora ------------------------------------------------------------------ */

START_TEST(trec_corpus)
{
    const char *p = write_tmp("t.trec",
                              "<DOC>\n<DOCNO> FT911-1 </DOCNO>\n<HEADLINE>Big &amp; news</HEADLINE>\n"
                              "<TEXT>\nfirst\nline\n</TEXT>\n</DOC>\n\n"
                              "<doc><docno>d2</docno>one-liner</doc><DOC>\n<DOCNO>\nd3\n</DOCNO>"
                              "</DOC>\n");
    for (int pass = 0; pass < 2; pass++) {
        coll c = {0};
        const char *path = pass ? gzip_file(p) : p;
        ck_assert_msg(cls_corpus_read(CLS_CORPUS_TREC, path, on_doc, &c) == CLS_OK, "%s",
                      cls_last_error());
        ck_assert_uint_eq(c.n, 3);
        ck_assert_str_eq(c.ids[0], "FT911-1");
        ck_assert_str_eq(c.texts[0], "\n \n Big & news \n \nfirst\nline\n \n");
        ck_assert_str_eq(c.ids[1], "d2");
        ck_assert_str_eq(c.texts[1], " one-liner");
        ck_assert_str_eq(c.ids[2], "d3");
        ck_assert_str_eq(c.texts[2], "\n "); /* the line break after <DOC> */
        coll_free(&c);
    }
    /* A folder: every file, in byte order. */
    const char *d = tu_tmp_path("tdir");
    mkdir_p(d);
    write_in(d, "b", "<DOC><DOCNO>b1</DOCNO>x</DOC>\n");
    write_in(d, "a/f1", "<DOC><DOCNO>a1</DOCNO>x</DOC>\n<DOC><DOCNO>a2</DOCNO>y</DOC>\n");
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_TREC, d, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 3);
    ck_assert_str_eq(c.ids[0], "a1");
    ck_assert_str_eq(c.ids[1], "a2");
    ck_assert_str_eq(c.ids[2], "b1");
    coll_free(&c);
    /* An empty file is an empty corpus. */
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_TREC, write_tmp("e.trec", "\n"), on_doc, &c),
                     CLS_OK);
    ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(trec_corpus_malformed)
{
    expect_bad(CLS_CORPUS_TREC, "<DOC>\n<DOCNO>1</DOCNO>\ntext\n", ":1: <DOC> has no </DOC>");
    expect_bad(CLS_CORPUS_TREC, "<DOC>\n<DOCNO>1</DOCNO>\n\n<DOC>\n<DOCNO>2</DOCNO></DOC>\n",
               ":4: <DOC> inside the <DOC> opened at line 1");
    expect_bad(CLS_CORPUS_TREC, "<DOC><DOCNO>1</DOCNO></DOC>\n<DOC>\ntext\n</DOC>\n",
               ":2: <DOC> without <DOCNO>");
    expect_bad(CLS_CORPUS_TREC, "<DOC>\n<DOCNO>1\n</DOC>\n", ":1: <DOCNO> of the <DOC> here has no");
    expect_bad(CLS_CORPUS_TREC, "<DOC><DOCNO> </DOCNO></DOC>\n", ":1: empty <DOCNO>");
    expect_bad(CLS_CORPUS_TREC, "<DOC><DOCNO>1</DOCNO><DOCNO>2</DOCNO></DOC>\n",
               ":1: <DOC> with two <DOCNO>");
    expect_bad(CLS_CORPUS_TREC, "\nstray\n<DOC><DOCNO>1</DOCNO></DOC>\n", ":2: text outside <DOC>");
}
END_TEST

START_TEST(smart_corpus)
{
    const char *p = write_tmp("s.all", ".I 1\r\n.T\r\nA title\r\n.A \r\nsmith, j.\r\n.B\r\n"
                                       "j. x 1, 1958.\r\n.W\r\nwords here\r\n.5 mm .NET\r\n"
                                       ".X\r\n1\t5\t1\r\n.I 7\n.K\nkeywords\n.W\nonly words\n"
                                       ".I 9\n");
    for (int pass = 0; pass < 2; pass++) {
        coll c = {0};
        const char *path = pass ? gzip_file(p) : p;
        ck_assert_msg(cls_corpus_read(CLS_CORPUS_SMART, path, on_doc, &c) == CLS_OK, "%s",
                      cls_last_error());
        ck_assert_uint_eq(c.n, 3);
        ck_assert_str_eq(c.ids[0], "1");
        ck_assert_str_eq(c.texts[0], "A title\nsmith, j.\nj. x 1, 1958.\nwords here\n.5 mm .NET");
        ck_assert_str_eq(c.ids[1], "7");
        ck_assert_str_eq(c.texts[1], "only words");
        ck_assert_str_eq(c.ids[2], "9");
        ck_assert_str_eq(c.texts[2], "");
        coll_free(&c);
    }
    expect_bad(CLS_CORPUS_SMART, "junk\n.I 1\n.W\nx\n", ":1: text before the first \".I\"");
    expect_bad(CLS_CORPUS_SMART, ".I 1\n.W\nx\n.I\n", ":4: \".I\" must be followed");
    expect_bad(CLS_CORPUS_SMART, ".I 1\n.W\nx\n.I 2a\n", ":4: \".I\" must be followed");
    expect_bad(CLS_CORPUS_SMART, ".I 1\nloose text\n.W\nx\n", ":2: text in record .I 1 before");
}
END_TEST

typedef struct smart_count {
    size_t n;
    int ids_ok; /* docno of the i-th record is i */
} smart_count;

static int on_smart(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    smart_count *sc = user;
    char want[32];
    int k = snprintf(want, sizeof want, "%zu", ++sc->n);
    if ((size_t)k != dl || memcmp(docno, want, dl) != 0) sc->ids_ok = 0;
    (void)text;
    (void)tl;
    return 0;
}

START_TEST(smart_collections)
{
    static const struct {
        const char *rel;
        size_t docs;
    } sets[] = {{"cranfield/cran.all.1400", 1400}, {"med/MED.ALL", 1033}, {"cisi/CISI.ALL", 1460}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const char *p = tu_data_path(sets[i].rel);
        if (!p) continue;
        smart_count sc = {0, 1};
        ck_assert_msg(cls_corpus_read(CLS_CORPUS_SMART, p, on_smart, &sc) == CLS_OK, "%s",
                      cls_last_error());
        ck_assert_uint_eq(sc.n, sets[i].docs);
        ck_assert_msg(sc.ids_ok, "%s: docnos are not 1..%zu", p, sets[i].docs);
    }
    /* CISI's .X cross-references are not text: document 1 ends with its abstract. */
    const char *cisi = tu_data_path("cisi/CISI.ALL");
    if (!cisi) return;
    coll c = {.stop_after = 1};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_SMART, cisi, on_doc, &c), CLS_E_ARG);
    ck_assert_str_eq(c.ids[0], "1");
    ck_assert(strncmp(c.texts[0], "18 Editions of the Dewey Decimal Classifications\n"
                                  "Comaromi, J.P.\n", 64) == 0);
    ck_assert_ptr_null(strchr(c.texts[0], '\t'));
    ck_assert_ptr_null(strchr(c.texts[0], '\r'));
    coll_free(&c);
}
END_TEST

/* ---- TREC, SMART and Million Query topics ------------------------------------------------- */

START_TEST(topics_trec)
{
    const char *p = write_tmp("t.trec",
                              "<top>\n<num> Number: 401\n<title> foreign minorities, Germany\n\n"
                              "<desc> Description:\nWhat language?\n<narr> Narrative:\nx\n</top>\n"
                              "\n<TOP>\n<NUM> Number: 051\n<TITLE> Topic:  Antitrust\n  Cases "
                              "Pending\n<DESC> d\n</TOP>\n<top><num>7</num><title>t7</title>"
                              "</top>\n");
    coll c = {0};
    ck_assert_msg(cls_topics_read(CLS_TOPICS_TREC, p, on_topic, &c) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(c.n, 3);
    ck_assert_str_eq(c.ids[0], "401");
    ck_assert_str_eq(c.texts[0], "foreign minorities, Germany");
    ck_assert_str_eq(c.ids[1], "51");
    ck_assert_str_eq(c.texts[1], "Antitrust Cases Pending");
    ck_assert_str_eq(c.ids[2], "7");
    ck_assert_str_eq(c.texts[2], "t7");
    coll_free(&c);

    expect_bad_topics(CLS_TOPICS_TREC, "<top>\n<num> Number: 1\n<title> x\n",
                      ":1: <top> has no </top>");
    expect_bad_topics(CLS_TOPICS_TREC, "<top>\n<title> x\n</top>\n", ":1: <top> without <num>");
    expect_bad_topics(CLS_TOPICS_TREC, "<top>\n<num> Number: 1\n<desc> x\n</top>\n",
                      ":1: <top> of topic 1 has no <title>");
    expect_bad_topics(CLS_TOPICS_TREC, "<top>\n<num> Number: \n<title> x\n</top>\n",
                      ":1: <num> of this <top>");
    expect_bad_topics(CLS_TOPICS_TREC, "<top>\n<num> 1\n<top>\n", ":3: <top> inside");
    expect_bad_topics(CLS_TOPICS_TREC, "1\tq\n", ":1: text outside <top>");
    expect_bad_topics(CLS_TOPICS_TREC, "\n", ":1: no <top> topics found");
}
END_TEST

START_TEST(topics_smart)
{
    /* Record numbers with gaps, as in cran.qry: the qid is the ordinal. */
    const char *p = write_tmp("q.qry", ".I 001\r\n.W\r\nwhat similarity laws\r\n  must be obeyed .\r\n"
                                       ".I 004\r\n.T\r\nIgnored title\r\n.W\r\nsecond\r\n.B\r\n"
                                       "ignored too\r\n");
    coll c = {0};
    ck_assert_msg(cls_topics_read(CLS_TOPICS_SMART, p, on_topic, &c) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.ids[0], "1");
    ck_assert_str_eq(c.texts[0], "what similarity laws must be obeyed .");
    ck_assert_str_eq(c.ids[1], "2");
    ck_assert_str_eq(c.texts[1], "second");
    coll_free(&c);

    expect_bad_topics(CLS_TOPICS_SMART, ".I 1\n.W\nx\n.I 2\n.T\ny\n", ":4: query 2 has no .W");
    expect_bad_topics(CLS_TOPICS_SMART, "x\n.I 1\n.W\nx\n", ":1: text before the first");
    expect_bad_topics(CLS_TOPICS_SMART, ".I one\n.W\nx\n", ":1: \".I\" must be followed");
    expect_bad_topics(CLS_TOPICS_SMART, "", ":1: no \".I\" queries found");

    static const struct {
        const char *rel;
        size_t n;
    } sets[] = {{"cranfield/cran.qry", 225}, {"med/MED.QRY", 30}, {"cisi/CISI.QRY", 112}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const char *q = tu_data_path(sets[i].rel);
        if (!q) continue;
        ck_assert_msg(cls_topics_read(CLS_TOPICS_SMART, q, on_topic, &c) == CLS_OK, "%s",
                      cls_last_error());
        ck_assert_uint_eq(c.n, sets[i].n);
        for (size_t j = 0; j < c.n; j++) {
            char want[32];
            snprintf(want, sizeof want, "%zu", j + 1);
            ck_assert_str_eq(c.ids[j], want);
            ck_assert_msg(c.texts[j][0] != '\0', "%s: query %zu is empty", q, j + 1);
        }
        if (i == 0)
            ck_assert_str_eq(c.texts[0], "what similarity laws must be obeyed when constructing "
                                         "aeroelastic models of heated high speed aircraft .");
        coll_free(&c);
    }
}
END_TEST

START_TEST(topics_mq)
{
    const char *p = write_tmp("q.mq", "20001:1:obama family tree\n\n20002:3:time: 10:30\r\n"
                                      "7:0:\n");
    coll c = {0};
    ck_assert_msg(cls_topics_read(CLS_TOPICS_MQ, p, on_topic, &c) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(c.n, 3);
    ck_assert_str_eq(c.ids[0], "20001");
    ck_assert_str_eq(c.texts[0], "obama family tree");
    ck_assert_str_eq(c.ids[1], "20002");
    ck_assert_str_eq(c.texts[1], "time: 10:30");
    ck_assert_str_eq(c.ids[2], "7");
    ck_assert_str_eq(c.texts[2], "");
    coll_free(&c);

    expect_bad_topics(CLS_TOPICS_MQ, "1:1:ok\n2\tno colons\n", ":2: expected qid:priority:query");
    expect_bad_topics(CLS_TOPICS_MQ, "1:x:bad priority\n", ":1: expected qid:priority:query");
    expect_bad_topics(CLS_TOPICS_MQ, ":1:no qid\n", ":1: expected qid:priority:query");
    expect_bad_topics(CLS_TOPICS_MQ, "1::no priority\n", ":1: expected qid:priority:query");

    const char *mq = tu_data_path("queries/topics.mq.20001-60000.txt");
    if (!mq) return;
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_MQ, mq, on_topic, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 40000);
    ck_assert_str_eq(c.ids[0], "20001");
    ck_assert_str_eq(c.texts[0], "obama family tree");
    ck_assert_str_eq(c.ids[39999], "60000");
    coll_free(&c);
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
    tcase_add_test(tc, trec_corpus);
    tcase_add_test(tc, trec_corpus_malformed);
    tcase_add_test(tc, smart_corpus);
    tcase_add_test(tc, smart_collections);
    tcase_add_test(tc, topics_trec);
    tcase_add_test(tc, topics_smart);
    tcase_add_test(tc, topics_mq);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(corpus_suite()); }
