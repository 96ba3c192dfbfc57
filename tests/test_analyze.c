/* The analyzer: tokenizer edge cases, each filter on and off, Porter stems, early stop, and
 * hostile bytes. Expected terms are what Lucene's EnglishAnalyzer (as Anserini configures it)
 * produces, except where src/analysis/analyze.c documents an approximation. */
#include <stdio.h>
#include <string.h>

#include "analysis/an.h"
#include "testutil.h"

/* Collects the emitted terms as "t1|t2|..." and can stop after a given number of terms. */
typedef struct collect {
    char out[65536];
    size_t used;
    size_t count;
    size_t max_len;
    size_t stop_after; /* 0: never stop */
    int empty_seen;
} collect;

static int collect_fn(void *user, const char *term, size_t len)
{
    collect *c = user;
    if (len == 0) c->empty_seen = 1;
    if (len > c->max_len) c->max_len = len;
    if (c->used + len + 2 < sizeof c->out) {
        if (c->count) c->out[c->used++] = '|';
        memcpy(c->out + c->used, term, len);
        c->used += len;
        c->out[c->used] = '\0';
    }
    c->count++;
    return c->stop_after && c->count >= c->stop_after;
}

static cls_analyzer_opts opts(int possessive, int lowercase, int stopwords, int stem)
{
    cls_analyzer_opts o = {possessive, lowercase, stopwords, stem};
    return o;
}

/* Analyses len bytes of text with o into c (reset first); returns an_run's status. */
static cls_status run_n(cls_analyzer_opts o, const char *text, size_t len, collect *c)
{
    an_analyzer *a = NULL;
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(an_create(&o, &a), CLS_OK);
    ck_assert_ptr_nonnull(a);
    cls_status st = an_run(a, text, len, collect_fn, c);
    an_free(a);
    return st;
}

static collect g; /* big: keep it off the stack */

/* The terms of text under o, joined with '|'. */
static const char *terms(cls_analyzer_opts o, const char *text)
{
    ck_assert_int_eq(run_n(o, text, strlen(text), &g), CLS_OK);
    ck_assert(!g.empty_seen);
    return g.out;
}

#define RAW opts(0, 0, 0, 0)
#define DEF opts(1, 1, 1, 1)

#define EXPECT(o, text, want) ck_assert_str_eq(terms((o), (text)), (want))

START_TEST(test_defaults_and_flags)
{
    cls_analyzer_opts o;
    memset(&o, 0x55, sizeof o);
    cls_analyzer_defaults(&o);
    ck_assert(o.possessive == 1 && o.lowercase == 1 && o.stopwords == 1 && o.stem == 1);
    ck_assert_uint_eq(an_opts_pack(&o), 0xFu);

    o = opts(1, 0, 0, 0);
    ck_assert_uint_eq(an_opts_pack(&o), 1u);
    o = opts(0, 1, 0, 0);
    ck_assert_uint_eq(an_opts_pack(&o), 2u);
    o = opts(0, 0, 1, 0);
    ck_assert_uint_eq(an_opts_pack(&o), 4u);
    o = opts(0, 0, 0, 7); /* any nonzero value means on */
    ck_assert_uint_eq(an_opts_pack(&o), 8u);

    for (unsigned f = 0; f < 16; f++) {
        cls_analyzer_opts u;
        an_opts_unpack(f, &u);
        ck_assert_uint_eq(an_opts_pack(&u), f);
        ck_assert(u.possessive == (int)(f & 1) && u.lowercase == (int)((f >> 1) & 1));
        ck_assert(u.stopwords == (int)((f >> 2) & 1) && u.stem == (int)((f >> 3) & 1));
    }
}
END_TEST

START_TEST(test_bad_arguments)
{
    cls_analyzer_opts o = DEF;
    an_analyzer *a = NULL;
    ck_assert_int_eq(an_create(NULL, &a), CLS_E_ARG);
    ck_assert_int_eq(an_create(&o, NULL), CLS_E_ARG);
    ck_assert_int_eq(an_create(&o, &a), CLS_OK);
    ck_assert_int_eq(an_run(a, NULL, 3, collect_fn, &g), CLS_E_ARG);
    ck_assert_int_eq(an_run(a, "abc", 3, NULL, &g), CLS_E_ARG);
    ck_assert_int_eq(an_run(NULL, "abc", 3, collect_fn, &g), CLS_E_ARG);
    an_free(a);
    an_free(NULL);
}
END_TEST

