/* peer_xapian: Xapian (Debian's libxapian) indexing and querying the same corpus and topics as
 * clsearch, with BM25 at the same k1 and b, for same-run ratios (bench/peers.sh runs it).
 *
 *   peer_xapian index [-c FORMAT] [--analyzer xapian|clsearch] DBDIR INPUT...
 *   peer_xapian search [-f TOPICS_FORMAT] [--weight xapian|lucene] [--min-normlen X] [-r REPEATS]
 *                      [-o RUN] [--tag TAG] DBDIR TOPICS K K1 B
 *
 * Input. Documents and topics are read through clsearch's own public readers (cls_corpus_read,
 * cls_topics_read), so both engines see byte-identical document text and query strings in the
 * same order, in every format clsearch reads: -c jsonl, beir, html (CACM's cacm.tar.gz), trec,
 * smart (Cranfield, MED, CISI: the .T, .A, .B and .W fields, as clsearch indexes them) or files;
 * without -c the format is guessed from the name and the first line. Reading costs the same in
 * both engines and is inside both index timings. Topics: tsv (qid<TAB>text), anserini, trec,
 * smart, mq; detected as clsearch detects them unless -f says.
 *
 * Analysis. clsearch follows Lucene's EnglishAnalyzer (src/analysis/analyze.c): UAX#29-style tokens,
 * possessive 's removed, lowercase, Lucene's 33 stopwords removed, Snowball "porter" on words of
 * three or more characters. --analyzer xapian (default) is Xapian's own TermGenerator brought as
 * close to that as its API allows: STEM_ALL (stemmed terms only, no "Z" prefix), STOP_ALL with the
 * same 33 words, Snowball "porter" through Xapian::Stem, wrapped so that words of one or two
 * characters stay unstemmed and a trailing 's is dropped first (in the stopper too), no
 * positions (clsearch stores none), words up to 245 bytes. What stays different is Xapian's
 * tokenizer: it joins "AT&T" and "C++", turns capital initials "U.S.A." into "usa", splits
 * "e.g." and "a:b" at the dots and colons that Lucene keeps inside a token, skips a word longer
 * than 245 bytes where Lucene cuts it into 255-byte pieces, lowercases all of Unicode, and keeps
 * a run of Han characters as one word. --analyzer clsearch runs clsearch's analyzer itself
 * (an_run) and adds its terms with Document::add_term: identical terms and document lengths, to
 * tell analysis differences from scoring differences. The choice is stored in the database and
 * search analyses the topics the same way.
 *
 * Scoring. --weight xapian (default) is Xapian::BM25Weight(k1, k2 = 0, k3 = 0, b, min_normlen =
 * 0): k2 = 0 drops Xapian's extra document-length term, min_normlen = 0 drops its clamp of short
 * documents' normalised length (Xapian's default clamps at 0.5; --min-normlen sets it), and a term
 * that occurs n times in a query is one subquery scaled by n (OP_SCALE_WEIGHT) with k3 = 0, which
 * is clsearch's query weight (idf times the count; k3 = 1 would give 2n/(1+n) instead). The
 * remaining difference is the idf. With t = (N - df + 0.5) / (df + 0.5):
 *     clsearch (Lucene's BM25):  idf = log(1 + t)
 *     Xapian BM25Weight:         idf = log(t) if t >= 2, else log(1 + t/2)
 * Xapian's is the classic Robertson-Sparck Jones weight, log(t), kept positive for terms in more
 * than about a third of the documents (where log(t) would be small or negative) by switching to
 * log(1 + t/2). Against Lucene's it is log(1 + 1/t) lower for rarer terms, which weighs rare
 * terms up relative to common ones, and about half as high for the commonest. Both multiply by
 * tf / (tf + k1 * (1 - b + b * dl / avgdl)); Xapian also by (k1 + 1), which changes no ranking.
 * --weight lucene is a Xapian::Weight subclass computing clsearch's formula exactly (in double,
 * where clsearch rounds to float), to measure how much of the top-10 difference the idf makes.
 *
 * Timing (search). The topics are analysed and turned into Xapian::Query objects first,
 * untimed (clsearch's benchmarks analyse outside the timing too). One untimed warm-up pass runs
 * every query; then REPEATS (default 3) timed passes, each running the queries one after
 * another in one thread (Enquire::set_query + get_mset(0, K)); reported: the median, min and max
 * queries per second over the passes (topics / a pass's time), and the 50th, 95th and 99th
 * percentiles of the single queries' times over every timed pass (the latency of a query run
 * alone, to set beside `clsearch bench e2e -b 1`). The run file (qid Q0 docno rank score TAG)
 * is written from the warm-up pass's results, after the timing, to RUN through a temporary name
 * (stdout without -o). Timing lines go to stderr.
 *
 * Timing (index). From the first byte read to the committed, closed database: documents, bytes of
 * document text (what the reader hands over after markup removal: the same count clsearch's
 * `index -v` calls "MB of text"), seconds and MB/s of text (MB = 10^6 bytes). One thread, the
 * Xapian defaults otherwise (glass backend, its own flush threshold). The database is built under
 * a temporary name next to DBDIR and replaces DBDIR only when complete.
 *
 * Exit status: 0 success, 1 failure, 2 bad usage. */
