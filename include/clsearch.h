/*
 * clsearch: query processing for search engines on OpenCL devices.
 *
 * One public header. Every object is an opaque handle created and freed by the library;
 * every call that can fail returns a cls_status, and cls_status_str() plus cls_last_error()
 * turn a failure into a message (the latter carries the detail: file, line, OpenCL call,
 * build log). Nothing here prints.
 *
 * The data flow, end to end:
 *
 *   corpus --cls_corpus_read--> (docno, text) --cls_builder_add--> builder --cls_builder_write--> INDEX file
 *          (cls_corpus_read_fields and cls_builder_add_doc: with stored fields, cls_index_field)
 *   INDEX  --cls_index_open--> cls_index
 *   topics --cls_topics_read--> (qid, text) --cls_batch_add--> cls_batch (analysed term ids)
 *   cls_engine (device or reference) + cls_batch --cls_engine_search--> cls_results (top-k per query)
 *
 * Thread safety: handles are not shared between threads unless stated; cls_last_error() is
 * per thread. Stated: a cls_index, once open, is only read: any number of threads, batches and
 * engines may use it at once. A cls_engine may be shared: searches from several threads (or
 * several cls_engine_submit calls) queue for its executors, and run side by side when it has
 * several (a device list); each executor runs one at a time. A cls_batch is only read by a
 * search, so several threads may search one batch at once while none adds to it or clears it.
 * Each search needs its own cls_results. A cls_search belongs to the thread that submitted it
 * until cls_search_free, though any thread may wait for it.
 */
#ifndef CLSEARCH_H
#define CLSEARCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLSEARCH_VERSION_MAJOR 0
#define CLSEARCH_VERSION_MINOR 1
#define CLSEARCH_VERSION_PATCH 0

/* Marks the library's interface: it is built with hidden visibility (-fvisibility=hidden), so
 * libclsearch.so exports the functions declared with CLS_API and nothing else (the `symbols`
 * test checks it). In a program using the library the attribute changes nothing. */
#if defined(__GNUC__) || defined(__clang__)
#define CLS_API __attribute__((visibility("default")))
#else
#define CLS_API
#endif

/* ---- Status ------------------------------------------------------------------------------ */

typedef enum cls_status {
    CLS_OK = 0,
    CLS_E_ARG,       /* an argument is invalid (absurd k, unknown option value, ...) */
    CLS_E_NOMEM,     /* host memory exhausted */
    CLS_E_IO,        /* a file could not be read, written or renamed */
    CLS_E_FORMAT,    /* malformed input: corpus, topics, run file */
    CLS_E_CORRUPT,   /* an index or cache file is truncated, damaged or not ours */
    CLS_E_VERSION,   /* an index file of another format version */
    CLS_E_NODEVICE,  /* no OpenCL platform or no device matching the request */
    CLS_E_OPENCL,    /* an OpenCL call failed */
    CLS_E_BUILD,     /* a kernel program failed to build (the detail holds the build log) */
    CLS_E_DEVMEM,    /* the device ran out of memory */
    CLS_E_MISMATCH   /* two result sets differ (cls_results_compare) */
} cls_status;

/* A fixed, short description of a status ("invalid argument"). Never NULL. */
CLS_API const char *cls_status_str(cls_status s);
/* The detailed message of the last failed call in this thread ("" if none). */
CLS_API const char *cls_last_error(void);
/* "0.1.0" */
CLS_API const char *cls_version(void);

/* Notices: a line for a person waiting on slow work that a call does on the way. Today there is
 * one, "compiling kernels for DEVICE (once; cached in DIR)" (or "(no cache folder: every start
 * compiles)"), sent just before a kernel program is compiled from source rather than loaded from
 * the program cache, which can take many seconds (cls_engine_create, the first time on a device
 * or after a change of driver or kernels; an engine compiles two programs, so the line may come
 * twice). The library prints nothing: a notice goes to the function set here, on the thread doing
 * the work (the line, NUL-terminated, no newline, valid during the call), or nowhere, the default
 * and what fn NULL restores. The setting is process-wide: make it before the calls it is for. */
typedef void (*cls_notice_fn)(void *user, const char *line);
CLS_API void cls_set_notice(cls_notice_fn fn, void *user);

/* ---- Analysis ------------------------------------------------------------------------------ */

/* How text becomes terms. The defaults (cls_analyzer_defaults) follow Lucene's English analyzer:
 * tokenize on non-alphanumerics keeping "1.8" and "o'neil" whole, drop a possessive 's,
 * lowercase, remove Lucene's 33 English stopwords, Porter-stem (Snowball's "porter"). */
typedef struct cls_analyzer_opts {
    int possessive; /* strip trailing 's */
    int lowercase;
    int stopwords;  /* remove the 33-word Lucene English list */
    int stem;       /* Porter stemming */
} cls_analyzer_opts;

CLS_API void cls_analyzer_defaults(cls_analyzer_opts *o);

/* ---- Corpora and topics -------------------------------------------------------------------- */

typedef enum cls_corpus_format {
    CLS_CORPUS_JSONL, /* {"id": ..., "contents": ...} per line (Pyserini JsonCollection) */
    CLS_CORPUS_BEIR,  /* {"_id": ..., "title": ..., "text": ...} per line */
    CLS_CORPUS_HTML,  /* a folder (or .tar/.tar.gz/.tgz/.zip) of HTML files; docno = name w/o ext */
    CLS_CORPUS_TREC,  /* TREC SGML: <DOC><DOCNO> id </DOCNO> ... </DOC>, many per file; the text is
                       * the rest of the <DOC> element with tags removed */
    CLS_CORPUS_SMART, /* SMART (Cranfield, MED, CISI): ".I n" records; docno = n; the text is the
                       * .T, .A, .B and .W fields joined by newlines, other fields ignored */
                      /* JSONL, BEIR, TREC and SMART: a file, plain or *.gz; a folder of them
                       * (every file, byte order of the path, hidden names skipped); or an archive
                       * named .tar[.gz|.bz2|.xz|.zst], .tgz, .tbz2, .txz, .zip, ... (given alone
                       * or met in the folder), whose regular entries are read as such files in
                       * archive order (hidden names skipped; *.gz entries decompressed). */
    CLS_CORPUS_FILES  /* a folder tree (or archive) of plain-text files, one document each; docno =
                       * the path relative to the root, bytes outside [!-~] and '%' written %XX.
                       * A folder is walked in byte order of the path (hidden names and links to
                       * folders skipped); an input named .tar[.gz|.bz2|.xz|.zst], .tgz, .zip, ...
                       * is read as an archive, in archive order; *.gz files are decompressed (the
                       * docno keeps ".gz"). Files with a NUL byte in their first 8 KiB are skipped
                       * as binary; a file over 64 MiB is indexed up to 64 MiB. Both are counted,
                       * never a read error: that stops the read. */
} cls_corpus_format;

