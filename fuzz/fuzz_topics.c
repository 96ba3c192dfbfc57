/* libFuzzer target: every topics reader. Each input is read as each format (TSV, Anserini,
 * TREC, SMART, Million Query) and as the auto-detected one, so a seed of one format also
 * exercises the others' handling of foreign text. */
#include "clsearch.h"
#include "fuzz/fuzz_common.h"

static int on_topic(void *user, const char *qid, const char *text)
{
    size_t *sum = user;
    while (*qid) *sum += (unsigned char)*qid++;
    while (*text) *sum += (unsigned char)*text++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write(data, size, fz_sniff(data, size, ".txt"));
    if (path) {
        size_t sum = 0;
        for (int f = CLS_TOPICS_TSV; f <= CLS_TOPICS_AUTO; f++) cls_topics_read((cls_topics_format)f, path, on_topic, &sum);
        cls_topics_detect(path);
    }
    fz_clean();
    return 0;
}