#include <xapian.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <getopt.h>
#include <unistd.h>

#include "clsearch.h"
extern "C" {
#include "analysis/an.h" /* clsearch's analyzer, for --analyzer clsearch */
}

namespace fs = std::filesystem;

static const char *const prog = "peer_xapian";

static double now()
{
    using clk = std::chrono::steady_clock;
    return std::chrono::duration<double>(clk::now().time_since_epoch()).count();
}

static int fail(const std::string &msg)
{
    std::fprintf(stderr, "%s: %s\n", prog, msg.c_str());
    return 1;
}

static int cls_fail(cls_status s, const std::string &what)
{
    const char *detail = cls_last_error();
    return fail(what + ": " + cls_status_str(s) + (*detail ? std::string(": ") + detail : ""));
}

/* ---- Analysis --------------------------------------------------------------------------------- */

/* Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the list src/analysis/analyze.c uses. */
static const char *const lucene_stopwords[] = {
    "a",    "an",   "and",   "are",  "as",    "at",   "be",   "but",  "by",   "for", "if",
    "in",   "into", "is",    "it",   "no",    "not",  "of",   "on",   "or",   "such", "that",
    "the",  "their", "then", "there", "these", "they", "this", "to",  "was",  "will", "with"};

/* Lucene's EnglishPossessiveFilter after lowercasing: a trailing 's dropped. Xapian's tokenizer
 * has already turned U+2019 into '\'', and U+FF07 does not join words there. */
static std::string strip_possessive(const std::string &w)
{
    size_t n = w.size();
    if (n >= 2 && w[n - 1] == 's' && w[n - 2] == '\'') return w.substr(0, n - 2);
    return w;
}

static size_t utf8_chars(const std::string &w)
{
    size_t k = 0;
    for (unsigned char c : w) k += (c & 0xC0) != 0x80;
    return k;
}

/* The stopper sees the lowercased word with its possessive still on ("it's"); clsearch removes
 * the possessive first, so "it's" is the stopword "it" there, and here too. */
class LuceneStopper : public Xapian::Stopper {
    Xapian::SimpleStopper list;

  public:
    LuceneStopper()
    {
        for (const char *w : lucene_stopwords) list.add(w);
    }
    bool operator()(const std::string &term) const override
    {
        std::string t = strip_possessive(term);
        return t.empty() || list(t);
    }
    std::string get_description() const override { return "LuceneStopper(33 English words)"; }
};

/* Snowball "porter", as clsearch: possessive off first, words under three characters kept. */
class PorterAsClsearch : public Xapian::StemImplementation {
    Xapian::Stem porter{"porter"};

  public:
    std::string operator()(const std::string &word) override
    {
        std::string w = strip_possessive(word);
        if (utf8_chars(w) <= 2) return w;
        return porter(w);
    }
    std::string get_description() const override { return "porter, words of 3+ characters"; }
};

/* Term counts of one text, in the analyzer the database was built with. */
class Analyzer {
  public:
    virtual ~Analyzer() = default;
    /* Adds text's terms to doc (wdf = count, no positions). */
    virtual void index(Xapian::Document &doc, const char *text, size_t len) = 0;
};

class XapianAnalyzer : public Analyzer {
    Xapian::TermGenerator tg;

