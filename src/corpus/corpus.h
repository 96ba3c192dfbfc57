/* Private helpers shared by the corpus and topics readers (corpus.c, corpus_jsonl.c,
 * corpus_html.c, corpus_trec.c, corpus_smart.c, corpus_files.c, topics.c): a line reader that
 * hides whether a file is plain or gzip-compressed, a deterministic folder walk, progress
 * reporting, libarchive error mapping and the callback-stop convention.
 * Nothing here is part of the public API (cls_corpus_last_counts excepted: see below). */
#ifndef CLS_CORPUS_H
#define CLS_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clsearch.h"

struct archive; /* libarchive's handles; only corpus*.c include <archive.h> */
struct archive_entry;

/* Largest single HTML document accepted: a file's whole text is held in memory at once, so an
 * absurd entry (or a damaged archive header claiming one) is rejected instead of allocated. */
#define CRP_MAX_DOC_BYTES ((size_t)1 << 30)

/* ---- Small string helpers ---------------------------------------------------------------- */

/* 1 if name ends with suffix, ASCII case-insensitively (".GZ" is as compressed as ".gz"). */
int crp_has_suffix(const char *name, const char *suffix);
/* The part of path after its last '/'. */
const char *crp_basename(const char *path);
/* First ASCII case-insensitive occurrence of tag (given in uppercase, e.g. "<DOCNO>") in
 * s[0..n), or NULL. s may hold NUL bytes. SGML formats spell their tags in either case. */
const char *crp_find_tag(const char *s, size_t n, const char *tag);

/* A growable byte string, kept NUL-terminated (p is NULL until the first add). Used to gather
 * one record (document or topic) that spans lines; memory is bounded by the largest record. */
typedef struct crp_buf {
    char *p;
    size_t n, cap;
} crp_buf;

/* Appends s[0..n); CLS_E_NOMEM if memory runs out. */
cls_status crp_buf_add(crp_buf *b, const char *s, size_t n);

/* ---- gzip ---------------------------------------------------------------------------------- */

/* A .gz inside an archive: the outer archive positioned at the entry, and the CRP_CHUNK-byte
 * buffer its compressed bytes pass through. Must outlive the reader crp_gz_open makes on it. */
typedef struct crp_gz_nest {
    struct archive *outer;
    char *chunk;
} crp_gz_nest;
#define CRP_CHUNK (64u * 1024u)

/* Opens a gzip stream as one raw entry, positioned at its data: the file at path (nest NULL)
 * or the current entry of nest->outer. *empty when there is no data (a zero-byte input reads as
 * empty, not unrecognised). where names the input in messages. On failure *out is NULL. */
cls_status crp_gz_open(const char *where, const char *path, crp_gz_nest *nest, struct archive **out, int *empty);

/* ---- Line reader ------------------------------------------------------------------------- */

/* Reads a file, or one entry of an archive, line by line without holding more than one line in
 * memory. A name ending in ".gz" is decompressed through libarchive (raw format + gzip filter);
 * anything else goes through getline (a file) or straight from the archive (an entry). Lines
 * may be arbitrarily long. */
typedef struct crp_lines {
    const char *path;       /* for messages ("file", or "archive:entry"); not owned */
    FILE *f;                /* plain file, or NULL */
    struct archive *a;      /* decompressed bytes come from here, or NULL */
    int borrowed;           /* a is the caller's archive (an uncompressed entry): not freed */
    struct crp_gz_nest *nest; /* a .gz entry: what a decompresses from (owned) */
    char *line;             /* current line, NUL-terminated, newline stripped */
    size_t cap;             /* allocated size of line */
    char *chunk;            /* decompressed bytes not yet split into lines (archive only) */
    size_t chunk_len, chunk_pos;
    int eof;
    unsigned long lineno;   /* 1-based number of the line last returned */
    int again;              /* crp_lines_again: the next call returns line again */
    size_t again_len;
} crp_lines;

/* Opens path; CLS_E_IO naming the path if it cannot be opened. */
cls_status crp_lines_open(crp_lines *r, const char *path);
/* Opens the data of the entry whose header archive_read_next_header(a, ...) last returned, as
 * lines named where ("archive:entry", kept by the caller while r is open). An entry named *.gz
 * is decompressed (a second reader pulling from a). r never frees a; crp_lines_close(r) before
 * moving a to its next entry. */
cls_status crp_lines_open_entry(crp_lines *r, struct archive *a, const char *where);
/* Next line into r->line (length *len, trailing "\n" or "\r\n" removed, NUL-terminated; the
 * line may itself contain NUL bytes). *got is 0 at end of file. */
cls_status crp_lines_next(crp_lines *r, size_t *len, int *got);
/* Makes the next crp_lines_next return the line it returned last (len bytes, as it gave them)
 * once more, with the same line number: one who read a line to choose a parser hands it on,
 * which a pipe could not give again. */
