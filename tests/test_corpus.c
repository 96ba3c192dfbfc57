/* Corpus and topics readers: JSONL / BEIR / gzip, HTML folders and archives (markup removal,
 * entities, order), TREC SGML and SMART corpora, plain-file trees and archives, the line formats
 * inside tar and zip archives, progress reporting, TSV, Anserini, TREC, SMART and Million Query
 * topics, and the failures each must report; and the threaded index builder (byte-identical
 * files, errors from worker threads). */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clsearch.h"
#include "corpus/corpus.h"
#include "util/vec.h"
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
    size_t icap = c->cap, tcap = c->cap; /* the two arrays share c->cap */
    ck_assert(vec_reserve(&c->ids, &icap, c->n + 1, sizeof *c->ids) &&
              vec_reserve(&c->texts, &tcap, c->n + 1, sizeof *c->texts));
    c->cap = icap < tcap ? icap : tcap;
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

/* The offset of the header libarchive reads at the end of the tar at path: where its two
 * end-of-archive blocks start. */
static la_int64_t tar_end_at(const char *path)
{
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    ck_assert_int_eq(archive_read_open_filename(a, path, 10240), ARCHIVE_OK);
    struct archive_entry *e;
    int rc;
    while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {}
    ck_assert_int_eq(rc, ARCHIVE_EOF);
    la_int64_t at = archive_read_header_position(a);
    archive_read_free(a);
    return at;
}

/* A tar cut short, even exactly between two entries or between its two end blocks, plain or
 * gzip-compressed, is CLS_E_FORMAT naming it, never an archive of fewer documents; with both end
 * blocks (what follows is padding) it reads whole. */
START_TEST(tar_cut_short)
{
    static const struct {
        const char *format;
        int gz;
    } kinds[] = {{"gnutar", 0}, {"pax", 0}, {"gnutar", 1}, {"pax", 1}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char full[4300], cut[4300];
        snprintf(full, sizeof full, "%s.tar", tu_tmp_path("tcut"));
        write_archive(full, kinds[k].format, 0);
        size_t len;
        unsigned char *bytes = tu_read_file(full, &len);
        la_int64_t end = tar_end_at(full);
        ck_assert(end > 0 && (size_t)end + 1024 <= len);
        for (size_t n = 512; n <= (size_t)end + 1024; n += 512) {
            snprintf(cut, sizeof cut, "%s.tar", tu_tmp_path("tcut"));
            tu_write_file(cut, bytes, n);
            const char *in = kinds[k].gz ? gzip_file(cut) : cut;
            coll c = {0};
            cls_status st = cls_corpus_read(CLS_CORPUS_HTML, in, on_doc, &c);
            if (n == (size_t)end + 1024) {
                ck_assert_msg(st == CLS_OK && c.n == 2, "%s %s cut at its end: %d, %zu documents: %s",
                              kinds[k].format, in, (int)st, c.n, cls_last_error());
            } else {
                ck_assert_msg(st == CLS_E_FORMAT, "%s cut to %zu of %zu bytes: %d with %zu documents",
                              kinds[k].format, n, len, (int)st, c.n);
                ck_assert_msg(strstr(cls_last_error(), in) != NULL, "%s", cls_last_error());
            }
            coll_free(&c);
            remove(in);
            remove(cut);
        }
        /* the same through the line readers and the plain-file reader */
        if (!kinds[k].gz) {
            snprintf(cut, sizeof cut, "%s.tar", tu_tmp_path("tcut"));
            tu_write_file(cut, bytes, (size_t)end);
            coll c = {0};
            ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, cut, on_doc, &c), CLS_E_FORMAT);
            ck_assert_msg(strstr(cls_last_error(), "end-of-archive") != NULL, "%s", cls_last_error());
            ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_TREC, cut, on_doc, &c), CLS_E_FORMAT);
            ck_assert_msg(strstr(cls_last_error(), cut) != NULL, "%s", cls_last_error());
            coll_free(&c);
            remove(cut);
        }
        free(bytes);
        remove(full);
    }
}
END_TEST

/* A zip written by libarchive: entries[i] named names[i], stored (not compressed) when store. */
static unsigned char *make_zip(const char *const *names, const char *const *data, const size_t *lens, size_t n,
                               size_t *len)
{
    const char *p = tu_tmp_path("mkzip");
    struct archive *a = archive_write_new();
    ck_assert_int_eq(archive_write_set_format_zip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_set_options(a, "zip:compression=store"), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open_filename(a, p), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)lens[i]);
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        ck_assert_int_eq(archive_write_data(a, data[i], lens[i]), (la_ssize_t)lens[i]);
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    unsigned char *bytes = tu_read_file(p, len);
    remove(p);
    return bytes;
}

/* A zip is read through its central directory: cut anywhere (the central directory gone, or
 * only the outer one's, leaving that of the zip stored inside it at the end) it is CLS_E_FORMAT
 * naming it, before any document; the entries of the inner zip are never read as the outer's. */
START_TEST(zip_cut_short)
{
    static const char inner_html[] = "<html><title>inner</title>from inside</html>";
    const char *in_names[] = {"inner.html"}, *in_data[] = {inner_html};
    size_t in_lens[] = {sizeof inner_html - 1}, inner_len;
    unsigned char *inner = make_zip(in_names, in_data, in_lens, 1, &inner_len);
    static const char a_html[] = "<html><title>a</title>outer words</html>";
    const char *names[] = {"inner.zip", "a.html"}, *data[] = {(const char *)inner, a_html};
    size_t lens[] = {inner_len, sizeof a_html - 1}, len;
    unsigned char *outer = make_zip(names, data, lens, 2, &len);
    char path[4300];
    snprintf(path, sizeof path, "%s.zip", tu_tmp_path("zcut"));
    tu_write_file(path, outer, len);
    coll c = {0};
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_HTML, path, on_doc, &c) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.ids[0], "a");
    coll_free(&c);
    int nested = 0;
    for (size_t n = 1; n < len; n++) {
        tu_write_file(path, outer, n);
        cls_status st = cls_corpus_read(CLS_CORPUS_HTML, path, on_doc, &c);
        ck_assert_msg(st == CLS_E_FORMAT && c.n == 0, "cut to %zu of %zu bytes: %d with %zu documents (%s)", n, len,
                      (int)st, c.n, c.n ? c.ids[0] : "");
        ck_assert_msg(strstr(cls_last_error(), path) != NULL, "%s", cls_last_error());
        nested += strstr(cls_last_error(), "zip stored in it") != NULL;
        ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, path, on_doc, &c), CLS_E_FORMAT);
        ck_assert_uint_eq(c.n, 0);
    }
    ck_assert_msg(nested > 0, "no cut left the inner zip's central directory at the end");
    free(outer);
    free(inner);
    remove(path);
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

/* Data part (test_corpus_data), as is every case that calls tu_data_path. */
START_TEST(cacm_tarball)
{
    const char *p = tu_data_path("cacm/cacm.tar.gz");
    cacm_state cs = {0};
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_HTML, p, on_cacm, &cs) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_int_eq(cs.seen, 3204);
    ck_assert(cs.first_ok);

    /* Cut between two entries (after CACM-1600), plain and compressed: an error, not 1,600
     * documents. */
    char cut[4300], cmd[9000];
    snprintf(cut, sizeof cut, "%s.tar", tu_tmp_path("cacm-cut"));
    snprintf(cmd, sizeof cmd, "gzip -dc '%s' | head -c 2035712 > '%s'", p, cut);
    ck_assert_int_eq(system(cmd), 0);
    for (int gz = 0; gz < 2; gz++) {
        const char *in = gz ? gzip_file(cut) : cut;
        coll c = {0};
        ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, in, on_doc, &c), CLS_E_FORMAT);
        ck_assert_msg(strstr(cls_last_error(), in) && strstr(cls_last_error(), "end-of-archive"), "%s",
                      cls_last_error());
        coll_free(&c);
    }
    remove(cut);
    strcat(cut, ".gz");
    remove(cut);
}
END_TEST