/* Called once per document; a nonzero return stops the read with CLS_E_ARG. The strings are
 * valid only during the call and are NOT NUL-terminated. */
typedef int (*cls_doc_fn)(void *user, const char *docno, size_t docno_len, const char *text,
                          size_t text_len);

/* Streams every document of path (a file or a folder) to fn, in a deterministic order. */
CLS_API cls_status cls_corpus_read(cls_corpus_format fmt, const char *path, cls_doc_fn fn, void *user);

/* What the last cls_corpus_read, cls_corpus_read_ex or cls_corpus_read_fields of this thread
 * passed over without failing. */
typedef struct cls_corpus_counts {
    uint64_t skipped_binary; /* CLS_CORPUS_FILES: files skipped as binary: a NUL byte in their first 8 KiB */
    uint64_t truncated;      /* CLS_CORPUS_FILES: files indexed only up to their first 64 MiB */
    uint64_t skipped_links;  /* symbolic links in a folder that lead out of it (cls_corpus_follow_links) */
} cls_corpus_counts;
CLS_API void cls_corpus_last_counts(cls_corpus_counts *out);

/* A folder given as input is read within it: a symbolic link in it is read as what it leads to
 * when that is inside the folder (its path with every link resolved), a link to a folder is not
 * followed, and a link leading out of the folder is skipped and counted (skipped_links), so
 * that a link such as x -> /etc/passwd does not put a file the collection does not hold into the
 * index. cls_corpus_follow_links(1) makes this thread's later reads follow every link, to files
 * and folders, anywhere, each folder read once (a link loop ends); 0, the default, undoes it. */
CLS_API void cls_corpus_follow_links(int follow);

/* (advanced) Progress of a read: documents so far, input bytes consumed so far (compressed
 * bytes for compressed input) and the input's total size in bytes (0 when unknown). */
typedef void (*cls_progress_fn)(void *user, uint64_t docs, uint64_t bytes_done, uint64_t bytes_total);
/* (advanced) cls_corpus_read that also calls progress (when not NULL): once when the input's
 * files are listed (bytes_total known, 0 documents), then after a document or a file whenever
 * 0.2 s have passed since the last call, and once at the end of a successful read (every
 * document, bytes_done == bytes_total). bytes_total is the input's size (a folder: the sum of
 * the sizes of the files the format reads; 0 for a pipe); bytes_done never goes down. */
CLS_API cls_status cls_corpus_read_ex(cls_corpus_format fmt, const char *path, cls_doc_fn fn, void *user,
                                      cls_progress_fn progress, void *progress_user);

/* ---- Stored fields ---------------------------------------------------------------------------
 *
 * An index may keep, per document, a few named strings besides the docno: the title of an HTML
 * page, the path of a file, chosen fields of a JSON record (`clsearch index --store`). They are
 * not indexed for search; they come back with results (cls_index_field). A reader supplies them
 * when asked by name (cls_corpus_read_fields); cls_corpus_field_check says which names a format
 * can supply:
 *   jsonl, beir: any top-level key of the record: a string as it is, null as absent, a number,
 *                boolean, array or object as its compact JSON text ("1998", "[\"a\",\"b\"]");
 *   html:        "title", the first <title> element's text; "path", where the file was read
 *                (below);
 *   trec:        any element of the <DOC>, named case-insensitively ("headline" is the first
 *                <HEADLINE> ... </HEADLINE>): its text;
 *   smart:       "title" (.T), "authors" (.A), "bibliography" (.B): the field's lines, repeated
 *                markers (CISI's several .A) joined by "; ";
 *   files:       "path".
 * An element's or field's text has its markup removed, entities decoded and white space runs
 * made one space, trimmed. "path" is the file's absolute path (symbolic links of the input
 * resolved), or for an archive's entry the archive's absolute path, ':' and the entry's name as
 * stored. A document that lacks a field (no <title>, a missing key) has it absent, which is
 * not the same as empty. Values hold no NUL byte (the readers never make one) and are bytes as
 * the collection holds them (UTF-8 where the format says so). */
#define CLS_MAX_FIELDS 64

/* A document with its fields, as cls_corpus_read_fields hands it over and cls_builder_add_doc
 * takes it. Strings are NOT NUL-terminated and, from a reader, valid only during the call. */
typedef struct cls_doc {
    const char *docno;
    size_t docno_len;
    const char *text;
    size_t text_len;
    size_t num_fields;          /* the fields asked for, in that order (0: none) */
    const char *const *fields;  /* fields[i]: field i's value, NULL when the document lacks it */
    const size_t *field_lens;
} cls_doc;

typedef int (*cls_doc_fields_fn)(void *user, const cls_doc *doc);

/* CLS_OK when fmt's reader can supply the field name (see above), else CLS_E_ARG saying what it
 * can. A name is 1 to 255 bytes, none of them a control character, a space or a comma. */
CLS_API cls_status cls_corpus_field_check(cls_corpus_format fmt, const char *name);
/* cls_corpus_read_ex that also hands over the named fields of every document (fields[0 ..
 * num_fields), each checked by cls_corpus_field_check first: CLS_E_ARG before anything is read;
 * at most CLS_MAX_FIELDS, all different). fn's nonzero return stops the read with CLS_E_ARG. */
