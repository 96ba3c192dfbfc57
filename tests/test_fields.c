/* Stored fields and the collection record, end to end: every reader hands over the fields it
 * offers (JSONL and BEIR keys of every JSON type, HTML <title> and path, TREC elements, SMART
 * .T/.A/.B, files' path; absent differs from empty); names a reader cannot supply are refused
 * before anything is read; the builder keeps UTF-8 and long values byte for byte, on one
 * thread or several (the same file), refuses a NUL and stays usable; recode keeps fields and
 * roots, CIFF leaves fields out and records the CIFF file as root; a fields section damaged or
 * forged with consistent checksums is refused by open or by cls_index_check (and recode), and a
 * lookup never reads out of bounds; the command's --store, --fields, --json and stats show them.
 * The data part reads the titles and authors of the SMART collections in ../shared/data. */
#define _XOPEN_SOURCE 700 /* realpath, mkdtemp */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cJSON.h>

#include "index/checksum.h"
#include "index/index.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* A copy of s valid for the rest of the test process (kept reachable: no leak report). */
static const char *keep(const char *s)
{
    static char *kept[512];
    static size_t n;
    ck_assert(n < sizeof kept / sizeof *kept);
    return kept[n++] = tu_strdup(s);
}

/* A fresh folder under the test temp folder (kept for a look when a test fails). */
static const char *mk_dir(const char *name)
{
    const char *p = keep(tu_tmp_path(name));
    ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
    return p;
}

/* dir/rel. */
static const char *in(const char *dir, const char *rel)
{
    char buf[8192];
    snprintf(buf, sizeof buf, "%s/%s", dir, rel);
    return keep(buf);
}

static void put(const char *path, const char *text) { tu_write_file(path, text, strlen(text)); }

/* The absolute path of path, links resolved (static buffer). */
static const char *abs_of(const char *path)
{
    static char buf[4096];
    char *r = realpath(path, NULL);
    ck_assert_msg(r != NULL, "realpath %s", path);
    snprintf(buf, sizeof buf, "%s", r);
    free(r);
    return buf;
}

/* Documents as a read handed them over: docno and each field's value (NULL: absent). */
enum { MAXD = 16, MAXF = 8 };
typedef struct got {
    size_t n, nf;
    size_t limit; /* 0: every document (at most MAXD), else stop after this many */
    char *docno[MAXD];
    char *val[MAXD][MAXF];
    size_t len[MAXD][MAXF];
} got;

static int on_fields(void *user, const cls_doc *d)
{
    got *g = user;
    ck_assert(g->n < MAXD);
    ck_assert_uint_eq(d->num_fields, g->nf);
    if (g->limit && g->n == g->limit) return 1; /* enough: stop the read */
    g->docno[g->n] = malloc(d->docno_len + 1);
    ck_assert(g->docno[g->n] != NULL);
    memcpy(g->docno[g->n], d->docno, d->docno_len);
    g->docno[g->n][d->docno_len] = '\0';
    for (size_t f = 0; f < d->num_fields; f++) {
        g->val[g->n][f] = NULL;
        if (!d->fields[f]) continue;
        g->val[g->n][f] = malloc(d->field_lens[f] + 1);
        ck_assert(g->val[g->n][f] != NULL);
        memcpy(g->val[g->n][f], d->fields[f], d->field_lens[f]);
        g->val[g->n][f][d->field_lens[f]] = '\0';
        g->len[g->n][f] = d->field_lens[f];
    }
    g->n++;
    return 0;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->docno[i]);
        for (size_t f = 0; f < g->nf; f++) free(g->val[i][f]);
    }
    memset(g, 0, sizeof *g);
}

/* Reads path with the fields names[0..n) into g, expecting success. */
static void read_fields(cls_corpus_format fmt, const char *path, const char *const *names, size_t n, got *g)
{
    memset(g, 0, sizeof *g);
    g->nf = n;
    cls_status s = cls_corpus_read_fields(fmt, path, names, n, on_fields, g, NULL, NULL);
    ck_assert_msg(s == CLS_OK, "%s: %s", path, cls_last_error());
}

/* Document i of g is docno with field f equal to want (NULL: absent). */
static void expect(const got *g, size_t i, const char *docno, size_t f, const char *want)
{
    ck_assert_msg(i < g->n, "only %zu documents", g->n);
    ck_assert_str_eq(g->docno[i], docno);
    if (!want) {
        ck_assert_msg(g->val[i][f] == NULL, "%s field %zu: '%s', expected absent", docno, f, g->val[i][f]);
        return;
    }
    ck_assert_msg(g->val[i][f] != NULL, "%s field %zu: absent, expected '%s'", docno, f, want);
    ck_assert_uint_eq(g->len[i][f], strlen(want));
    ck_assert_msg(strcmp(g->val[i][f], want) == 0, "%s field %zu: '%s', expected '%s'", docno, f, g->val[i][f], want);
}

/* Writes an archive (gzip-compressed tar) of the named files with their contents. */
static void write_tgz(const char *path, const char *const *names, const char *const *data, size_t n)
{
    struct archive *a = archive_write_new();
    ck_assert(a != NULL);
    ck_assert_int_eq(archive_write_set_format_by_name(a, "gnutar"), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)strlen(data[i]));
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        ck_assert_int_eq(archive_write_data(a, data[i], strlen(data[i])), (la_ssize_t)strlen(data[i]));
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* ---- readers -------------------------------------------------------------------------------- */

