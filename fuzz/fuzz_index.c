/* libFuzzer target: index open, check and search on the reference engine. An index that opens
 * and passes cls_index_check is searched in every mode with the queries below (words of the
 * seed indexes and words of no index), and its stored fields and docnos are read. Before it is
 * written, the input's checksums are recomputed (repair below) where its section table lets
 * them be: a mutation would otherwise stop at the first checksum, and a damaged file whose
 * checksums were made to match reaches the same code, so what is found behind them is a real
 * bug. The repair is part of the harness, so the regression inputs replay the same way in the
 * normal builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "clsearch.h"
#include "fuzz/fuzz_common.h"
#include "index/checksum.h"
#include "index/index.h"

/* Sets every checksum of the index image buf that its header and table allow: each section
 * lying inside buf, then the table's and the header's. */
static void repair(uint8_t *buf, size_t size)
{
    idx_header h;
    if (size < sizeof h) return;
    memcpy(&h, buf, sizeof h);
    unsigned ns = h.num_sections;
    if (ns == 0 || ns > IDX_NSECTIONS || size < sizeof h + ns * sizeof(idx_section_entry)) return;
    idx_section_entry t[IDX_NSECTIONS];
    memcpy(t, buf + sizeof h, ns * sizeof *t);
    for (unsigned i = 0; i < ns; i++) {
        if (t[i].offset > size || t[i].size > size - t[i].offset) continue;
        ck_part part = {buf + t[i].offset, t[i].size};
        uint64_t sum;
        if (ck_sums(&part, 1, 1, &sum) == CLS_OK) t[i].xxh = sum;
    }
    memcpy(buf + sizeof h, t, ns * sizeof *t);
    h.table_xxh = XXH64(t, ns * sizeof *t, 0);
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(buf, &h, sizeof h);
}

static const char *const queries[] = {"alpha beta", "gamma", "delta alpha epsilon", "zeta unknownword",
                                      "the of and", "retrieval information system"};

static void search(const cls_index *idx)
{
    cls_engine *e;
    if (cls_engine_create(idx, "ref", &e) != CLS_OK) return;
    cls_batch *b;
    cls_results *r;
    if (cls_batch_create(idx, &b) == CLS_OK) {
        for (size_t i = 0; i < sizeof queries / sizeof *queries; i++) {
            char qid[16];
            snprintf(qid, sizeof qid, "q%zu", i);
            cls_batch_add(b, qid, queries[i]);
        }
        if (cls_results_create(&r) == CLS_OK) {
            for (int m = 0; m < CLS_NUM_MODES; m++) {
                cls_search_params p;
                cls_search_defaults(&p);
                p.k = 10;
                p.mode = (cls_mode)m;
                cls_engine_search(e, b, &p, r);
            }
            cls_results_free(r);
        }
        cls_batch_free(b);
    }
    cls_engine_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    repair(copy, size);
    const char *path = fz_write(copy, size, ".idx");
    free(copy);
    cls_index *idx;
    if (path && cls_index_open(path, &idx) == CLS_OK) {
        if (cls_index_check(idx, 1) == CLS_OK) {
            cls_index_stats st;
            cls_index_get_stats(idx, &st);
            for (uint32_t d = 0; d < st.num_docs && d < 64; d++) {
                cls_index_docno(idx, d);
                for (uint32_t f = 0; f < cls_index_field_count(idx); f++) {
                    size_t len;
                    cls_index_field(idx, d, f, &len);
                }
            }
            search(idx);
        }
        cls_index_close(idx);
    }
    fz_clean();
    return 0;
}