/* ---- Plain-file trees (CLS_CORPUS_FILES) ------------------------------------------------------ */

/* A progress recorder: every call, checked for order. */
typedef struct prog_rec {
    unsigned calls;
    uint64_t docs, done, total;
    int backwards;   /* docs or bytes_done went down, or bytes_done passed a known total */
    int mid;         /* a call with 0 < bytes_done < bytes_total */
    unsigned sleep_us; /* per document, to make intermediate calls happen */
    coll docs_coll;
} prog_rec;

static void on_prog(void *user, uint64_t docs, uint64_t done, uint64_t total)
{
    prog_rec *p = user;
    if (p->calls && (docs < p->docs || done < p->done)) p->backwards = 1;
    if (total && done > total) p->backwards = 1;
    if (done > 0 && done < total) p->mid = 1;
    p->calls++;
    p->docs = docs;
    p->done = done;
    p->total = total;
}

static int on_doc_slow(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    prog_rec *p = user;
    if (p->sleep_us) {
        struct timespec ts = {0, (long)p->sleep_us * 1000};
        nanosleep(&ts, NULL);
    }
    return on_doc(&p->docs_coll, docno, dl, text, tl);
}

/* The tree: name, content (binary ones hold NUL bytes, so lengths are explicit). */
typedef struct tree_file {
    const char *rel;
    const char *data;
    size_t len;
    const char *docno; /* expected docno; NULL: skipped */
} tree_file;

#define TF(rel, s, docno) {rel, s, sizeof s - 1, docno}
static const tree_file tree_files[] = {
    TF("a.txt", "alpha beta", "a.txt"),
    TF("bin.dat", "\x7f" "ELF\0\0\0binary", NULL),
    TF("caf\xc3\xa9.txt", "coffee", "caf%C3%A9.txt"),
    TF("empty.txt", "", "empty.txt"),
    TF("sub/50%.txt", "fifty percent", "sub/50%25.txt"),
    TF("sub/dir/deep.md", "deep\ntext", "sub/dir/deep.md"),
    TF("sub/with space.txt", "spaced name", "sub/with%20space.txt"),
    TF(".hidden/x.txt", "hidden words", NULL),
    TF("sub/.dotfile", "hidden too", NULL),
};
#define NTREE (sizeof tree_files / sizeof tree_files[0])

static void write_bytes_in(const char *dir, const char *rel, const char *data, size_t len)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdir_p(p);
    *slash = '/';
    tu_write_file(p, data, len);
}

/* Reads a whole file into fresh memory. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s", path);
    size_t cap = 0, n = 0;
    char *b = NULL;
    ck_assert(vec_reserve(&b, &cap, 1 << 16, 1));
    for (size_t k; (k = fread(b + n, 1, cap - n, f)) > 0;) {
        n += k;
        ck_assert(vec_reserve(&b, &cap, n + 1, 1));
    }
    fclose(f);
    *len = n;
    return b;
}

/* Builds the tree of tree_files plus z.rst.gz (gzip of "gzipped words") and late-nul.txt (a NUL
 * past the first 8 KiB: text). Returns the folder. */
static const char *make_tree(void)
{
    const char *d = tu_tmp_path("ftree");
    mkdir_p(d);
    for (size_t i = 0; i < NTREE; i++) write_bytes_in(d, tree_files[i].rel, tree_files[i].data, tree_files[i].len);
    char p[4200];
    snprintf(p, sizeof p, "%s/z.rst", d);
    tu_write_file(p, "gzipped words", 13);
    gzip_file(p);
    remove(p);
    static char late[9001];
    memset(late, 'x', sizeof late);
    late[4] = ' ';
    late[9000] = '\0';
    write_bytes_in(d, "late-nul.txt", late, sizeof late);
    return d;
}

/* Expected documents of the folder, in byte order of the path. */
static const char *const tree_docnos[] = {"a.txt",       "caf%C3%A9.txt",   "empty.txt",
                                          "late-nul.txt", "sub/50%25.txt",  "sub/dir/deep.md",
                                          "sub/with%20space.txt", "z.rst.gz"};
#define NDOCS (sizeof tree_docnos / sizeof tree_docnos[0])

static void check_tree_docs(const coll *c, const char *what)
{
    ck_assert_msg(c->n == NDOCS, "%s: %zu documents, want %zu", what, c->n, NDOCS);
    for (size_t i = 0; i < NDOCS; i++)
        ck_assert_msg(strcmp(c->ids[i], tree_docnos[i]) == 0, "%s: doc %zu is %s, want %s", what, i, c->ids[i],
                      tree_docnos[i]);
    ck_assert_str_eq(c->texts[0], "alpha beta");
    ck_assert_str_eq(c->texts[1], "coffee");
    ck_assert_str_eq(c->texts[2], "");
    ck_assert_uint_eq(strlen(c->texts[3]), 9000); /* dupn stops at the NUL: the text went on */
    ck_assert_str_eq(c->texts[4], "fifty percent");
    ck_assert_str_eq(c->texts[5], "deep\ntext");
    ck_assert_str_eq(c->texts[6], "spaced name");
    ck_assert_str_eq(c->texts[7], "gzipped words");
}

START_TEST(files_folder)
{
    const char *d = make_tree();
    /* A link to a file is that file; a link to a folder (here a cycle) is not followed. */
    char p[4200], q[4200];
    snprintf(p, sizeof p, "%s/sub/link.txt", d);
    ck_assert_int_eq(symlink("../a.txt", p), 0);
    snprintf(q, sizeof q, "%s/sub/loop", d);
    ck_assert_int_eq(symlink("..", q), 0);

    prog_rec pr = {0};
    ck_assert_msg(cls_corpus_read_ex(CLS_CORPUS_FILES, d, on_doc_slow, &pr, on_prog, &pr) == CLS_OK, "%s",
                  cls_last_error());
    cls_corpus_counts counts;
    cls_corpus_last_counts(&counts);
    ck_assert_uint_eq(counts.skipped_binary, 1);
    ck_assert_uint_eq(counts.truncated, 0);
    /* sub/link.txt sorts between sub/dir/deep.md and sub/with space.txt */
    coll *c = &pr.docs_coll;
    ck_assert_uint_eq(c->n, NDOCS + 1);
    ck_assert_str_eq(c->ids[6], "sub/link.txt");
    ck_assert_str_eq(c->texts[6], "alpha beta");
    free(c->ids[6]);
    free(c->texts[6]);
    memmove(c->ids + 6, c->ids + 7, (c->n - 7) * sizeof *c->ids);
    memmove(c->texts + 6, c->texts + 7, (c->n - 7) * sizeof *c->texts);
    c->n--;
    check_tree_docs(c, "folder");
    /* Progress: a first call, a last one with every document and every byte. */
    ck_assert_uint_ge(pr.calls, 2);
    ck_assert(!pr.backwards);
    ck_assert_uint_eq(pr.docs, NDOCS + 1);
    ck_assert_uint_gt(pr.total, 9000);
    ck_assert_uint_eq(pr.done, pr.total);
    coll_free(c);

    /* Plain cls_corpus_read: the same documents; the counts are per call. */
    remove(p);
    coll c2 = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, d, on_doc, &c2), CLS_OK);
    check_tree_docs(&c2, "folder, no progress");
    coll_free(&c2);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, "/nonexistent/x", on_doc, &c2), CLS_E_IO);
    cls_corpus_last_counts(&counts);
    ck_assert_uint_eq(counts.skipped_binary, 0);

    /* A single file: its base name; a single .gz: decompressed, the name kept. */
    snprintf(p, sizeof p, "%s/sub/with space.txt", d);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, p, on_doc, &c2), CLS_OK);
    ck_assert_uint_eq(c2.n, 1);
    ck_assert_str_eq(c2.ids[0], "with%20space.txt");
    coll_free(&c2);
    snprintf(p, sizeof p, "%s/z.rst.gz", d);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, p, on_doc, &c2), CLS_OK);
    ck_assert_uint_eq(c2.n, 1);
    ck_assert_str_eq(c2.ids[0], "z.rst.gz");
    ck_assert_str_eq(c2.texts[0], "gzipped words");
    coll_free(&c2);
}
END_TEST