START_TEST(jsonl_fields_every_type)
{
    const char *dir = mk_dir("jf");
    const char *p = in(dir, "c.jsonl");
    put(p, "{\"id\":\"a\",\"contents\":\"x\",\"title\":\"T\\u00edtulo \\u65e5\\u672c \\u0000 end\",\"url\":\"http://a/\","
           "\"year\":1998,\"ok\":true,\"tags\":[\"p\",\"q\"],\"meta\":{\"k\":[1,2.5]}}\n"
           "{\"id\":\"b\",\"contents\":\"y\",\"title\":\"\",\"url\":null}\n"
           "{\"id\":3,\"contents\":\"z\",\"title\":\"  spaced\\tout\\n  \"}\n");
    const char *names[] = {"title", "url", "year", "ok", "tags", "meta", "missing"};
    got g;
    read_fields(CLS_CORPUS_JSONL, p, names, 7, &g);
    ck_assert_uint_eq(g.n, 3);
    /* strings as they are (\u0000 became a space, as in the text), other values as JSON text */
    expect(&g, 0, "a", 0, "T\xC3\xADtulo \xE6\x97\xA5\xE6\x9C\xAC   end");
    expect(&g, 0, "a", 1, "http://a/");
    expect(&g, 0, "a", 2, "1998");
    expect(&g, 0, "a", 3, "true");
    expect(&g, 0, "a", 4, "[\"p\",\"q\"]");
    expect(&g, 0, "a", 5, "{\"k\":[1,2.5]}");
    expect(&g, 0, "a", 6, NULL);
    /* empty is not absent; null and a missing key are */
    expect(&g, 1, "b", 0, "");
    expect(&g, 1, "b", 1, NULL);
    expect(&g, 1, "b", 2, NULL);
    /* a JSON string's white space is kept */
    expect(&g, 2, "3", 0, "  spaced\tout\n  ");
    got_free(&g);

    /* BEIR: the title is a field like any other key, and still joins the text */
    const char *b = in(dir, "corpus.jsonl");
    put(b, "{\"_id\":\"d1\",\"title\":\"Caf\\u00e9\",\"text\":\"body\"}\n{\"_id\":\"d2\",\"text\":\"only\"}\n");
    const char *bn[] = {"title", "_id"};
    read_fields(CLS_CORPUS_BEIR, b, bn, 2, &g);
    expect(&g, 0, "d1", 0, "Caf\xC3\xA9");
    expect(&g, 0, "d1", 1, "d1");
    expect(&g, 1, "d2", 0, NULL);
    got_free(&g);
}
END_TEST

START_TEST(html_title_and_path)
{
    const char *dir = mk_dir("hf");
    ck_assert_int_eq(mkdir(in(dir, "sub"), 0755), 0);
    put(in(dir, "a.html"), "<html><head><TITLE lang=en>\n  Caf&eacute; &amp; <b>bar</b>\n &#x65E5;  </title></head>"
                           "<body>text</body></html>");
    put(in(dir, "b.html"), "<html><body>no title here; <titlebar>not one</titlebar></body></html>");
    put(in(dir, "sub/c.htm"), "<title></title><p>empty title</p>");
    put(in(dir, "sub/d.html"), "<title>never closed <p>text");
    const char *names[] = {"title", "path"};
    got g;
    read_fields(CLS_CORPUS_HTML, dir, names, 2, &g);
    ck_assert_uint_eq(g.n, 4);
    char want[4200];
    const char *root = abs_of(dir);
    char rootc[4096];
    snprintf(rootc, sizeof rootc, "%s", root);
    /* "&eacute;" is not an entity the reader decodes: it stays as written */
    expect(&g, 0, "a", 0, "Caf&eacute; & bar \xE6\x97\xA5");
    snprintf(want, sizeof want, "%s/a.html", rootc);
    expect(&g, 0, "a", 1, want);
    expect(&g, 1, "b", 0, NULL);
    expect(&g, 2, "c", 0, "");
    snprintf(want, sizeof want, "%s/sub/c.htm", rootc);
    expect(&g, 2, "c", 1, want);
    expect(&g, 3, "d", 0, NULL);
    got_free(&g);

    /* a single file: its own path; an archive: ARCHIVE:ENTRY */
    read_fields(CLS_CORPUS_HTML, in(dir, "a.html"), names, 2, &g);
    snprintf(want, sizeof want, "%s/a.html", rootc);
    expect(&g, 0, "a", 1, want);
    got_free(&g);
    const char *tgz = in(dir, "pages.tgz");
    const char *en[] = {"./x/P-1.html", "x/P-2.html"};
    const char *ed[] = {"<title>One</title>", "<p>none</p>"};
    write_tgz(tgz, en, ed, 2);
    read_fields(CLS_CORPUS_HTML, tgz, names, 2, &g);
    ck_assert_uint_eq(g.n, 2);
    expect(&g, 0, "P-1", 0, "One");
    snprintf(want, sizeof want, "%s:./x/P-1.html", abs_of(tgz));
    expect(&g, 0, "P-1", 1, want);
    expect(&g, 1, "P-2", 0, NULL);
    snprintf(want, sizeof want, "%s:x/P-2.html", abs_of(tgz));
    expect(&g, 1, "P-2", 1, want);
    got_free(&g);
}
END_TEST

START_TEST(files_path)
{
    const char *dir = mk_dir("ff");
    ck_assert_int_eq(mkdir(in(dir, "src"), 0755), 0);
    put(in(dir, "src/m\xC3\xA9 n.c"), "int main;");
    tu_write_file(in(dir, "src/bin.o"), "\0\1\2", 3); /* binary: skipped, and its path with it */
    put(in(dir, "z.txt"), "last");
    const char *names[] = {"path"};
    got g;
    read_fields(CLS_CORPUS_FILES, dir, names, 1, &g);
    ck_assert_uint_eq(g.n, 2);
    char root[4096], want[4200];
    snprintf(root, sizeof root, "%s", abs_of(dir));
    snprintf(want, sizeof want, "%s/src/m\xC3\xA9 n.c", root); /* the real path, not the %-escaped docno */
    expect(&g, 0, "src/m%C3%A9%20n.c", 0, want);
    snprintf(want, sizeof want, "%s/z.txt", root);
    expect(&g, 1, "z.txt", 0, want);
    got_free(&g);
    /* through a relative path and a link: absolute, the link resolved */
    ck_assert_int_eq(symlink(dir, in(dir, "../ff-link")), 0);
    char cwd[4096];
    ck_assert(getcwd(cwd, sizeof cwd) != NULL);
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    *strrchr(parent, '/') = '\0';
    ck_assert_int_eq(chdir(parent), 0);
    read_fields(CLS_CORPUS_FILES, "ff-link/z.txt", names, 1, &g);
    ck_assert_int_eq(chdir(cwd), 0);
    snprintf(want, sizeof want, "%s/z.txt", root);
    expect(&g, 0, "z.txt", 0, want);
    got_free(&g);
    remove(in(dir, "../ff-link"));
    /* an archive's entries */
    const char *tgz = in(dir, "t.tar.gz");
    const char *en[] = {"a/one.txt"};
    const char *ed[] = {"one"};
    write_tgz(tgz, en, ed, 1);
    read_fields(CLS_CORPUS_FILES, tgz, names, 1, &g);
    snprintf(want, sizeof want, "%s:a/one.txt", abs_of(tgz));
    expect(&g, 0, "a/one.txt", 0, want);
    got_free(&g);
}
END_TEST

