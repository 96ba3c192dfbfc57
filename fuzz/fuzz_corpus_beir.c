/* libFuzzer target: the beir collection reader (plain, gzip and archive inputs). */
#define FZ_FORMAT CLS_CORPUS_BEIR
#define FZ_PLAIN ".jsonl"
#define FZ_FOLDER 0
#include "fuzz/corpus_harness.h"
