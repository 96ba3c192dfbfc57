/* JSON-lines corpora: Pyserini's JsonCollection ({"id", "contents"}) and BEIR's corpus.jsonl
 * ({"_id", "title", "text"}). One object per line, streamed a line at a time so corpora far
 * larger than memory can be indexed; any malformed line stops the read with its line number,
 * because silently skipping documents would change every later internal docID. A file may be
 * plain or .gz, or a tar/zip archive (.tar[.gz|.bz2|.xz|.zst], .tgz, .zip, ...) whose entries
 * are each read as such a file, in archive order (crp_read_lines_input); messages then name
 * "archive:entry:line". */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus/corpus.h"
#include "util/err.h"
#include "util/vec.h"

/* Per-file (or per-entry) state: the line reader plus a reusable buffer for BEIR's title + "\n" + text. */
typedef struct jsonl_state {
    cls_corpus_format fmt;
    crp_lines *r;
    char *joined;
    size_t joined_cap;
    char *printed[CLS_MAX_FIELDS]; /* stored fields that are not strings, as JSON text (cJSON's) */
    size_t nprinted;
} jsonl_state;

/* The stored fields asked for, from the record's top-level keys: a string as it is, null or a
 * missing key as absent, any other value as its compact JSON text. */
static cls_status set_fields(jsonl_state *st, const cJSON *j)
{
    for (size_t i = 0, n = crp_field_count(); i < n; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, crp_field_name(i));
        if (!v || cJSON_IsNull(v)) continue;
        if (cJSON_IsString(v) && v->valuestring) {
            crp_field_set(i, v->valuestring, strlen(v->valuestring));
            continue;
        }
        char *txt = cJSON_PrintUnformatted(v);
        if (!txt) return err_set(CLS_E_NOMEM, "%s:%lu: out of memory", st->r->path, st->r->lineno);
        st->printed[st->nprinted++] = txt;
        crp_field_set(i, txt, strlen(txt));
    }
    return CLS_OK;
}

/* cJSON decodes "\u0000" into a NUL inside its NUL-terminated strings, which would silently cut
 * the document there. Rewriting the escape to "\u0020" (same length, in place) keeps the text
 * whole; a space is what a tokenizer would have made of the NUL anyway. Backslashes occur only
 * inside strings in valid JSON, so pairing them left to right finds exactly the real escapes. */
static void neutralize_nul_escapes(char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\') continue;
        if (s[i + 1] == 'u' && i + 5 < n && memcmp(s + i + 2, "0000", 4) == 0) s[i + 4] = '2';
        i++; /* the escaped character is never the start of another escape */
    }
}

static cls_status bad_line(const jsonl_state *st, const char *reason)
{
    return err_set(CLS_E_FORMAT, "%s:%lu: %s", st->r->path, st->r->lineno, reason);
}

/* The document identifier as text into buf (numbers must be exact integers: a rounded id would
 * silently name another document). */
static cls_status get_id(const jsonl_state *st, const cJSON *j, const char *key, char *numbuf,
                         size_t numcap, const char **id, size_t *id_len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    char why[96];
    if (!v) {
        snprintf(why, sizeof why, "missing \"%s\"", key);
        return bad_line(st, why);
    }
    if (cJSON_IsString(v) && v->valuestring) {
        *id = v->valuestring;
        *id_len = strlen(v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        /* 2^53: beyond it a double no longer holds every integer. */
        if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != (double)(long long)d) {
            snprintf(why, sizeof why, "numeric \"%s\" is not an exact integer (quote it)", key);
            return bad_line(st, why);
        }
        *id_len = (size_t)snprintf(numbuf, numcap, "%lld", (long long)d);
        *id = numbuf;
    } else {
        snprintf(why, sizeof why, "\"%s\" is not a string or number", key);
        return bad_line(st, why);
    }
    if (*id_len == 0) {
        snprintf(why, sizeof why, "empty \"%s\"", key);
        return bad_line(st, why);
    }
    return CLS_OK;
}

