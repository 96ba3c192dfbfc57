/* A search request's JSON: checking what a client sent (every field, every limit, before the
 * request may take a place in the queue) and writing the answer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_internal.h"
#include "util/strset.h"
#include "util/utf8.h"

#define MAX_QID 256 /* bytes of a qid */

void req_free(srv_req *r)
{
    if (!r) return;
    free(r->body);
    cJSON_Delete(r->doc);
    free(r->qid);
    free(r->text);
    free(r->qid_buf);
    free(r->hit_start);
    free(r->docs);
    free(r->scores);
    free(r->first);
    free(r);
}

/* A qid as the batch takes it: 1..MAX_QID bytes, no white space (a TREC run could not hold it). */
static int qid_ok(const char *q, char *err, size_t errlen)
{
    size_t n = strlen(q);
    if (n == 0 || n > MAX_QID || strpbrk(q, " \t\n\r")) {
        snprintf(err, errlen, "a qid must be 1 to %d bytes without white space, not \"%.64s\"", MAX_QID, q);
        return 0;
    }
    return 1;
}

/* "mode" must be one of "or", "and", ...: the names as the library gives them, so that a mode
 * added there is named here without an edit. */
static void mode_error(char *err, size_t errlen)
{
    size_t at = (size_t)snprintf(err, errlen, "\"mode\" must be one of ");
    for (cls_mode m = 0; cls_mode_name(m) && at < errlen; m++)
        at += (size_t)snprintf(err + at, errlen - at, "%s\"%s\"", m ? ", " : "", cls_mode_name(m));
}

long json_nul_string(const char *text, size_t len)
{
    /* cJSON has accepted text, so a double quote outside a string opens one, and a backslash
     * only occurs inside one, escaping the character after it */
    long k = 0;
    int in = 0;
    for (size_t i = 0; i < len; i++) {
        if (!in) {
            if (text[i] == '"') in = 1, k++;
        } else if (text[i] == '"') {
            in = 0;
        } else if (text[i] == '\\') {
            if (len - i > 5 && memcmp(text + i + 1, "u0000", 5) == 0) return k;
            i++;
        }
    }
    return 0;
}

/* Every string of a request, keys included, in document order (the order of json_nul_string's
 * count): UTF-8, and not the one that held a NUL. path names the value being checked. */
typedef struct text_check {
    long nul_at, seen;
    char path[160];
    char *err;
    size_t errlen;
} text_check;

static int check_string(text_check *t, const char *v, int key)
{
    char what[200];
    if (key) snprintf(what, sizeof what, "a field name%s%s", *t->path ? " in " : "", t->path);
    else snprintf(what, sizeof what, "field \"%s\"", t->path);
    if (++t->seen == t->nul_at) {
        snprintf(t->err, t->errlen, "%s holds a NUL character (\\u0000)", what);
        return 0;
    }
    size_t n = strlen(v), i = 0, k;
    while (i < n && (k = utf8_seq((const unsigned char *)v + i, n - i)) != 0) i += k;
    if (i < n) {
        snprintf(t->err, t->errlen, "%s is not UTF-8 (byte 0x%02X at offset %zu)", what, (unsigned char)v[i], i);
        return 0;
    }
    return 1;
}

static int check_value(text_check *t, const cJSON *v)
{
    if (cJSON_IsString(v)) return check_string(t, v->valuestring, 0);
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return 1;
    size_t at = strlen(t->path), i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        if (cJSON_IsObject(v)) {
            if (!check_string(t, c->string ? c->string : "", 1)) return 0;
            snprintf(t->path + at, sizeof t->path - at, "%s%s", at ? "." : "", c->string ? c->string : "");
        } else {
            snprintf(t->path + at, sizeof t->path - at, "[%zu]", i);
        }
        if (!check_value(t, c)) return 0;
        t->path[at] = '\0';
    }
    return 1;
}

/* A qid given twice in one request: its answer would hold two results under one name. Pairwise
 * for the usual few queries, hashed for more. */