/* The tree again as an archive written by libarchive: "./"-prefixed names, a folder entry, a
 * hidden entry, a symbolic link and a hard link (both skipped), the .gz kept compressed. */
static void write_tree_archive(const char *dir, const char *path, const char *format, int gz)
{
    struct archive *a = archive_write_new();
    ck_assert(a != NULL);
    ck_assert_int_eq(archive_write_set_format_by_name(a, format), ARCHIVE_OK);
    if (gz) ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    static const char *const rels[] = {"./", "./a.txt", "./bin.dat", "./caf\xc3\xa9.txt", "./empty.txt",
                                       "./late-nul.txt", "./.hidden/x.txt", "./sub/50%.txt", "./sub/dir/deep.md",
                                       "./sub/with space.txt", "./sub/.dotfile", "./symlink", "./hardlink",
                                       "./z.rst.gz"};
    for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, rels[i]);
        archive_entry_set_perm(e, 0644);
        char *data = NULL;
        size_t len = 0;
        if (strcmp(rels[i], "./") == 0) {
            archive_entry_set_filetype(e, AE_IFDIR);
        } else if (strcmp(rels[i], "./symlink") == 0) {
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, "a.txt");
        } else if (strcmp(rels[i], "./hardlink") == 0) {
            archive_entry_free(e);
            if (strcmp(format, "zip") == 0) continue; /* zip has no hard links */
            e = archive_entry_new();
            archive_entry_set_pathname(e, rels[i]);
            archive_entry_set_perm(e, 0644);
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, "./a.txt");
        } else {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", dir, rels[i] + 2);
            data = slurp(p, &len);
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, (la_int64_t)len);
        }
        /* (a warning: the C locale cannot convert the non-ASCII name; the bytes go in as they are) */
        ck_assert_int_ge(archive_write_header(a, e), ARCHIVE_WARN);
        if (len) ck_assert_int_eq(archive_write_data(a, data, len), (la_ssize_t)len);
        free(data);
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* A folder is read within it: links out of it (to a file, to a sibling folder whose name starts
 * with the folder's, to a folder) are skipped and counted, links inside are read as their target,
 * a link to a folder is not followed; cls_corpus_follow_links(1) reads them all, each folder once
 * (a loop through the outside ends). The HTML reader's folder walk is the same. */
START_TEST(folder_links)
{
    char base[4000], p[4300], q[4100];
    snprintf(base, sizeof base, "%s", tu_tmp_path("flinks"));
    char tree[4100];
    snprintf(tree, sizeof tree, "%s/t", base);
    write_in(tree, "a.txt", "alpha");
    write_in(base, "t2/f.txt", "prefix sibling");
    write_in(base, "out/secret.txt", "secret");
    write_in(base, "out/sub/deep.txt", "deep");
    static const struct {
        const char *link, *target;
    } links[] = {{"t/in.txt", "a.txt"},          {"t/out.txt", "../out/secret.txt"}, {"t/pre.txt", "../t2/f.txt"},
                 {"t/dir_out", "../out"},        {"t/loop", "."},                     {"t/dangling", "nowhere"},
                 {"out/back", "../t"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", base, links[i].link);
        ck_assert_int_eq(symlink(links[i].target, p), 0);
    }
    coll c = {0};
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_FILES, tree, on_doc, &c) == CLS_OK, "%s", cls_last_error());
    cls_corpus_counts counts;
    cls_corpus_last_counts(&counts);
    ck_assert_uint_eq(counts.skipped_links, 3);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.ids[0], "a.txt");
    ck_assert_str_eq(c.ids[1], "in.txt");
    ck_assert_str_eq(c.texts[1], "alpha");
    coll_free(&c);

    cls_corpus_follow_links(1);
    cls_status st = cls_corpus_read(CLS_CORPUS_FILES, tree, on_doc, &c);
    cls_corpus_follow_links(0);
    ck_assert_msg(st == CLS_OK, "%s", cls_last_error());
    cls_corpus_last_counts(&counts);
    ck_assert_uint_eq(counts.skipped_links, 0);
    static const char *const want[] = {"a.txt", "dir_out/secret.txt", "dir_out/sub/deep.txt", "in.txt", "out.txt",
                                       "pre.txt"};
    ck_assert_uint_eq(c.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < c.n; i++) ck_assert_str_eq(c.ids[i], want[i]);
    coll_free(&c);

    /* HTML: a page linked from outside is not read */
    snprintf(q, sizeof q, "%s/h", base);
    write_in(q, "a.html", "<p>inside</p>");
    write_in(base, "page.html", "<p>outside</p>");
    snprintf(p, sizeof p, "%s/b.html", q);
    ck_assert_int_eq(symlink("../page.html", p), 0);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_HTML, q, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_str_eq(c.ids[0], "a");
    cls_corpus_last_counts(&counts);
    ck_assert_uint_eq(counts.skipped_links, 1);
    coll_free(&c);
}
END_TEST

START_TEST(files_archives)
{
    const char *d = make_tree();
    static const struct {
        const char *suffix, *format;
        int gz;
    } kinds[] = {{".tar.gz", "gnutar", 1}, {".tgz", "pax", 1}, {".tar", "gnutar", 0}, {".zip", "zip", 0}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s%s", tu_tmp_path("ftree"), kinds[k].suffix);
        write_tree_archive(d, path, kinds[k].format, kinds[k].gz);
        prog_rec pr = {0};
        ck_assert_msg(cls_corpus_read_ex(CLS_CORPUS_FILES, path, on_doc_slow, &pr, on_prog, &pr) == CLS_OK,
                      "%s: %s", path, cls_last_error());
        check_tree_docs(&pr.docs_coll, path);
        cls_corpus_counts counts;
        cls_corpus_last_counts(&counts);
        ck_assert_uint_eq(counts.skipped_binary, 1);
        struct stat sb;
        ck_assert_int_eq(stat(path, &sb), 0);
        ck_assert_uint_eq(pr.total, (uint64_t)sb.st_size);
        ck_assert_uint_eq(pr.done, pr.total);
        ck_assert(!pr.backwards);
        coll_free(&pr.docs_coll);
        remove(path);
    }

    /* The folder tree as `tar` makes it, when there is one: the same documents. */
    char path[4200], cmd[9000];
    snprintf(path, sizeof path, "%s.tar.xz", tu_tmp_path("ftree"));
    snprintf(cmd, sizeof cmd, "tar --sort=name -C '%s' -cJf '%s' . 2>/dev/null", d, path);
    if (system(cmd) == 0) {
        coll c = {0};
        ck_assert_msg(cls_corpus_read(CLS_CORPUS_FILES, path, on_doc, &c) == CLS_OK, "%s", cls_last_error());
        check_tree_docs(&c, path);
        coll_free(&c);
    } else {
        fprintf(stderr, "SKIP: no GNU tar with xz for %s\n", path);
    }
    remove(path);
}
END_TEST