/* A required string field. */
static cls_status get_text(const jsonl_state *st, const cJSON *j, const char *key,
                           const char **s)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    char why[96];
    if (!v) {
        snprintf(why, sizeof why, "missing \"%s\"", key);
        return bad_line(st, why);
    }
    if (!cJSON_IsString(v) || !v->valuestring) {
        snprintf(why, sizeof why, "\"%s\" is not a string", key);
        return bad_line(st, why);
    }
    *s = v->valuestring;
    return CLS_OK;
}

static cls_status handle_line(jsonl_state *st, char *line, size_t len, cls_doc_fn fn,
                              void *user)
{
    /* A raw NUL is invalid JSON and would end cJSON's strings early: refuse, don't truncate. */
    if (memchr(line, '\0', len)) return bad_line(st, "NUL byte in line");
    neutralize_nul_escapes(line, len);

    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(line, len, &end, 0);
    if (!j) {
        char why[64];
        snprintf(why, sizeof why, "not valid JSON (column %zu)",
                 end && end >= line ? (size_t)(end - line) + 1 : (size_t)1);
        return bad_line(st, why);
    }
    cls_status s = CLS_OK;
    if (!crp_is_blank(end, len - (size_t)(end - line))) {
        char why[64];
        snprintf(why, sizeof why, "text after the JSON object (column %zu)",
                 (size_t)(end - line) + 1);
        s = bad_line(st, why);
        goto done;
    }
    if (!cJSON_IsObject(j)) {
        s = bad_line(st, "not a JSON object");
        goto done;
    }

    char numbuf[32];
    const char *id, *text;
    size_t id_len;
    if ((s = set_fields(st, j)) != CLS_OK) goto done;
    if (st->fmt == CLS_CORPUS_JSONL) {
        if ((s = get_id(st, j, "id", numbuf, sizeof numbuf, &id, &id_len)) != CLS_OK) goto done;
        if ((s = get_text(st, j, "contents", &text)) != CLS_OK) goto done;
        s = crp_emit_doc(fn, user, id, id_len, text, strlen(text));
        goto done;
    }

    /* BEIR: the title is optional (many BEIR corpora leave it empty) and joins the body with a
     * newline so its last word and the body's first word stay separate terms. */
    if ((s = get_id(st, j, "_id", numbuf, sizeof numbuf, &id, &id_len)) != CLS_OK) goto done;
    if ((s = get_text(st, j, "text", &text)) != CLS_OK) goto done;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "title");
    const char *title = "";
    if (t && !cJSON_IsNull(t)) {
        if (!cJSON_IsString(t) || !t->valuestring) {
            s = bad_line(st, "\"title\" is not a string");
            goto done;
        }
        title = t->valuestring;
    }
    size_t tl = strlen(title), xl = strlen(text);
    if (tl == 0) {
        s = crp_emit_doc(fn, user, id, id_len, text, xl);
        goto done;
    }
    if (!vec_reserve(&st->joined, &st->joined_cap, tl + 1 + xl, 1)) {
        s = err_set(CLS_E_NOMEM, "%s:%lu: out of memory", st->r->path, st->r->lineno);
        goto done;
    }
    memcpy(st->joined, title, tl);
    st->joined[tl] = '\n';
    memcpy(st->joined + tl + 1, text, xl);
    s = crp_emit_doc(fn, user, id, id_len, st->joined, tl + 1 + xl);
done:
    for (size_t i = 0; i < st->nprinted; i++) cJSON_free(st->printed[i]);
    st->nprinted = 0;
    cJSON_Delete(j);
    return s;
}

cls_status crp_read_jsonl_lines(cls_corpus_format fmt, crp_lines *r, cls_doc_fn fn, void *user)
{
    jsonl_state st = {.fmt = fmt, .r = r};
    cls_status s;
    for (;;) {
        size_t len;
        int got;
        if ((s = crp_lines_next(r, &len, &got)) != CLS_OK || !got) break;
        if (crp_is_blank(r->line, len)) continue;
        if ((s = handle_line(&st, r->line, len, fn, user)) != CLS_OK) break;
    }
    free(st.joined);
    return s;
}
