/* What the files of the command (tools/cli/) share: the commands' entry points, which main.c's
 * table names, and the helpers every command uses to report, parse and guard its output
 * (common.c). Private to the command; the library's API is include/clsearch.h. */
#ifndef CLS_CLI_H
#define CLS_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include <cJSON.h>

#include "clsearch.h"
#include "util/outfile.h"

/* ---- the commands (argv[0] is the command's name) ------------------------------------------ */

int cmd_devices(int argc, char **argv); /* inspect.c */
int cmd_stats(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_index(int argc, char **argv); /* index.c */
int cmd_recode(int argc, char **argv);
int cmd_shard(int argc, char **argv);    /* shard.c */
int cmd_search(int argc, char **argv);   /* search.c */
int cmd_features(int argc, char **argv); /* features.c */
int cmd_generate(int argc, char **argv); /* generate.c */
int cmd_predict(int argc, char **argv);  /* predict.c */
int cmd_ciff_import(int argc, char **argv); /* ciff.c */
int cmd_ciff_export(int argc, char **argv);
int cmd_serve(int argc, char **argv); /* serve.c; without the server, says so */
int cmd_bench_serve(int argc, char **argv);

/* ---- reporting ------------------------------------------------------------------------------ */

extern const char *const prog; /* "clsearch", the prefix of every message */
extern char cur_cmd[64];       /* the command running, for "see 'clsearch CMD --help'" */

/* "clsearch: WHAT: STATUS: DETAIL" from s and cls_last_error(); returns 1, the failure status. */
int fail(cls_status s, const char *what);
/* 1 while the index file is as long as when it was opened, else says why not (the file shrank
 * under its mapping: what was read of it since may be zeros, cls_index_intact) and 0. */
int index_whole(const cls_index *idx, const char *what);
/* fail(s, what), unless the index file shrank meanwhile: then that, which is why (an engine
 * that read zeros where the file was cut may report something else first). */
int fail_reading(const cls_index *idx, cls_status s, const char *what);
/* "clsearch: " fmt with arg, and where to read the usage; returns 2, the bad-usage status. */
int usage_error(const char *fmt, const char *arg);
/* The usage error of an option getopt_long refused (its optstring starts with ':', opterr is 0):
 * ':' an option without its value, '?' an unknown option. */
int bad_option(int argc, char **argv, int opt);
/* What keeps an output from destroying data (util/outfile.h, of_guard: the folder, the inputs,
 * a read-only file, a file of another kind, --force), before any work. Returns 0 when path may
 * be written, else 1 after the message. */
int guard_output(const char *what, const char *path, of_kind kind, char *const *inputs, int ninputs);
/* A set of document-range shards (shard.c): the names OUT.0 .. OUT.<n-1>, cap bytes apart in
 * one buffer the caller frees, each checked as guard_output checks one output (and refused when
 * it exists as anything but a file), before any work; NULL after the message. */
char *shard_set_names(const char *what, const char *out, uint32_t n, char *const *inputs, int ninputs, size_t *cap);
/* The whole index idx cut into n shards (cls_index_shard_bounds), written as a set to names
 * (shard_set_names): every file to its temporary name first, all renamed only once all are
 * whole, so a failure leaves each name as it was. -v: each shard's documents. 0, or 1 after
 * the message. */
int shard_set_write(const cls_index *idx, const char *what, const char *names, size_t cap, uint32_t n, int verbose);
/* Prints obj as one line and frees it; 0 when out of memory or the write fails. */
int put_json_line(FILE *f, cJSON *obj);

/* ---- parsing -------------------------------------------------------------------------------- */

double now(void); /* seconds, monotonic */
/* "m:ss" or "h:mm:ss". */
void fmt_duration(char *buf, size_t n, double s);
/* Strict unsigned parse: digits only, within [lo, hi]; 0 when s is not such a number. */
int parse_u64(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out);
/* A decimal number as strtod reads it, the whole of s; 0 when s is not one. */
int parse_float(const char *s, float *out);

/* A name and the value it stands for: the formats an option takes by name. */
typedef struct name_value {
    const char *name;
    int value;
} name_value;
/* 1 and *value when name is in table[0..n), else 0. */
int name_lookup(const name_value *table, size_t n, const char *name, int *value);

/* A list of field names as --store and --fields take it ("title,url", or "none") into names[]
 * (pointing into *buf, which the caller frees); 0, or the usage error's exit status. */
int split_fields(const char *opt, const char *list, char **buf, const char **names, size_t *n);

/* ---- option groups -------------------------------------------------------------------------- */

/* The analyzer's switches (index, ciff-import): their long options, codes past any character so
 * that they stay apart from each command's own. */
enum { OPT_NO_STEM = 256, OPT_NO_STOPWORDS, OPT_NO_LOWERCASE, OPT_NO_POSSESSIVE };
#define CLI_ANALYZER_OPTIONS                                                                               \
    {"no-stem", no_argument, 0, OPT_NO_STEM}, {"no-stopwords", no_argument, 0, OPT_NO_STOPWORDS},         \
        {"no-lowercase", no_argument, 0, OPT_NO_LOWERCASE}, {"no-possessive", no_argument, 0, OPT_NO_POSSESSIVE}
/* 1 when opt is one of them (and that switch is off in an), else 0. */
int analyzer_option(int opt, cls_analyzer_opts *an);

/* --device-mem BYTES (search, serve): 0, or the usage error's status naming the command. */
int device_mem_option(const char *cmd, const char *arg, cls_engine_opts *eo);
/* --placement: eo->placement, or a usage error's exit status. */
int placement_option(const char *cmd, const char *arg, cls_engine_opts *eo);
/* A search's parameters as search and features take them: -k, -m, --k1, --b (0, or the usage
 * error naming cmd). */
int k_option(const char *cmd, const char *arg, uint32_t *k);
int mode_option(const char *cmd, const char *arg, cls_mode *mode);
int k1_option(const char *cmd, const char *arg, float *k1);
int b_option(const char *cmd, const char *arg, float *b);

#endif