START_TEST(files_failures)
{
    const char *d = tu_tmp_path("ffail");
    mkdir_p(d);
    coll c = {0};
    /* A damaged gzip file stops the read with its path: nothing is skipped silently. */
    static char words[200000];
    uint64_t seed = 7;
    for (size_t i = 0; i < sizeof words; i++) words[i] = (tu_rand(&seed) % 7 == 0) ? ' ' : (char)('a' + tu_rand(&seed) % 26);
    char p[4200];
    snprintf(p, sizeof p, "%s/b.txt", d);
    tu_write_file(p, words, sizeof words);
    const char *gz = gzip_file(p);
    remove(p);
    size_t len;
    char *bytes = slurp(gz, &len);
    tu_write_file(gz, bytes, len / 2); /* cut in the middle */
    free(bytes);
    write_in(d, "a.txt", "fine");
    cls_status st = cls_corpus_read(CLS_CORPUS_FILES, d, on_doc, &c);
    ck_assert_msg(st == CLS_E_FORMAT || st == CLS_E_IO, "status %d: %s", (int)st, cls_last_error());
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "b.txt.gz"));
    ck_assert_uint_eq(c.n, 1);
    coll_free(&c);
    remove(gz);

    /* An unreadable file (not for root, who reads everything). */
    if (geteuid() != 0) {
        snprintf(p, sizeof p, "%s/secret.txt", d);
        tu_write_file(p, "x", 1);
        ck_assert_int_eq(chmod(p, 0), 0);
        ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, d, on_doc, &c), CLS_E_IO);
        ck_assert_ptr_nonnull(strstr(cls_last_error(), "secret.txt"));
        coll_free(&c);
        remove(p);
    }

    /* Missing input, damaged archive. */
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, "/nonexistent/tree", on_doc, &c), CLS_E_IO);
    char junk[4200];
    snprintf(junk, sizeof junk, "%s.tar.gz", tu_tmp_path("junk")); /* the suffix makes it an archive */
    tu_write_file(junk, "not an archive at all\n", 22);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, junk, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), junk));
    ck_assert_uint_eq(c.n, 0);

    /* Over 64 MiB: indexed up to the cap and counted. The text is 8 KiB of words, then a hole
     * (NUL bytes past the sniffed prefix), so the file costs no disk. */
    snprintf(p, sizeof p, "%s/huge.log", d);
    FILE *f = fopen(p, "wb");
    ck_assert(f != NULL);
    ck_assert_int_eq(fwrite(words, 1, 8192, f), 8192);
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)CRP_FILES_MAX_DOC + 5), 0);
    fclose(f);
    prog_rec pr = {0};
    ck_assert_int_eq(cls_corpus_read_ex(CLS_CORPUS_FILES, p, on_doc_slow, &pr, on_prog, &pr), CLS_OK);
    cls_corpus_counts counts;
    cls_corpus_last_counts(&counts);
    ck_assert_uint_eq(counts.truncated, 1);
    ck_assert_uint_eq(pr.docs_coll.n, 1);
    ck_assert_uint_eq(pr.done, CRP_FILES_MAX_DOC + 5);
    coll_free(&pr.docs_coll);
    remove(p);
}
END_TEST

/* Progress inside a single large file: the position comes from the open stream. */
START_TEST(progress_in_file)
{
    const char *p = tu_tmp_path("prog.jsonl");
    FILE *f = fopen(p, "wb");
    ck_assert(f != NULL);
    uint64_t seed = 11;
    for (int d = 0; d < 300; d++) {
        fprintf(f, "{\"id\": \"d%d\", \"contents\": \"", d);
        for (int i = 0; i < 2000; i++) fputc(i % 6 == 5 ? ' ' : 'a' + (int)(tu_rand(&seed) % 26), f);
        fputs("\"}\n", f);
    }
    fclose(f);
    struct stat sb;
    ck_assert_int_eq(stat(p, &sb), 0);
    prog_rec pr = {.sleep_us = 1500};
    ck_assert_int_eq(cls_corpus_read_ex(CLS_CORPUS_JSONL, p, on_doc_slow, &pr, on_prog, &pr), CLS_OK);
    ck_assert_uint_eq(pr.docs_coll.n, 300);
    ck_assert_uint_ge(pr.calls, 3);
    ck_assert(pr.mid);
    ck_assert(!pr.backwards);
    ck_assert_uint_eq(pr.total, (uint64_t)sb.st_size);
    ck_assert_uint_eq(pr.done, pr.total);
    ck_assert_uint_eq(pr.docs, 300);
    coll_free(&pr.docs_coll);

    /* gzip: compressed bytes. */
    const char *gz = gzip_file(p);
    ck_assert_int_eq(stat(gz, &sb), 0);
    pr = (prog_rec){.sleep_us = 1500};
    ck_assert_int_eq(cls_corpus_read_ex(CLS_CORPUS_JSONL, gz, on_doc_slow, &pr, on_prog, &pr), CLS_OK);
    ck_assert_uint_ge(pr.calls, 3);
    ck_assert(pr.mid);
    ck_assert(!pr.backwards);
    ck_assert_uint_eq(pr.total, (uint64_t)sb.st_size);
    ck_assert_uint_eq(pr.done, pr.total);
    coll_free(&pr.docs_coll);

    /* An HTML folder: one file at a time. */
    const char *d = tu_tmp_path("proghtml");
    write_in(d, "a.html", "<p>one</p>");
    write_in(d, "b.htm", "<p>two</p>");
    write_in(d, "skip.txt", "not counted");
    pr = (prog_rec){0};
    ck_assert_int_eq(cls_corpus_read_ex(CLS_CORPUS_HTML, d, on_doc_slow, &pr, on_prog, &pr), CLS_OK);
    ck_assert_uint_eq(pr.docs, 2);
    ck_assert_uint_eq(pr.total, 20);
    ck_assert_uint_eq(pr.done, 20);
    coll_free(&pr.docs_coll);
    remove(p);
    remove(gz);
}
END_TEST

typedef struct docno_check {
    uint64_t n, text;
    int bad;
    char first_bad[256];
} docno_check;

static int on_real_doc(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    docno_check *c = user;
    (void)text;
    c->n++;
    c->text += tl;
    for (size_t i = 0; i < dl; i++)
        if ((unsigned char)docno[i] < '!' || (unsigned char)docno[i] > '~') {
            if (!c->bad) snprintf(c->first_bad, sizeof c->first_bad, "%.*s", (int)dl, docno);
            c->bad = 1;
        }
    return 0;
}

