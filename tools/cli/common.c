/* The helpers every command shares (cli.h): its messages and exit statuses, strict number
 * parsing, the guard on output files, and the option groups several commands take. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

const char *const prog = "clsearch";
char cur_cmd[64];

int fail(cls_status s, const char *what)
{
    const char *detail = cls_last_error();
    fprintf(stderr, "%s: %s: %s%s%s\n", prog, what, cls_status_str(s), *detail ? ": " : "", detail);
    return 1;
}

int index_whole(const cls_index *idx, const char *what)
{
    cls_status s = cls_index_intact(idx);
    return s == CLS_OK || fail(s, what) == 0;
}

int fail_reading(const cls_index *idx, cls_status s, const char *what)
{
    cls_status w = cls_index_intact(idx);
    return fail(w != CLS_OK ? w : s, what);
}

int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    if (*cur_cmd) fprintf(stderr, "\n(see '%s %s --help')\n", prog, cur_cmd);
    else fprintf(stderr, "\n(see '%s help')\n", prog);
    return 2;
}

int bad_option(int argc, char **argv, int opt)
{
    char name[256];
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    if (optopt > 0 && optopt < 256 && !(arg[0] == '-' && arg[1] == '-')) snprintf(name, sizeof name, "-%c", optopt);
    else snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    char msg[400];
    snprintf(msg, sizeof msg, "%s: %s '%%s'", cur_cmd, opt == ':' ? "a value is missing after" : "unknown option");
    return usage_error(msg, name);
}

int guard_output(const char *what, const char *path, of_kind kind, char *const *inputs, int ninputs)
{
    if (of_guard(path, kind, inputs, ninputs) == CLS_OK) return 0;
    fprintf(stderr, "%s: %s: %s\n", prog, what, cls_last_error());
    return 1;
}

int put_json_line(FILE *f, cJSON *obj)
{
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    int ok = text && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    free(text);
    cJSON_Delete(obj);
    return ok;
}

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void fmt_duration(char *buf, size_t n, double s)
{
    unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
}

int parse_u64(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
    if (!s || !*s || *s == '-' || *s == '+') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || errno || *end) return 0;
    *out = (float)v;
    return 1;
}

int name_lookup(const name_value *table, size_t n, const char *name, int *value)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0) {
            *value = table[i].value;
            return 1;
        }
    return 0;
}

int split_fields(const char *opt, const char *list, char **buf, const char **names, size_t *n)
{
    *n = 0;
    *buf = NULL;
    if (strcmp(list, "none") == 0) return 0;
    if (!(*buf = strdup(list))) return fail(CLS_E_NOMEM, opt);
    for (char *p = *buf, *comma;; p = comma + 1) {
        comma = strchr(p, ',');
        if (comma) *comma = '\0';
        char msg[300];
        snprintf(msg, sizeof msg, "%s: '%%s' is not a list of field names separated by commas (or none)", opt);
        if (!*p || *n == CLS_MAX_FIELDS) return usage_error(msg, list);
        for (size_t j = 0; j < *n; j++)
            if (strcmp(names[j], p) == 0) {
                snprintf(msg, sizeof msg, "%s: field '%%s' is named twice", opt);
                return usage_error(msg, p);
            }
        names[(*n)++] = p;
        if (!comma) return 0;
    }
}

int analyzer_option(int opt, cls_analyzer_opts *an)
{
    switch (opt) {
    case OPT_NO_STEM: an->stem = 0; return 1;
    case OPT_NO_STOPWORDS: an->stopwords = 0; return 1;
    case OPT_NO_LOWERCASE: an->lowercase = 0; return 1;
    case OPT_NO_POSSESSIVE: an->possessive = 0; return 1;
    default: return 0;
    }
}

int placement_option(const char *cmd, const char *arg, cls_engine_opts *eo)
{
    if (cls_placement_parse(arg, &eo->placement) == CLS_OK) return 0;
    char msg[200];
    snprintf(msg, sizeof msg, "%s: --placement takes auto, replicate or shard, not '%%s'", cmd);
    return usage_error(msg, arg);
}

int k_option(const char *cmd, const char *arg, uint32_t *k)
{
    unsigned long long v;
    if (parse_u64(arg, 1, CLS_MAX_K, &v)) {
        *k = (uint32_t)v;
        return 0;
    }
    char msg[200];
    snprintf(msg, sizeof msg, "%s: k must be a whole number from 1 to %u, not '%%s'", cmd, CLS_MAX_K);
    return usage_error(msg, arg);
}

int mode_option(const char *cmd, const char *arg, cls_mode *mode)
{
    if (cls_mode_parse(arg, mode) == CLS_OK) return 0;
    char msg[200];
    snprintf(msg, sizeof msg, "%s: %%s", cmd);
    return usage_error(msg, cls_last_error());
}

int k1_option(const char *cmd, const char *arg, float *k1)
{
    if (parse_float(arg, k1) && *k1 >= 0 && *k1 <= 100) return 0;
    char msg[200];
    snprintf(msg, sizeof msg, "%s: --k1 takes a number from 0 to 100, not '%%s'", cmd);
    return usage_error(msg, arg);
}

int b_option(const char *cmd, const char *arg, float *b)
{
    if (parse_float(arg, b) && *b >= 0 && *b <= 1) return 0;
    char msg[200];
    snprintf(msg, sizeof msg, "%s: --b takes a number from 0 to 1, not '%%s'", cmd);
    return usage_error(msg, arg);
}

int device_mem_option(const char *cmd, const char *arg, cls_engine_opts *eo)
{
    if (cls_parse_bytes(arg, &eo->device_mem) == CLS_OK && eo->device_mem != 0) return 0;
    char msg[200];
    snprintf(msg, sizeof msg, "%s: --device-mem takes a byte count above 0 (digits, then optionally K, M, G or T), "
             "not '%%s'", cmd);
    return usage_error(msg, arg);
}