static const char *repeated_qid(const srv_req *r)
{
    if (r->nq <= 32) {
        for (size_t i = 1; i < r->nq; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(r->qid[i], r->qid[j]) == 0) return r->qid[i];
        return NULL;
    }
    strset seen = {0};
    const char *dup = NULL;
    for (size_t i = 0; i < r->nq && !dup; i++) {
        int a = strset_add(&seen, r->qid[i], strlen(r->qid[i]), NULL);
        if (a == 0) dup = r->qid[i];
        else if (a < 0) dup = ""; /* out of memory: refused rather than let through unchecked */
    }
    strset_free(&seen);
    return dup;
}

/* A number field within [lo, hi] (whole when whole is set); 0 after writing why. */
static int number_field(const cJSON *v, const char *name, double lo, double hi, int whole, double *out, char *err,
                        size_t errlen)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi ||
        (whole && floor(v->valuedouble) != v->valuedouble)) {
        snprintf(err, errlen, "\"%s\" must be a %s from %g to %g", name, whole ? "whole number" : "number", lo, hi);
        return 0;
    }
    *out = v->valuedouble;
    return 1;
}

int req_from_json(srv_req *r, cJSON *doc, long nul_at, const srv_opts *o, char *err, size_t errlen)
{
    r->doc = doc;
    cls_search_defaults(&r->p);
    r->p.k = 10; /* a page of results, not search's 1000: the answer goes over the wire */
    r->p.deadline_ms = o->deadline_ms;
    r->p.rerank = o->rerank; /* the server's model, unless the request says "rerank": false */
    r->p.rerank_depth = o->rerank_depth;
    if (!cJSON_IsObject(doc)) {
        snprintf(err, errlen, "the body must be a JSON object");
        return 400;
    }
    /* before any field is read or quoted back: a qid or query cut at a NUL would be another one,
     * and bytes that are not UTF-8 would make the answer (or this error) invalid JSON */
    text_check tc = {.nul_at = nul_at, .err = err, .errlen = errlen};
    if (!check_value(&tc, doc)) return 400;
    const cJSON *query = NULL, *queries = NULL, *qid = NULL;
    double v;
    for (const cJSON *f = doc->child; f; f = f->next) {
        const char *n = f->string ? f->string : "";
        if (strcmp(n, "query") == 0) query = f;
        else if (strcmp(n, "queries") == 0) queries = f;
        else if (strcmp(n, "qid") == 0) qid = f;
        else if (strcmp(n, "k") == 0) {
            if (!number_field(f, "k", 1, o->max_k, 1, &v, err, errlen)) return 400;
            r->p.k = (uint32_t)v;
        } else if (strcmp(n, "mode") == 0) {
            if (!cJSON_IsString(f) || cls_mode_parse(f->valuestring, &r->p.mode) != CLS_OK) {
                mode_error(err, errlen);
                return 400;
            }
        } else if (strcmp(n, "k1") == 0) {
            if (!number_field(f, "k1", 0, 100, 0, &v, err, errlen)) return 400;
            r->p.k1 = (float)v;
        } else if (strcmp(n, "b") == 0) {
            if (!number_field(f, "b", 0, 1, 0, &v, err, errlen)) return 400;
            r->p.b = (float)v;
        } else if (strcmp(n, "deadline_ms") == 0) {
            if (!number_field(f, "deadline_ms", 0, 600000, 0, &v, err, errlen)) return 400;
            r->p.deadline_ms = v;
        } else if (strcmp(n, "rerank") == 0) {
            /* a boolean, not a model: a path from a client would open files on the server */
            int on = cJSON_IsTrue(f) || (cJSON_IsString(f) && strcmp(f->valuestring, "true") == 0);
            int off = cJSON_IsFalse(f) || (cJSON_IsString(f) && strcmp(f->valuestring, "false") == 0);
            if (!on && !off) {
                snprintf(err, errlen, "\"rerank\" must be true or false (the server's model: serve --rerank MODEL)");
                return 400;
            }
            if (on && !o->rerank) {
                snprintf(err, errlen, "\"rerank\": true, but this server has no model (serve --rerank MODEL)");
                return 400;
            }
            r->p.rerank = on ? o->rerank : NULL;
        } else {
            snprintf(err, errlen, "unknown field \"%.64s\" (query, queries, qid, k, mode, k1, b, deadline_ms, rerank)", n);
            return 400;
        }
    }
    if (!query == !queries) {
        snprintf(err, errlen, "give \"query\" (one query) or \"queries\" (a list), exactly one of them");
        return 400;
    }
    if (qid && !query) {
        snprintf(err, errlen, "\"qid\" goes with \"query\"; in \"queries\" each entry has its own");
        return 400;
    }
    if (queries) {
        if (!cJSON_IsArray(queries) || !queries->child) {
            snprintf(err, errlen, "\"queries\" must be a non-empty list of {\"qid\", \"query\"} objects");
            return 400;
        }
        int n = cJSON_GetArraySize(queries);
        if ((unsigned)n > o->max_queries) {
            snprintf(err, errlen, "%d queries in one request; at most %u", n, o->max_queries);
            return 413;
        }
        r->nq = (size_t)n;
    } else {
        r->nq = 1;
    }
    if ((double)r->nq * r->p.k > (double)o->max_hits) {
        snprintf(err, errlen, "%zu queries x k %u asks for more than %zu hits in one request", r->nq, r->p.k,
                 o->max_hits);
        return 413;
    }
    r->qid = calloc(r->nq, sizeof *r->qid);
    r->text = calloc(r->nq, sizeof *r->text);
    r->qid_buf = malloc(r->nq * 12);
    if (!r->qid || !r->text || !r->qid_buf) {
        snprintf(err, errlen, "out of memory");
        return 503;
    }
    size_t i = 0;
    for (const cJSON *e = queries ? queries->child : doc; e; e = queries ? e->next : NULL, i++) {
        const cJSON *t = query, *q = qid;
        if (queries) {
            if (!cJSON_IsObject(e)) {
                snprintf(err, errlen, "queries[%zu] must be an object {\"qid\", \"query\"}", i);
                return 400;
            }
            t = q = NULL;
            for (const cJSON *f = e->child; f; f = f->next) {
                const char *n = f->string ? f->string : "";
                if (strcmp(n, "query") == 0) t = f;
                else if (strcmp(n, "qid") == 0) q = f;
                else {
                    snprintf(err, errlen, "queries[%zu]: unknown field \"%.64s\" (qid, query)", i, n);
                    return 400;
                }
            }
        }
        if (!t || !cJSON_IsString(t)) {
            snprintf(err, errlen, "%s\"query\" must be a string", queries ? "each entry's " : "");
            return 400;
        }
        if (strlen(t->valuestring) > o->max_query_len) {
            snprintf(err, errlen, "a query of %zu bytes; at most %zu", strlen(t->valuestring), o->max_query_len);
            return 413;
        }
        r->text[i] = t->valuestring;
        if (q) {
            if (!cJSON_IsString(q)) {
                snprintf(err, errlen, "\"qid\" must be a string");
                return 400;
            }
            if (!qid_ok(q->valuestring, err, errlen)) return 400;
            r->qid[i] = q->valuestring;
        } else {
            snprintf(r->qid_buf + 12 * i, 12, "%zu", i + 1);
            r->qid[i] = r->qid_buf + 12 * i;
        }
        /* a bad term^W here, not in the batch, where it would fail the other requests batched with it */
        if (cls_query_check(r->qid[i], r->text[i]) != CLS_OK) {
            snprintf(err, errlen, "%s", cls_last_error());
            return 400;
        }
    }
    const char *dup = repeated_qid(r);
    if (dup && !*dup) {
        snprintf(err, errlen, "out of memory");
        return 503;
    }
    if (dup) {
        snprintf(err, errlen, "query id '%s' is given twice: query ids must be unique", dup);
        return 400;
    }
    return 0;
}

