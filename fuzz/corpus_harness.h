/* The body shared by the collection readers' harnesses: each fuzz_corpus_*.c defines
 * FZ_FORMAT, FZ_PLAIN (the name of a plain input) and FZ_FOLDER (1: a plain input is read as a
 * folder holding it, as the folder-tree formats take them), then includes this. Gzip, zip and
 * tar inputs are read as such (the suffix the reader dispatches on), so the archive paths are
 * fuzzed too. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "clsearch.h"
#include "fuzz/fuzz_common.h"

static int on_doc(void *user, const char *docno, size_t docno_len, const char *text, size_t text_len)
{
    size_t *sum = user;
    /* Touch every byte, so that a length past the buffer is an ASan report. */
    for (size_t i = 0; i < docno_len; i++) *sum += (unsigned char)docno[i];
    for (size_t i = 0; i < text_len; i++) *sum += (unsigned char)text[i];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char plain[] = FZ_PLAIN;
    const char *suffix = fz_sniff(data, size, plain);
    const char *path;
    char folder[600];
    if (FZ_FOLDER && suffix == plain) {
        snprintf(folder, sizeof folder, "%s/root", fz_scratch_dir());
        mkdir(folder, 0700);
        char name[64];
        snprintf(name, sizeof name, "/root/doc%s", plain);
        path = fz_write(data, size, name) ? folder : NULL;
    } else {
        path = fz_write(data, size, suffix);
    }
    if (path) {
        size_t sum = 0;
        cls_corpus_read(FZ_FORMAT, path, on_doc, &sum);
        cls_corpus_counts c;
        cls_corpus_last_counts(&c);
    }
    fz_clean();
    return 0;
}
