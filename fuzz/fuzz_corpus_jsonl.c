/* libFuzzer target: the jsonl collection reader (plain, gzip and archive inputs). */
#define FZ_FORMAT CLS_CORPUS_JSONL
#define FZ_PLAIN ".jsonl"
#define FZ_FOLDER 0
#include "fuzz/corpus_harness.h"