CLS_API cls_status cls_corpus_read_fields(cls_corpus_format fmt, const char *path, const char *const *fields,
                                          size_t num_fields, cls_doc_fields_fn fn, void *user,
                                          cls_progress_fn progress, void *progress_user);

typedef enum cls_topics_format {
    CLS_TOPICS_TSV,     /* qid<TAB>text per line */
    CLS_TOPICS_ANSERINI, /* <DOC><DOCNO> qid </DOCNO> text </DOC> */
    CLS_TOPICS_TREC,     /* <top> <num> Number: qid ... <title> text ... </top>; the text is the
                          * <title> field */
    CLS_TOPICS_SMART,    /* ".I n" + ".W text" records; qid = the record's 1-based position in
                          * the file (Cranfield's qrels number cran.qry's queries that way) */
    CLS_TOPICS_MQ,       /* TREC Million Query: qid:priority:text per line */
    CLS_TOPICS_AUTO      /* cls_topics_read: the format the first non-blank line announces, as
                          * cls_topics_detect guesses it, read in the same pass */
} cls_topics_format;

typedef int (*cls_topic_fn)(void *user, const char *qid, const char *text);

/* Streams every topic of path to fn (NUL-terminated strings, valid during the call). path is
 * read once from its start, so it may be a pipe ("/dev/stdin"); a name ending in ".gz" is
 * decompressed. A file of no topics is an error in the formats that mark topics (Anserini, TREC,
 * SMART) and zero topics, CLS_OK, in the line formats (TSV, Million Query): the caller decides
 * whether an empty list is one. */
CLS_API cls_status cls_topics_read(cls_topics_format fmt, const char *path, cls_topic_fn fn, void *user);
/* The format of a topics file guessed from its first non-blank line (TSV when unsure or
 * unreadable: the reader then reports the error). It reads path: what it reads from a pipe is
 * gone for the reader after it, so pass CLS_TOPICS_AUTO to cls_topics_read instead, which
 * guesses and reads in one pass. */
CLS_API cls_topics_format cls_topics_detect(const char *path);

/* ---- Index building ------------------------------------------------------------------------ */

/* Posting-list codecs. Every codec codes a block's docIDs as gaps (decoded by a prefix sum
 * local to the block, from the block's first docID) and its frequencies minus one; see
 * docs/FORMAT.md for each codec's bit layout. */
typedef enum cls_codec {
    CLS_CODEC_RAW = 0, /* uncompressed 32-bit values: the baseline */
    CLS_CODEC_BP,      /* bit-packing, one bit width per block and stream */
    CLS_CODEC_PFOR,    /* PForDelta, one width per list, exceptions' high bits and positions
                        * in two arrays coded recursively (Ding et al.'s GPU variant) */
    CLS_CODEC_OPTPFD,  /* PForDelta with each block's size-minimizing width (OptPFD) */
    CLS_CODEC_RICE     /* Rice codes, unary and binary parts in separate bit arrays */
} cls_codec;
#define CLS_NUM_CODECS 5

/* "raw", "bp", "pfor", "optpfd", "rice"; NULL for an unknown value. */
CLS_API const char *cls_codec_name(cls_codec c);
/* The codec named name; CLS_E_ARG (with the valid names in the message) when unknown. */
CLS_API cls_status cls_codec_parse(const char *name, cls_codec *out);

/* How an index is laid out. */
typedef struct cls_build_opts {
    cls_codec codec;     /* default bp */
    uint32_t block_size; /* postings per block: 64, 128 (default), 256 or 512 */
    unsigned pfor_depth; /* pfor: levels of recursive exception coding, 0..3 (default 1) */
    unsigned threads;    /* analysis and encoding threads; 0 = all cores (default); 1 = analyse in
                          * the calling thread. The index file is byte-identical for any value. */
    const char *device;  /* NULL (default): the host encodes the postings; else the OpenCL device
                          * that encodes them, named as cls_engine_create names one ("gpu",
                          * "cpu", "P:D"; not "ref"): every codec has a device encoder, and a
                          * device that cannot run it is an error, never a quiet fallback to the
                          * host. The file is byte-identical either way. Read when the index is
                          * written: the string must live until then. */
} cls_build_opts;

CLS_API void cls_build_defaults(cls_build_opts *o);

typedef struct cls_builder cls_builder;

CLS_API cls_status cls_builder_create(const cls_analyzer_opts *an, cls_builder **out);
/* Sets the layout and threads; before the first cls_builder_add. Checks every field. */
CLS_API cls_status cls_builder_configure(cls_builder *b, const cls_build_opts *o);
/* The bytes of inverted postings (runs) the builder keeps in memory, before the first
 * cls_builder_add; beyond them runs are spilled to unnamed files in $TMPDIR (else /tmp) and
 * merged by cls_builder_write. 0: a quarter of the machine's memory, at least 64 MiB (the
 * default). The index file is byte-identical for any value. */
CLS_API cls_status cls_builder_set_memory(cls_builder *b, uint64_t bytes);
/* Adds one document; internal docIDs are assigned in the order of these calls. With threads > 1
 * the document is copied and analysed later by a worker thread: a failure there (out of memory)
 * is returned by a later cls_builder_add or by cls_builder_write, and from then on every call
 * returns it. A bad docno is refused at once, in either mode, and the builder stays usable. */
CLS_API cls_status cls_builder_add(cls_builder *b, const char *docno, size_t docno_len, const char *text,
                                   size_t text_len);
/* A document id given twice is an error by default (CLS_E_FORMAT from the cls_builder_add that
 * repeats it, naming both documents; the builder stays usable). allow != 0: the first is kept and
 * each later one skipped and counted (cls_builder_duplicates). Before the first document. */
CLS_API cls_status cls_builder_allow_duplicate_ids(cls_builder *b, int allow);
/* Documents skipped because their id was given before. */
CLS_API uint64_t cls_builder_duplicates(const cls_builder *b);
/* Stored fields: the names of the per-document fields the index keeps (at most CLS_MAX_FIELDS,
 * all different, each as cls_corpus_field_check requires), before the first document. */