START_TEST(test_tokenizer_basics)
{
    EXPECT(RAW, "hello world", "hello|world");
    EXPECT(RAW, "  leading and trailing  ", "leading|and|trailing");
    EXPECT(RAW, "abc123 123abc a1b2", "abc123|123abc|a1b2");
    EXPECT(RAW, "e-mail", "e|mail");
    EXPECT(RAW, "(parenthesised) [x] {y} <z> \"q\"", "parenthesised|x|y|z|q");
    EXPECT(RAW, "tab\tnew\nline\rcr", "tab|new|line|cr");
    EXPECT(RAW, "C++ and C# vs. F*", "C|and|C|vs|F");
    EXPECT(RAW, "x/y\\z@w#v$u%t&s=r+q", "x|y|z|w|v|u|t|s|r|q");
}
END_TEST

START_TEST(test_tokenizer_joiners)
{
    /* '.' (MidNumLet): letter.letter and digit.digit, never letter.digit. */
    EXPECT(RAW, "1.8", "1.8");
    EXPECT(RAW, "version 3.14.15", "version|3.14.15");
    EXPECT(RAW, "U.S.A.", "U.S.A");
    EXPECT(RAW, "e.g. i.e.", "e.g|i.e");
    EXPECT(RAW, "v.2 2.v", "v|2|2|v");
    EXPECT(RAW, "a..b 1..2", "a|b|1|2");
    EXPECT(RAW, "end. Next", "end|Next");
    EXPECT(RAW, ".5 5.", "5|5");
    EXPECT(RAW, "a1.2b", "a1.2b"); /* the dot sits between digits */
    /* Apostrophe: letter'letter and digit'digit. */
    EXPECT(RAW, "o'neil don't", "o'neil|don't");
    EXPECT(RAW, "John's", "John's");
    EXPECT(RAW, "'quoted' students' rock'n'roll", "quoted|students|rock'n'roll");
    EXPECT(RAW, "a'1", "a|1");
    /* ',' and ';' (MidNum): digits only. */
    EXPECT(RAW, "1,000,000 and 3;4", "1,000,000|and|3;4");
    EXPECT(RAW, "a,b a;b 1,a", "a|b|a|b|1|a");
    EXPECT(RAW, "1,", "1");
    /* ':' (MidLetter): letters only. */
    EXPECT(RAW, "a:b 8:28 PM", "a:b|8|28|PM");
    /* '_' (ExtendNumLet) joins anything; underscores alone are no token. */
    EXPECT(RAW, "foo_bar _x y_ 1_000", "foo_bar|_x|y_|1_000");
    EXPECT(RAW, "___ __ _", "");
}
END_TEST

START_TEST(test_tokenizer_empty)
{
    EXPECT(RAW, "", "");
    ck_assert_uint_eq(g.count, 0);
    ck_assert_int_eq(run_n(DEF, NULL, 0, &g), CLS_OK);
    ck_assert_uint_eq(g.count, 0);
    EXPECT(DEF, ".,;:!?-()[]{}'\"/\\ \t\n...''' --- ", "");
    ck_assert_uint_eq(g.count, 0);
    EXPECT(DEF, "the of and", ""); /* only stopwords */
    ck_assert_uint_eq(g.count, 0);
}
END_TEST