START_TEST(trec_elements)
{
    const char *dir = mk_dir("tf");
    const char *p = in(dir, "t.sgml");
    put(p, "<DOC>\n<DOCNO> D1 </DOCNO>\n<HEADLINE>\n  Big <b>news</b> &amp; more\n</HEADLINE>\n<HEADLINES>no</HEADLINES>\n"
           "<date type=\"x\">1990</date>\n<TEXT>body</TEXT>\n</DOC>\n"
           "<DOC><DOCNO>D2</DOCNO><headlines>not it</headlines><TEXT>t</TEXT><headline>second</headline></DOC>\n"
           "<DOC><DOCNO>D3</DOCNO><HEADLINE>open only<TEXT>x</TEXT></DOC>\n");
    const char *names[] = {"headline", "DATE", "docno"};
    got g;
    read_fields(CLS_CORPUS_TREC, p, names, 3, &g);
    ck_assert_uint_eq(g.n, 3);
    expect(&g, 0, "D1", 0, "Big news & more");
    expect(&g, 0, "D1", 1, "1990");
    expect(&g, 0, "D1", 2, "D1");
    expect(&g, 1, "D2", 0, "second");
    expect(&g, 1, "D2", 1, NULL);
    expect(&g, 2, "D3", 0, NULL); /* never closed */
    got_free(&g);
}
END_TEST

START_TEST(smart_fields)
{
    const char *dir = mk_dir("sf");
    const char *p = in(dir, "s.all");
    put(p, ".I 1\n.T\nA title\nover two lines .\n.A\nDoe, J.\n.A \nRoe, R.\n.B\nj. x. 1958\n.W\nwords\n.X\n1 2 3\n"
           ".I 2\n.T Title on the marker line\n.W\nmore words\n"
           ".I 3\n.W\nno title at all\n");
    const char *names[] = {"title", "authors", "bibliography"};
    got g;
    read_fields(CLS_CORPUS_SMART, p, names, 3, &g);
    ck_assert_uint_eq(g.n, 3);
    expect(&g, 0, "1", 0, "A title over two lines .");
    expect(&g, 0, "1", 1, "Doe, J.; Roe, R.");
    expect(&g, 0, "1", 2, "j. x. 1958");
    expect(&g, 1, "2", 0, "Title on the marker line");
    expect(&g, 1, "2", 1, NULL);
    expect(&g, 2, "3", 0, NULL);
    got_free(&g);
    /* the text is what it was without fields */
    const char *one[] = {"title"};
    read_fields(CLS_CORPUS_SMART, p, one, 1, &g);
    expect(&g, 0, "1", 0, "A title over two lines .");
    got_free(&g);
}
END_TEST

/* Names a reader cannot supply, and malformed lists, are refused before anything is read
 * (the path does not even exist). */
START_TEST(field_names_checked_first)
{
    static const struct {
        cls_corpus_format fmt;
        const char *name, *needle;
    } bad[] = {{CLS_CORPUS_HTML, "url", "html reader has no field 'url' (it has title, path)"},
               {CLS_CORPUS_FILES, "title", "files reader has no field 'title'"},
               {CLS_CORPUS_SMART, "text", "title (.T), authors (.A), bibliography (.B)"},
               {CLS_CORPUS_TREC, "a/b", "elements of a <DOC>"},
               {CLS_CORPUS_JSONL, "", "field name ''"},
               {CLS_CORPUS_JSONL, "a,b", "commas"},
               {CLS_CORPUS_BEIR, "a b", "spaces"},
               {CLS_CORPUS_JSONL, "tab\there", "control"}};
    got g = {0};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(cls_corpus_field_check(bad[i].fmt, bad[i].name), CLS_E_ARG);
        ck_assert_msg(strstr(cls_last_error(), bad[i].needle), "'%s': '%s'", bad[i].name, cls_last_error());
        const char *names[] = {bad[i].name};
        ck_assert_int_eq(cls_corpus_read_fields(bad[i].fmt, "/nonexistent/x", names, 1, on_fields, &g, NULL, NULL),
                         CLS_E_ARG);
    }
    char longname[300];
    memset(longname, 'k', 256);
    longname[256] = '\0';
    ck_assert_int_eq(cls_corpus_field_check(CLS_CORPUS_JSONL, longname), CLS_E_ARG);
    longname[255] = '\0';
    ck_assert_int_eq(cls_corpus_field_check(CLS_CORPUS_JSONL, longname), CLS_OK);
    ck_assert_int_eq(cls_corpus_field_check(CLS_CORPUS_JSONL, "t\xC3\xADtulo"), CLS_OK); /* UTF-8 keys */
    const char *twice[] = {"title", "title"};
    ck_assert_int_eq(cls_corpus_read_fields(CLS_CORPUS_HTML, "/nonexistent/x", twice, 2, on_fields, &g, NULL, NULL),
                     CLS_E_ARG);
    const char *many[CLS_MAX_FIELDS + 1];
    char fnames[CLS_MAX_FIELDS + 1][8];
    for (int i = 0; i <= CLS_MAX_FIELDS; i++) snprintf(fnames[i], sizeof fnames[i], "f%d", i), many[i] = fnames[i];
    ck_assert_int_eq(
        cls_corpus_read_fields(CLS_CORPUS_JSONL, "/nonexistent/x", many, CLS_MAX_FIELDS + 1, on_fields, &g, NULL, NULL),
        CLS_E_ARG);
    ck_assert_int_eq(g.n, 0);
}
END_TEST

/* ---- builder and index ------------------------------------------------------------------------ */

static const char *const BF[] = {"title", "body"};