CLS_API cls_status cls_builder_set_fields(cls_builder *b, const char *const *names, size_t n);
/* cls_builder_add with the document's fields: doc->num_fields is the number of names set (or 0:
 * every field absent), doc->fields[i] the value of the i-th (NULL: absent). A value holding a
 * NUL byte is refused (CLS_E_FORMAT) and the builder stays usable. cls_builder_add adds a
 * document whose fields are all absent. */
CLS_API cls_status cls_builder_add_doc(cls_builder *b, const cls_doc *doc);
/* Records an input of the collection in the index (what `clsearch stats` shows as its roots):
 * path made absolute (symbolic links resolved; a path with no name to resolve to, such as
 * /dev/stdin on a pipe, as given; CLS_E_IO when it does not exist) and the collection's format;
 * every root of an index has the same format (CLS_E_ARG otherwise). */
CLS_API cls_status cls_builder_add_root(cls_builder *b, cls_corpus_format fmt, const char *path);
/* Writes the index to path (through a temporary name, renamed when complete), after waiting for
 * every document added to be analysed. */
CLS_API cls_status cls_builder_write(cls_builder *b, const char *path);
/* Stops and joins the builder's threads, whatever state it is in, and frees it. */
CLS_API void cls_builder_free(cls_builder *b);

/* ---- Index -------------------------------------------------------------------------------- */

typedef struct cls_index cls_index;

typedef struct cls_index_stats {
    uint32_t num_docs;
    uint32_t num_terms;
    uint64_t num_postings;   /* (term, doc) pairs */
    uint64_t num_tokens;     /* indexed term occurrences: sum of document lengths */
    double avg_doc_len;
    uint32_t block_size;     /* postings per block */
    cls_codec codec;
    unsigned pfor_depth;
    uint64_t num_blocks;
    uint64_t postings_bytes; /* compressed postings payload: doc and frequency streams */
    uint64_t doc_bits, freq_bits; /* bits of the docID and frequency streams */
    uint64_t meta_bytes;     /* per-block metadata */
    uint64_t file_bytes;
} cls_index_stats;

/* (advanced) The size the postings of idx would take in codec c at block_size (re-encodes every
 * list; the index is unchanged): num_blocks, doc_bits, freq_bits, meta_bytes and postings_bytes
 * of st are filled, the rest as cls_index_get_stats. */
CLS_API cls_status cls_index_codec_stats(const cls_index *idx, cls_codec c, uint32_t block_size,
                                         unsigned pfor_depth, cls_index_stats *st);

/* How an index scores. BM25: term frequencies, Lucene's idf, document length norms (every index
 * built from text). Impact: each posting's frequency is a quantized impact (learned sparse
 * retrieval: SPLADE, uniCOIL, as Anserini and PISA exchange them in CIFF), and a document's
 * score is the sum over the query's terms of query weight x impact: no idf, no length norm, and
 * k1 and b play no part. */
typedef enum cls_scoring {
    CLS_SCORING_BM25 = 0,
    CLS_SCORING_IMPACT = 1
} cls_scoring;

/* "bm25" or "impact"; NULL for a value outside the enum. */
CLS_API const char *cls_scoring_name(cls_scoring s);

/* Opens an index file, in time proportional to its metadata: the header, the section table,
 * every section's checksum but the postings', and the consistency of documents, dictionary and
 * block records (docs/FORMAT.md lists the checks). A damaged file is CLS_E_CORRUPT naming the
 * section. The postings are verified before they are read: by the OpenCL engine as it uploads
 * them (their checksum), by the reference engine at creation (their checksum) and by its strict
 * decoders on every use. */
CLS_API cls_status cls_index_open(const char *path, cls_index **out);
/* Verifies everything cls_index_open does not: the postings checksum, every stream of every
 * block decoded by the strict reference decoders over exactly its words, the docIDs against
 * the block records, every block's max_score recomputed at the header's k1 and b. threads:
 * worker threads, 0 for one per online core. CLS_OK, or the first problem (in file order) as
 * CLS_E_CORRUPT naming the section, term and block. The index may be used meanwhile. */
CLS_API cls_status cls_index_check(const cls_index *idx, unsigned threads);
/* Whether the file is still the length it had when opened. The index is read in place from a
 * mapping; if another program truncates the file meanwhile, a read past its new end sees zeros
 * instead of ending the process with SIGBUS, and from then on every call on this index that
 * returns a status (and every search through an engine on it that reads the file) fails with
 * CLS_E_IO saying the file shrank. Calls that return values instead (cls_index_docno,
 * cls_index_field, cls_index_get_stats, ...) return what the zeros give: call this after them,
 * before their results are trusted (cls_engine_search and cls_engine_search_text call it
 * themselves, as a device engine's search may not read the file at all). CLS_OK, or that CLS_E_IO (also when the
 * file is shorter but nothing has read past its end yet). */
CLS_API cls_status cls_index_intact(const cls_index *idx);
CLS_API void cls_index_close(cls_index *idx);
CLS_API void cls_index_get_stats(const cls_index *idx, cls_index_stats *st);
/* The external identifier of internal docID doc (NUL-terminated), or NULL if out of range. */
CLS_API const char *cls_index_docno(const cls_index *idx, uint32_t doc);
/* The analyzer the index was built with. */
CLS_API void cls_index_analyzer(const cls_index *idx, cls_analyzer_opts *o);
/* How the index scores (cls_scoring), as its header records it. */
CLS_API cls_scoring cls_index_scoring(const cls_index *idx);

/* Stored fields (see "Stored fields" above): how many the index keeps (0 for an index of
 * format version 3) and the name of field i (NUL-terminated; NULL if out of range). */