/* A real documentation tree: in the data part, which skips naming it when this machine has none. */
START_TEST(files_real_tree)
{
    const char *d = tu_data_path("/usr/share/doc");
    struct stat sb;
    ck_assert_msg(stat(d, &sb) == 0 && S_ISDIR(sb.st_mode), "%s is not a folder", d);
    docno_check c = {0};
    prog_rec pr = {0};
    cls_status st = cls_corpus_read_ex(CLS_CORPUS_FILES, d, on_real_doc, &c, on_prog, &pr);
    ck_assert_msg(st == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(!c.bad, "docno %s holds a byte outside '!'..'~'", c.first_bad);
    ck_assert_uint_gt(c.n, 0);
    ck_assert(!pr.backwards);
    ck_assert_uint_eq(pr.docs, c.n);
    ck_assert_uint_eq(pr.done, pr.total);
    cls_corpus_counts counts;
    cls_corpus_last_counts(&counts);
    fprintf(stderr, "%s: %llu documents, %.1f MB of input, %.1f MB of text, %llu binary files skipped\n", d,
            (unsigned long long)c.n, (double)pr.total / 1e6, (double)c.text / 1e6,
            (unsigned long long)counts.skipped_binary);
}
END_TEST

/* ---- Threaded index building ------------------------------------------------------------------- */

/* Test hook of index_build.c: a worker thread fails on the doc-th document (0: never). */
void idx_build_test_fail_at(uint64_t doc);

/* A synthetic collection: n documents of Zipf-ish words, a few empty ones and a few over a batch
 * (1 MiB), so batches fill by bytes and by count. */
static cls_status build_synthetic(unsigned threads, uint32_t n, const char *path, uint32_t *added)
{
    cls_builder *b;
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    cls_build_opts o;
    cls_build_defaults(&o);
    o.threads = threads;
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    uint64_t seed = 42;
    size_t cap = 3 << 20;
    char *text = malloc(cap);
    ck_assert(text != NULL);
    cls_status st = CLS_OK;
    *added = 0;
    for (uint32_t d = 0; d < n && st == CLS_OK; d++) {
        size_t words = d % 997 == 5 ? 0 : d % 4001 == 7 ? 100000 : 5 + tu_rand(&seed) % 120, len = 0;
        for (size_t w = 0; w < words; w++) {
            uint64_t r = tu_rand(&seed);
            unsigned rank = (unsigned)(1 + (r % 1000) * (r % 1000) * (r % 50)); /* skewed */
            len += (size_t)snprintf(text + len, cap - len, "w%xs%s ", rank, (r >> 40) % 3 ? "ing" : "");
        }
        char docno[32];
        int dl = snprintf(docno, sizeof docno, "doc-%u", d);
        st = cls_builder_add(b, docno, (size_t)dl, text, len);
        if (st == CLS_OK) ++*added;
    }
    free(text);
    if (st == CLS_OK) st = cls_builder_write(b, path);
    cls_builder_free(b);
    return st;
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    ck_assert_msg(la > 0, "%s is empty: the comparison would prove nothing", a);
    int same = la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Indexes in (format fmt) through the command with 1 and with 4 threads: the same bytes. */
static void threads_through_command(const char *fmt, const char *in)
{
    const char *i1 = tu_tmp_path("f1.idx"), *i4 = tu_tmp_path("f4.idx"), *err;
    char args[9000];
    snprintf(args, sizeof args, "index -c %s -o '%s' '%s' --threads 1 -q", fmt, i1, in);
    ck_assert_msg(tu_run_cli(args, &err) == 0, "%s", err);
    snprintf(args, sizeof args, "index -c %s -o '%s' '%s' --threads 4 -v --codec pfor --pfor-depth 2 --block 256",
             fmt, i4, in);
    ck_assert_msg(tu_run_cli(args, &err) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "4 threads"));
    if (strcmp(fmt, "files") == 0) ck_assert_ptr_nonnull(strstr(err, "skipped 1 binary file"));
    snprintf(args, sizeof args, "index -c %s -o '%s' '%s' --threads 4 -q", fmt, i4, in);
    ck_assert_msg(tu_run_cli(args, &err) == 0, "%s", err);
    ck_assert_str_eq(err, ""); /* not a terminal, -q: nothing at all */
    ck_assert_msg(same_file(i1, i4), "%s: 1 and 4 threads differ", in);
    remove(i1);
    remove(i4);
}

START_TEST(threads_byte_identical)
{
    const char *p1 = tu_tmp_path("t1.idx");
    char paths[3][4200];
    uint32_t added;
    ck_assert_msg(build_synthetic(1, 30000, p1, &added) == CLS_OK, "%s", cls_last_error());
    static const unsigned th[] = {2, 4, 7};
    for (int i = 0; i < 3; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", tu_tmp_path("tn.idx"));
        ck_assert_msg(build_synthetic(th[i], 30000, paths[i], &added) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(same_file(p1, paths[i]), "index with %u threads differs from the serial one", th[i]);
        remove(paths[i]);
    }
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(p1, &idx), CLS_OK);
    cls_index_stats s;
    cls_index_get_stats(idx, &s);
    ck_assert_uint_eq(s.num_docs, 30000);
    ck_assert_str_eq(cls_index_docno(idx, 29999), "doc-29999");
    cls_index_close(idx);
    remove(p1);

    /* The files reader through the command (and CACM in threads_cacm_command). */
    threads_through_command("files", make_tree());
}
END_TEST

/* In the data part: the CACM tarball through the command, 1 and 4 threads. */
START_TEST(threads_cacm_command)
{
    threads_through_command("html", tu_data_path("cacm/cacm.tar.gz"));
}
END_TEST

START_TEST(threads_errors)
{
    const char *p = tu_tmp_path("terr.idx");
    uint32_t added;
    /* A worker's failure reaches the calling thread: a later add or the write reports it, with
     * its message, and the builder is freed cleanly (workers joined) after it. */
    idx_build_test_fail_at(5000);
    cls_status st = build_synthetic(3, 20000, p, &added);
    idx_build_test_fail_at(0);
    ck_assert_int_eq(st, CLS_E_NOMEM);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "test fault"));
    ck_assert_uint_ge(added, 5000);
    ck_assert(access(p, F_OK) != 0);
    /* Failing in the last, partial batch: the write reports it. */
    idx_build_test_fail_at(300);
    st = build_synthetic(2, 300, p, &added);
    idx_build_test_fail_at(0);
    ck_assert_int_eq(st, CLS_E_NOMEM);
    ck_assert_uint_eq(added, 300);
    ck_assert(access(p, F_OK) != 0);

    /* Every later call keeps refusing; free without write, with batches in flight. */
    cls_builder *b;
    idx_build_test_fail_at(1);
    ck_assert_int_eq(cls_builder_create(NULL, &b), CLS_OK);
    idx_build_test_fail_at(0);
    cls_build_opts o;
    cls_build_defaults(&o);
    o.threads = 2;
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    static char text[600000];
    memset(text, 'a', sizeof text);
    for (size_t i = 0; i < sizeof text; i += 7) text[i] = ' ';
    int failed = 0;
    for (int i = 0; i < 20 && !failed; i++) {
        char id[8];
        snprintf(id, sizeof id, "d%d", i); /* ids differ: a repeated one is refused (CLS_E_FORMAT) */
        failed = cls_builder_add(b, id, strlen(id), text, sizeof text) != CLS_OK;
    }
    if (!failed) failed = cls_builder_write(b, p) != CLS_OK;
    ck_assert(failed);
    ck_assert_int_eq(cls_builder_add(b, "e", 1, "x", 1), CLS_E_NOMEM);
    ck_assert_int_eq(cls_builder_write(b, p), CLS_E_NOMEM);
    cls_builder_free(b);

    /* In flight at free, no failure. */
    ck_assert_int_eq(cls_builder_create(NULL, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    for (int i = 0; i < 10; i++) {
        char id[8];
        snprintf(id, sizeof id, "d%d", i);
        ck_assert_int_eq(cls_builder_add(b, id, strlen(id), text, sizeof text), CLS_OK);
    }
    /* configure refuses once documents were added, even while none is inverted yet */
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_E_ARG);
    /* a bad docno is refused on the spot and changes nothing */
    ck_assert_int_eq(cls_builder_add(b, "a b", 3, "x", 1), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "document 11"));
    cls_builder_free(b);
    o.threads = 1025;
    ck_assert_int_eq(cls_builder_create(NULL, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_E_ARG);
    cls_builder_free(b);

    /* The command's new options: bad values exit 1 with a message. */
    const char *d = make_tree(), *err;
    char args[9000];
    static const struct {
        const char *opt, *msg;
    } bad[] = {{"--threads 0", "--threads"}, {"--threads x", "--threads"}, {"--codec zip", "codec"},
               {"--block 100", "block size 100"}, {"--block -1", "--block"}, {"--pfor-depth 9", "pfor depth 9"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "index -c files -o '%s' '%s' %s", p, d, bad[i].opt);
        ck_assert_msg(tu_run_cli(args, &err) == 1, "%s: exit status", bad[i].opt);
        ck_assert_msg(strstr(err, bad[i].msg) != NULL, "%s: %s", bad[i].opt, err);
        ck_assert(access(p, F_OK) != 0);
    }
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

}
END_TEST