START_TEST(test_tokenizer_utf8)
{
    /* Non-ASCII letters are word characters. */
    EXPECT(RAW, "caf\xC3\xA9 na\xC3\xAFve", "caf\xC3\xA9|na\xC3\xAFve");
    /* U+2019 joins like an apostrophe. */
    EXPECT(RAW, "o\xE2\x80\x99neil", "o\xE2\x80\x99neil");
    /* NBSP, em dash, curly double quotes, ellipsis separate. */
    EXPECT(RAW, "a\xC2\xA0" "b\xE2\x80\x94" "c \xE2\x80\x9C" "d\xE2\x80\x9D e\xE2\x80\xA6", "a|b|c|d|e");
    /* Han ideographs are one token each; they also break a Latin run. */
    EXPECT(RAW, "\xE4\xB8\xAD\xE6\x96\x87x", "\xE4\xB8\xAD|\xE6\x96\x87|x");
    /* A soft hyphen stays inside the word; a leading BOM is dropped. */
    EXPECT(RAW, "\xEF\xBB\xBF" "co\xC2\xAD" "op", "co\xC2\xAD" "op");
    /* Fullwidth digits with a fullwidth full stop between them. */
    EXPECT(RAW, "\xEF\xBC\x91\xEF\xBC\x8E\xEF\xBC\x92", "\xEF\xBC\x91\xEF\xBC\x8E\xEF\xBC\x92");
}
END_TEST

START_TEST(test_long_token)
{
    /* Runs longer than 255 bytes come out in 255-byte pieces, none lost, none longer. */
    static char text[1100];
    memset(text, 'a', 1000);
    text[1000] = ' ';
    strcpy(text + 1001, "tail");
    ck_assert_int_eq(run_n(RAW, text, strlen(text), &g), CLS_OK);
    ck_assert_uint_eq(g.count, 5);
    ck_assert_uint_eq(g.max_len, 255);
    ck_assert_uint_eq(g.used, 1000 + 4 + 4); /* terms plus four '|' */
    ck_assert_str_eq(g.out + g.used - 5, "|tail");

    /* With every filter on, and a multi-byte letter straddling the 255-byte cut. */
    memset(text, 'b', 254);
    memcpy(text + 254, "\xC3\xA9", 2);
    memset(text + 256, 'c', 100);
    text[356] = '\0';
    ck_assert_int_eq(run_n(DEF, text, strlen(text), &g), CLS_OK);
    ck_assert_uint_eq(g.count, 2);
    ck_assert_uint_le(g.max_len, 255);

    /* Exactly 255 is one token. */
    memset(text, 'z', 255);
    text[255] = '\0';
    ck_assert_int_eq(run_n(RAW, text, 255, &g), CLS_OK);
    ck_assert_uint_eq(g.count, 1);
    ck_assert_uint_eq(g.max_len, 255);
}
END_TEST

START_TEST(test_possessive)
{
    EXPECT(DEF, "John's", "john");
    EXPECT(DEF, "JOHN'S car", "john|car");
    EXPECT(DEF, "John\xE2\x80\x99s", "john");
    EXPECT(opts(1, 0, 0, 0), "Mary's MARY'S it's", "Mary|MARY|it");
    /* Off: the apostrophe form stays. */
    EXPECT(opts(0, 1, 0, 0), "John's", "john's");
    /* Only a trailing 's goes. */
    EXPECT(opts(1, 1, 0, 0), "o'neil's dogs' 's", "o'neil|dogs|s");
}
END_TEST

START_TEST(test_lowercase)
{
    EXPECT(opts(0, 1, 0, 0), "MiXeD CASE 1.8E3", "mixed|case|1.8e3");
    EXPECT(opts(0, 0, 0, 0), "MiXeD", "MiXeD");
    /* Latin-1, Latin Extended-A, Greek, Cyrillic capitals. */
    EXPECT(opts(0, 1, 0, 0),
           "\xC3\x89" "COLE \xC5\x81\xC3\x93" "D\xC5\xB9 \xCE\xA3\xCE\x9F\xCE\xA6 \xD0\x9C\xD0\x98\xD0\xA0",
           "\xC3\xA9" "cole|\xC5\x82\xC3\xB3" "d\xC5\xBA|\xCF\x83\xCE\xBF\xCF\x86|\xD0\xBC\xD0\xB8\xD1\x80");
}
END_TEST