CLS_API uint32_t cls_index_field_count(const cls_index *idx);
CLS_API const char *cls_index_field_name(const cls_index *idx, uint32_t field);
/* The number of the field called name; CLS_E_ARG naming the fields the index has otherwise. */
CLS_API cls_status cls_index_field_find(const cls_index *idx, const char *name, uint32_t *field);
/* Document doc's value of field: a pointer into the mapped file, NUL-terminated, *len (when not
 * NULL) its length in bytes; NULL (and *len 0) when the document lacks it or doc or field is out
 * of range. Constant time, no copy. Opening checks the fields' checksums and bounds, not every
 * document's offsets: a file forged with consistent checksums reads as absent where its
 * offsets are inconsistent, never out of bounds, and cls_index_check reports it. */
CLS_API const char *cls_index_field(const cls_index *idx, uint32_t doc, uint32_t field, size_t *len);
/* Where the collection came from: the format it was read in ("html", "jsonl", ..., "ciff" for
 * cls_ciff_import; "" when not recorded, as in generated indexes and format version 3), and
 * its roots, the inputs made absolute (cls_builder_add_root), in the order given. */
CLS_API const char *cls_index_collection(const cls_index *idx);
CLS_API uint32_t cls_index_root_count(const cls_index *idx);
/* Root i (NUL-terminated), or NULL if out of range. */
CLS_API const char *cls_index_root(const cls_index *idx, uint32_t i);

/* Writes idx again at path (through a temporary name) with o's codec, block size and pfor
 * depth; documents, stored fields, collection roots, dictionary and postings unchanged.
 * o->threads is ignored. */
CLS_API cls_status cls_index_recode(const cls_index *idx, const cls_build_opts *o, const char *path);

/* Document-range shards. Shard i of n is an index file of the documents [lo, hi) of a whole
 * index, renumbered 0 .. hi - lo - 1, that keeps the whole collection's statistics (its numbers
 * of documents and tokens, every term with its df), so that every engine scores each of its
 * documents exactly as on the whole index, bit for bit: a shard's hits, their docIDs plus its
 * base, are the whole index's hits among its documents, with the same scores. Its dictionary is
 * the whole index's; a term that none of its documents holds has an empty list, and
 * cls_batch_add counts it as unknown, which ranks as the whole index does (it adds to no score,
 * and no document of the shard holds every term). So the whole index's top k of a query is the
 * merge of the shards' top k: score descending, then docID ascending; in CLS_MODE_AND_OR the
 * AND hits (at each shard's head) before the others. Recoding a shard keeps it a shard. */
#define CLS_MAX_SHARDS 1024u
/* The document ranges of n = shards shards of idx (1 .. CLS_MAX_SHARDS) balanced by postings:
 * bounds[0] = 0 <= bounds[1] <= ... <= bounds[n] = its number of documents, shard i holding
 * [bounds[i], bounds[i + 1]) with about 1/n of the postings (by documents when it has none). A
 * range is empty where a document holds more than a shard's share, or where n exceeds the
 * documents. Decodes every list (the postings verified first). */
CLS_API cls_status cls_index_shard_bounds(const cls_index *idx, uint32_t shards, uint32_t *bounds);
/* Writes shard `shard` (0 .. shards - 1) of `shards`: the documents [lo, hi) of idx (lo <= hi <=
 * its number of documents; lo == hi is an empty shard) with their lengths, docnos and stored
 * fields, and every term, at path (through a temporary name, renamed when complete). Postings are
 * coded in idx's codec, block size and pfor depth; each block's max_score is computed with the
 * collection's idf and average length, so block-max pruning holds on the shard. idx must be a
 * whole index (CLS_E_ARG for a shard). */
CLS_API cls_status cls_index_shard_write(const cls_index *idx, uint32_t shard, uint32_t shards, uint32_t lo,
                                         uint32_t hi, const char *path);
/* Where idx lies in its collection: 1 for a shard (its base, the docID its document 0 has in
 * the whole index; the collection's number of documents; shard of shards), 0 for a whole index,
 * with base 0, its own number of documents, shard 0 of 1. Any pointer may be NULL. */
CLS_API int cls_index_shard_info(const cls_index *idx, uint32_t *base, uint32_t *collection_docs, uint32_t *shard,
                                 uint32_t *shards);

/* ---- Exchange: CIFF ------------------------------------------------------------------------- */

/* Builds an index at index_path from a CIFF file (the Common Index File Format: a header,
 * postings lists and document records, each a length-delimited protobuf message). CIFF holds
 * analysed terms, so an records the analyzer that queries must use (NULL: the defaults). The
 * index records the CIFF file as its root, collection "ciff"; it stores no fields. */
CLS_API cls_status cls_ciff_import(const char *ciff_path, const cls_analyzer_opts *an,
                                   const cls_build_opts *o, const char *index_path);
/* cls_ciff_import with the index's scoring: CLS_SCORING_IMPACT for a file whose tf fields are
 * quantized impacts (cls_ciff_import is this with CLS_SCORING_BM25). CIFF has no field that
 * says which a file holds, so the caller must. */
CLS_API cls_status cls_ciff_import_scored(const char *ciff_path, const cls_analyzer_opts *an,
                                          const cls_build_opts *o, cls_scoring scoring, const char *index_path);
/* Writes idx as CIFF (through a temporary name); description goes into the header. CIFF has no
 * place for stored fields or roots, nor for the scoring: they are left out (an impact index's
 * impacts go out as tf, and import needs CLS_SCORING_IMPACT again). */
CLS_API cls_status cls_ciff_export(const cls_index *idx, const char *ciff_path, const char *description);

/* ---- Queries -------------------------------------------------------------------------------- */

/* A batch of analysed queries, ready for any engine. Terms unknown to the index are dropped;
 * repeated terms become one term whose query weight is the sum of its occurrences' weights.
 * An occurrence weighs 1, or w when written term^w (Lucene's syntax): w, a decimal number from
 * 1e-9 to 1e9, weights every term the analyzer makes of the text before the caret back to the
 * previous white space ("a a^2" weighs a as 3). A caret with no term before it or no valid
 * weight after it is CLS_E_FORMAT from cls_batch_add, naming the query and the token. */
typedef struct cls_batch cls_batch;