/* Data part: MS MARCO's dev topics. */
START_TEST(topics_tsv_msmarco)
{
    coll c = {0};
    const char *msmarco = tu_data_path("queries/topics.msmarco-passage.dev-subset.txt");
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_TSV, msmarco, on_topic, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 6980);
    coll_free(&c);
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
}
END_TEST

/* Data part: CACM's topics. */
START_TEST(topics_anserini_cacm)
{
    coll c = {0};
    const char *cacm = tu_data_path("cacm/topics.cacm.txt");
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

/* Data part: Cranfield, MED and CISI. */
START_TEST(smart_collections)
{
    static const struct {
        const char *rel;
        size_t docs;
    } sets[] = {{"cranfield/cran.all.1400", 1400}, {"med/MED.ALL", 1033}, {"cisi/CISI.ALL", 1460}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const char *p = tu_data_path(sets[i].rel);
        smart_count sc = {0, 1};
        ck_assert_msg(cls_corpus_read(CLS_CORPUS_SMART, p, on_smart, &sc) == CLS_OK, "%s",
                      cls_last_error());
        ck_assert_uint_eq(sc.n, sets[i].docs);
        ck_assert_msg(sc.ids_ok, "%s: docnos are not 1..%zu", p, sets[i].docs);
    }
    /* CISI's .X cross-references are not text: document 1 ends with its abstract. */
    const char *cisi = tu_data_path("cisi/CISI.ALL");
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

/* ---- Line formats inside archives ------------------------------------------------------------ */

/* Writes an archive (format "gnutar" or "zip", gzip-compressed if gz) holding, in the order
 * given, the files rels[] of dir under the same names; a name ending in '/' is a folder entry,
 * and "__MACOSX/._x" a hidden entry of junk (macOS resource fork) that must be passed over. */
static void write_lines_archive(const char *path, const char *format, int gz, const char *dir,
                                const char *const *rels, size_t n)
{
    struct archive *a = archive_write_new();
    ck_assert(a != NULL);
    ck_assert_int_eq(archive_write_set_format_by_name(a, format), ARCHIVE_OK);
    if (gz) ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, rels[i]);
        archive_entry_set_perm(e, 0644);
        char *data = NULL;
        size_t len = 0;
        if (rels[i][strlen(rels[i]) - 1] == '/') {
            archive_entry_set_filetype(e, AE_IFDIR);
        } else {
            if (strncmp(rels[i], "__MACOSX/", 9) == 0) {
                data = dupn("junk, not a record\n", 19);
                len = 19;
            } else {
                char p[4200];
                snprintf(p, sizeof p, "%s/%s", dir, rels[i]);
                data = slurp(p, &len);
            }
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, (la_int64_t)len);
        }
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        if (len) ck_assert_int_eq(archive_write_data(a, data, len), (la_ssize_t)len);
        free(data);
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static void coll_eq(const coll *got, const coll *want, const char *what)
{
    ck_assert_msg(got->n == want->n, "%s: %zu documents, want %zu", what, got->n, want->n);
    for (size_t i = 0; i < want->n; i++) {
        ck_assert_msg(strcmp(got->ids[i], want->ids[i]) == 0, "%s: doc %zu is %s, want %s", what,
                      i, got->ids[i], want->ids[i]);
        ck_assert_msg(strcmp(got->texts[i], want->texts[i]) == 0, "%s: text of %s differs", what,
                      want->ids[i]);
    }
}

static const struct {
    const char *suffix, *format;
    int gz;
} line_kinds[] = {{".tar.gz", "gnutar", 1}, {".zip", "zip", 0}, {".tar", "pax", 0}};

/* One line format: two files (one in a folder) and a gzip file, packed with a folder entry and a
 * hidden entry, read as the same files one by one in archive order; the archive inside a
 * folder; progress over the archive's bytes; a malformed line inside an entry (plain and .gz)
 * named "archive:entry:line". */
static void check_lines_archive(cls_corpus_format fmt, const char *tag, const char *first,
                                const char *second, const char *third, const char *bad,
                                const char *bad_needle)
{
    char dir[4200], p[4300];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path(tag));
    write_in(dir, "z-first.txt", first);
    write_in(dir, "sub/a-second.txt", second);
    write_in(dir, "sub/c-third", third);
    snprintf(p, sizeof p, "%s/sub/c-third", dir);
    gzip_file(p);
    write_in(dir, "sub/bad.txt", bad);
    snprintf(p, sizeof p, "%s/sub/bad.txt", dir);
    gzip_file(p);

    /* The expected stream: the files read one by one, in archive order. */
    static const char *const order[] = {"z-first.txt", "sub/a-second.txt", "sub/c-third.gz"};
    coll want = {0};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, order[i]);
        ck_assert_msg(cls_corpus_read(fmt, p, on_doc, &want) == CLS_OK, "%s: %s", p,
                      cls_last_error());
    }
    ck_assert_uint_ge(want.n, 4);

    static const char *const rels[] = {"z-first.txt", "sub/", "sub/a-second.txt",
                                       "__MACOSX/._z-first.txt", "sub/c-third.gz"};
    for (size_t k = 0; k < sizeof line_kinds / sizeof line_kinds[0]; k++) {
        char path[4300];
        snprintf(path, sizeof path, "%s%s", tu_tmp_path(tag), line_kinds[k].suffix);
        write_lines_archive(path, line_kinds[k].format, line_kinds[k].gz, dir, rels, 5);
        prog_rec pr = {0};
        ck_assert_msg(cls_corpus_read_ex(fmt, path, on_doc_slow, &pr, on_prog, &pr) == CLS_OK,
                      "%s: %s", path, cls_last_error());
        coll_eq(&pr.docs_coll, &want, path);
        struct stat sb;
        ck_assert_int_eq(stat(path, &sb), 0);
        ck_assert_uint_eq(pr.total, (uint64_t)sb.st_size);
        ck_assert_uint_eq(pr.done, pr.total);
        ck_assert_uint_eq(pr.docs, want.n);
        ck_assert(!pr.backwards);
        coll_free(&pr.docs_coll);
        cls_corpus_counts counts;
        cls_corpus_last_counts(&counts);
        ck_assert_uint_eq(counts.skipped_binary, 0);
        ck_assert_uint_eq(counts.truncated, 0);

        /* Met in a folder walk, the archive is read the same way. */
        char in_dir[4400], moved[4500];
        snprintf(in_dir, sizeof in_dir, "%s-in", path);
        mkdir_p(in_dir);
        snprintf(moved, sizeof moved, "%s/c%s", in_dir, line_kinds[k].suffix);
        ck_assert_int_eq(rename(path, moved), 0);
        coll c = {0};
        ck_assert_msg(cls_corpus_read(fmt, in_dir, on_doc, &c) == CLS_OK, "%s: %s", in_dir,
                      cls_last_error());
        coll_eq(&c, &want, in_dir);
        coll_free(&c);

        /* A malformed line inside an entry, plain or gzip-compressed. */
        static const char *const bads[][2] = {{"sub/", "sub/bad.txt"}, {"sub/", "sub/bad.txt.gz"}};
        for (size_t b = 0; b < 2; b++) {
            const char *brels[] = {"z-first.txt", bads[b][0], bads[b][1]};
            write_lines_archive(path, line_kinds[k].format, line_kinds[k].gz, dir, brels, 3);
            char needle[8800];
            snprintf(needle, sizeof needle, "%s:%s%s", path, bads[b][1], bad_needle);
            ck_assert_int_eq(cls_corpus_read(fmt, path, on_doc, &c), CLS_E_FORMAT);
            ck_assert_msg(strstr(cls_last_error(), needle) != NULL, "got \"%s\", want \"%s\"",
                          cls_last_error(), needle);
            coll_free(&c);
        }
        remove(path);
    }
    coll_free(&want);
}

