/* libFuzzer target: the smart collection reader (plain, gzip and archive inputs). */
#define FZ_FORMAT CLS_CORPUS_SMART
#define FZ_PLAIN ".all"
#define FZ_FOLDER 0
#include "fuzz/corpus_harness.h"
