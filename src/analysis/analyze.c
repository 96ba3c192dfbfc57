/*
 * Analysis: text to index terms.
 *
 * Why it looks like this: clsearch's figures are meant to be checked against Anserini's
 * regressions (CACM BM25: MAP 0.3123), and Anserini indexes English with Lucene's
 * EnglishAnalyzer chain:
 *
 *   StandardTokenizer -> EnglishPossessiveFilter -> LowerCaseFilter -> StopFilter -> PorterStemFilter
 *
 * A term that is cut, cased or stemmed differently from Lucene changes document lengths and
 * document frequencies, and with them every BM25 score, so each stage below copies Lucene's
 * behaviour as closely as a small C file can:
 *
 * Tokenizer. Lucene's StandardTokenizer implements the UAX#29 word-break rules. For ASCII they
 * are reproduced exactly here:
 *   - letters and digits form a token, and a letter next to a digit joins ("abc123");
 *   - '.' and '\'' (MidNumLet) join letter.letter and digit.digit ("u.s.a", "o'neil", "1.8")
 *     but not letter.digit ("v.2" is "v", "2");
 *   - ':' (MidLetter) joins letter:letter only ("a:b" is one token, "8:28" two);
 *   - ',' and ';' (MidNum) join digit,digit only ("1,000");
 *   - '_' (ExtendNumLet) joins anything it touches ("foo_bar"), but underscores alone are
 *     no token;
 *   - a joiner needs a partner on both sides, so "e.g." gives "e.g", and two joiners in a row
 *     ("a..b") separate;
 *   - every other ASCII byte, NUL included, separates.
 * Non-ASCII text is decoded as UTF-8 and approximated with a small table instead of the full
 * Unicode property database: Unicode spaces and punctuation (NBSP, dashes, curly double
 * quotes, U+2000..U+206F, CJK and fullwidth punctuation, symbols) separate, since HTML and web
 * text are full of them; the right single quote U+2019 and a few others join like their ASCII
 * counterparts; combining marks and format characters (soft hyphen, ZWJ, BOM) stay inside the
 * token they follow; Han ideographs, Hiragana and emoji become one-character tokens as in
 * Lucene; every other non-ASCII character counts as a letter. Bytes that are not valid UTF-8
 * separate (Lucene would have seen U+FFFD there, which also separates).
 *   Token length: Lucene caps tokens at 255 characters and chops a longer run into
 * 255-character pieces (its scanner buffer is that long) rather than dropping it. We split
 * too, at 255 bytes on a UTF-8 character boundary; for ASCII that is the same cut.
 *
 * Possessive: a trailing 's or 'S (apostrophe U+0027, U+2019 or U+FF07) is removed, as
 * EnglishPossessiveFilter does.
 *
 * Lowercase: Lucene lowercases every code point. We lowercase ASCII plus the Latin-1,
 * Latin Extended-A, basic Greek and Cyrillic capitals, which covers the non-ASCII letters
 * English collections actually contain; other scripts pass unchanged. Every mapping keeps or
 * shortens the UTF-8 length, so it works in place.
 *
 * Stopwords: Lucene's 33-word EnglishAnalyzer list, compared byte for byte after lowercasing
 * (so with lowercasing off, "The" is kept, as Lucene's case-sensitive StopFilter keeps it).
 *
 * Stemming: Snowball's libstemmer, algorithm "porter" (Porter's original algorithm). Words of
 * one or two characters are left alone, as Porter's reference implementation and Lucene's
 * PorterStemmer do (Snowball alone would stem "us" to "u"). Lucene's stemmer is Porter's
 * reference C code, which differs from Snowball's rendering in a few rare suffixes (-bli,
 * -logi, some undoubling); on CACM that is 14,377 distinct terms here against Anserini's
 * 14,363, with the same 320,968 tokens.
 *
 * Allocation: the analyzer owns one term buffer, and the stemmer works in it in place (no
 * Porter rule lengthens a word), so nothing is allocated per token.
 *
 * Stem cache: text repeats its words (Zipf), and Snowball's stemmer is most of the analysis's
 * instructions, so each analyzer keeps the stems of the words it met last in a direct-mapped
 * table (STEM_CACHE_SLOTS slots of words up to STEM_CACHE_WORD bytes, allocated with the
 * analyzer's first stem): a word found there, byte for byte, takes its stem without the stemmer.
 * Stemming is a function of the word alone, so the terms are the same with or without it.
 */