START_TEST(test_stopwords)
{
    static const char *const lucene33 =
        "a an and are as at be but by for if in into is it no not of on or such that the "
        "their then there these they this to was will with";
    EXPECT(opts(0, 1, 1, 0), lucene33, "");
    EXPECT(opts(0, 1, 0, 0), lucene33,
           "a|an|and|are|as|at|be|but|by|for|if|in|into|is|it|no|not|of|on|or|such|that|the|"
           "their|then|there|these|they|this|to|was|will|with");
    /* Not on Lucene's list, although on many others. */
    EXPECT(opts(0, 1, 1, 0), "which from have i we you", "which|from|have|i|we|you");
    EXPECT(DEF, "The cat is on the mat", "cat|mat");
    EXPECT(opts(1, 1, 0, 1), "The cat is on the mat", "the|cat|is|on|the|mat");
    /* Compared after lowercasing, so with lowercasing off capitals survive. */
    EXPECT(opts(0, 0, 1, 0), "The THE the", "The|THE");
    /* A possessive that leaves a stopword: "it's" -> "it" -> dropped. */
    EXPECT(DEF, "it's", "");
}
END_TEST

START_TEST(test_stemming)
{
    EXPECT(DEF, "running computers systems retrieval", "run|comput|system|retriev");
    EXPECT(DEF, "caresses ponies cats relational generalization", "caress|poni|cat|relat|gener");
    EXPECT(DEF, "Information Retrieval Systems", "inform|retriev|system");
    EXPECT(DEF, "generalizations oscillators hopping hoping falling filing agreed feed happy sky",
           "gener|oscil|hop|hope|fall|file|agre|feed|happi|sky");
    /* Snowball's "porter" as libstemmer ships it (Lucene's reference-C port differs here). */
    EXPECT(DEF, "possibly topology analogies technologies trekking",
           "possibli|topologi|analogi|technologi|trekk");
    /* Off: words pass unchanged (still lowercased). */
    EXPECT(opts(1, 1, 1, 0), "running computers", "running|computers");
    /* Words of one or two characters are not stemmed (Porter's reference code, Lucene). */
    EXPECT(opts(1, 1, 0, 1), "is us as ss s", "is|us|as|ss|s");
    /* Numbers and dotted tokens survive the stemmer. */
    EXPECT(DEF, "1.8 1,000 u.s.a", "1.8|1,000|u.s.a");
    /* Non-ASCII goes through the stemmer as UTF-8. */
    EXPECT(DEF, "caf\xC3\xA9s", "caf\xC3\xA9");
}
END_TEST

/* The stem cache: every word stemmed through one analyzer that has met it before (cache hits,
 * and, past the cache's slots, words that evicted each other) gives the terms a fresh analyzer
 * gives it alone (the stemmer itself); words longer than the cache holds, and the same word
 * again and again, included. */
START_TEST(test_stem_cache)
{
    static const char *const roots[] = {"connect", "generaliz", "operat", "relational", "hope", "run", "agree",
                                        "condition", "electric", "formal"};
    static const char *const ends[] = {"ion", "ions", "ed", "ing", "ation", "ative", "ness", "s", "ly", "er"};
    an_analyzer *a = NULL, *fresh = NULL;
    cls_analyzer_opts o = opts(1, 1, 1, 1);
    ck_assert_int_eq(an_create(&o, &a), CLS_OK);
    static collect one, alone;
    char word[96];
    for (int pass = 0; pass < 3; pass++)
        for (unsigned i = 0; i < 40000; i++) {
            unsigned r = i * 2654435761u;
            int n = snprintf(word, sizeof word, "%s%s%s%u", roots[r % 10], ends[(r >> 8) % 10],
                             i % 7 == 0 ? "supercalifragilistic" : "", i % 3 == 0 ? i : i % 97);
            if (i % 5 == 0) n = snprintf(word, sizeof word, "%s%s", roots[r % 10], ends[(r >> 8) % 10]);
            memset(&one, 0, sizeof one);
            ck_assert_int_eq(an_run(a, word, (size_t)n, collect_fn, &one), CLS_OK);
            if (pass > 0 && i % 11) continue; /* the later passes check a sample against the stemmer */
            memset(&alone, 0, sizeof alone);
            ck_assert_int_eq(an_create(&o, &fresh), CLS_OK);
            ck_assert_int_eq(an_run(fresh, word, (size_t)n, collect_fn, &alone), CLS_OK);
            an_free(fresh);
            ck_assert_msg(strcmp(one.out, alone.out) == 0, "'%s': '%s' through the cache, '%s' alone", word, one.out,
                          alone.out);
        }
    an_free(a);
}
END_TEST