  public:
    XapianAnalyzer()
    {
        tg.set_stemmer(Xapian::Stem(new PorterAsClsearch));
        tg.set_stemming_strategy(Xapian::TermGenerator::STEM_ALL);
        tg.set_stopper(new LuceneStopper); /* reference-counted: Xapian frees it */
        tg.set_stopper_strategy(Xapian::TermGenerator::STOP_ALL);
        tg.set_max_word_length(245); /* the glass backend's longest term */
    }
    void index(Xapian::Document &doc, const char *text, size_t len) override
    {
        tg.set_document(doc);
        tg.index_text_without_positions(Xapian::Utf8Iterator(text, len));
    }
};

class ClsearchAnalyzer : public Analyzer {
    an_analyzer *an = nullptr;
    Xapian::Document *cur = nullptr;

    static int emit(void *user, const char *term, size_t len)
    {
        ClsearchAnalyzer *self = static_cast<ClsearchAnalyzer *>(user);
        if (len > 245) return 0; /* Xapian's limit; clsearch's tokens are at most 255 bytes */
        self->cur->add_term(std::string(term, len));
        return 0;
    }

  public:
    ClsearchAnalyzer()
    {
        cls_analyzer_opts o;
        cls_analyzer_defaults(&o);
        cls_status s = an_create(&o, &an);
        if (s != CLS_OK) throw std::runtime_error(std::string("clsearch analyzer: ") + cls_last_error());
    }
    ~ClsearchAnalyzer() override { an_free(an); }
    void index(Xapian::Document &doc, const char *text, size_t len) override
    {
        cur = &doc;
        cls_status s = an_run(an, text, len, emit, this);
        cur = nullptr;
        if (s != CLS_OK) throw std::runtime_error(std::string("clsearch analyzer: ") + cls_last_error());
    }
};

static std::unique_ptr<Analyzer> make_analyzer(const std::string &name)
{
    if (name == "xapian") return std::make_unique<XapianAnalyzer>();
    if (name == "clsearch") return std::make_unique<ClsearchAnalyzer>();
    return nullptr;
}

/* ---- Scoring: clsearch's BM25 as a Xapian weighting scheme --------------------------------- */

/* idf * factor * tf / (tf + k1 * (1 - b + b * dl / avgdl)) with Lucene's idf; factor is the
 * OP_SCALE_WEIGHT scale, i.e. the term's count in the query. */
class LuceneBM25Weight : public Xapian::Weight {
    double k1, b;
    double termweight = 0, len_factor = 0;

  public:
    LuceneBM25Weight(double k1_, double b_) : k1(k1_), b(b_)
    {
        need_stat(COLLECTION_SIZE);
        need_stat(TERMFREQ);
        need_stat(AVERAGE_LENGTH);
        need_stat(DOC_LENGTH);
        need_stat(DOC_LENGTH_MIN);
        need_stat(WDF);
        need_stat(WDF_MAX);
    }
    LuceneBM25Weight *clone() const override { return new LuceneBM25Weight(k1, b); }
    void init(double factor) override
    {
        double N = get_collection_size(), df = get_termfreq();
        termweight = std::log(1.0 + (N - df + 0.5) / (df + 0.5)) * factor;
        double avg = get_average_length();
        len_factor = avg > 0 ? 1.0 / avg : 0.0;
    }
    std::string name() const override { return "LuceneBM25Weight"; }
    double get_sumpart(Xapian::termcount wdf, Xapian::termcount len, Xapian::termcount) const override
    {
        double f = wdf;
        return termweight * f / (f + k1 * (1.0 - b + b * len * len_factor));
    }
    /* The sumpart grows with wdf once the length is at its smallest possible (len >= wdf and
     * len >= the collection's shortest), so its value there bounds every document's. */
    double get_maxpart() const override
    {
        double w = get_wdf_upper_bound();
        if (w == 0) return 0;
        double len = std::max(w, (double)get_doclength_lower_bound());
        return termweight * w / (w + k1 * (1.0 - b + b * len * len_factor));
    }
    double get_sumextra(Xapian::termcount, Xapian::termcount) const override { return 0; }
    double get_maxextra() const override { return 0; }
};

/* ---- index ------------------------------------------------------------------------------------- */

static int parse_corpus_format(const std::string &s, cls_corpus_format *f)
{
    static const std::pair<const char *, cls_corpus_format> names[] = {
        {"jsonl", CLS_CORPUS_JSONL}, {"beir", CLS_CORPUS_BEIR}, {"html", CLS_CORPUS_HTML},
        {"trec", CLS_CORPUS_TREC},   {"smart", CLS_CORPUS_SMART}, {"files", CLS_CORPUS_FILES}};
    for (const auto &n : names)
        if (s == n.first) {
            *f = n.second;
            return 1;
        }
    return 0;
}