/* A score as `clsearch search` writes it in the run and with --json (six decimals). */
static double run_score(float score)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", (double)score);
    return strtod(buf, NULL);
}

/* Milliseconds to the microsecond. */
static double ms(double seconds) { return round(seconds * 1e6) / 1e3; }

/* A hit's stored fields, as `clsearch search --json` prints them: every field the index stores,
 * {"name": value}, null where the document has none, text made valid UTF-8. */
static int add_fields(cJSON *h, const cls_index *idx, uint32_t doc, char **buf, size_t *cap)
{
    size_t nf = cls_index_field_count(idx);
    if (nf == 0) return 1;
    cJSON *fo = cJSON_AddObjectToObject(h, "fields");
    int ok = fo != NULL;
    for (size_t k = 0; ok && k < nf; k++) {
        size_t len;
        const char *name = cls_index_field_name(idx, (uint32_t)k);
        const char *v = cls_index_field(idx, doc, (uint32_t)k, &len), *t = v ? utf8_json(v, len, buf, cap) : NULL;
        ok = v ? t && cJSON_AddStringToObject(fo, name, t) : cJSON_AddNullToObject(fo, name) != NULL;
    }
    return ok;
}

/* A string from the index (a docno: whatever bytes the collection had) as valid UTF-8. */
static int add_text(cJSON *o, const char *name, const char *v, char **buf, size_t *cap)
{
    const char *t = utf8_json(v, strlen(v), buf, cap);
    return t && cJSON_AddStringToObject(o, name, t);
}