START_TEST(lines_archives)
{
    check_lines_archive(CLS_CORPUS_JSONL, "ljsonl",
                        "{\"id\":\"z1\",\"contents\":\"zed one\"}\n\n{\"id\":2,\"contents\":\"two\"}\n",
                        "\xEF\xBB\xBF{\"id\":\"a1\",\"contents\":\"alpha\"}\r\n",
                        "{\"id\":\"c1\",\"contents\":\"gzipped\"}\n",
                        "{\"id\":\"g\",\"contents\":\"good\"}\n{\"id\":\"x\"\n",
                        ":2: not valid JSON");
    check_lines_archive(CLS_CORPUS_BEIR, "lbeir",
                        "{\"_id\":\"z1\",\"title\":\"T\",\"text\":\"zed\"}\n"
                        "{\"_id\":\"z2\",\"title\":\"\",\"text\":\"two\"}\n",
                        "{\"_id\":\"a1\",\"text\":\"alpha\"}\n",
                        "{\"_id\":\"c1\",\"title\":\"G\",\"text\":\"gzipped\"}\n",
                        "{\"_id\":\"g\",\"text\":\"good\"}\n{\"_id\":\"b\"}\n",
                        ":2: missing \"text\"");
    check_lines_archive(CLS_CORPUS_TREC, "ltrec",
                        "<DOC><DOCNO>z1</DOCNO>zed &amp; one</DOC>\n<DOC>\n<DOCNO>z2</DOCNO>\n"
                        "two\n</DOC>\n",
                        "<DOC>\n<DOCNO> a1 </DOCNO>\n<TEXT>alpha</TEXT>\n</DOC>\n",
                        "<DOC><DOCNO>c1</DOCNO>gzipped</DOC>\n",
                        "<DOC><DOCNO>g</DOCNO>good</DOC>\nstray\n", ":2: text outside <DOC>");
    check_lines_archive(CLS_CORPUS_SMART, "lsmart", ".I 1\n.T\nzed\n.W\none\n.I 2\n.W\ntwo\n",
                        ".I 3\n.W\nalpha\n", ".I 4\n.W\ngzipped\n", ".I 1\n.W\nx\n.I 2a\n",
                        ":4: \".I\" must be followed");
}
END_TEST

START_TEST(lines_archive_edges)
{
    /* An empty archive is an empty corpus, as for -c files. */
    char path[4300];
    snprintf(path, sizeof path, "%s.tar.gz", tu_tmp_path("lempty"));
    write_lines_archive(path, "gnutar", 1, "", NULL, 0);
    coll c = {0};
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_TREC, path, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 0);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_FILES, path, on_doc, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 0);

    /* Not an archive, and a damaged one: CLS_E_FORMAT naming the path. */
    const char *junk = write_tmp("ljunk.zip", "this is not a zip file\n");
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_JSONL, junk, on_doc, &c), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), junk));
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("ldamaged"));
    static char big[300000];
    uint64_t seed = 11;
    size_t n = 0;
    while (n + 64 < sizeof big) {
        n += (size_t)snprintf(big + n, sizeof big - n, ".I %zu\n.W\n", n);
        for (int i = 0; i < 40; i++) big[n++] = (char)('a' + tu_rand(&seed) % 26);
        big[n++] = '\n';
    }
    big[n] = '\0';
    write_in(dir, "big.all", big);
    static const char *const rels[] = {"big.all"};
    snprintf(path, sizeof path, "%s.tar.gz", tu_tmp_path("ldamaged"));
    write_lines_archive(path, "gnutar", 1, dir, rels, 1);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(truncate(path, sb.st_size / 2), 0);
    ck_assert_int_eq(cls_corpus_read(CLS_CORPUS_SMART, path, on_doc, &c), CLS_E_FORMAT);
    ck_assert_msg(strstr(cls_last_error(), path) != NULL, "%s", cls_last_error());
    coll_free(&c);
    remove(path);
}
END_TEST

/* Data part: MED. */
START_TEST(med_in_tarball)
{
    const char *med = tu_data_path("med/MED.ALL");
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s", tu_data_path("med"));
    snprintf(path, sizeof path, "%s.tar.gz", tu_tmp_path("med"));
    static const char *const rels[] = {"MED.ALL"};
    write_lines_archive(path, "gnutar", 1, dir, rels, 1);
    coll want = {0}, got = {0};
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_SMART, med, on_doc, &want) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_SMART, path, on_doc, &got) == CLS_OK, "%s",
                  cls_last_error());
    ck_assert_uint_eq(want.n, 1033);
    coll_eq(&got, &want, path);
    coll_free(&want);
    coll_free(&got);
    remove(path);
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
}
END_TEST