static bool ends_with(const std::string &s, const std::string &suffix)
{
    if (s.size() < suffix.size()) return false;
    for (size_t i = 0; i < suffix.size(); i++)
        if (std::tolower((unsigned char)s[s.size() - suffix.size() + i]) != suffix[i]) return false;
    return true;
}

/* The format of an input without -c: .jsonl or .json[.gz] names are JSONL; a folder, an archive
 * or an .html file is an HTML collection (CACM); otherwise the first non-blank line decides:
 * ".I" SMART, "<DOC" TREC, "{" JSONL. */
static int guess_format(const std::string &path, cls_corpus_format *f)
{
    std::string p = ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
    if (ends_with(p, ".jsonl") || ends_with(p, ".json")) return *f = CLS_CORPUS_JSONL, 1;
    std::error_code ec;
    if (fs::is_directory(path, ec) || ends_with(p, ".tar") || ends_with(path, ".tgz") ||
        ends_with(path, ".zip") || ends_with(p, ".html") || ends_with(p, ".htm"))
        return *f = CLS_CORPUS_HTML, 1;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        size_t i = line.find_first_not_of(" \t\r");
        if (i == std::string::npos) continue;
        if (line.compare(i, 2, ".I") == 0) return *f = CLS_CORPUS_SMART, 1;
        if (line.compare(i, 4, "<DOC") == 0 || line.compare(i, 4, "<doc") == 0)
            return *f = CLS_CORPUS_TREC, 1;
        if (line[i] == '{') return *f = CLS_CORPUS_JSONL, 1;
        break;
    }
    return 0;
}

struct IndexCtx {
    Xapian::WritableDatabase *db;
    Analyzer *an;
    unsigned long long docs = 0, text_bytes = 0;
    std::string error;
};

static int on_doc(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    IndexCtx *c = static_cast<IndexCtx *>(user);
    try {
        Xapian::Document doc;
        doc.set_data(std::string(docno, dl));
        c->an->index(doc, text, tl);
        c->db->add_document(doc);
    } catch (const Xapian::Error &e) {
        c->error = e.get_description();
        return 1;
    } catch (const std::exception &e) {
        c->error = e.what();
        return 1;
    }
    c->docs++;
    c->text_bytes += tl;
    return 0;
}

static int usage_index()
{
    std::fprintf(stderr, "usage: %s index [-c jsonl|beir|html|trec|smart|files] [--analyzer xapian|clsearch] "
                         "DBDIR INPUT...\n", prog);
    return 2;
}