/* Builds 40 documents with fields: doc d's title absent when d % 4 == 1, empty when d % 4 == 2,
 * else UTF-8 naming d; doc 7's body 1 MiB long, others short or absent (d % 3 == 0). */
static char *build_fields(unsigned threads, char **long_value)
{
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    cls_build_opts o;
    cls_build_defaults(&o);
    o.threads = threads;
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    ck_assert_msg(cls_builder_set_fields(b, BF, 2) == CLS_OK, "%s", cls_last_error());
    size_t big = (size_t)1 << 20;
    char *lv = malloc(big + 1);
    ck_assert(lv != NULL);
    for (size_t i = 0; i < big; i++) lv[i] = "\xE2\x82\xAC x\t\n\\"[i % 8]; /* euro signs and separators */
    lv[big] = '\0';
    for (uint32_t d = 0; d < 40; d++) {
        char docno[32], title[64], body[64], text[64];
        snprintf(docno, sizeof docno, "doc%u", d);
        snprintf(title, sizeof title, "T\xC3\xADtulo \xE6\x97\xA5 %u", d);
        snprintf(body, sizeof body, "b%u", d);
        snprintf(text, sizeof text, "word%u common", d);
        const char *v[2] = {d % 4 == 1 ? NULL : d % 4 == 2 ? "" : title, d == 7 ? lv : d % 3 == 0 ? NULL : body};
        size_t l[2] = {v[0] ? strlen(v[0]) : 0, v[1] ? strlen(v[1]) : 0};
        cls_doc doc = {docno, strlen(docno), text, strlen(text), 2, v, l};
        ck_assert_msg(cls_builder_add_doc(b, &doc) == CLS_OK, "doc %u: %s", d, cls_last_error());
        if (d == 20) {
            /* a NUL in a value is refused, and leaves nothing behind */
            const char *bad[2] = {"a\0b", NULL};
            size_t bl[2] = {3, 0};
            cls_doc nul = {"x", 1, "t", 1, 2, bad, bl};
            ck_assert_int_eq(cls_builder_add_doc(b, &nul), CLS_E_FORMAT);
            ck_assert_msg(strstr(cls_last_error(), "field 'title' holds a NUL"), "%s", cls_last_error());
            /* as are the wrong number of values, and fields named after the first document */
            cls_doc one = {"x", 1, "t", 1, 1, bad, bl};
            ck_assert_int_eq(cls_builder_add_doc(b, &one), CLS_E_ARG);
            ck_assert_int_eq(cls_builder_set_fields(b, BF, 1), CLS_E_ARG);
        }
    }
    ck_assert_int_eq(cls_builder_add_root(b, CLS_CORPUS_JSONL, "/nonexistent/x"), CLS_E_IO);
    ck_assert_int_eq(cls_builder_add_root(b, CLS_CORPUS_JSONL, "."), CLS_OK);
    ck_assert_int_eq(cls_builder_add_root(b, CLS_CORPUS_HTML, "."), CLS_E_ARG); /* one format per index */
    ck_assert_int_eq(cls_builder_add_root(b, CLS_CORPUS_JSONL, "/"), CLS_OK);
    char *path = tu_strdup(tu_tmp_path("fields.idx"));
    ck_assert_msg(cls_builder_write(b, path) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b);
    *long_value = lv;
    return path;
}

static void check_fields(const cls_index *idx, const char *lv)
{
    ck_assert_uint_eq(cls_index_field_count(idx), 2);
    ck_assert_str_eq(cls_index_field_name(idx, 0), "title");
    ck_assert_str_eq(cls_index_field_name(idx, 1), "body");
    ck_assert_str_eq(cls_index_collection(idx), "jsonl");
    ck_assert_uint_eq(cls_index_root_count(idx), 2);
    char cwd[4096];
    ck_assert(getcwd(cwd, sizeof cwd) != NULL);
    ck_assert_str_eq(cls_index_root(idx, 0), abs_of(cwd));
    ck_assert_str_eq(cls_index_root(idx, 1), "/");
    cls_index_stats st;
    cls_index_get_stats(idx, &st);
    ck_assert_uint_eq(st.num_docs, 40);
    for (uint32_t d = 0; d < 40; d++) {
        char docno[32], title[64], body[64];
        snprintf(docno, sizeof docno, "doc%u", d);
        ck_assert_str_eq(cls_index_docno(idx, d), docno);
        snprintf(title, sizeof title, "T\xC3\xADtulo \xE6\x97\xA5 %u", d);
        snprintf(body, sizeof body, "b%u", d);
        size_t len;
        const char *t = cls_index_field(idx, d, 0, &len);
        if (d % 4 == 1) ck_assert(t == NULL && len == 0);
        else if (d % 4 == 2) ck_assert(t && len == 0 && *t == '\0');
        else ck_assert(t && len == strlen(title) && strcmp(t, title) == 0);
        const char *bv = cls_index_field(idx, d, 1, &len);
        if (d == 7) ck_assert(bv && len == strlen(lv) && memcmp(bv, lv, len) == 0 && bv[len] == '\0');
        else if (d % 3 == 0) ck_assert(bv == NULL);
        else ck_assert(bv && strcmp(bv, body) == 0);
    }
    ck_assert_msg(cls_index_check(idx, 2) == CLS_OK, "%s", cls_last_error());
}

