/* libFuzzer target: CIFF import. An input that imports is opened and checked as the index it
 * became. */
#include <stdio.h>

#include "clsearch.h"
#include "fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write(data, size, ".ciff");
    if (path) {
        char out[700];
        snprintf(out, sizeof out, "%s/imported.idx", fz_scratch_dir());
        cls_analyzer_opts an;
        cls_analyzer_defaults(&an);
        cls_build_opts o;
        cls_build_defaults(&o);
        o.threads = 1;
        if (cls_ciff_import(path, &an, &o, out) == CLS_OK) {
            cls_index *idx;
            if (cls_index_open(out, &idx) == CLS_OK) {
                cls_index_check(idx, 1);
                cls_index_close(idx);
            }
        }
    }
    fz_clean();
    return 0;
}
