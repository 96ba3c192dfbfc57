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

struct archive; /* libarchive's handle; only corpus*.c include <archive.h> */

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

/* ---- Line reader ------------------------------------------------------------------------- */

/* Reads a file line by line without holding more than one line in memory. A name ending in
 * ".gz" is decompressed through libarchive (raw format + gzip filter); anything else goes
 * through getline. Lines may be arbitrarily long. */
typedef struct crp_lines {
    const char *path;       /* for messages; not owned */
    FILE *f;                /* plain file, or NULL */
    struct archive *a;      /* compressed file, or NULL */
    char *line;             /* current line, NUL-terminated, newline stripped */
    size_t cap;             /* allocated size of line */
    char *chunk;            /* decompressed bytes not yet split into lines (archive only) */
    size_t chunk_len, chunk_pos;
    int eof;
    unsigned long lineno;   /* 1-based number of the line last returned */
} crp_lines;

/* Opens path; CLS_E_IO naming the path if it cannot be opened. */
cls_status crp_lines_open(crp_lines *r, const char *path);
/* Next line into r->line (length *len, trailing "\n" or "\r\n" removed, NUL-terminated; the
 * line may itself contain NUL bytes). *got is 0 at end of file. */
cls_status crp_lines_next(crp_lines *r, size_t *len, int *got);
void crp_lines_close(crp_lines *r);

/* ---- Folder walk -------------------------------------------------------------------------- */

/* Called per file: full is the path to open, rel the path relative to the walked folder (for a
 * single file, its base name). A status other than CLS_OK stops the walk and is returned. */
typedef cls_status (*crp_file_fn)(void *user, const char *full, const char *rel);
/* If path is a folder: every regular file below it (recursively; names starting with '.' and
 * symbolic links to folders are skipped; a link to a file counts as that file) for which
 * want(name) is nonzero (NULL: all), in byte order of the relative path. Otherwise path itself,
 * whatever its name. Every corpus read goes through exactly one crp_walk per input path: it is
 * where the input's total size (the sum of the wanted files' sizes) and the bytes of finished
 * files are counted for cls_corpus_read_ex's progress. */
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

/* ---- libarchive ---------------------------------------------------------------------------- */

/* Maps the last libarchive failure on a to a status and message naming path: a missing or
 * unreadable file is CLS_E_IO, an unrecognised or damaged one CLS_E_FORMAT. */
cls_status crp_archive_error(struct archive *a, const char *path);

/* ---- Callbacks ------------------------------------------------------------------------------ */

/* Calls fn; a nonzero return becomes CLS_E_ARG, keeping the message the callback set (or
 * "stopped by caller" if it set none). */
cls_status crp_emit_doc(cls_doc_fn fn, void *user, const char *docno, size_t docno_len,
                        const char *text, size_t text_len);
cls_status crp_emit_topic(cls_topic_fn fn, void *user, const char *qid, const char *text);

/* ---- Format readers -------------------------------------------------------------------------- */

/* One JSONL or BEIR file (plain or .gz). */
cls_status crp_read_jsonl_file(cls_corpus_format fmt, const char *path, cls_doc_fn fn,
                               void *user);
/* A folder, archive or single HTML file. */
cls_status crp_read_html(const char *path, cls_doc_fn fn, void *user);
/* Largest plain-file document (CLS_CORPUS_FILES): a longer file is indexed up to this many bytes
 * and counted as truncated; a source or documentation tree's text files are far smaller. */
#define CRP_FILES_MAX_DOC ((size_t)64 << 20)
/* A folder tree, archive or single file of plain text (CLS_CORPUS_FILES; see corpus_files.c). */
cls_status crp_read_files(const char *path, cls_doc_fn fn, void *user);
/* One TREC SGML file (plain or .gz) of <DOC> ... </DOC> documents. */
cls_status crp_read_trec_file(const char *path, cls_doc_fn fn, void *user);
/* One SMART file (plain or .gz) of ".I n" records (Cranfield, MED, CISI). */
cls_status crp_read_smart_file(const char *path, cls_doc_fn fn, void *user);
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
