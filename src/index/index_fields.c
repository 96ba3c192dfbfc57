/* Stored fields and the collection record (format version 4, sections 9 to 11; docs/FORMAT.md).
 *
 * Section 9 records where the collection came from (its format and roots) and names the fields;
 * sections 10 and 11 hold every document's values, one field after another: per field N + 1
 * offsets into the values, each present value followed by a NUL byte so that a reader hands out
 * a pointer into the mapping as a C string, an absent one taking no byte at all (so absent and
 * empty differ). A lookup is two offsets and one byte of bounds checking: opening checks the
 * sections' checksums and each field's range, not each document, so that opening stays in time
 * proportional to the number of fields; cls_index_check and recode check every document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "util/err.h"
#include "util/mapwatch.h"

int idx_field_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > IDX_MAX_FIELD_NAME) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7F || c == ' ' || c == ',') return 0;
    }
    return 1;
}

cls_status idx_collection_make(const char *format, const char *const *roots, uint32_t num_roots,
                               const char *const *names, uint32_t num_fields, char **out, uint64_t *len)
{
    if (!format) format = "";
    uint64_t n = 8 + strlen(format) + 1;
    for (uint32_t i = 0; i < num_roots; i++) n += strlen(roots[i]) + 1;
    for (uint32_t i = 0; i < num_fields; i++) n += strlen(names[i]) + 1;
    char *p = malloc((size_t)n);
    if (!p) return err_set(CLS_E_NOMEM, "out of memory for the collection record");
    memcpy(p, &num_roots, 4); /* little-endian hosts only, as the whole file (abi.h) */
    memcpy(p + 4, &num_fields, 4);
    uint64_t at = 8;
    size_t k = strlen(format) + 1;
    memcpy(p + at, format, k);
    at += k;
    for (uint32_t i = 0; i < num_roots + num_fields; i++) {
        const char *s = i < num_roots ? roots[i] : names[i - num_roots];
        k = strlen(s) + 1;
        memcpy(p + at, s, k);
        at += k;
    }
    *out = p;
    *len = n;
    return CLS_OK;
}

const char *idx_collection_read(const void *data, uint64_t size, idx_collection *c)
{
    memset(c, 0, sizeof *c);
    const char *p = data;
    if (size < 9) return "shorter than its counts and format name";
    uint32_t R, F;
    memcpy(&R, p, 4);
    memcpy(&F, p + 4, 4);
    if (F > CLS_MAX_FIELDS) return "more fields than a build reads";
    /* every string takes at least its NUL: the counts cannot exceed the bytes */
    if ((uint64_t)R + F + 1 > size - 8) return "counts larger than the record";
    if (p[size - 1] != '\0') return "last string not terminated";
    const char **strs = NULL;
    if (R + F > 0 && !(strs = malloc(((size_t)R + F) * sizeof *strs))) return "out of memory reading it";
    const char *s = p + 8, *end = p + size;
    uint64_t k = 0;
    const char *format = s;
    s += strlen(s) + 1; /* terminated: the last byte is NUL */
    for (; s < end; s += strlen(s) + 1) {
        if (k == (uint64_t)R + F) {
            free(strs);
            return "more strings than its counts";
        }
        strs[k++] = s;
    }
    if (k != (uint64_t)R + F) {
        free(strs);
        return "fewer strings than its counts";
    }
    for (uint32_t i = 0; i < R + F; i++) {
        const char *why = NULL;
        if (i < R && !*strs[i]) why = "an empty root";
        if (i >= R && !idx_field_name_ok(strs[i], strlen(strs[i]))) why = "a field name that is not one";
        for (uint32_t j = R; !why && i >= R && j < i; j++)
            if (strcmp(strs[i], strs[j]) == 0) why = "a field named twice";
        if (why) {
            free(strs);
            return why;
        }
    }
    c->format = format;
    c->num_roots = R;
    c->num_fields = F;
    c->roots = strs;
    c->names = strs ? strs + R : NULL;
    return NULL;
}

void idx_collection_free(idx_collection *c)
{
    free(c->roots);
    c->roots = c->names = NULL;
}