#include "analysis/an.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libstemmer.h>

#include "util/err.h"

/* Lucene's StandardTokenizer default max token length (StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH). */
#define AN_MAX_TOKEN 255

#ifndef STEM_CACHE_SLOTS
#define STEM_CACHE_SLOTS 16384u /* a power of two */
#endif
#define STEM_CACHE_WORD 22 /* longer words go to the stemmer every time */

/* A cached stem: the word (wlen bytes; 0: an empty slot) and its stem (slen bytes). */
typedef struct stem_slot {
    uint8_t wlen, slen;
    char word[STEM_CACHE_WORD], stem[STEM_CACHE_WORD];
} stem_slot;

struct an_analyzer {
    cls_analyzer_opts o;
    struct sb_stemmer *stemmer; /* Snowball "porter"; not thread-safe, hence one analyzer per thread */
    stem_slot *cache;           /* STEM_CACHE_SLOTS, at the first stem (NULL: none yet, or no memory) */
    int cache_tried;
    char term[AN_MAX_TOKEN + 1]; /* the term being transformed; tokens never exceed 255 bytes */
};

/* Word-break classes, named after the UAX#29 properties they stand for. */
enum {
    C_SEP = 0,  /* anything that separates tokens */
    C_LET,      /* ALetter (and, approximately, every unlisted non-ASCII character) */
    C_DIG,      /* Numeric */
    C_MIDLET,   /* MidLetter: joins letter:letter */
    C_MIDNUM,   /* MidNum: joins digit,digit */
    C_MIDBOTH,  /* MidNumLet: joins letter.letter and digit.digit */
    C_EXTNUM,   /* ExtendNumLet: joins anything */
    C_FMT,      /* Extend/Format: invisible, stays with the character before it */
    C_SINGLE    /* Han, Hiragana, emoji: each character is a token of its own */
};

