/* Output files the command writes, and its benchmarks and generators: the rules that keep an
 * output from destroying data (of_guard), and the writing itself, through a temporary file
 * beside the target that is renamed over it only when whole (of_open, of_commit), so that a
 * failed or interrupted write leaves the old file as it was and no partial one.
 *
 * The rules, before any work: the folder exists and is writable and the path is not a folder;
 * the path is not one of the command's inputs (the same file by device and inode, whatever the
 * name); an existing regular file there is writable (a read-only file is never replaced) and is
 * of the kind written, or empty. --force (of_set_force) lifts the input and kind rules, never
 * the permission. Devices, pipes and /dev/null are written through and not judged.
 *
 * In the library's objects for the command and the static libraries beside it (gen/, bench/);
 * the library itself calls none of it. */
#ifndef CLS_OUTFILE_H
#define CLS_OUTFILE_H

#include <stdio.h>

#include "clsearch.h"

/* What is written, to tell whether an existing file at the path may be replaced. */
typedef enum of_kind {
    OF_INDEX,  /* a clsearch index */
    OF_RUN,    /* a TREC run, or search --json's lines */
    OF_CIFF,   /* a CIFF file */
    OF_TOPICS, /* tab-separated topics */
    OF_JSONL,  /* JSON lines: generate's corpus.jsonl, the benchmarks' --json */
    OF_TUNING, /* clsearch tune's tuning file */
    OF_FEATURES, /* clsearch features' SVMlight lines, after their "# clsearch features" head */
    OF_SCORES    /* clsearch predict's scores: a number a line */
} of_kind;

/* --force for every later of_guard (the command sets it once from its arguments). */
void of_set_force(int force);
int of_forced(void);

/* CLS_OK when path may be written as kind by a command reading inputs[0..ninputs) (NULL
 * entries skipped), else CLS_E_IO with the reason in cls_last_error(), naming path. */
cls_status of_guard(const char *path, of_kind kind, char *const *inputs, int ninputs);

/* 1 when path is absent, not a regular file, empty, or holds what kind's writer writes; else 0
 * (what of_guard refuses without --force). */
int of_holds(const char *path, of_kind kind);

/* A file being written: f receives the bytes; tmp is the temporary file (NULL when the target
 * is a device or a pipe, written in place). */
typedef struct of_file {
    FILE *f;
    char *tmp;
    char *final;
} of_file;

/* Opens path for writing: a temporary file beside it (mode 0666 less the umask, removed on
 * SIGINT, SIGTERM or SIGHUP and at exit until committed), holding already a copy of the
 * existing file when append is set; a symbolic link's target is the one replaced. CLS_E_IO
 * naming path when it cannot. */
cls_status of_open(of_file *o, const char *path, int append);
/* Flushes, checks every write (a full disk: CLS_E_IO naming path; CLSEARCH_FAULT's write faults
 * count one here), closes and renames over the target; on failure removes the temporary file
 * and leaves the target as it was. o is released either way. */
cls_status of_commit(of_file *o);
/* Abandons the write: the temporary file is removed, the target untouched. */
void of_discard(of_file *o);

#endif
