/* libFuzzer target: the html collection reader (plain, gzip and archive inputs). */
#define FZ_FORMAT CLS_CORPUS_HTML
#define FZ_PLAIN ".html"
#define FZ_FOLDER 1
#include "fuzz/corpus_harness.h"
