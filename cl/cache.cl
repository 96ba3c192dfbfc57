/* cache.cl: posting lists into the device's list cache (src/engine/list_cache.h).
 *
 * When the index does not live on the device whole, the lists a batch needs and the device
 * lacks are sent up packed, one after another, in one transfer to a staging buffer; then
 * place_lists moves each piece to the room the cache gave its list, one work-group a piece:
 * words as they are, block records with their word offset moved to where the list's words now
 * lie. One transfer and one launch per staging load, instead of two transfers per list. */

__kernel __attribute__((reqd_work_group_size(WG_SCORE, 1, 1)))
void place_lists(__global const uint *stage, uint places_at, uint word_places,
                 __global uint *words, __global uint *blocks)
{
    uint g = get_group_id(0), lid = get_local_id(0);
    abi_place p = ((__global const abi_place *)(stage + places_at))[g];
    if (g < word_places) {
        for (uint i = lid; i < p.count; i += WG_SCORE) words[p.dst + i] = stage[p.src + i];
        return;
    }
    /* block records: 8 words each, the third (idx_block.offset) moved */
    const uint W = (uint)(sizeof(idx_block) / 4);
    for (uint i = lid; i < p.count * W; i += WG_SCORE) {
        uint v = stage[p.src + i];
        blocks[(ulong)p.dst * W + i] = (i % W == 2u) ? v + p.shift : v;
    }
}