char *req_format(const srv_req *r, const cls_index *idx, double total_s, size_t *len)
{
    cJSON *o = cJSON_CreateObject(), *results = cJSON_AddArrayToObject(o, "results");
    int ok = o && results;
    char *utf8 = NULL; /* a field value mended for JSON, reused from hit to hit */
    size_t cap = 0;
    for (size_t q = 0; q < r->nq && ok; q++) {
        cJSON *one = cJSON_CreateObject(), *hits = NULL;
        if (one && !cJSON_AddItemToArray(results, one)) cJSON_Delete(one), one = NULL;
        ok = one && cJSON_AddStringToObject(one, "qid", r->qid[q]) && (hits = cJSON_AddArrayToObject(one, "hits"));
        for (size_t j = r->hit_start[q]; ok && j < r->hit_start[q + 1]; j++) {
            cJSON *h = cJSON_CreateObject();
            if (h && !cJSON_AddItemToArray(hits, h)) cJSON_Delete(h), h = NULL;
            ok = h &&
                 cJSON_AddNumberToObject(h, "rank", (double)(j - r->hit_start[q] + 1)) &&
                 add_text(h, "docno", cls_index_docno(idx, r->docs[j]), &utf8, &cap) &&
                 cJSON_AddNumberToObject(h, "score", run_score(r->scores[j])) &&
                 (!r->first || cJSON_AddNumberToObject(h, "first_score", run_score(r->first[j]))) &&
                 add_fields(h, idx, r->docs[j], &utf8, &cap);
        }
    }
    free(utf8);
    ok = ok && cJSON_AddNumberToObject(o, "k", r->p.k) && cJSON_AddStringToObject(o, "mode", cls_mode_name(r->p.mode)) &&
         cJSON_AddNumberToObject(o, "batch_queries", (double)r->batch_queries) &&
         cJSON_AddNumberToObject(o, "queue_ms", ms(r->queue_s)) && cJSON_AddNumberToObject(o, "search_ms", ms(r->search_s)) &&
         cJSON_AddNumberToObject(o, "total_ms", ms(total_s)) &&
         (!r->first || cJSON_AddBoolToObject(o, "rerank", 1)) &&
         (!(r->p.deadline_ms > 0) ||
          (cJSON_AddNumberToObject(o, "deadline_ms", r->p.deadline_ms) && cJSON_AddBoolToObject(o, "late", r->late)));
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (text) *len = strlen(text);
    return text;
}

char *req_error_json(int status, const char *msg, size_t *len)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL, *buf = NULL;
    size_t cap = 0;
    /* a message quotes what the client sent, cut to a length that may split a character */
    if (o && add_text(o, "error", msg, &buf, &cap) && cJSON_AddNumberToObject(o, "status", status))
        text = cJSON_PrintUnformatted(o);
    free(buf);
    cJSON_Delete(o);
    if (text) *len = strlen(text);
    return text;
}