static int cmd_index(int argc, char **argv)
{
    std::string fmt, analyzer = "xapian";
    static const struct option lo[] = {{"collection", required_argument, 0, 'c'},
                                       {"analyzer", required_argument, 0, 'a'}, {0, 0, 0, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:", lo, nullptr)) != -1) {
        if (opt == 'c') fmt = optarg;
        else if (opt == 'a') analyzer = optarg;
        else return usage_index();
    }
    if (argc - optind < 2) return usage_index();
    std::string dbdir = argv[optind];
    std::vector<std::pair<std::string, cls_corpus_format>> inputs;
    for (int i = optind + 1; i < argc; i++) {
        cls_corpus_format f;
        if (!fmt.empty() ? !parse_corpus_format(fmt, &f) : !guess_format(argv[i], &f)) {
            if (!fmt.empty()) return fail("unknown collection format '" + fmt + "'"), 2;
            return fail(std::string("cannot tell the format of ") + argv[i] + "; give -c"), 2;
        }
        inputs.emplace_back(argv[i], f);
    }
    std::unique_ptr<Analyzer> an;
    try {
        an = make_analyzer(analyzer);
    } catch (const std::exception &e) {
        return fail(e.what());
    }
    if (!an) return fail("--analyzer takes xapian or clsearch, not '" + analyzer + "'"), 2;

    /* Built under DBDIR.tmp.XXXXXX, moved into place when complete. */
    fs::path target = fs::path(dbdir).lexically_normal();
    if (target.filename().empty()) target = target.parent_path();
    /* Only a Xapian database (or an empty folder) is replaced, never some other file. */
    std::error_code ec;
    if (fs::exists(target, ec)) {
        bool empty_dir = fs::is_directory(target, ec) && fs::is_empty(target, ec);
        bool xdb = fs::exists(target / "iamglass", ec) || fs::exists(target / "iamchert", ec) ||
                   fs::exists(target / "iamhoney", ec);
        if (!empty_dir && !xdb)
            return fail(target.string() + " exists and is not a Xapian database: not replaced"), 2;
    }
    std::string tmpl = target.string() + ".tmp.XXXXXX";
    std::vector<char> tbuf(tmpl.begin(), tmpl.end());
    tbuf.push_back('\0');
    if (!mkdtemp(tbuf.data())) return fail("cannot create " + tmpl + ": " + std::strerror(errno));
    std::string tmp = tbuf.data();
    double t0 = now();
    IndexCtx c;
    try {
        Xapian::WritableDatabase db(tmp, Xapian::DB_CREATE_OR_OVERWRITE);
        c.db = &db;
        c.an = an.get();
        for (const auto &in : inputs) {
            cls_status s = cls_corpus_read(in.second, in.first.c_str(), on_doc, &c);
            if (!c.error.empty()) throw std::runtime_error("indexing " + in.first + ": " + c.error);
            if (s != CLS_OK)
                throw std::runtime_error("indexing " + in.first + ": " + cls_status_str(s) + ": " +
                                         cls_last_error());
        }
        db.set_metadata("peer_xapian.analyzer", analyzer);
        db.commit();
        db.close();
    } catch (const Xapian::Error &e) {
        fs::remove_all(tmp, ec);
        return fail(e.get_description() + " (nothing written)");
    } catch (const std::exception &e) {
        fs::remove_all(tmp, ec);
        return fail(std::string(e.what()) + " (nothing written)");
    }
    double el = now() - t0;
    /* Replace DBDIR: the old one (if any) is moved aside first, then removed. */
    std::string old;
    if (fs::exists(target, ec)) {
        old = tmp + ".old";
        fs::rename(target, old, ec);
        if (ec) {
            fs::remove_all(tmp, ec);
            return fail("cannot move the old " + target.string() + " aside (nothing written)");
        }
    }
    fs::rename(tmp, target, ec);
    if (ec) {
        std::error_code ec2;
        fs::remove_all(tmp, ec2);
        if (!old.empty()) fs::rename(old, target, ec2);
        return fail("cannot rename " + tmp + " to " + target.string() + ": " + ec.message());
    }
    if (!old.empty()) fs::remove_all(old, ec);
    /* Distinct terms and term occurrences (the sum of document lengths), after the timing: to
     * set beside clsearch's `stats` (terms, tokens) as a check of the analysis. */
    unsigned long long terms = 0, tokens = 0;
    try {
        Xapian::Database db(target.string());
        tokens = db.get_total_length();
        for (auto t = db.allterms_begin(); t != db.allterms_end(); ++t) terms++;
    } catch (const Xapian::Error &e) {
        return fail("reopening " + target.string() + ": " + e.get_description());
    }
    double mb = (double)c.text_bytes / 1e6;
    std::printf("peer_xapian index: documents=%llu text_bytes=%llu seconds=%.4f MB/s=%.3f terms=%llu tokens=%llu "
                "analyzer=%s xapian=%s db=%s\n",
                c.docs, c.text_bytes, el, el > 0 ? mb / el : 0.0, terms, tokens, analyzer.c_str(),
                Xapian::version_string(), target.c_str());
    return 0;
}

/* ---- search ------------------------------------------------------------------------------------ */

struct Topic {
    std::string qid;
    Xapian::Query query;
    size_t terms = 0;
};

struct TopicsCtx {
    Analyzer *an;
    std::vector<Topic> *out;
    std::string error;
};

static int on_topic(void *user, const char *qid, const char *text)
{
    TopicsCtx *c = static_cast<TopicsCtx *>(user);
    try {
        /* The query's terms with their counts, analysed as the documents were. */
        Xapian::Document scratch;
        c->an->index(scratch, text, std::strlen(text));
        std::vector<Xapian::Query> sub;
        for (auto t = scratch.termlist_begin(); t != scratch.termlist_end(); ++t) {
            Xapian::Query q(*t);
            Xapian::termcount n = t.get_wdf();
            sub.push_back(n > 1 ? Xapian::Query(Xapian::Query::OP_SCALE_WEIGHT, q, (double)n) : q);
        }
        Topic tp;
        tp.qid = qid;
        tp.terms = sub.size();
        tp.query = sub.empty() ? Xapian::Query() : Xapian::Query(Xapian::Query::OP_OR, sub.begin(), sub.end());
        c->out->push_back(std::move(tp));
    } catch (const Xapian::Error &e) {
        c->error = e.get_description();
        return 1;
    } catch (const std::exception &e) {
        c->error = e.what();
        return 1;
    }
    return 0;
}

static int parse_topics_format(const std::string &s, const char *path, cls_topics_format *f)
{
    if (s == "auto") return *f = cls_topics_detect(path), 1;
    static const std::pair<const char *, cls_topics_format> names[] = {
        {"tsv", CLS_TOPICS_TSV}, {"anserini", CLS_TOPICS_ANSERINI}, {"trec", CLS_TOPICS_TREC},
        {"smart", CLS_TOPICS_SMART}, {"mq", CLS_TOPICS_MQ}};
    for (const auto &n : names)
        if (s == n.first) return *f = n.second, 1;
    return 0;
}

static bool parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = std::strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

static int usage_search()
{
    std::fprintf(stderr, "usage: %s search [-f tsv|anserini|trec|smart|mq|auto] [--weight xapian|lucene] "
                         "[--min-normlen X] [-r REPEATS] [-o RUN] [--tag TAG] DBDIR TOPICS K K1 B\n", prog);
    return 2;
}

static int cmd_search(int argc, char **argv)
{
    std::string tfmt = "auto", weight = "xapian", out, tag = "xapian";
    double min_normlen = 0, v;
    int repeats = 3;
    static const struct option lo[] = {{"format", required_argument, 0, 'f'}, {"weight", required_argument, 0, 'w'},
                                       {"min-normlen", required_argument, 0, 'n'}, {"repeats", required_argument, 0, 'r'},
                                       {"output", required_argument, 0, 'o'}, {"tag", required_argument, 0, 't'},
                                       {0, 0, 0, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "f:r:o:", lo, nullptr)) != -1) {
        switch (opt) {
        case 'f': tfmt = optarg; break;
        case 'w': weight = optarg; break;
        case 'n':
            if (!parse_num(optarg, 0, 100, &min_normlen)) return usage_search();
            break;
        case 'r':
            if (!parse_num(optarg, 1, 1000, &v) || v != std::floor(v)) return usage_search();
            repeats = (int)v;
            break;
        case 'o': out = optarg; break;
        case 't': tag = optarg; break;
        default: return usage_search();
        }
    }
    if (argc - optind != 5) return usage_search();
    const char *dbdir = argv[optind], *topics = argv[optind + 1];
    double kd, k1, b;
    if (!parse_num(argv[optind + 2], 1, 100000, &kd) || kd != std::floor(kd) ||
        !parse_num(argv[optind + 3], 0, 100, &k1) || !parse_num(argv[optind + 4], 0, 1, &b))
        return usage_search();
    Xapian::doccount k = (Xapian::doccount)kd;
    if (weight != "xapian" && weight != "lucene") return usage_search();
    if (tag.find_first_of(" \t\n") != std::string::npos) return fail("the tag holds white space"), 2;
    cls_topics_format tf;
    if (!parse_topics_format(tfmt, topics, &tf)) return usage_search();

    try {
        Xapian::Database db(dbdir);
        std::string analyzer = db.get_metadata("peer_xapian.analyzer");
        if (analyzer.empty()) analyzer = "xapian";
        std::unique_ptr<Analyzer> an = make_analyzer(analyzer);
        if (!an) return fail(std::string(dbdir) + ": unknown analyzer '" + analyzer + "' in the database");
        std::vector<Topic> tl;
        TopicsCtx tc{an.get(), &tl, ""};
        cls_status s = cls_topics_read(tf, topics, on_topic, &tc);
        if (!tc.error.empty()) return fail(std::string("reading ") + topics + ": " + tc.error);
        if (s != CLS_OK) return cls_fail(s, std::string("reading ") + topics);
        if (tl.empty()) return fail(std::string(topics) + " holds no topics");

        Xapian::Enquire enq(db);
        char wdesc[160];
        if (weight == "xapian") {
            enq.set_weighting_scheme(Xapian::BM25Weight(k1, 0, 0, b, min_normlen));
            std::snprintf(wdesc, sizeof wdesc, "Xapian::BM25Weight(k1=%g,k2=0,k3=0,b=%g,min_normlen=%g)", k1, b,
                          min_normlen);
        } else {
            enq.set_weighting_scheme(LuceneBM25Weight(k1, b));
            std::snprintf(wdesc, sizeof wdesc, "LuceneBM25Weight(k1=%g,b=%g)", k1, b);
        }
        /* Warm-up pass: its results are the run. */
        std::vector<std::vector<std::pair<Xapian::docid, double>>> hits(tl.size());
        for (size_t i = 0; i < tl.size(); i++) {
            enq.set_query(tl[i].query);
            Xapian::MSet m = enq.get_mset(0, k);
            for (auto it = m.begin(); it != m.end(); ++it) hits[i].emplace_back(*it, it.get_weight());
        }
        std::vector<double> t((size_t)repeats), lat;
        lat.reserve((size_t)repeats * tl.size());
        size_t sink = 0; /* keeps the timed passes' results observable */
        for (int r = 0; r < repeats; r++) {
            double a = now(), q0 = a;
            for (const Topic &tp : tl) {
                enq.set_query(tp.query);
                Xapian::MSet m = enq.get_mset(0, k);
                sink += m.size();
                double q1 = now();
                lat.push_back(q1 - q0);
                q0 = q1;
            }
            t[(size_t)r] = q0 - a;
        }
        std::sort(t.begin(), t.end());
        std::sort(lat.begin(), lat.end());
        double nq = (double)tl.size(), med = t[t.size() / 2];
        /* Percentiles of the single-query times, picked as `clsearch bench e2e` picks them. */
        auto pct = [&lat](double p) {
            size_t i = (size_t)(p * (double)(lat.size() - 1) + 0.5);
            return lat[std::min(i, lat.size() - 1)] * 1e3;
        };

        /* The run file, docnos looked up after the timing. */
        std::string tmp;
        FILE *f = stdout;
        if (!out.empty()) {
            tmp = out + ".tmp.XXXXXX";
            std::vector<char> tb(tmp.begin(), tmp.end());
            tb.push_back('\0');
            int fd = mkstemp(tb.data());
            if (fd < 0) return fail("cannot create " + tmp + ": " + std::strerror(errno));
            tmp = tb.data();
            f = fdopen(fd, "w");
            if (!f) {
                close(fd);
                std::remove(tmp.c_str());
                return fail("cannot open " + tmp);
            }
        }
        bool ok = true;
        size_t total_hits = 0, empty = 0;
        for (size_t i = 0; i < tl.size(); i++) {
            total_hits += hits[i].size();
            empty += hits[i].empty();
            for (size_t j = 0; j < hits[i].size() && ok; j++) {
                std::string docno = db.get_document(hits[i][j].first).get_data();
                ok = std::fprintf(f, "%s Q0 %s %zu %.6f %s\n", tl[i].qid.c_str(), docno.c_str(), j + 1,
                                  hits[i][j].second, tag.c_str()) >= 0;
            }
        }
        if (f != stdout) {
            ok = (std::fclose(f) == 0) && ok;
            if (!ok || std::rename(tmp.c_str(), out.c_str()) != 0) {
                std::remove(tmp.c_str());
                return fail("writing " + out + ": " + std::strerror(errno));
            }
        } else if (!ok || std::fflush(stdout) != 0) {
            return fail(std::string("writing the run: ") + std::strerror(errno));
        }
        std::fprintf(stderr,
                     "peer_xapian search: queries=%zu k=%u repeats=%d seconds_median=%.5f qps_median=%.1f "
                     "qps_min=%.1f qps_max=%.1f p50_ms=%.4f p95_ms=%.4f p99_ms=%.4f hits=%zu empty=%zu "
                     "analyzer=%s weight=%s docs=%u xapian=%s\n",
                     tl.size(), (unsigned)k, repeats, med, nq / med, nq / t.back(), nq / t.front(), pct(0.5),
                     pct(0.95), pct(0.99), total_hits, empty, analyzer.c_str(), wdesc, (unsigned)db.get_doccount(),
                     Xapian::version_string());
        (void)sink;
    } catch (const Xapian::Error &e) {
        return fail(e.get_description());
    } catch (const std::exception &e) {
        return fail(e.what());
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && std::strcmp(argv[1], "index") == 0) return cmd_index(argc - 1, argv + 1);
    if (argc >= 2 && std::strcmp(argv[1], "search") == 0) return cmd_search(argc - 1, argv + 1);
    usage_index();
    usage_search();
    return 2;
}
