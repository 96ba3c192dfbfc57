/* libFuzzer target: the files collection reader (plain, gzip and archive inputs). */
#define FZ_FORMAT CLS_CORPUS_FILES
#define FZ_PLAIN ".txt"
#define FZ_FOLDER 1
#include "fuzz/corpus_harness.h"