CLS_API cls_status cls_batch_create(const cls_index *idx, cls_batch **out);
CLS_API cls_status cls_batch_add(cls_batch *b, const char *qid, const char *text);
/* Whether cls_batch_add would accept text's syntax (its term^W weights), without an index:
 * CLS_OK, or the CLS_E_FORMAT cls_batch_add would return, naming qid (for a caller that checks
 * queries before it batches them, as the query server does). */
CLS_API cls_status cls_query_check(const char *qid, const char *text);
CLS_API void cls_batch_clear(cls_batch *b);
CLS_API size_t cls_batch_count(const cls_batch *b);
CLS_API const char *cls_batch_qid(const cls_batch *b, size_t i);
/* Number of distinct known terms of query i after analysis (0: the query matches nothing). */
CLS_API size_t cls_batch_terms(const cls_batch *b, size_t i);
CLS_API void cls_batch_free(cls_batch *b);

/* ---- Engines ---------------------------------------------------------------------------- */

/* Query algorithms (src/algo/algos.c holds one module per mode). */
typedef enum cls_mode {
    CLS_MODE_OR = 0,    /* documents holding any query term, ranked by BM25 */
    CLS_MODE_AND = 1,   /* documents holding every query term (none when a term is unknown) */
    CLS_MODE_AND_OR = 2 /* AND, completed by OR when fewer than k documents hold every term:
                         * the AND hits first, ranked by score, then the best others */
} cls_mode;
#define CLS_NUM_MODES 3

/* "or", "and", "and-or"; NULL for an unknown value. */
CLS_API const char *cls_mode_name(cls_mode m);
/* One line saying what mode m returns; NULL for an unknown value. */
CLS_API const char *cls_mode_help(cls_mode m);
/* The mode named name; CLS_E_ARG (with the valid names in the message) when unknown. */
CLS_API cls_status cls_mode_parse(const char *name, cls_mode *out);

/* A tree-ensemble ranking model for a second ranking stage (cls_search_params.rerank): a
 * LightGBM text model or an XGBoost JSON model, regression or ranking, whose features are the
 * columns of the feature table as `clsearch features` writes them in SVMlight and the libraries
 * read those files: feature id i is the table's feature i, numbered from 1 (`clsearch features
 * --list`), id 0 absent (0.0 to LightGBM, missing to XGBoost). Its score of a document is its raw score (the trees' leaf values summed, plus the
 * base score). Read-only once loaded: searches of several threads may share one. */
typedef struct cls_model cls_model;
/* Reads the model at path (told apart by its first non-blank byte: '{' is XGBoost's JSON).
 * CLS_E_IO when it cannot be read, CLS_E_FORMAT naming the file (and the tree) for a model that
 * is not one or uses what is not supported (categorical splits, linear trees, several classes,
 * DART, random forests). */
CLS_API cls_status cls_model_load(const char *path, cls_model **out);
CLS_API void cls_model_free(cls_model *m);
/* One line for a person: "LightGBM lambdarank, 50 trees (1490 nodes, depth 9), 34 features,
 * base 0 (path)". */
CLS_API const char *cls_model_describe(const cls_model *m);
/* The feature columns the model reads (its highest feature id + 1). */
CLS_API uint32_t cls_model_features(const cls_model *m);

typedef struct cls_search_params {
    uint32_t k;     /* results per query, 1 .. CLS_MAX_K */
    cls_mode mode;
    float k1, b;    /* BM25 */
    /* The time the search should take, from its submission to its end, in milliseconds (0: no
     * deadline). Searches waiting for an executor are taken earliest deadline first (those
     * without one after them, in submission order), and a search that ends late counts its
     * queries in the "queries_late" counter. Results never depend on it. */
    double deadline_ms;
    /* A second ranking stage (learning to rank), or NULL for none. With a model, the first stage
     * (mode, k1, b above) keeps each query's top rerank_depth candidates by BM25, the model scores
     * each candidate from its row of the feature table (`clsearch features --list`: term-level
     * statistics aggregated over the query's terms, lengths, the index's numeric stored fields;
     * Dirichlet mu and Jelinek-Mercer lambda at their defaults, 2500 and 0.1), and the search
     * returns the top k by model score (ties to the smaller docID), min(k, candidates) hits.
     * cls_results_get's scores are then the model's, cls_results_get_first's the first stage's
     * of the same hits. The model must read no feature past the index's table (else the search
     * is CLS_E_ARG, naming both widths). Results are the same, bit for bit, on every executor.
     * The model stays alive and unchanged until the search has returned. */
    const struct cls_model *rerank;
    uint32_t rerank_depth; /* candidates the model re-ranks, 1 .. CLS_MAX_K; 0: CLS_RERANK_DEPTH */
} cls_search_params;

#define CLS_MAX_K 100000u
#define CLS_RERANK_DEPTH 1000u

/* k 1000, OR, k1 0.9, b 0.4, no deadline, no second stage (rerank NULL, depth 0: 1000) */
CLS_API void cls_search_defaults(cls_search_params *p);

typedef struct cls_engine cls_engine;

/* device: "auto" (first GPU, else first CPU device), "gpu", "cpu", "ref" (plain-C reference
 * engine, no OpenCL), or "P:D" (platform and device indices as `clsearch devices` lists them).
 * NULL means $CLSEARCH_DEVICE, else "auto". The engine keeps idx; close idx after the engine. */
CLS_API cls_status cls_engine_create(const cls_index *idx, const char *device, cls_engine **out);
/* How an engine over several devices holds the index. REPLICATE: each device holds all of it,
 * and a search runs whole on one device or split over the free ones. SHARD: device i holds the
 * documents of a range (balanced by document lengths; shards written with the
 * collection's statistics next to $CLSEARCH_SHARD_DIR, else $TMPDIR, else /tmp, and unlinked once
 * open), every search runs on every device and their top k are merged; for an index larger than
 * one device's memory. AUTO: SHARD where the index does not fit every device of the list (its
 * lists, block records and norms above half of a device's memory, where the list cache would
 * take over), else REPLICATE. Results are the same, bit for bit, whichever it is. */