START_TEST(test_each_option_off)
{
    const char *text = "The Computer's Systems";
    EXPECT(opts(1, 1, 1, 1), text, "comput|system");
    EXPECT(opts(0, 1, 1, 1), text, "computer'|system");
    EXPECT(opts(1, 0, 1, 1), text, "The|Comput|System"); /* stemmed, though capitalised */
    EXPECT(opts(1, 1, 0, 1), text, "the|comput|system");
    EXPECT(opts(1, 1, 1, 0), text, "computer|systems");
    EXPECT(opts(0, 0, 0, 0), text, "The|Computer's|Systems");
}
END_TEST

START_TEST(test_callback_stops)
{
    collect c;
    an_analyzer *a = NULL;
    cls_analyzer_opts o = DEF;
    ck_assert_int_eq(an_create(&o, &a), CLS_OK);
    memset(&c, 0, sizeof c);
    c.stop_after = 2;
    ck_assert_int_eq(an_run(a, "alpha beta gamma delta", 22, collect_fn, &c), CLS_E_ARG);
    ck_assert_uint_eq(c.count, 2);
    ck_assert_str_eq(c.out, "alpha|beta");
    ck_assert(cls_last_error()[0] != '\0');
    /* The analyzer is still usable afterwards. */
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(an_run(a, "alpha beta", 10, collect_fn, &c), CLS_OK);
    ck_assert_str_eq(c.out, "alpha|beta");
    an_free(a);
}
END_TEST

START_TEST(test_hostile_bytes)
{
    /* Embedded NULs and invalid UTF-8 separate; len, not NUL, ends the text. */
    static const char t1[] = "ab\0cd\xFF" "ef\xC3" "gh\xE2\x80" "ij\xF4\x90\x80\x80kl\xC0\xAFmn\xED\xA0\x80op";
    ck_assert_int_eq(run_n(RAW, t1, sizeof t1 - 1, &g), CLS_OK);
    ck_assert_str_eq(g.out, "ab|cd|ef|gh|ij|kl|mn|op");
    /* A truncated multi-byte character at the very end. */
    ck_assert_int_eq(run_n(DEF, "word\xE4\xB8", 6, &g), CLS_OK);
    ck_assert_str_eq(g.out, "word");

    /* Random bytes drawn mostly from the interesting ones: nothing crashes, no empty or
     * over-long term comes out (ASan/UBSan runs check the rest). */
    static const unsigned char pool[] = {'a', 'Z', '1', '.', '\'', ',', ';', ':', '_', ' ', 0,
                                         0xFF, 0xC3, 0xA9, 0xE2, 0x80, 0x99, 0xEF, 0xBC, 0x87,
                                         0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 's', 'S'};
    static char buf[4096];
    uint64_t seed = 42;
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = (size_t)(tu_rand(&seed) % sizeof buf);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = tu_rand(&seed);
            buf[i] = (char)((r & 0x300) ? pool[(r >> 12) % sizeof pool] : (unsigned char)r);
        }
        cls_analyzer_opts o;
        an_opts_unpack((unsigned)iter & 15u, &o);
        ck_assert_int_eq(run_n(o, buf, n, &g), CLS_OK);
        ck_assert(!g.empty_seen);
        ck_assert_uint_le(g.max_len, 255);
    }
}
END_TEST

static Suite *analyze_suite(void)
{
    Suite *s = suite_create("analyze");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_defaults_and_flags);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_tokenizer_basics);
    tcase_add_test(tc, test_tokenizer_joiners);
    tcase_add_test(tc, test_tokenizer_empty);
    tcase_add_test(tc, test_tokenizer_utf8);
    tcase_add_test(tc, test_long_token);
    tcase_add_test(tc, test_stem_cache);
    tcase_add_test(tc, test_possessive);
    tcase_add_test(tc, test_lowercase);
    tcase_add_test(tc, test_stopwords);
    tcase_add_test(tc, test_stemming);
    tcase_add_test(tc, test_each_option_off);
    tcase_add_test(tc, test_callback_stops);
    tcase_add_test(tc, test_hostile_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(analyze_suite()); }