void crp_lines_again(crp_lines *r, size_t len);
void crp_lines_close(crp_lines *r);

/* A parser over an open line reader (one file, or one archive entry). */
typedef cls_status (*crp_lines_fn)(void *user, crp_lines *r);
/* Runs fn over path's lines: if crp_is_archive_name(path), over every entry of the archive that
 * crp_archive_next yields, in archive order, each its own crp_lines named "path:entry" (an empty
 * archive is no lines, not an error); otherwise over the file itself (plain or .gz). Names the
 * progress source (the file, or the archive's compressed bytes). */
cls_status crp_read_lines_input(const char *path, crp_lines_fn fn, void *user);

/* ---- Folder walk -------------------------------------------------------------------------- */

/* Called per file: full is the path to open, rel the path relative to the walked folder (for a
 * single file, its base name). A status other than CLS_OK stops the walk and is returned. */
typedef cls_status (*crp_file_fn)(void *user, const char *full, const char *rel);
/* If path is a folder: every regular file below it (recursively; names starting with '.' are
 * skipped; a symbolic link is read as what it leads to when that lies inside the folder, its path
 * with every link resolved, and links to folders are not followed; with cls_corpus_follow_links,
 * every link is followed, a folder read once however many ways lead to it, so a link loop ends;
 * a link to a file or folder outside is skipped and counted otherwise) for which want(name) is
 * nonzero (NULL: all), in byte order of the relative path. Otherwise path itself, whatever its
 * name. Every corpus read goes through exactly one crp_walk per input path: it is where the
 * input's total size (the sum of the wanted files' sizes) and the bytes of finished files are
 * counted for cls_corpus_read_ex's progress. */
cls_status crp_walk(const char *path, int (*want)(const char *name), crp_file_fn fn, void *user);

/* ---- Progress and counts ------------------------------------------------------------------- */

/* While cls_corpus_read_ex runs with a progress callback in this thread, a reader that streams
 * a large input (a JSONL file, an archive) names the open stream of the current file here, so
 * that progress can say how far into the file the read is: f's position, or the compressed
 * bytes a has consumed (archive_filter_bytes(a, -1)). (NULL, NULL) before closing the stream.
 * A reader that reads a whole file before emitting its document needs none: the walk counts
 * the file's size when the file is done. No effect when no progress was asked for. */
void crp_progress_source(FILE *f, struct archive *a);
/* Count a file passed over as binary, or cut at the size limit, in this thread's read. */
void crp_count_skipped_binary(void);
void crp_count_truncated(void);
/* Count a link the folder walk passed over, one that leads out of the input folder. */
void crp_count_skipped_link(void);
/* Whether this thread's reads follow every link (cls_corpus_follow_links). */
int crp_follow_links_now(void);

/* ---- Stored fields ---------------------------------------------------------------------------- */

/* The fields the read in progress in this thread asks for (cls_corpus_read_fields; 0 for the
 * other reads), the name of the i-th, and the number of the one called name (-1 if not asked). */
size_t crp_field_count(void);
const char *crp_field_name(size_t i);
int crp_field_index(const char *name);
/* Sets field i of the next document the reader emits (crp_emit_doc): p[0..n) must stay valid
 * until then; NULL (the default, again after each document) is absent. */
void crp_field_set(size_t i, const char *p, size_t n);
/* A field's text from markup: s[0..n) with tags removed and entities decoded (crp_html_to_text),
 * then white space runs (and control characters, NUL included) made one space and trimmed,
 * into out (out->n its length, out->p never NULL afterwards). */
cls_status crp_field_text(crp_buf *out, const char *s, size_t n, int markup);
/* "path" for the reader of path: its absolute path, links resolved (malloc, caller frees), into
 * *abs; NULL, and CLS_OK, when the read does not ask for "path". */
cls_status crp_field_root(const char *path, char **abs);
/* "path" of a file: root (crp_field_root's) itself for a single file (rel NULL), root "/" rel for
 * a file of a folder, root ":" rel for an archive's entry (sep ':'); into out, and set as field
 * i. */
cls_status crp_field_path(crp_buf *out, size_t i, const char *root, char sep, const char *rel);

/* ---- libarchive ---------------------------------------------------------------------------- */

/* Maps the last libarchive failure on a to a status and message naming path: a missing or
 * unreadable file is CLS_E_IO, an unrecognised or damaged one CLS_E_FORMAT. */
cls_status crp_archive_error(struct archive *a, const char *path);
/* Names libarchive reads as archives (.tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .tbz, .tar.xz, .txz,
 * .tar.zst, .tzst, .tar.lz, .tar.lzma, .zip, .7z, .cpio; ASCII case-insensitive). */
int crp_is_archive_name(const char *name);
/* An archive open for reading. Every format and compression libarchive knows is recognised
 * from the content, not the name, and read to its end: a tar must end with its two blocks of
 * zeros, a zip is read through its central directory (the list of entries at its end), so a file
 * cut short, even between two entries, is an error rather than fewer documents. */