typedef enum cls_placement {
    CLS_PLACEMENT_AUTO = 0,
    CLS_PLACEMENT_REPLICATE = 1,
    CLS_PLACEMENT_SHARD = 2
} cls_placement;
/* "auto", "replicate", "shard"; CLS_E_ARG (naming them) for anything else. */
CLS_API cls_status cls_placement_parse(const char *name, cls_placement *out);

/* Engine options beyond the device, for cls_engine_create_opts. Initialize with
 * cls_engine_opts_init (later versions add fields at the end, set to defaults there). */
typedef struct cls_engine_opts {
    const char *device;  /* as cls_engine_create's device */
    uint64_t device_mem; /* bytes of device memory the engine may take: the index's lists, the
                          * BM25 norms and the batches' buffers; 0: $CLSEARCH_DEVICE_MEM, else the
                          * device's (also the most it may be). When the index's lists take more than half of it, they
                          * are cached on the device (least recently used out, by bytes) and a
                          * batch uploads the lists it needs that are not there. */
    double batch_ms;     /* the wall time a device batch aims at: a search is cut into batches
                          * holding the queries the device works through in that time, at the
                          * rate measured on the engine's earlier batches (Wu et al.'s batch
                          * size against latency); 0: $CLSEARCH_BATCH_MS, else 25 ms */
    cls_placement placement; /* how a device list holds the index (below); 0: CLS_PLACEMENT_AUTO */
} cls_engine_opts;

CLS_API void cls_engine_opts_init(cls_engine_opts *o);
/* A byte count as the command line and $CLSEARCH_DEVICE_MEM write it: digits, then optionally
 * K, M, G or T (powers of 1024). CLS_E_ARG when it is not one. */
CLS_API cls_status cls_parse_bytes(const char *text, uint64_t *bytes);
/* cls_engine_create with options. A device_mem too small for the BM25 norms, or for some
 * query's lists together, is CLS_E_DEVMEM (at creation, or at the search that has the query). */
CLS_API cls_status cls_engine_create_opts(const cls_index *idx, const cls_engine_opts *o, cls_engine **out);
/* Frees e; on a shared engine, only once every thread's search of it has returned. */
CLS_API void cls_engine_free(cls_engine *e);
/* The engine described for a person (clsearch search -v), valid until cls_engine_free: for the
 * reference engine one line, "device: reference engine (...)"; for an OpenCL device four lines
 * separated by '\n', "device: ..." (the device and why it was chosen), "kernels: ..." (the kernel
 * variants and their parameters), "lists: ..." (the index resident on the device, or the list
 * cache and its size) and "programs: ..." (each program's build options, whether it was compiled
 * or loaded from the cache, and the cache file), the last ending with the device spec asked for. No trailing newline. The wording is for reading, not parsing, and may change. */
CLS_API const char *cls_engine_describe(const cls_engine *e);
/* Program build times of the last engine creation, for the verbose report. */
CLS_API void cls_engine_build_times(const cls_engine *e, double *seconds, int *from_cache);

typedef struct cls_results cls_results;

CLS_API cls_status cls_results_create(cls_results **out);
CLS_API void cls_results_free(cls_results *r);
CLS_API size_t cls_results_count(const cls_results *r);
/* Query i's hits in rank order: docs[j] and scores[j], j < *n. */
CLS_API void cls_results_get(const cls_results *r, size_t i, size_t *n, const uint32_t **docs,
                             const float **scores);
/* The first stage's (BM25) scores of query i's hits, in cls_results_get's order: with a second
 * ranking stage (cls_search_params.rerank) the candidates' scores before it, else the same scores
 * as cls_results_get's. */
CLS_API void cls_results_get_first(const cls_results *r, size_t i, size_t *n, const float **scores);
/* 1 when r holds a second ranking stage's results (its scores the model's), else 0. */
CLS_API int cls_results_reranked(const cls_results *r);
/* Compares two result sets: same docIDs in the same order and scores within rel_tol relative.
 * CLS_OK if equal, else CLS_E_MISMATCH with the first difference in cls_last_error(). */
CLS_API cls_status cls_results_compare(const cls_results *a, const cls_results *b, double rel_tol);

/* Runs every query of batch; r receives one entry per query, in batch order. Safe to call from
 * several threads on one engine (see "Thread safety" above). It is cls_engine_submit then
 * cls_search_wait, run on the calling thread when an executor is free. */
CLS_API cls_status cls_engine_search(cls_engine *e, const cls_batch *batch, const cls_search_params *p,
                                     cls_results *r);
/* One query in one call: text analysed against the engine's index into a batch the engine keeps
 * (created on first use, reused after), then cls_engine_search; r holds one result, qid "1".
 * p NULL: cls_search_defaults. */
CLS_API cls_status cls_engine_search_text(cls_engine *e, const char *text, const cls_search_params *p,
                                          cls_results *r);

/* (advanced) One step of a search's device time, from OpenCL profiling events, summed over the
 * search's batches. Steps are named by what runs: "upload" (query batches, and BM25 norms when k1
 * or b change), "decode", the algorithm's kernels ("intersect", "score", "mark", ...), "topk",
 * "download" (results); with the list cache, "lists up" (lists the device lacked) and "lists
 * place" (into the cache's room). */
typedef struct cls_profile_step {
    const char *name;
    int transfer;    /* 1: a copy between host and device; 0: kernels */
    double seconds;
    uint64_t bytes;  /* transfers: bytes moved */
} cls_profile_step;
/* (advanced) The profile of the last cls_engine_search: *steps receives its steps in the order
 * they first ran (valid until the engine's next search or its free), *batches (when not NULL)
 * the device batches the search was cut into; returns the number of steps. The reference engine
 * has none (0). On an engine that threads share, the last search is whichever finished last,
 * and the next one changes the steps: call it only while no other thread searches. */
CLS_API size_t cls_engine_profile(const cls_engine *e, const cls_profile_step **steps, uint32_t *batches);

