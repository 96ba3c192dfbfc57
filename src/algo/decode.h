/* decode_blocks (cl/decode.cl), the index's decoder: one work-group a block. The engine's decode
 * stage runs it over a batch's whole lists; an algorithm may run it again over blocks it chose
 * (AND's block skipping). */
#ifndef CLS_ALGO_DECODE_H
#define CLS_ALGO_DECODE_H

#include <stdint.h>

#include "device/dev.h"

/* decode_blocks over ntasks abi_task records at word task_base of tasks, from words/blocks (blocks
 * of block_size postings), into docs and freqs. */
cls_status decode_run(dev_ctx *dc, uint32_t block_size, cl_mem words, cl_mem blocks, cl_mem tasks, cl_uint task_base,
                      size_t ntasks, cl_mem docs, cl_mem freqs, const char *step);

#endif