START_TEST(builder_roundtrip_any_threads)
{
    char *lv1, *lv4;
    char *p1 = build_fields(1, &lv1), *p4 = build_fields(4, &lv4);
    size_t l1, l4;
    unsigned char *a = tu_read_file(p1, &l1), *b = tu_read_file(p4, &l4);
    ck_assert_msg(l1 == l4 && memcmp(a, b, l1) == 0, "the index differs between 1 and 4 threads");
    free(a), free(b);
    cls_index *idx;
    ck_assert_msg(cls_index_open(p1, &idx) == CLS_OK, "%s", cls_last_error());
    check_fields(idx, lv1);

    /* recode keeps the fields and the roots; CIFF (where built) leaves the fields out and records
     * the CIFF file as the root */
    char *pr = tu_strdup(tu_tmp_path("recoded.idx"));
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = CLS_CODEC_RICE;
    o.block_size = 64;
    ck_assert_msg(cls_index_recode(idx, &o, pr) == CLS_OK, "%s", cls_last_error());
    cls_index *rx;
    ck_assert_msg(cls_index_open(pr, &rx) == CLS_OK, "%s", cls_last_error());
    check_fields(rx, lv1);
    cls_index_close(rx);
    char *pc = tu_strdup(tu_tmp_path("f.ciff")), *pi = tu_strdup(tu_tmp_path("fromciff.idx"));
    cls_status cs = cls_ciff_export(idx, pc, "fields");
    if (cs == CLS_OK) {
        cls_build_opts co;
        cls_build_defaults(&co);
        ck_assert_msg(cls_ciff_import(pc, NULL, &co, pi) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(cls_index_open(pi, &rx) == CLS_OK, "%s", cls_last_error());
        ck_assert_uint_eq(cls_index_field_count(rx), 0);
        ck_assert_str_eq(cls_index_collection(rx), "ciff");
        ck_assert_uint_eq(cls_index_root_count(rx), 1);
        ck_assert_str_eq(cls_index_root(rx, 0), abs_of(pc));
        cls_index_close(rx);
    } else {
        ck_assert_msg(strstr(cls_last_error(), "CLSEARCH_CIFF=OFF"), "%s", cls_last_error());
    }
    cls_index_close(idx);
    remove(p1), remove(p4), remove(pr), remove(pc), remove(pi);
    free(p1), free(p4), free(pr), free(pc), free(pi), free(lv1), free(lv4);

    /* no document, one field: an empty but valid fields section */
    cls_builder *b0;
    ck_assert_int_eq(cls_builder_create(NULL, &b0), CLS_OK);
    ck_assert_int_eq(cls_builder_set_fields(b0, BF, 1), CLS_OK);
    char *pe = tu_strdup(tu_tmp_path("nodocs.idx"));
    ck_assert_msg(cls_builder_write(b0, pe) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b0);
    ck_assert_msg(cls_index_open(pe, &idx) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(cls_index_field_count(idx), 1);
    ck_assert(cls_index_field(idx, 0, 0, NULL) == NULL);
    ck_assert_str_eq(cls_index_collection(idx), "");
    ck_assert_int_eq(cls_index_check(idx, 1), CLS_OK);
    cls_index_close(idx);
    remove(pe);
    free(pe);

    /* names the builder refuses */
    ck_assert_int_eq(cls_builder_create(NULL, &b0), CLS_OK);
    const char *bad1[] = {"a b"}, *bad2[] = {"x", "x"}, *bad3[] = {""};
    ck_assert_int_eq(cls_builder_set_fields(b0, bad1, 1), CLS_E_ARG);
    ck_assert_int_eq(cls_builder_set_fields(b0, bad2, 2), CLS_E_ARG);
    ck_assert_int_eq(cls_builder_set_fields(b0, bad3, 1), CLS_E_ARG);
    ck_assert_int_eq(cls_builder_set_fields(b0, BF, CLS_MAX_FIELDS + 1), CLS_E_ARG);
    cls_builder_free(b0);
}
END_TEST

/* Every checksum of an image made consistent with its bytes (FORMAT.md's chunked XXH3, through
 * checksum.c, which test_index checks against the definition). */
static void rehash(unsigned char *img)
{
    idx_header h;
    memcpy(&h, img, sizeof h);
    idx_section_entry t[IDX_NSECTIONS];
    memcpy(t, img + sizeof h, sizeof t);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) {
        ck_part part = {img + t[i].offset, t[i].size};
        ck_assert_int_eq(ck_sums(&part, 1, 1, &t[i].xxh), CLS_OK);
    }
    memcpy(img + sizeof h, t, sizeof t);
    h.table_xxh = XXH64(t, sizeof t, 0);
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(img, &h, sizeof h);
}

/* Writes img to a fresh path and opens it: the status, and the handle when CLS_OK. */
static cls_status open_image(const unsigned char *img, size_t len, cls_index **idx, char **path)
{
    *path = tu_strdup(tu_tmp_path("forged.idx"));
    tu_write_file(*path, img, len);
    *idx = NULL;
    return cls_index_open(*path, idx);
}

/* Damage to sections 9 to 11: a flipped byte is a checksum mismatch at open, naming the
 * section. Forged with consistent checksums: broken bounds or a bad collection record are refused
 * at open; a document's offsets out of order or a value without its NUL open (open does no
 * per-document work), read as absent, never out of bounds, and cls_index_check and recode
 * refuse them naming the section, field and document. */
START_TEST(damaged_and_forged_fields)
{
    char *lv;
    char *path = build_fields(1, &lv);
    size_t len;
    unsigned char *good = tu_read_file(path, &len), *img = malloc(len);
    ck_assert(img != NULL);
    idx_section_entry t[IDX_NSECTIONS];
    memcpy(t, good + sizeof(idx_header), sizeof t);
    const idx_section_entry *cs = &t[IDX_S_COLLECTION - 1], *fo = &t[IDX_S_FIELD_OFF - 1], *fv = &t[IDX_S_FIELD_BLOB - 1];
    const uint64_t N = 40;
    cls_index *idx;
    char *p;
    static const char *const names[] = {"collection", "field-offsets", "field-values"};
    for (int k = 0; k < 3; k++) {
        const idx_section_entry *e = &t[IDX_S_COLLECTION - 1 + k];
        memcpy(img, good, len);
        img[e->offset + e->size / 2] ^= 0x40;
        ck_assert_int_eq(open_image(img, len, &idx, &p), CLS_E_CORRUPT);
        char want[96];
        snprintf(want, sizeof want, "section '%s': checksum mismatch", names[k]);
        ck_assert_msg(strstr(cls_last_error(), want), "%s", cls_last_error());
        remove(p), free(p);
    }
    /* forged: doc 5's title (absent) ending before it starts, inside doc 4's value */
    memcpy(img, good, len);
    uint64_t *off = (uint64_t *)(img + fo->offset);
    ck_assert(off[5] == off[6] && off[5] > off[4]);
    off[6] = off[5] - 1;
    rehash(img);
    ck_assert_msg(open_image(img, len, &idx, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert(cls_index_field(idx, 5, 0, NULL) == NULL && cls_index_field(idx, 4, 0, NULL) != NULL);
    for (uint32_t d = 0; d < N; d++) { /* whatever a lookup returns lies inside the values */
        size_t l;
        const char *v = cls_index_field(idx, d, 0, &l);
        ck_assert(!v || (v >= idx->field_blob && v + l < idx->field_blob + idx->field_blob_len));
    }
    ck_assert_int_eq(cls_index_check(idx, 2), CLS_E_CORRUPT);
    ck_assert_msg(strstr(cls_last_error(), "section 'field-offsets': field 'title', document 5 ('doc5')"), "%s",
                  cls_last_error());
    char *pr = tu_strdup(tu_tmp_path("r.idx"));
    cls_build_opts o;
    cls_build_defaults(&o);
    ck_assert_int_eq(cls_index_recode(idx, &o, pr), CLS_E_CORRUPT);
    struct stat sb;
    ck_assert(stat(pr, &sb) != 0);
    cls_index_close(idx);
    remove(p), free(p);
    /* forged: the NUL after doc 0's title made a letter: absent on lookup, the check names it */
    memcpy(img, good, len);
    off = (uint64_t *)(img + fo->offset);
    img[fv->offset + off[1] - 1] = 'x';
    rehash(img);
    ck_assert_msg(open_image(img, len, &idx, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert(cls_index_field(idx, 0, 0, NULL) == NULL);
    ck_assert_int_eq(cls_index_check(idx, 1), CLS_E_CORRUPT);
    ck_assert_msg(strstr(cls_last_error(), "section 'field-values': field 'title', document 0"), "%s", cls_last_error());
    cls_index_close(idx);
    remove(p), free(p);
    /* forged: an offset past the values (the last document's), and the fields' bounds */
    memcpy(img, good, len);
    off = (uint64_t *)(img + fo->offset);
    off[N - 1] = fv->size + 1000;
    rehash(img);
    ck_assert_msg(open_image(img, len, &idx, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert(cls_index_field(idx, N - 1, 0, NULL) == NULL && cls_index_field(idx, N - 2, 0, NULL) == NULL);
    ck_assert_int_eq(cls_index_check(idx, 1), CLS_E_CORRUPT);
    cls_index_close(idx);
    remove(p), free(p);
    const uint64_t at[] = {0, N, N + 1, 2 * N + 1};
    for (size_t i = 0; i < 4; i++) {
        memcpy(img, good, len);
        off = (uint64_t *)(img + fo->offset);
        off[at[i]] += 1;
        rehash(img);
        ck_assert_int_eq(open_image(img, len, &idx, &p), CLS_E_CORRUPT);
        ck_assert_msg(strstr(cls_last_error(), "section 'field-offsets'"), "%s", cls_last_error());
        remove(p), free(p);
    }
    /* forged collection records: counts against strings, a name that is not one, the end */
    for (int k = 0; k < 4; k++) {
        memcpy(img, good, len);
        unsigned char *c = img + cs->offset;
        uint32_t v;
        if (k == 0) v = 3, memcpy(c, &v, 4);     /* three roots: one string short */
        if (k == 1) v = 1, memcpy(c + 4, &v, 4); /* one field: a string too many */
        if (k == 2) c[cs->size - 4] = ' ';       /* "body" is "b dy" */
        if (k == 3) c[cs->size - 1] = 'x';       /* the last string unterminated */
        rehash(img);
        ck_assert_int_eq(open_image(img, len, &idx, &p), CLS_E_CORRUPT);
        ck_assert_msg(strstr(cls_last_error(), "section 'collection'"), "case %d: %s", k, cls_last_error());
        remove(p), free(p);
    }
    remove(pr), free(pr);
    free(img), free(good), free(lv);
    remove(path), free(path);

    /* the record's reader on its own: what open refuses beyond the counts */
    static const struct {
        const char *bytes;
        size_t len;
        const char *why;
    } recs[] = {{"\1\0\0\0\0\0\0\0jsonl\0\0", 15, "an empty root"},
                {"\0\0\0\0\2\0\0\0\0ab\0ab\0", 15, "a field named twice"},
                {"\0\0\0\0\101\0\0\0\0", 9, "more fields"},
                {"\0\0\0\0\0\0\0\0", 8, "shorter"},
                {"\xff\xff\xff\xff\0\0\0\0\0", 9, "counts larger"},
                {"\0\0\0\0\1\0\0\0\0a\0", 11, NULL}};
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
        idx_collection c;
        const char *why = idx_collection_read(recs[i].bytes, recs[i].len, &c);
        if (!recs[i].why) {
            ck_assert_msg(why == NULL, "record %zu: %s", i, why);
            ck_assert(c.num_fields == 1 && strcmp(c.names[0], "a") == 0 && strcmp(c.format, "") == 0);
            idx_collection_free(&c);
        } else {
            ck_assert_msg(why && strstr(why, recs[i].why), "record %zu: %s", i, why ? why : "(accepted)");
        }
    }
}
END_TEST

/* ---- the command ------------------------------------------------------------------------------ */


/* The lines of a file (static copy; at most 64). */
static size_t lines_of(const char *path, char **lines)
{
    static char *text;
    free(text);
    text = (char *)tu_read_file(path, NULL);
    size_t n = 0;
    for (char *s = text, *nl; *s && n < 64; s = nl + 1) {
        nl = strchr(s, '\n');
        ck_assert_msg(nl != NULL, "%s: last line unterminated", path);
        *nl = '\0';
        lines[n++] = s;
    }
    return n;
}

START_TEST(command_store_fields_json_stats)
{
    const char *dir = mk_dir("cf");
    const char *c = in(dir, "c.jsonl"), *x = in(dir, "c.idx"), *o = in(dir, "out.txt");
    /* d3's title holds a byte that is not UTF-8 (cJSON keeps it): --json writes U+FFFD for it */
    put(c, "{\"id\":\"d1\",\"contents\":\"apple apple pie\",\"title\":\"Tab\\there\\nline \\\\ slash\",\"url\":\"u1\"}\n"
           "{\"id\":\"d2\",\"contents\":\"apple tart\",\"title\":\"\",\"n\":7}\n"
           "{\"id\":\"d3\",\"contents\":\"pear\",\"title\":\"bad \xff\"}\n");
    const char *err;
    int rc = tu_cli(NULL, o, &err, "index -c jsonl -o '%s' '%s' --store title,url,n,titel", x, c);
    ck_assert_msg(rc == 0, "index: %d: %s", rc, err);
    ck_assert_msg(strstr(err, "note: no document has the field 'titel'"), "%s", err);
    char *ln[64];

    /* without --fields: a plain run; with it, the same six columns, then a tab and the values
     * (escaped; absent: empty) */
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 5 apple", x);
    ck_assert_msg(rc == 0, "search: %d: %s", rc, err);
    ck_assert_uint_eq(lines_of(o, ln), 2);
    char plain[2][256];
    for (int i = 0; i < 2; i++) snprintf(plain[i], sizeof plain[i], "%s", ln[i]);
    ck_assert_msg(strncmp(plain[0], "1 Q0 d1 1 ", 10) == 0 && strncmp(plain[1], "1 Q0 d2 2 ", 10) == 0, "%s", plain[0]);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 5 --fields title,url,n apple", x);
    ck_assert_msg(rc == 0, "search: %d: %s", rc, err);
    ck_assert_uint_eq(lines_of(o, ln), 2);
    char want_line[512];
    snprintf(want_line, sizeof want_line, "%s\tTab\\there\\nline \\\\ slash\tu1\t", plain[0]);
    ck_assert_str_eq(ln[0], want_line);
    snprintf(want_line, sizeof want_line, "%s\t\t\t7", plain[1]);
    ck_assert_str_eq(ln[1], want_line);

    /* --json: every stored field by default, null when absent; --fields picks; none: no "fields" */
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 5 --json apple pear", x);
    ck_assert_msg(rc == 0, "%s", err);
    size_t n = lines_of(o, ln);
    ck_assert_uint_eq(n, 3);
    size_t at = 0;
    while (at < n && !strstr(ln[at], "\"d1\"")) at++;
    ck_assert(at < n);
    cJSON *j = cJSON_Parse(ln[at]);
    ck_assert(j != NULL);
    cJSON *fo = cJSON_GetObjectItemCaseSensitive(j, "fields");
    ck_assert(cJSON_IsObject(fo) && cJSON_GetArraySize(fo) == 4);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(fo, "title")->valuestring, "Tab\there\nline \\ slash");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fo, "n")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fo, "titel")));
    cJSON_Delete(j);
    for (size_t i = 0; i < n; i++)
        if (strstr(ln[i], "\"d3\"")) ck_assert_msg(strstr(ln[i], "\"title\":\"bad \xEF\xBF\xBD\""), "%s", ln[i]);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 1 --json --fields url apple", x);
    ck_assert_uint_eq(lines_of(o, ln), 1);
    const char *head = "{\"qid\":\"1\",\"rank\":1,\"docno\":\"d1\",\"score\":", *tail = ",\"fields\":{\"url\":\"u1\"}}";
    ck_assert_msg(strncmp(ln[0], head, strlen(head)) == 0, "%s", ln[0]);
    ck_assert_msg(strstr(ln[0], tail) == ln[0] + strlen(ln[0]) - strlen(tail), "%s", ln[0]);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 1 --json --fields none apple", x);
    ck_assert_uint_eq(lines_of(o, ln), 1);
    ck_assert_msg(!strstr(ln[0], "fields") && ln[0][strlen(ln[0]) - 1] == '}', "%s", ln[0]);

    /* unknown or malformed names: usage errors, no output file */
    const char *run = in(dir, "run.txt");
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --fields title,body -o '%s' apple", x, run);
    ck_assert_msg(rc == 2 && strstr(err, "stores no field 'body' (it stores title, url, n, titel)"), "%d: %s", rc, err);
    struct stat sb;
    ck_assert(stat(run, &sb) != 0);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --fields title,,url apple", x);
    ck_assert_msg(rc == 2 && strstr(err, "not a list of field names"), "%d: %s", rc, err);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --fields url,url apple", x);
    ck_assert_msg(rc == 2 && strstr(err, "named twice"), "%d: %s", rc, err);
    rc = tu_cli(NULL, o, &err, "index -c html -o '%s' '%s' --store title,url", in(dir, "h.idx"), dir);
    ck_assert_msg(rc == 2 && strstr(err, "html reader has no field 'url'"), "%d: %s", rc, err);
    ck_assert(stat(in(dir, "h.idx"), &sb) != 0);

    /* stats: the collection, its root, the fields */
    rc = tu_cli(NULL, o, &err, "stats '%s'", x);
    ck_assert_msg(rc == 0, "%s", err);
    char *st = (char *)tu_read_file(o, NULL);
    char want[4300];
    snprintf(want, sizeof want, "collection       jsonl, 1 root\nroot             %s\n", abs_of(c));
    ck_assert_msg(strstr(st, want), "%s", st);
    ck_assert_msg(strstr(st, "stored fields    title: 3 of 3 documents, 26 bytes\n"
                             "                 url: 1 of 3 documents, 2 bytes\n"
                             "                 n: 1 of 3 documents, 1 bytes\n"
                             "                 titel: 0 of 3 documents, 0 bytes\n"),
                  "%s", st);
    free(st);
    rc = tu_cli(NULL, o, &err, "stats '%s' --json", x);
    j = cJSON_Parse((char *)(st = (char *)tu_read_file(o, NULL)));
    free(st);
    ck_assert(j != NULL);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "collection")->valuestring, "jsonl");
    cJSON *roots = cJSON_GetObjectItemCaseSensitive(j, "roots"), *fl = cJSON_GetObjectItemCaseSensitive(j, "fields");
    ck_assert(cJSON_GetArraySize(roots) == 1 && strcmp(cJSON_GetArrayItem(roots, 0)->valuestring, abs_of(c)) == 0);
    ck_assert_int_eq(cJSON_GetArraySize(fl), 4);
    cJSON *f0 = cJSON_GetArrayItem(fl, 0);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(f0, "name")->valuestring, "title");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(f0, "documents")->valueint, 3);
    cJSON_Delete(j);

    /* recode keeps them: the same --fields output */
    const char *rx = in(dir, "r.idx");
    rc = tu_cli(NULL, o, &err, "recode '%s' -o '%s' --codec pfor --block 256", x, rx);
    ck_assert_msg(rc == 0, "%s", err);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 5 --fields title,url,n apple", rx);
    ck_assert_uint_eq(lines_of(o, ln), 2);
    snprintf(want_line, sizeof want_line, "%s\tTab\\there\\nline \\\\ slash\tu1\t", plain[0]);
    ck_assert_str_eq(ln[0], want_line);
    rc = tu_cli(NULL, o, &err, "check '%s'", rx);
    ck_assert_msg(rc == 0, "%s", err);
}
END_TEST