/* Classes of the ASCII bytes, so the common case costs one lookup per byte. */
#define S C_SEP
#define L C_LET
#define D C_DIG
static const unsigned char ascii_tab[128] = {
    S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, /* controls, NUL included */
    S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
    /* space ! " # $ % & ' ( ) * + , - . / */
    S, S, S, S, S, S, S, C_MIDBOTH, S, S, S, S, C_MIDNUM, S, C_MIDBOTH, S,
    /* 0-9 : ; < = > ? */
    D, D, D, D, D, D, D, D, D, D, C_MIDLET, C_MIDNUM, S, S, S, S,
    S, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* @ A-O */
    L, L, L, L, L, L, L, L, L, L, L, S, S, S, S, C_EXTNUM, /* P-Z [ \ ] ^ _ */
    S, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* ` a-o */
    L, L, L, L, L, L, L, L, L, L, L, S, S, S, S, S, /* p-z { | } ~ DEL */
};
#undef S
#undef L
#undef D

/* Non-ASCII code points whose class is not C_LET, sorted by lo. A small stand-in for the
 * Unicode word-break property table; see the header comment for what it approximates. */
static const struct cp_range {
    uint32_t lo, hi;
    unsigned char cls;
} cp_table[] = {
    {0x0080, 0x00A9, C_SEP},     /* C1 controls (NEL), NBSP, inverted marks, currency, (c) */
    {0x00AB, 0x00AC, C_SEP},     /* << and not sign */
    {0x00AD, 0x00AD, C_FMT},     /* soft hyphen */
    {0x00AE, 0x00B4, C_SEP},     /* (R), macron, degree, +-, superscripts, acute */
    {0x00B6, 0x00B6, C_SEP},     /* pilcrow */
    {0x00B7, 0x00B7, C_MIDLET},  /* middle dot */
    {0x00B8, 0x00B9, C_SEP},
    {0x00BB, 0x00BF, C_SEP},     /* >>, fractions, inverted question mark */
    {0x00D7, 0x00D7, C_SEP},     /* multiplication sign */
    {0x00F7, 0x00F7, C_SEP},     /* division sign */
    {0x0300, 0x036F, C_FMT},     /* combining diacritical marks */
    {0x037E, 0x037E, C_MIDNUM},  /* Greek question mark */
    {0x0387, 0x0387, C_MIDLET},  /* Greek ano teleia */
    {0x0589, 0x0589, C_MIDNUM},  /* Armenian full stop */
    {0x060C, 0x060D, C_MIDNUM},  /* Arabic comma, date separator */
    {0x066C, 0x066C, C_MIDNUM},  /* Arabic thousands separator */
    {0x07F8, 0x07F8, C_MIDNUM},  /* NKo comma */
    {0x2000, 0x200B, C_SEP},     /* spaces, zero-width space */
    {0x200C, 0x200F, C_FMT},     /* ZWNJ, ZWJ, LRM, RLM */
    {0x2010, 0x2017, C_SEP},     /* hyphens and dashes */
    {0x2018, 0x2019, C_MIDBOTH}, /* single quotes; U+2019 is the typographic apostrophe */
    {0x201A, 0x2023, C_SEP},     /* double quotes, daggers, bullets */
    {0x2024, 0x2024, C_MIDBOTH}, /* one dot leader */
    {0x2025, 0x2026, C_SEP},     /* two dot leader, ellipsis */
    {0x2027, 0x2027, C_MIDLET},  /* hyphenation point */
    {0x2028, 0x2029, C_SEP},     /* line and paragraph separators */
    {0x202A, 0x202E, C_FMT},     /* bidi embedding controls */
    {0x202F, 0x203E, C_SEP},
    {0x203F, 0x2040, C_EXTNUM},  /* undertie, character tie */
    {0x2041, 0x2043, C_SEP},
    {0x2044, 0x2044, C_MIDNUM},  /* fraction slash */
    {0x2045, 0x2053, C_SEP},
    {0x2054, 0x2054, C_EXTNUM},  /* inverted undertie */
    {0x2055, 0x205F, C_SEP},
    {0x2060, 0x206F, C_FMT},     /* word joiner, invisible operators, deprecated formats */
    {0x20A0, 0x20CF, C_SEP},     /* currency symbols */
    {0x2190, 0x245F, C_SEP},     /* arrows, mathematical operators, technical, control pictures */
    {0x2500, 0x2BFF, C_SEP},     /* box drawing, shapes, miscellaneous symbols, dingbats */
    {0x2E00, 0x2E7F, C_SEP},     /* supplemental punctuation */
    {0x2E80, 0x2FDF, C_SINGLE},  /* CJK and Kangxi radicals (Han) */
    {0x3000, 0x3004, C_SEP},     /* ideographic space, comma, full stop */
    {0x3005, 0x3005, C_SINGLE},  /* ideographic iteration mark (Han) */
    {0x3007, 0x3007, C_SINGLE},  /* ideographic number zero (Han) */
    {0x3008, 0x3020, C_SEP},     /* CJK brackets and marks */
    {0x3021, 0x3029, C_SINGLE},  /* Hangzhou numerals (Han) */
    {0x3041, 0x3096, C_SINGLE},  /* Hiragana */
    {0x3099, 0x309A, C_FMT},     /* combining kana voiced marks */
    {0x309D, 0x309F, C_SINGLE},  /* Hiragana iteration marks, digraph yori */
    {0x3400, 0x4DBF, C_SINGLE},  /* CJK extension A */
    {0x4E00, 0x9FFF, C_SINGLE},  /* CJK unified ideographs */
    {0xF900, 0xFAFF, C_SINGLE},  /* CJK compatibility ideographs */
    {0xFE00, 0xFE0F, C_FMT},     /* variation selectors */
    {0xFE10, 0xFE10, C_MIDNUM},  /* presentation forms for vertical text */
    {0xFE11, 0xFE12, C_SEP},
    {0xFE13, 0xFE13, C_MIDLET},
    {0xFE14, 0xFE14, C_MIDNUM},
    {0xFE15, 0xFE19, C_SEP},
    {0xFE20, 0xFE2F, C_FMT},     /* combining half marks */
    {0xFE30, 0xFE32, C_SEP},     /* CJK compatibility forms */
    {0xFE33, 0xFE34, C_EXTNUM},
    {0xFE35, 0xFE4C, C_SEP},
    {0xFE4D, 0xFE4F, C_EXTNUM},
    {0xFE50, 0xFE50, C_MIDNUM},  /* small form variants */
    {0xFE51, 0xFE51, C_SEP},
    {0xFE52, 0xFE52, C_MIDBOTH},
    {0xFE53, 0xFE53, C_SEP},
    {0xFE54, 0xFE54, C_MIDNUM},
    {0xFE55, 0xFE55, C_MIDLET},
    {0xFE56, 0xFE6F, C_SEP},
    {0xFEFF, 0xFEFF, C_FMT},     /* byte order mark / zero-width no-break space */
    {0xFF01, 0xFF06, C_SEP},     /* fullwidth ASCII punctuation, mirroring the ASCII classes */
    {0xFF07, 0xFF07, C_MIDBOTH},
    {0xFF08, 0xFF0B, C_SEP},
    {0xFF0C, 0xFF0C, C_MIDNUM},
    {0xFF0D, 0xFF0D, C_SEP},
    {0xFF0E, 0xFF0E, C_MIDBOTH},
    {0xFF0F, 0xFF0F, C_SEP},
    {0xFF10, 0xFF19, C_DIG},     /* fullwidth digits */
    {0xFF1A, 0xFF1A, C_MIDLET},
    {0xFF1B, 0xFF1B, C_MIDNUM},
    {0xFF1C, 0xFF20, C_SEP},
    {0xFF3B, 0xFF3E, C_SEP},
    {0xFF3F, 0xFF3F, C_EXTNUM},
    {0xFF40, 0xFF40, C_SEP},
    {0xFF5B, 0xFF65, C_SEP},     /* fullwidth brackets, halfwidth CJK punctuation */
    {0xFFF0, 0xFFFF, C_SEP},     /* specials, replacement character */
    {0x1F000, 0x1FAFF, C_SINGLE}, /* emoji and pictographs (Lucene emits them as tokens) */
    {0x20000, 0x3134F, C_SINGLE}, /* CJK extensions B..G */
    {0xE0000, 0xE0FFF, C_FMT},   /* tags, variation selectors supplement */
};

static unsigned char cp_class(uint32_t cp)
{
    size_t lo = 0, hi = sizeof cp_table / sizeof cp_table[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < cp_table[mid].lo)
            hi = mid;
        else if (cp > cp_table[mid].hi)
            lo = mid + 1;
        else
            return cp_table[mid].cls;
    }
    return C_LET;
}

/* Decodes one UTF-8 character at s[0..n), n >= 1, and stores its byte length in *len.
 * Malformed input (stray continuation, truncation, overlong form, surrogate, > U+10FFFF) is
 * one separating byte, so no input can stall or overrun the scanner. */
static uint32_t utf8_decode(const unsigned char *s, size_t n, size_t *len, int *ok)
{
    unsigned c = s[0];
    uint32_t cp;
    size_t need;
    *ok = 0;
    *len = 1;
    if (c < 0xC2 || c > 0xF4) return 0xFFFD; /* ASCII never gets here; 0x80..0xC1 are invalid */
    if (c < 0xE0) {
        need = 2;
        cp = c & 0x1F;
    } else if (c < 0xF0) {
        need = 3;
        cp = c & 0x0F;
    } else {
        need = 4;
        cp = c & 0x07;
    }
    if (n < need) return 0xFFFD;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0xFFFD;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0xFFFD;
    *ok = 1;
    *len = need;
    return cp;
}

/* Class and byte length of the character at s[0..n), n >= 1. */
static unsigned char char_class(const unsigned char *s, size_t n, size_t *len)
{
    if (s[0] < 0x80) {
        *len = 1;
        return ascii_tab[s[0]];
    }
    int ok;
    uint32_t cp = utf8_decode(s, n, len, &ok);
    return ok ? cp_class(cp) : C_SEP;
}

/* ---- Term filters ----------------------------------------------------------------------- */

/* EnglishPossessiveFilter: drops a trailing 's / 'S after U+0027, U+2019 or U+FF07. */
static size_t strip_possessive(const char *t, size_t n)
{
    if (n < 2 || (t[n - 1] != 's' && t[n - 1] != 'S')) return n;
    if (t[n - 2] == '\'') return n - 2;
    if (n >= 4 && memcmp(t + n - 4, "\xE2\x80\x99", 3) == 0) return n - 4; /* U+2019 */
    if (n >= 4 && memcmp(t + n - 4, "\xEF\xBC\x87", 3) == 0) return n - 4; /* U+FF07 */
    return n;
}

/* Lowercase of a two-byte-range code point (U+0080..U+07FF), or cp itself. Mirrors Java's
 * Character.toLowerCase for the blocks English text uses. */
static uint32_t lower_cp(uint32_t cp)
{
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20; /* Latin-1 */
    if (cp >= 0x100 && cp <= 0x17F) {                             /* Latin Extended-A */
        if (cp == 0x130) return 'i';                              /* dotted capital I */
        if (cp == 0x178) return 0xFF;                             /* Y with diaeresis */
        if ((cp <= 0x12F) || (cp >= 0x132 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177))
            return (cp & 1) ? cp : cp + 1;
        if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E))
            return (cp & 1) ? cp + 1 : cp;
        return cp;
    }
    if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 0x20; /* Greek */
    if (cp == 0x386) return 0x3AC;
    if (cp >= 0x388 && cp <= 0x38A) return cp + 0x25;
    if (cp == 0x38C) return 0x3CC;
    if (cp == 0x38E || cp == 0x38F) return cp + 0x3F;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50; /* Cyrillic */
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
    return cp;
}

/* Lowercases t[0..n) in place; returns the new length (U+0130 shrinks to 'i'). */
static size_t lowercase(char *t, size_t n)
{
    unsigned char *u = (unsigned char *)t;
    size_t r = 0, w = 0;
    while (r < n) {
        unsigned c = u[r];
        if (c < 0x80) {
            u[w++] = (unsigned char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            r++;
            continue;
        }
        /* Only two-byte characters have mappings here; anything else is copied as is. */
        if (c >= 0xC2 && c < 0xE0 && r + 1 < n && (u[r + 1] & 0xC0) == 0x80) {
            uint32_t cp = lower_cp(((uint32_t)(c & 0x1F) << 6) | (u[r + 1] & 0x3F));
            if (cp < 0x80) {
                u[w++] = (unsigned char)cp;
            } else {
                u[w++] = (unsigned char)(0xC0 | (cp >> 6));
                u[w++] = (unsigned char)(0x80 | (cp & 0x3F));
            }
            r += 2;
            continue;
        }
        u[w++] = u[r++];
    }
    return w;
}

/* Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, grouped by length for a cheap test. */
static const char *const stop1[] = {"a", NULL};
static const char *const stop2[] = {"an", "as", "at", "be", "by", "if", "in", "is",
                                    "it", "no", "of", "on", "or", "to", NULL};
static const char *const stop3[] = {"and", "are", "but", "for", "not", "the", "was", NULL};
static const char *const stop4[] = {"into", "such", "that", "then", "they", "this",
                                    "will", "with", NULL};
static const char *const stop5[] = {"their", "there", "these", NULL};
static const char *const *const stop_by_len[] = {NULL, stop1, stop2, stop3, stop4, stop5};

static int is_stopword(const char *t, size_t n)
{
    if (n == 0 || n >= sizeof stop_by_len / sizeof stop_by_len[0]) return 0;
    for (const char *const *w = stop_by_len[n]; *w; w++)
        if (memcmp(*w, t, n) == 0) return 1;
    return 0;
}

/* Number of UTF-8 characters (bytes that are not continuation bytes). */
static size_t utf8_chars(const char *t, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)t[i] & 0xC0) != 0x80;
    return k;
}

/* ---- Public ------------------------------------------------------------------------------- */

void cls_analyzer_defaults(cls_analyzer_opts *o)
{
    if (!o) return;
    o->possessive = 1;
    o->lowercase = 1;
    o->stopwords = 1;
    o->stem = 1;
}

unsigned an_opts_pack(const cls_analyzer_opts *o)
{
    return (o->possessive ? 1u : 0u) | (o->lowercase ? 2u : 0u) | (o->stopwords ? 4u : 0u) |
           (o->stem ? 8u : 0u);
}

void an_opts_unpack(unsigned flags, cls_analyzer_opts *o)
{
    o->possessive = (flags & 1u) != 0;
    o->lowercase = (flags & 2u) != 0;
    o->stopwords = (flags & 4u) != 0;
    o->stem = (flags & 8u) != 0;
}

cls_status an_create(const cls_analyzer_opts *o, an_analyzer **out)
{
    if (!o || !out) return err_set(CLS_E_ARG, "an_create: NULL argument");
    *out = NULL;
    an_analyzer *a = calloc(1, sizeof *a);
    if (!a) return err_set(CLS_E_NOMEM, "analyzer: out of memory");
    a->o.possessive = o->possessive != 0;
    a->o.lowercase = o->lowercase != 0;
    a->o.stopwords = o->stopwords != 0;
    a->o.stem = o->stem != 0;
    if (a->o.stem && !(a->stemmer = sb_stemmer_new("porter", "UTF_8"))) {
        free(a);
        return err_set(CLS_E_NOMEM, "analyzer: cannot create the Snowball 'porter' stemmer");
    }
    *out = a;
    return CLS_OK;
}

void an_free(an_analyzer *a)
{
    if (!a) return;
    if (a->stemmer) sb_stemmer_delete(a->stemmer);
    free(a->cache);
    free(a);
}

/* Stems t[0..n) in place through libstemmer; returns the new length. */
static size_t stem_word(an_analyzer *a, char *t, size_t n)
{
    const sb_symbol *r = sb_stemmer_stem(a->stemmer, (const sb_symbol *)t, (int)n);
    if (!r) return n; /* out of memory inside the stemmer: keep the word unstemmed */
    int len = sb_stemmer_length(a->stemmer);
    if (len < 0 || (size_t)len > AN_MAX_TOKEN) return n;
    memcpy(t, r, (size_t)len);
    return (size_t)len;
}

/* stem_word through the analyzer's stem cache (the header says why). */
static size_t stem(an_analyzer *a, char *t, size_t n)
{
    if (n > STEM_CACHE_WORD) return stem_word(a, t, n);
    if (!a->cache && !a->cache_tried) {
        a->cache_tried = 1;
        a->cache = calloc(STEM_CACHE_SLOTS, sizeof *a->cache);
    }
    if (!a->cache) return stem_word(a, t, n);
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)t[i]) * 16777619u;
    stem_slot *sl = &a->cache[(h ^ h >> 15) & (STEM_CACHE_SLOTS - 1)];
    if (sl->wlen == n && memcmp(sl->word, t, n) == 0) {
        memcpy(t, sl->stem, sl->slen);
        return sl->slen;
    }
    char word[STEM_CACHE_WORD];
    memcpy(word, t, n);
    const sb_symbol *r = sb_stemmer_stem(a->stemmer, (const sb_symbol *)t, (int)n);
    int len = r ? sb_stemmer_length(a->stemmer) : -1;
    if (len < 0 || (size_t)len > AN_MAX_TOKEN) return n; /* as stem_word */
    memcpy(t, r, (size_t)len);
    if ((size_t)len > STEM_CACHE_WORD) return (size_t)len;
    sl->wlen = (uint8_t)n;
    sl->slen = (uint8_t)len;
    memcpy(sl->word, word, n);
    memcpy(sl->stem, r, (size_t)len);
    return (size_t)len;
}

/* Runs one token (at most AN_MAX_TOKEN bytes) through the filters and emits what is left. */
static cls_status an_term(an_analyzer *a, const unsigned char *s, size_t n, an_emit_fn emit,
                          void *user)
{
    char *t = a->term;
    memcpy(t, s, n);
    if (a->o.possessive) n = strip_possessive(t, n);
    if (a->o.lowercase) n = lowercase(t, n);
    if (n == 0) return CLS_OK;
    if (a->o.stopwords && is_stopword(t, n)) return CLS_OK;
    /* Porter's reference stemmer, like Lucene's, leaves words under three characters alone. */
    if (a->o.stem && utf8_chars(t, n) > 2) n = stem(a, t, n);
    if (n == 0) return CLS_OK;
    if (emit(user, t, n)) return err_set(CLS_E_ARG, "analysis stopped by its callback");
    return CLS_OK;
}

static int is_mid(unsigned char c) { return c == C_MIDLET || c == C_MIDNUM || c == C_MIDBOTH; }

/* Whether a joiner of class mid may sit between two characters of base class side. */
static int mid_joins(unsigned char mid, unsigned char side)
{
    if (side == C_LET) return mid == C_MIDLET || mid == C_MIDBOTH;
    if (side == C_DIG) return mid == C_MIDNUM || mid == C_MIDBOTH;
    return 0;
}

/* Emits the token s[0..n) in pieces of at most AN_MAX_TOKEN bytes. A piece is cut on a
 * character boundary, and a joiner left dangling at a cut is dropped, as Lucene's scanner
 * would not end or start a token on one. */
static cls_status an_token(an_analyzer *a, const unsigned char *s, size_t n, an_emit_fn emit,
                           void *user)
{
    while (n > 0) {
        size_t k = n;
        if (k > AN_MAX_TOKEN) {
            k = AN_MAX_TOKEN;
            while (k > 0 && (s[k] & 0xC0) == 0x80) k--; /* s[k] exists: k < n */
            if (k == 0) k = AN_MAX_TOKEN; /* not UTF-8 after all: cut anyway, never stall */
        }
        size_t m = k;
        while (m > 0 && s[m - 1] < 0x80 && is_mid(ascii_tab[s[m - 1]])) m--;
        if (m > 0) {
            cls_status st = an_term(a, s, m, emit, user);
            if (st != CLS_OK) return st;
        }
        s += k;
        n -= k;
        while (n > 0 && s[0] < 0x80 && is_mid(ascii_tab[s[0]])) {
            s++;
            n--;
        }
    }
    return CLS_OK;
}

cls_status an_run(an_analyzer *a, const char *text, size_t len, an_emit_fn emit, void *user)
{
    if (!a || !emit || (!text && len > 0)) return err_set(CLS_E_ARG, "an_run: NULL argument");
    const unsigned char *s = (const unsigned char *)text;
    size_t pos = 0;
    while (pos < len) {
        size_t n;
        unsigned char c = char_class(s + pos, len - pos, &n);
        if (c == C_SINGLE) {
            /* A one-character token, with any marks that follow it. */
            size_t start = pos, m;
            pos += n;
            while (pos < len && char_class(s + pos, len - pos, &m) == C_FMT) pos += m;
            cls_status st = an_token(a, s + start, pos - start, emit, user);
            if (st != CLS_OK) return st;
            continue;
        }
        if (c != C_LET && c != C_DIG && c != C_EXTNUM) {
            pos += n; /* separators, and joiners or marks with nothing before them */
            continue;
        }
        /* A word: scan while the UAX#29 rules allow no break. `last` is the class of the last
         * letter, digit or underscore (marks are transparent), `end` the end of the token. */
        size_t start = pos;
        unsigned char last = c;
        int has_alnum = c != C_EXTNUM;
        pos += n;
        size_t end = pos;
        while (pos < len) {
            c = char_class(s + pos, len - pos, &n);
            if (c == C_LET || c == C_DIG || c == C_EXTNUM) {
                last = c;
                has_alnum |= c != C_EXTNUM;
                pos += n;
                end = pos;
            } else if (c == C_FMT) {
                pos += n;
                end = pos;
            } else if (is_mid(c) && mid_joins(c, last)) {
                /* Joins only if the next non-mark character has the same class as `last`. */
                size_t p = pos + n, m;
                unsigned char d = C_SEP;
                while (p < len && (d = char_class(s + p, len - p, &m)) == C_FMT) p += m;
                if (p >= len || d != last) break;
                pos = p; /* the letter or digit itself is taken on the next turn */
            } else {
                break;
            }
        }
        pos = end;
        if (!has_alnum) continue; /* underscores alone are no token */
        cls_status st = an_token(a, s + start, end - start, emit, user);
        if (st != CLS_OK) return st;
    }
    return CLS_OK;
}
