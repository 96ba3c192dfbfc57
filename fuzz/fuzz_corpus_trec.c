/* libFuzzer target: the trec collection reader (plain, gzip and archive inputs). */
#define FZ_FORMAT CLS_CORPUS_TREC
#define FZ_PLAIN ".trec"
#define FZ_FOLDER 0
#include "fuzz/corpus_harness.h"