/* Without --store each reader keeps its default (html title, files path; jsonl nothing);
 * --store none keeps nothing; the fields show in -v. */
START_TEST(command_default_fields)
{
    const char *dir = mk_dir("cd");
    const char *h = mk_dir("cd-html");
    put(in(h, "p1.html"), "<title>Page one</title>apple");
    const char *o = in(dir, "out.txt"), *x = in(dir, "x.idx");
    const char *err;
    char *ln[64];
    int rc = tu_cli(NULL, o, &err, "index -c html -o '%s' '%s' -v", x, h);
    ck_assert_msg(rc == 0 && strstr(err, "stored fields: title (1 of 1 documents)"), "%d: %s", rc, err);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --fields title apple", x);
    ck_assert_uint_eq(lines_of(o, ln), 1);
    const char *tail = " clsearch\tPage one";
    ck_assert_msg(strncmp(ln[0], "1 Q0 p1 1 ", 10) == 0 && strstr(ln[0], tail) == ln[0] + strlen(ln[0]) - strlen(tail),
                  "%s", ln[0]);
    rc = tu_cli(NULL, o, &err, "index -c files -o '%s' '%s'", x, h);
    ck_assert_msg(rc == 0, "%s", err);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --json apple", x);
    char want[4300];
    snprintf(want, sizeof want, "\"fields\":{\"path\":\"%s/p1.html\"}", abs_of(h));
    ck_assert_uint_eq(lines_of(o, ln), 1);
    ck_assert_msg(strstr(ln[0], want), "%s", ln[0]);
    rc = tu_cli(NULL, o, &err, "index -c files -o '%s' '%s' --store none", x, h);
    ck_assert_msg(rc == 0, "%s", err);
    rc = tu_cli(NULL, o, &err, "stats '%s'", x);
    char *st = (char *)tu_read_file(o, NULL);
    ck_assert_msg(strstr(st, "stored fields    none\n") && strstr(st, "collection       files, 1 root\n"), "%s", st);
    free(st);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --json apple", x);
    ck_assert_uint_eq(lines_of(o, ln), 1);
    ck_assert_msg(!strstr(ln[0], "fields"), "%s", ln[0]);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref --fields path apple", x);
    ck_assert_msg(rc == 2 && strstr(err, "stores no fields at all"), "%d: %s", rc, err);
}
END_TEST