/* Data part: the queries of Cranfield, MED and CISI. */
START_TEST(topics_smart_collections)
{
    coll c = {0};
    static const struct {
        const char *rel;
        size_t n;
    } sets[] = {{"cranfield/cran.qry", 225}, {"med/MED.QRY", 30}, {"cisi/CISI.QRY", 112}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const char *q = tu_data_path(sets[i].rel);
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
}
END_TEST

/* ---- Topics: the format told from the first line ----------------------------------------------- */

/* "qid=text|qid=text|..." of a read, for comparing two reads. */
static const char *topics_str(const coll *c)
{
    static char buf[4][2048];
    static int slot;
    char *b = buf[slot++ & 3];
    b[0] = '\0';
    for (size_t i = 0; i < c->n; i++) {
        strncat(b, c->ids[i], 2047 - strlen(b));
        strncat(b, "=", 2047 - strlen(b));
        strncat(b, c->texts[i], 2047 - strlen(b));
        strncat(b, "|", 2047 - strlen(b));
    }
    return b;
}

/* One sample of each format, each after blank lines (which every reader passes over). */
static const struct {
    cls_topics_format fmt;
    const char *text, *want;
} auto_samples[] = {
    {CLS_TOPICS_TSV, "\n  \n1\tapple pie\n2\tjuice\n", "1=apple pie|2=juice|"},
    {CLS_TOPICS_ANSERINI, "\n<DOC>\n<DOCNO> 5 </DOCNO>\napple\n</DOC>\n", "5=apple|"},
    {CLS_TOPICS_TREC, "\n\n  <TOP>\n<num> Number: 051\n<title> Topic: juice\n</top>\n", "51=juice|"},
    {CLS_TOPICS_SMART, "\n.I 001\n.W\nsome words\n.I 004\n.W\nmore\n", "1=some words|2=more|"},
    {CLS_TOPICS_MQ, "\n20001:1:obama family tree\n20002:3:time: 10:30\n", "20001=obama family tree|20002=time: 10:30|"},
};

/* cls_topics_detect and CLS_TOPICS_AUTO tell each format from its first non-blank line (a .gz file
 * from its decompressed text), and the AUTO read gives what the format's own reader gives. */
START_TEST(topics_auto)
{
    for (size_t i = 0; i < sizeof auto_samples / sizeof *auto_samples; i++) {
        const char *p = write_tmp("auto.topics", auto_samples[i].text);
        ck_assert_int_eq(cls_topics_detect(p), auto_samples[i].fmt);
        coll a = {0}, b = {0};
        ck_assert_msg(cls_topics_read(CLS_TOPICS_AUTO, p, on_topic, &a) == CLS_OK, "%zu: %s", i, cls_last_error());
        ck_assert_msg(cls_topics_read(auto_samples[i].fmt, p, on_topic, &b) == CLS_OK, "%zu: %s", i, cls_last_error());
        ck_assert_str_eq(topics_str(&a), auto_samples[i].want);
        ck_assert_str_eq(topics_str(&b), auto_samples[i].want);
        coll_free(&a);
        coll_free(&b);
        const char *gz = gzip_file(p);
        ck_assert_int_eq(cls_topics_detect(gz), auto_samples[i].fmt);
        ck_assert_msg(cls_topics_read(CLS_TOPICS_AUTO, gz, on_topic, &a) == CLS_OK, "%zu .gz: %s", i, cls_last_error());
        ck_assert_str_eq(topics_str(&a), auto_samples[i].want);
        coll_free(&a);
        remove(gz);
    }
    /* a byte order mark before the first line does not hide the format */
    const char *p = write_tmp("bom.topics", "\xEF\xBB\xBF<top>\n<num> 7\n<title> x\n</top>\n");
    ck_assert_int_eq(cls_topics_detect(p), CLS_TOPICS_TREC);
    /* the line read to tell the format is read again, with its number: errors name the right line */
    expect_bad_topics(CLS_TOPICS_AUTO, "\n\n1\tok\nno tab\n", ":4: expected qid<TAB>text");
    expect_bad_topics(CLS_TOPICS_AUTO, "\n<DOC>\n</DOC>\n", ":3: missing <DOCNO>");
    /* no topics at all: TSV's answer, zero topics */
    coll c = {0};
    p = write_tmp("empty.topics", "\n \n");
    ck_assert_int_eq(cls_topics_read(CLS_TOPICS_AUTO, p, on_topic, &c), CLS_OK);
    ck_assert_uint_eq(c.n, 0);
    ck_assert_int_eq(cls_topics_read((cls_topics_format)99, p, on_topic, &c), CLS_E_ARG);
}
END_TEST

/* A pipe is read once: CLS_TOPICS_AUTO tells the format and reads every topic of it, each format
 * (cls_topics_detect, then a read, used to find the pipe drained). */
START_TEST(topics_auto_pipe)
{
    for (size_t i = 0; i < sizeof auto_samples / sizeof *auto_samples; i++) {
        const char *fifo = tu_tmp_path("topics.fifo");
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        pid_t pid = fork();
        ck_assert(pid >= 0);
        if (pid == 0) {
            FILE *w = fopen(fifo, "w");
            int ok = w && fputs(auto_samples[i].text, w) >= 0;
            if (w) ok = fclose(w) == 0 && ok;
            _exit(ok ? 0 : 1);
        }
        coll c = {0};
        cls_status st = cls_topics_read(CLS_TOPICS_AUTO, fifo, on_topic, &c);
        int wst;
        ck_assert(waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
        ck_assert_msg(st == CLS_OK, "%zu: %s", i, cls_last_error());
        ck_assert_str_eq(topics_str(&c), auto_samples[i].want);
        coll_free(&c);
        remove(fifo);
    }
}
END_TEST

/* Data part: the TREC 2009 Million Query topics. */
START_TEST(topics_mq_million_query)
{
    coll c = {0};
    const char *mq = tu_data_path("queries/topics.mq.20001-60000.txt");
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
    tcase_add_test(tc, tar_cut_short);
    tcase_add_test(tc, zip_cut_short);
    tcase_add_test(tc, files_folder);
    tcase_add_test(tc, folder_links);
    tcase_add_test(tc, files_archives);
    tcase_add_test(tc, files_failures);
    tcase_add_test(tc, progress_in_file);
    tcase_add_test(tc, threads_byte_identical);
    tcase_add_test(tc, threads_errors);
    tcase_add_test(tc, topics_tsv);
    tcase_add_test(tc, topics_tsv_malformed);
    tcase_add_test(tc, topics_anserini);
    tcase_add_test(tc, topics_anserini_malformed);
    tcase_add_test(tc, trec_corpus);
    tcase_add_test(tc, trec_corpus_malformed);
    tcase_add_test(tc, smart_corpus);
    tcase_add_test(tc, lines_archives);
    tcase_add_test(tc, lines_archive_edges);
    tcase_add_test(tc, topics_trec);
    tcase_add_test(tc, topics_smart);
    tcase_add_test(tc, topics_mq);
    tcase_add_test(tc, topics_auto);
    tcase_add_test(tc, topics_auto_pipe);
    suite_add_tcase(s, tc);
    return s;
}

/* The cases that need files outside the project: `test_corpus --data`, CTest's test_corpus_data. */
static Suite *data_suite(void)
{
    Suite *s = suite_create("corpus_data");
    TCase *tc = tcase_create("collections");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cacm_tarball);
    tcase_add_test(tc, threads_cacm_command);
    tcase_add_test(tc, files_real_tree);
    tcase_add_test(tc, topics_tsv_msmarco);
    tcase_add_test(tc, topics_anserini_cacm);
    tcase_add_test(tc, smart_collections);
    tcase_add_test(tc, med_in_tarball);
    tcase_add_test(tc, topics_smart_collections);
    tcase_add_test(tc, topics_mq_million_query);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {
        "cacm/cacm.tar.gz", "cacm/topics.cacm.txt", "queries/topics.msmarco-passage.dev-subset.txt",
        "queries/topics.mq.20001-60000.txt", "cranfield/cran.all.1400", "cranfield/cran.qry", "med/MED.ALL",
        "med/MED.QRY", "cisi/CISI.ALL", "cisi/CISI.QRY", "/usr/share/doc", NULL};
    return tu_main(argc, argv, corpus_suite, data_suite, needs);
}