/* (advanced) What the last cls_engine_search did, counted: "queries", "blocks_in_lists" (the
 * blocks of the lists its device batches used: decoding them all is the exhaustive work) and
 * "blocks_decoded" (what the device decoded: block skipping leaves blocks out, and OR by
 * partitions decodes a list once for every query of a batch that gives its term the same
 * weight), "postings_in_lists" and "postings_decoded" (the same in postings), "cost_rate" (the
 * cost model's measured rate after it, in postings per second of batch time), OR's
 * "partitions_scored", "queries_rerun" (with a larger candidate pool), "or_bounds_from" and
 * "queries_hashed" (OR queries of few postings accumulated in a hash table instead of by
 * partitions), "partition_terms_skipped" (OR: the (partition, term) pairs whose postings a
 * scored partition did not read, the term not being essential there: MaxScore within the
 * partition), the launches of each top-k kernel, and the device batches the planner closed at
 * each of its limits: "batches_cut_queries" (the most queries a batch holds), "batches_cut_bytes"
 * (the engine's device memory for batches), "batches_cut_cost" (the batch's target time, at the
 * cost model's rate) and "batches_cut_alloc" (the device's largest buffer, 32-bit counts, the
 * list cache's room); with the list
 * cache also "lists_found" (a batch's lists already on the device), "lists_loaded" and
 * "bytes_loaded" (uploaded for it). On a shared engine, as cls_engine_profile. */
typedef struct cls_counter {
    const char *name;
    uint64_t value;
} cls_counter;
/* (advanced) *counters receives the last search's counters (valid until the engine's next
 * search or its free); returns their number (0 for the reference engine). */
CLS_API size_t cls_engine_counters(const cls_engine *e, const cls_counter **counters);

/* ---- Asynchronous search ----------------------------------------------------------------- */

/* A search in flight. cls_engine_submit queues it and returns at once; the engine's executor
 * threads run it, or the thread that waits for it when an executor is free and it has not
 * started (split over every free device of a device list when nothing else waits, whole on one
 * device when other searches do; on a sharded engine on every device), so a caller keeps
 * several batches in flight. batch, r
 * and the engine stay untouched by the caller, and alive, until cls_search_wait has returned (or
 * cls_search_free); p is copied. Results equal cls_engine_search's bit for bit. */
typedef struct cls_search cls_search;
CLS_API cls_status cls_engine_submit(cls_engine *e, const cls_batch *batch, const cls_search_params *p,
                                     cls_results *r, cls_search **out);
/* 1 when s has finished (cls_search_wait then returns at once), 0 while it runs. */
CLS_API int cls_search_done(const cls_search *s);
/* Waits for s to finish; its status, the same every call (the detail in cls_last_error()). */
CLS_API cls_status cls_search_wait(cls_search *s);
/* (advanced) s's own counters and profile (as cls_engine_counters and cls_engine_profile say),
 * once it has finished; valid until cls_search_free. */
CLS_API size_t cls_search_counters(const cls_search *s, const cls_counter **counters);
CLS_API size_t cls_search_profile(const cls_search *s, const cls_profile_step **steps, uint32_t *batches);
/* Waits for s if it still runs, then frees it. Every search is freed before its engine. */
CLS_API void cls_search_free(cls_search *s);

/* (advanced) The state of one of an engine's executors: one for a single device or the reference
 * engine, one per item of a device list. An executor that fails a batch which another then runs
 * is set aside: no longer given work, why saying what failed. A search fails only when no
 * executor is left to run it; a failure that every executor repeats (a query whose lists fit no
 * device) is the search's, and sets none aside. */
typedef struct cls_executor_info {
    uint64_t queries;   /* answered since the engine's creation */
    int set_aside;
    char why[256];      /* the failure that set it aside; "" in service */
    char name[64];      /* "host (16 threads)", "1:0", "ref", ... */
    uint64_t searches;  /* searches (or parts of one) it ran */
    /* searches it ran whole that another executor, had both been free, was predicted to finish
     * sooner: taken because that one was busy (stolen from its queue) */
    uint64_t stolen;
    uint64_t late;      /* searches it finished after their deadline */
    int busy;           /* running a search now */
    /* its cost model for the last mode it ran (see cls_engine_describe_model): the relative
     * error of the model in use (0 before it has been measured) and the model in one line */
    double model_error;
    char model[512];
} cls_executor_info;
/* Fills out[0 .. min(n, max)) and returns n, the engine's executors.
 *
 * Routing. Each executor keeps a cost model per mode, fitted from its own runs as it works
 * (Ding et al.'s features: a query's shortest list, second-shortest list, total postings and
 * terms; model and error in cls_executor_info.model). A search waiting for an executor is taken
 * by the one predicted to finish it first, counting the time a busy executor still needs for the
 * search it runs: a lone query goes to the host's cores, a batch to a GPU, and a free executor
 * takes a search from a busy one's queue only when it would still finish it sooner. A large
 * search with every executor free is split over them by their measured rates. */
CLS_API size_t cls_engine_executors(cls_engine *e, cls_executor_info *out, size_t max);
/* Executors in service and idle now (none running a search): a server submits at once while
 * one is, rather than waiting for a batch to gather. */
CLS_API size_t cls_engine_idle(cls_engine *e);

/* ---- Devices -------------------------------------------------------------------------------- */

typedef struct cls_device_info {
    unsigned platform, device;   /* indices for "P:D" */
    char platform_name[128];
    char platform_version[128];
    char name[128];
    char vendor[128];
    char driver_version[64];
    char opencl_c_version[64];
    int is_gpu;                  /* else CPU or other */
    unsigned compute_units;
    uint64_t global_mem, local_mem, max_alloc;
    size_t max_work_group;
    unsigned clock_mhz;
    char extensions[256];        /* extensions that matter here, space-separated */
} cls_device_info;

/* Lists every device of every platform. *n is 0 (and CLS_OK) when no platform exists. */
CLS_API cls_status cls_devices_list(cls_device_info **out, size_t *n);
CLS_API void cls_devices_free(cls_device_info *list);
/* (advanced) The kernel parameters an engine on this device would use, and where they come
 * from (tuned-parameter database entry), as one line into buf. */
CLS_API void cls_device_params(const cls_device_info *d, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* CLSEARCH_H */