const char *idx_fields_problem(const uint64_t *off, const char *blob, uint64_t blob_len, uint32_t N, uint32_t F,
                               uint32_t *field, uint32_t *doc, const char **section)
{
    uint64_t end = 0;
    *field = 0;
    *doc = N;
    *section = "field-offsets";
    for (uint32_t f = 0; f < F; f++) {
        const uint64_t *o = off + (uint64_t)f * ((uint64_t)N + 1);
        *field = f;
        *doc = N;
        if (o[0] != end) return "the field's values do not start where the previous field's end";
        for (uint32_t d = 0; d < N; d++) {
            uint64_t a = o[d], b = o[d + 1];
            *doc = d;
            if (b < a || b > blob_len) return "offsets out of order or out of bounds";
            if (b > a && memchr(blob + a, '\0', (size_t)(b - a)) != blob + b - 1) {
                *section = "field-values";
                return "value not followed by its NUL, or holding one";
            }
        }
        end = o[N];
    }
    *doc = N;
    if (end != blob_len) return "values do not end where the section does";
    return NULL;
}

cls_status idx_verify_fields(const cls_index *x)
{
    uint32_t f, d;
    const char *section;
    if (x->coll.num_fields == 0) return CLS_OK; /* opening saw no values then */
    const char *what = idx_fields_problem(x->field_off, x->field_blob, x->field_blob_len, x->num_docs,
                                          x->coll.num_fields, &f, &d, &section);
    if (!what) return idx_intact(x, CLS_OK);
    cls_status s;
    if (d < x->num_docs)
        s = err_set(CLS_E_CORRUPT, "%s: index file damaged in section '%s': field '%s', document %u ('%s'): %s",
                    x->path, section, x->coll.names[f], d, cls_index_docno(x, d), what);
    else
        s = err_set(CLS_E_CORRUPT, "%s: index file damaged in section '%s': field '%s': %s", x->path, section,
                    x->coll.names[f], what);
    return idx_intact(x, s); /* zeros where the file was cut are not damage */
}

/* ---- API ---------------------------------------------------------------------------------- */

uint32_t cls_index_field_count(const cls_index *x) { return x ? x->coll.num_fields : 0; }

const char *cls_index_field_name(const cls_index *x, uint32_t field)
{
    return x && field < x->coll.num_fields ? x->coll.names[field] : NULL;
}

cls_status cls_index_field_find(const cls_index *x, const char *name, uint32_t *field)
{
    if (!x || !name || !field) return err_set(CLS_E_ARG, "cls_index_field_find: NULL argument");
    for (uint32_t f = 0; f < x->coll.num_fields; f++)
        if (strcmp(x->coll.names[f], name) == 0) {
            *field = f;
            return CLS_OK;
        }
    if (x->coll.num_fields == 0)
        return err_set(CLS_E_ARG, "%s stores no field '%s': it stores no fields at all", x->path, name);
    char have[1024];
    size_t at = 0;
    have[0] = '\0';
    for (uint32_t f = 0; f < x->coll.num_fields && at + 1 < sizeof have; f++) {
        int k = snprintf(have + at, sizeof have - at, "%s%s", f ? ", " : "", x->coll.names[f]);
        if (k < 0) break;
        at += (size_t)k;
    }
    return err_set(CLS_E_ARG, "%s stores no field '%s' (it stores %s)", x->path, name, have);
}

const char *cls_index_field(const cls_index *x, uint32_t doc, uint32_t field, size_t *len)
{
    if (len) *len = 0;
    if (!x || doc >= x->num_docs || field >= x->coll.num_fields) return NULL;
    const uint64_t *o = x->field_off + (uint64_t)field * ((uint64_t)x->num_docs + 1) + doc;
    uint64_t a = o[0], b = o[1];
    /* absent, or (a file forged with consistent checksums) offsets that cannot be a value */
    if (b <= a || b > x->field_blob_len || x->field_blob[b - 1] != '\0') return NULL;
    if (len) *len = (size_t)(b - a - 1);
    return x->field_blob + a;
}

const char *cls_index_collection(const cls_index *x) { return x && x->coll.format ? x->coll.format : ""; }

uint32_t cls_index_root_count(const cls_index *x) { return x ? x->coll.num_roots : 0; }

const char *cls_index_root(const cls_index *x, uint32_t i)
{
    return x && i < x->coll.num_roots ? x->coll.roots[i] : NULL;
}