typedef struct crp_archive {
    struct archive *a;       /* the entries and their data */
    struct archive *counted; /* whose archive_filter_bytes(-1) are the input's bytes read so far */
    const char *path;        /* for messages; the caller's, kept while the archive is open */
    struct crp_stream *stream; /* a compressed file or a pipe: its bytes pass through here */
    int zip_checked;         /* a zip whose central directory lists the entry at its start */
} crp_archive;
/* Opens path (a file, or a pipe: then never a zip, whose entries are listed at its end); *out
 * is closed with crp_archive_close. An unopenable file or unrecognised content: CLS_E_IO or
 * CLS_E_FORMAT naming path, *out NULL. Also names crp_progress_source's archive. */
cls_status crp_archive_open(const char *path, crp_archive **out);
void crp_archive_close(crp_archive *h);
/* archive_read_next_header with the end checked: *got is 0 at an end that is the archive's own
 * (a tar's end blocks present); a damaged, cut or misread archive is CLS_E_FORMAT naming it. */
cls_status crp_archive_header(crp_archive *h, struct archive_entry **e, int *got);
/* Moves h to its next entry that is read as a file, in archive order: directories, links and
 * other non-regular entries, hard links without data of their own (their content is stored
 * under the name they link to) and entries with a hidden path component (starting with '.',
 * which includes ".." and macOS "._X" resource forks, as the folder walk skips them) are passed
 * over. *name: the entry's path as stored (for messages); *rel: the same without leading "/"
 * and "./", never empty. *got is 0 at the end. A damaged archive: an error naming it. */
cls_status crp_archive_next(crp_archive *h, struct archive_entry **e, const char **name, const char **rel,
                            int *got);

/* ---- Callbacks ------------------------------------------------------------------------------ */

/* Calls fn; a nonzero return becomes CLS_E_ARG, keeping the message the callback set (or
 * "stopped by caller" if it set none). */
cls_status crp_emit_doc(cls_doc_fn fn, void *user, const char *docno, size_t docno_len,
                        const char *text, size_t text_len);
cls_status crp_emit_topic(cls_topic_fn fn, void *user, const char *qid, const char *text);

/* ---- Format readers -------------------------------------------------------------------------- */

/* The line-oriented formats over one open line reader (a file or an archive entry; see
 * crp_read_lines_input): every record of it to fn. Messages name r->path and the line. */
cls_status crp_read_jsonl_lines(cls_corpus_format fmt, crp_lines *r, cls_doc_fn fn, void *user);
cls_status crp_read_trec_lines(crp_lines *r, cls_doc_fn fn, void *user);
cls_status crp_read_smart_lines(crp_lines *r, cls_doc_fn fn, void *user);
/* A folder, archive or single HTML file. */
cls_status crp_read_html(const char *path, cls_doc_fn fn, void *user);
/* Largest plain-file document (CLS_CORPUS_FILES): a longer file is indexed up to this many bytes
 * and counted as truncated; a source or documentation tree's text files are far smaller. */
#define CRP_FILES_MAX_DOC ((size_t)64 << 20)
/* A folder tree, archive or single file of plain text (CLS_CORPUS_FILES; see corpus_files.c). */
cls_status crp_read_files(const char *path, cls_doc_fn fn, void *user);
/* SMART field marker: if line[0..len) is "." + letter, alone or followed by white space, the
 * letter in uppercase ('I', 'T', 'W', ...); else 0. Text lines such as ".5 mm" or ".NET" are
 * not markers. *rest receives what follows the letter on the line. */
int crp_smart_marker(const char *line, size_t len, const char **rest);
/* The record number after ".I": rest[0..n) trimmed, which must be one or more digits. Returns
 * 1 and the digits in *id, *id_len; 0 if malformed. */
int crp_smart_id(const char *rest, size_t n, const char **id, size_t *id_len);
/* Turns HTML in buf[0..len) into plain text in place (the text is never longer than the HTML)
 * and returns the text's length: tags become one space, <script>/<style> contents and comments
 * are dropped, entities are decoded. */
size_t crp_html_to_text(char *buf, size_t len);

/* ASCII white space, as every line-oriented reader treats it. */
static inline int crp_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Whether s[0..n) is empty or white space only. */
static inline int crp_is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!crp_is_space(s[i])) return 0;
    return 1;
}

/* Narrows the range [b, e) of char pointers (const or not) past leading and trailing white
 * space. A macro so one definition serves both pointer types. */
#define CRP_TRIM(b, e)                                                                            \
    do {                                                                                          \
        while ((b) < (e) && crp_is_space(*(b))) (b)++;                                            \
        while ((e) > (b) && crp_is_space((e)[-1])) (e)--;                                         \
    } while (0)

#endif