/* ---- data part: the SMART collections' titles ------------------------------------------------ */

START_TEST(smart_titles_real)
{
    const char *names[] = {"title", "authors", "bibliography"};
    got g;
    /* Cranfield and CISI have .T and .A on every record; MED has .W only */
    static const struct {
        const char *rel, *docno, *title, *authors;
    } sets[] = {{"cranfield/cran.all.1400", "1",
                 "experimental investigation of the aerodynamics of a wing in a slipstream .", "brenckman,m."},
                {"cisi/CISI.ALL", "1", "18 Editions of the Dewey Decimal Classifications", "Comaromi, J.P."},
                {"med/MED.ALL", "1", NULL, NULL}};
    for (size_t i = 0; i < 3; i++) {
        const char *p = tu_data_path(sets[i].rel);
        memset(&g, 0, sizeof g);
        g.nf = 3;
        g.limit = 2; /* the first documents are enough: stop there */
        cls_status s = cls_corpus_read_fields(CLS_CORPUS_SMART, p, names, 3, on_fields, &g, NULL, NULL);
        (void)s;
        expect(&g, 0, sets[i].docno, 0, sets[i].title);
        expect(&g, 0, sets[i].docno, 1, sets[i].authors);
        got_free(&g);
    }
    /* through the command: Cranfield's default stored field is its title */
    const char *dir = mk_dir("sr");
    const char *x = in(dir, "cran.idx"), *o = in(dir, "out.txt");
    const char *err;
    char *ln[64];
    int rc = tu_cli(NULL, o, &err, "index -c smart -o '%s' '%s'", x, tu_data_path("cranfield/cran.all.1400"));
    ck_assert_msg(rc == 0, "%s", err);
    rc = tu_cli(NULL, o, &err, "search -x '%s' -d ref -k 1 --fields title wing propeller slipstream", x);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(lines_of(o, ln), 1);
    ck_assert_msg(strstr(ln[0], "\tslipstream") || strstr(ln[0], "slipstream"), "%s", ln[0]);
    rc = tu_cli(NULL, o, &err, "stats '%s' --json", x);
    char *st = (char *)tu_read_file(o, NULL);
    ck_assert_msg(strstr(st, "\"fields\":[{\"name\":\"title\",\"documents\":1400"), "%s", st);
    free(st);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("fields");
    TCase *tc = tcase_create("fields");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, jsonl_fields_every_type);
    tcase_add_test(tc, html_title_and_path);
    tcase_add_test(tc, files_path);
    tcase_add_test(tc, trec_elements);
    tcase_add_test(tc, smart_fields);
    tcase_add_test(tc, field_names_checked_first);
    tcase_add_test(tc, builder_roundtrip_any_threads);
    tcase_add_test(tc, damaged_and_forged_fields);
    tcase_add_test(tc, command_store_fields_json_stats);
    tcase_add_test(tc, command_default_fields);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("fields_data");
    TCase *tc = tcase_create("smart");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, smart_titles_real);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cranfield/cran.all.1400", "cisi/CISI.ALL", "med/MED.ALL", NULL};
    return tu_main(argc, argv, plain_suite, data_suite, needs);
}
