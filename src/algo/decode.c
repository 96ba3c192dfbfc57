/* decode_blocks' launch (decode.h). */
#include "algo/decode.h"

cls_status decode_run(dev_ctx *dc, uint32_t block_size, cl_mem words, cl_mem blocks, cl_mem tasks, cl_uint task_base,
                      size_t ntasks, cl_mem docs, cl_mem freqs, const char *step)
{
    /* the decoders read no word past the buffer's last, whatever a stream holds (decode.cl) */
    cl_uint nwords;
    cls_status s = dev_words_count(words, &nwords);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(words), DEV_U32(nwords), DEV_MEM(blocks), DEV_MEM(tasks), DEV_U32(task_base),
                   DEV_MEM(docs),  DEV_MEM(freqs)};
    return dev_run(dc, "decode_blocks", a, ntasks, block_size, step);
}
