/* What every harness shares: the libFuzzer entry point's signature and a scratch file for the
 * APIs that take a path. Each harness is one LLVMFuzzerTestOneInput; built with
 * -fsanitize=fuzzer it is a libFuzzer target, linked with replay_main.c it is a plain program
 * that feeds it the files it is given (the regression inputs under tests/fuzz, run by CTest). */
#ifndef CLS_FUZZ_COMMON_H
#define CLS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to a file of this process named with suffix (its extension picks the reader's
 * decompression and archive handling) inside the harness's scratch folder; returns its path
 * (static storage) or NULL. fz_scratch_dir is that folder, emptied by fz_clean. */
const char *fz_write(const uint8_t *data, size_t size, const char *suffix);
const char *fz_scratch_dir(void);
void fz_clean(void);
/* The suffix an input's first bytes call for: gzip, zip, tar, else plain. */
const char *fz_sniff(const uint8_t *data, size_t size, const char *plain);

#endif
