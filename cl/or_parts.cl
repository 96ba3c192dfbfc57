/* or_parts.cl: ranked disjunctive queries (-m or) by docID-range partitions with block-max
 * pruning (Huang et al.'s block-max WAND over docID ranges on a GPU; Ding et al.'s per-term
 * accumulation and multi-level top-k), exactly equal to exhaustive OR.
 *
 * The docID space is cut into partitions of OR_PART documents. First, each list of the batch is
 * decoded once (or_decode), for all the batch's queries that give its term the same weight: each
 * posting's BM25 contribution at that weight and its docID's place within its partition, in list
 * order, and per partition the slot of the list's first posting there. A partition of a query is
 * then scored by one work-group: it keeps OR_PART accumulators in local memory (sparse: a bitmap
 * says which hold a sum, see or_add), then, term by term in query order, reads the term's slots
 * in the partition and adds each contribution to its document's accumulator: the reference
 * engine's additions in the reference engine's order, so sums are bit-identical, and nothing the
 * size of the collection exists per query (the accumulation is on chip; only candidates leave it).
 *
 * Why decode ahead. Decoding inside the partition's work-group puts a chain of dependent loads
 * and barriers before every block's postings, and decodes a block once for every partition it
 * meets (a list of fewer postings than partitions, once a posting), so more blocks are decoded
 * than the lists hold. Decoded ahead, every block of the batch's lists is decoded once (all of
 * them: the bounds then prune what is read, not what is decoded), at full occupancy; a batch's
 * queries share their common lists (the long ones, which hold most postings, so a large batch
 * decodes a small share of its queries' postings); and a partition's work is loads and local
 * additions (docs/PERFORMANCE.md, "Ranked OR: each list decoded once per batch"). The price:
 * 6 bytes a posting of device memory for the batch's lists, which the batch planner counts
 * (src/engine/plan.c).
 *
 * Bounds. bound(t, block) bounds what any posting of the block adds at the term's weight
 * (cl/abi.h: ABI_BOUND_*); M[t][p] is the largest bound of t's blocks that meet partition p, and
 * UB[p] the sum of M[t][p] over the query's terms in order. A document's score never exceeds the
 * UB of its partition, nor, where term t's block b holds it, bound(t, b) plus the M of the other
 * terms. Comparisons inflate a bound by OR_SLACK (2^-12 relative), far more than the rounding
 * of a few float operations and of the scaling of a maximum by a weight.
 *
 * The threshold theta of a query is a lower bound on its k-th best score: the k-th best score
 * among any k documents' exact scores is one. It starts at 0 and rises (atomic_max on the float
 * bits, which order like the floats for scores >= 0) each time a scored partition holds more than
 * k candidates at or above it: their k-th best is such a lower bound. Pruning with it:
 *   - a partition whose UB is below theta is not scored;
 *   - within a scored partition, a block whose bound plus the other terms' M is below theta is
 *     not read. Documents of such a block are left with partial sums; their true score is below
 *     theta, hence below the final k-th best, and a partial sum is no larger;
 *   - essential terms (MaxScore within the partition): ranked by M[t][p], the terms whose M,
 *     summed from the smallest, stays below theta are not essential; a document that no
 *     essential term holds scores below theta. The first pass reads only the essential terms'
 *     postings; the documents they reach whose partial sum plus the others' M reaches theta
 *     are then given exact sums (every term, query order), the others dropped;
 *   - a partition offers as candidates only documents scoring >= theta (read after its last
 *     block), at most its own top k (ties at its k-th best: the smallest docIDs). A document of the true top k is never in a skipped block
 *     (its score would be below theta), so its sum is exact, and fewer than k documents of its
 *     partition rank above it, so it is offered. Every candidate offered scores >= theta, so none
 *     carries a partial sum.
 * Theta's timing (which work-group raised it first) changes how much is skipped, never the result.
 *
 * The kernels of a batch, in order (src/algo/or.c launches them):
 *   or_expand  one work-group per abi_olist (a list to decode, cl/abi.h): its blocks' tasks;
 *   or_decode  one work-group per block: contributions, places, and the partitions' first slots;
 *   or_bounds  `ways` work-groups per query term (its abi_bound): M[t][p] by atomic_max;
 *   or_plan    one work-group per query: UB[p]; the OR_SEEDS-style seed partitions (the `seeds`
 *              highest UB: where the top k most likely lie), marked in UB's top bit;
 *   or_hash    one work-group per abi_unit of a query flagged ABI_QF_HASH (a query of few
 *              postings, or.c's rule): its documents' sums in a hash table of its own; then
 *              or_hash_offer, one per query: its k best to its pool (see or_hash); or_bounds
 *              left its M at 0, so it has no partition to score;
 *   or_score   over the seeds first (one work-group per seed slot), raising theta early;
 *   or_pool_theta
 *              one work-group per query: theta raised to the k-th best score its pool holds;
 *   or_rest    one work-group per query: the other partitions whose UB reaches theta, into the
 *              query's queue, the highest bounds first (eight bands of UB / the query's largest);
 *              and the query into the list of each round its queue reaches (below);
 *   or_score   again, in rounds (src/algo/or.c: entries [0, 64) of every queue, then [64, 512),
 *              [512, 4096), the rest), each round persistent work-groups taking entries by an
 *              atomic ticket, round robin over the queries or_rest listed for the round (ticket
 *              t: the query at t % nact of the list, its entry from + t / nact), so every
 *              query's best partitions go first and raise its theta before its weaker ones
 *              start; or_pool_theta after every round but the last;
 *   or_finish  per query its candidates' segment for topk_select (topk.cl), which ranks them.
 * Candidates go to a pool of `pool` slots per query, reserved by atomic_add; a query whose
 * partitions offer more is reported (its count) and run again by the engine with a larger pool.
 *
 * ctl: per query its theta's bits, the candidates offered, its queue's length and its largest
 * UB (the scale of its histogram of offered scores, which raises theta too: or_hist_theta); from
 * gbase = ABI_OR_CTL_BATCH(nq) on, the batch's longest queue, the ticket, the partitions scored,
 * the (partition, term) pairs not essential, and the queries listed for each round: cl/abi.h's
 * ABI_OR_CTL_* words.
 *
 * block_maxima: the table ABI_BOUND_TABLE reads, one work-group per block of the index: the
 * block's largest contribution at weight 1 under the norms in force. */

#ifndef OR_PART_LOG
#define OR_PART_LOG 12 /* log2 of the documents per partition: OR_PART floats of local memory */
#endif
#define OR_PART (1u << OR_PART_LOG)
#if OR_PART_LOG > 15
#error "OR_PART_LOG must be at most 15: or_decode keeps a document's place in its partition in 16 bits, 0xFFFF for none"
#endif
#define OR_TT ABI_OR_TT /* query terms whose records a scoring group holds in local memory at once */
#define OR_REGS 4 /* slots a work-item loads ahead in one round of a partition's postings */
#ifndef OR_SEARCH_COST
#define OR_SEARCH_COST 4 /* a binary search's step against a place read in order (see or_score) */
#endif
#define OR_WORDS (OR_PART / 32u) /* the accumulators' bitmap: OR_PART_LOG >= 5 */
#define OR_SLACK ABI_OR_SLACK
#define OR_SEED_BIT ABI_OR_SEED_BIT /* in UB: the partition is a seed */

/* A bound that cannot reach theta. */
inline int or_below(float bound, float theta) { return bound * OR_SLACK < theta; }

/* What any posting of block b adds at the term's weight w (scale: weight / idf). */
inline float or_block_bound(__global const idx_block *blocks, __global const float *bmax, uint b, uint bsrc,
                            float w, float scale)
{
    if (bsrc == ABI_BOUND_MAXSCORE) return blocks[b].max_score * scale;
    if (bsrc == ABI_BOUND_TABLE) return bmax[b] * w;
    return INFINITY;
}

__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_bounds(__global const uint *in, uint qinfo_base, uint qterm_base, uint bounds_base, __global const idx_block *blocks,
               __global const float *bmax, uint bsrc, uint np, uint ways, __global uint *M)
{
    /* `ways` groups share a term, taking its blocks BLOCK_SIZE at a time in turn: a small batch's
     * few long lists are not each walked by one group while the device idles */
    uint g = get_group_id(0), way = g % ways;
    __global const abi_bound *sk = BOUNDS_AT(in, bounds_base, g / ways);
    __global const abi_term *t = TERMS_AT(in, qterm_base, sk->term);
    float w = t->weight, scale = sk->scale;
    __global uint *row = M + (ulong)sk->term * np;
    /* a hashed query's terms keep M at 0: its partitions' UB is 0, none is a seed or queued */
    uint nb = QUERY_AT(in, qinfo_base, sk->query)->flags & ABI_QF_HASH ? 0u : sk->num_blocks;
    for (uint b = way * BLOCK_SIZE + get_local_id(0); b < nb; b += ways * BLOCK_SIZE) {
        uint blk = sk->first_block + b;
        uint key = as_uint(or_block_bound(blocks, bmax, blk, bsrc, w, scale));
        uint p1 = min(blocks[blk].last >> OR_PART_LOG, np - 1);
        /* neighbouring blocks share partitions: most of them find a larger value already */
        for (uint p = blocks[blk].first >> OR_PART_LOG; p <= p1; p++)
            if (row[p] < key) atomic_max(row + p, key);
    }
}

__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_plan(__global const uint *in, uint qinfo_base, uint np, uint seeds, __global const uint *M,
             __global uint *ub, __global uint *seed, __global uint *ctl)
{
    __local uint hist[ABI_KTH_BINS], sh[3], scan[BLOCK_SIZE];
    uint q = get_group_id(0), lid = get_local_id(0);
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    /* a hashed query's bounds are 0 (or_bounds skips its terms): its UB row is written 0 without
     * reading them, and no seed is looked for */
    const uint nt = qi->flags & ABI_QF_HASH ? 0u : qi->num_terms, t0 = qi->term_start, span = nt ? np : 0u;
    __global uint *u = ub + (ulong)q * np;
    __local float top[BLOCK_SIZE];
    float mx = 0.0f;
    for (uint p = lid; p < np; p += BLOCK_SIZE) {
        float s = 0.0f;
        for (uint t = 0; t < nt; t++) s += as_float(M[(ulong)(t0 + t) * np + p]);
        u[p] = as_uint(s);
        mx = fmax(mx, s);
    }
    top[lid] = mx;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    for (uint s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        if (lid < s) top[lid] = fmax(top[lid], top[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint T, need;
    wg_kth_key(u, 1, span, seeds, hist, sh, &T, &need);
    /* the seeds: UB above T, and the first `need` equal to it */
    uint m = 0, ties = 0;
    for (uint b0 = 0; b0 < span; b0 += BLOCK_SIZE) { /* uniform trip count */
        uint p = b0 + lid, key = p < np ? u[p] : 0u;
        uint gt = key != 0 && key > T, eq = key != 0 && key == T, tot_eq, tot_sel;
        uint eq_rank = wg_scan_incl(scan, eq, &tot_eq) - eq + ties;
        uint sel = gt || (eq && eq_rank < need);
        uint pos = wg_scan_incl(scan, sel, &tot_sel) - sel + m;
        if (sel) {
            seed[(ulong)q * seeds + pos] = p;
            u[p] = key | OR_SEED_BIT;
        }
        ties += tot_eq;
        m += tot_sel;
    }
    for (uint i = m + lid; i < seeds; i += BLOCK_SIZE) seed[(ulong)q * seeds + i] = ABI_NO_BLOCK;
    if (lid == 0) {
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA)] = 0; /* 0.0f */
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_OFFERED)] = 0;
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_QUEUE)] = 0;
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_UBMAX)] = as_uint(top[0]);
    }
}

/* A lower bound on a query's k-th best score from the histogram of the candidates its partitions
 * offered so far (OR_HIST bins of OR_HIST / UBmax, the query's largest partition bound, a bin;
 * every offered score is exact): the lower edge of the highest bin b such that the bins from b up
 * hold at least k, less a margin for the rounding of the bin arithmetic; 0 when they hold fewer.
 * It rises as partitions finish, toward the k-th best of all the query's candidates, where a
 * partition's own k-th best is the best of one partition's. One work-item reads the bins, 16
 * at a time, from the top. */
#define OR_HIST ABI_OR_HIST
inline uint or_hist_theta(__global const uint *qh, uint k, float scale)
{
    uint c = 0;
    for (int g = OR_HIST / 16 - 1; g >= 0; g--) {
        uint v[16];
        for (int j = 0; j < 4; j++) vstore4(vload4(4 * g + j, qh), j, v);
        uint sum = 0;
        for (int j = 0; j < 16; j++) sum += v[j];
        if (c + sum >= k) {
            for (int j = 15; j >= 0; j--) {
                c += v[j];
                if (c >= k) return as_uint((float)(g * 16 + j) / scale * (1.0f - 1.0f / 1024.0f));
            }
        }
        c += sum;
    }
    return 0u;
}

/* A query term's decoded list (its abi_bound, cl/abi.h), whose first task is
 * *first: the list's row of first slots S (returned), and its slots of partitions [p0, p1),
 * [*s0, *s1), kept inside the list (a forged list's docIDs may leave S unwritten: then wrong
 * sums, never a read outside). p0 <= p1 <= np. */
inline __global const uint *or_term_slots(__global const abi_bound *sk, __global const uint *S, uint np, uint p0, uint p1,
                                          uint *first, uint *s0, uint *s1)
{
    const uint f = sk->olist_task, lb = f * BLOCK_SIZE, le = lb + sk->num_blocks * BLOCK_SIZE;
    __global const uint *st = S + (ulong)sk->olist * (np + 1);
    *first = f;
    *s0 = clamp(st[p0], lb, le);
    *s1 = clamp(st[p1], *s0, le);
    return st;
}

/* The accumulators are sparse: a scored partition's postings reach a small share of its OR_PART
 * documents, and clearing, then reading, all OR_PART of them cost as much as decoding
 * (docs/PERFORMANCE.md, "Ranked OR by docID-range partitions, decoding in the partitions", and
 * "Figures moved from code comments"). So a bitmap says which accumulators
 * hold a sum: only the bitmap is cleared, the first posting of a document writes its contribution
 * (0 + c is c: the reference's sum, bit for bit) and later ones add to it, and the passes that
 * look for candidates visit the set bits. Within one term a document has at most one posting, so
 * the work-items adding one term's postings never share an accumulator; the atomic_or only
 * shares the bitmap word. */
inline void or_add(__local float *acc, __local uint *touched, uint d, float c)
{
    uint bit = 1u << (d & 31u), old = atomic_or(touched + (d >> 5), bit);
    acc[d] = (old & bit) ? acc[d] + c : c;
}

/* The lowest set bit's position (CL1.2 has clz, not ctz). */
inline uint or_low_bit(uint bits) { return 31u - clz(bits & (0u - bits)); }

/* How many accumulators of bitmap word i (bits) are candidates at or above least (a sum of 0,
 * a document whose postings all add 0, is no match). */
inline uint or_count_word(__local const float *acc, uint bits, uint i, float least)
{
    uint c = 0;
    for (; bits; bits &= bits - 1) {
        float s = acc[32 * i + or_low_bit(bits)];
        c += s > 0.0f && s >= least;
    }
    return c;
}

/* Zero the accumulators of word i that no posting reached. */
inline void or_clear_untouched(__local float *acc, uint bits, uint i)
{
    for (uint free = ~bits; free; free &= free - 1) acc[32 * i + or_low_bit(free)] = 0.0f;
}

/* Reads theta (its ctl word) once for the whole group. */
inline float or_theta(__global volatile uint *at, __local uint *sh)
{
    if (get_local_id(0) == 0) sh[0] = *at;
    barrier(CLK_LOCAL_MEM_FENCE);
    float theta = as_float(sh[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return theta;
}

/* The group's first ticket: the next of the counter at next (persistent), else the group's own. */
inline uint or_ticket(uint persistent, __global uint *next, __local uint *sh)
{
    if (get_local_id(0) == 0) sh[0] = persistent ? atomic_inc(next) : get_group_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint ticket = sh[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return ticket;
}

/* persistent 0: ticket g (the group's) is seed slot g of the seed table (items, `seeds` a query);
 * persistent 1: work-groups take tickets until entries [from, to) of every query's queue (items:
 * np entries a query, q * np + i) are done, for the nact queries or_rest listed for the round
 * (act: nq entries a round), ticket t standing for entry from + t / nact of the query at
 * t % nact of the list. Listing them matters: a batch's hashed queries have empty queues, and
 * where most of a batch's queries are hashed, tickets for every query would mostly find no entry,
 * each a pass of the group's barriers and an atomic on the one ticket counter
 * (docs/PERFORMANCE.md, "Ranked OR: essential terms within a partition, tickets for listed
 * queries").
 *
 * A ticket's partition is scored (see the header) unless it is empty or its UB is below theta.
 * Every loop that holds a barrier has a trip count the whole group shares, and no barrier sits
 * under a condition or after an early exit: a ticket that is not scored runs the loops zero
 * times, and the ticket loop leaves only at its head. POCL's work-group compiler, which
 * turns the code between barriers into loops over work-items, copies the code after a barrier
 * under a condition, and its time grows with those copies (minutes for a kernel like this one). */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_score(__global const uint *in, uint qinfo_base, uint qterm_base, uint bounds_base,
              __global const idx_block *blocks, __global const float *bmax, uint bsrc, uint np, uint k, uint pool,
              __global const uint *M, __global const uint *ub, __global const uint *items, uint seeds,
              uint persistent, uint nq, __global uint *ctl, uint gbase, __global uint *pdoc, __global uint *pkey,
              __global uint *hist_all, __global const float *C, __global const ushort *O, __global const uint *S,
              uint from, uint to, __global const uint *act, uint round)
{
    __local float acc[OR_PART];
    __local uint touched[OR_WORDS]; /* bit d: accumulator d holds a sum (see or_add) */
    __local uint scan[BLOCK_SIZE], hist[ABI_KTH_BINS], sh[3], next_ticket;
    /* the records of up to OR_TT terms of the partition's query: their first slot and slot count
     * in the partition, their list's first task and first block, their weight and scale, the
     * other terms' M (for the bound of a block) */
    __local uint t_s0[OR_TT], t_len[OR_TT], t_first[OR_TT], t_fb[OR_TT];
    __local float t_w[OR_TT], t_scale[OR_TT], t_others[OR_TT];
    /* the term's M in the partition, and its slots read by the first pass: all of them where
     * the term is essential, none where it is not (see "Essential terms" below) */
    __local float t_m[OR_TT];
    __local uint t_n1[OR_TT];
    __local float ne_sum; /* the non-essential terms' M, summed */
    __local uint ne_any, n_cand;
    uint lid = get_local_id(0);
    const uint longest = ctl[gbase + ABI_OR_CTL_LONGEST]; /* queues are complete before */
    /* the queries whose queue reaches into the round (or_rest's list): no ticket for a query
     * whose queue ends before it (a hashed query's is empty) */
    const uint nact = persistent ? ctl[gbase + ABI_OR_CTL_ROUND(round)] : 0u;
    const uint tickets = persistent ? nact * (min(to, longest) - min(from, longest)) : get_num_groups(0);
    /* the group's partitions scored, added to the batch's counter once, at the end */
    uint all_parts = 0, all_skipped = 0; /* and (partition, term) pairs left unread, likewise */
    for (uint ticket = or_ticket(persistent, ctl + gbase + ABI_OR_CTL_TICKET, sh); ticket < tickets;
         ticket = next_ticket) {
        /* the next ticket is taken now: the atomic's latency passes while this one is scored */
        uint next = tickets;
        if (persistent && lid == 0) next = atomic_inc(ctl + gbase + ABI_OR_CTL_TICKET);
        uint q, p, live;
        if (persistent) {
            q = act[(ulong)round * nq + ticket % nact];
            uint i = from + ticket / nact;
            live = i < ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_QUEUE)];
            p = live ? items[(ulong)q * np + i] : 0;
        } else {
            q = ticket / seeds;
            p = items[ticket];
            live = p != ABI_NO_BLOCK;
            p = live ? p : 0;
        }
        __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
        __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
        __global volatile uint *theta_at = ctl + ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA);
        uint t0 = qi->term_start;
        float theta = or_theta(theta_at, sh);
        live = live && !or_below(as_float(ub[(ulong)q * np + p] & ~OR_SEED_BIT), theta);
        /* span: the accumulators of a ticket that is scored; only their bitmap is cleared */
        const uint nt = live ? qi->num_terms : 0, span = live ? OR_PART : 0, wspan0 = span / 32;
        for (uint i = lid; i < wspan0; i += BLOCK_SIZE) touched[i] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        uint lo = p << OR_PART_LOG;
        /* The terms, OR_TT at a time: their records in one round of loads (one work-item a term;
         * batches give term t0 + t the abi_bound of the same index: or.c asserts it), then
         * their slots in the partition as one sequence, OR_REGS slots a work-item a round, all
         * loaded before any is added, then added term by term in query order. Loading a term's
         * slots only after the last term's were added made a chain of dependent loads per term
         * and a partition a latency-bound walk. */
        for (uint c0 = 0; c0 < nt; c0 += OR_TT) { /* uniform */
            const uint nc = min(nt - c0, (uint)OR_TT);
            for (uint j = lid; j < nc; j += BLOCK_SIZE) {
                uint t = c0 + j;
                __global const abi_bound *sk = BOUNDS_AT(in, bounds_base, t0 + t);
                uint first, s0, s1; /* the term's slots in the partition */
                or_term_slots(sk, S, np, p, p + 1, &first, &s0, &s1);
                t_s0[j] = s0;
                t_len[j] = s1 - s0;
                t_first[j] = first;
                t_fb[j] = sk->first_block;
                t_w[j] = qt[t].weight;
                t_scale[j] = sk->scale;
                t_m[j] = as_float(M[(ulong)(t0 + t) * np + p]);
            }
            /* the other terms' M, in query order: from the records of a round where the query's
             * terms fit one (each term's M one load, not one a term and another term), else read */
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint j = lid; j < nc; j += BLOCK_SIZE) {
                uint t = c0 + j;
                float others = 0.0f;
                for (uint o = 0; o < nt; o++)
                    if (o != t) others += nt <= OR_TT ? t_m[o] : as_float(M[(ulong)(t0 + o) * np + p]);
                t_others[j] = others;
            }
            /* Essential terms (MaxScore within the partition), where the query's terms fit one
             * round (nt <= OR_TT): term j, ranked among the terms by M (ties by index), is not
             * essential where the M of the terms up to its rank, summed, is below theta. Their
             * documents that no essential term holds score below theta: the first pass reads
             * only the essential terms' slots, and a second gives its candidates exact sums. */
            for (uint j = lid; j < nc; j += BLOCK_SIZE) {
                float mj = t_m[j], cum = 0.0f;
                for (uint o = 0; o < nc; o++) {
                    float mo = t_m[o];
                    if (mo < mj || (mo == mj && o <= j)) cum += mo;
                }
                t_n1[j] = nt <= OR_TT && or_below(cum, theta) ? 0u : t_len[j];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {
                float ns = 0.0f;
                uint any = 0;
                for (uint j = 0; j < nc; j++)
                    if (t_n1[j] != t_len[j]) {
                        ns += t_m[j];
                        any = 1;
                    }
                ne_sum = ns;
                ne_any = any;
                for (uint j = 0; j < nc; j++) all_skipped += t_n1[j] != t_len[j];
                n_cand = 0;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            uint total = 0;
            for (uint j = 0; j < nc; j++) total += t_n1[j];
            for (uint f0 = 0; f0 < total; f0 += OR_REGS * BLOCK_SIZE) { /* uniform */
                uint off[OR_REGS], term[OR_REGS], j = 0, cum = 0;
                float c[OR_REGS];
                for (uint r = 0; r < OR_REGS; r++) {
                    /* a work-item's slots are consecutive, so the lanes of a warp add to documents
                     * OR_REGS postings apart: where a term holds most documents, fewer of them share
                     * a bitmap word, whose atomic_or the lanes that share it take in turn (faster
                     * than slots a group's width apart: docs/PERFORMANCE.md, "Ranked OR: each list
                     * decoded once per batch") */
                    uint f = f0 + lid * OR_REGS + r;
                    while (j < nc && f - cum >= t_n1[j]) cum += t_n1[j++];
                    off[r] = ABI_OR_NO_SLOT;
                    term[r] = nc;
                    c[r] = 0.0f;
                    if (f < total) {
                        uint at = t_s0[j] + (f - cum);
                        uint o = O[at];
                        float x = C[at];
                        /* a block whose bound, with the other terms' M, is below theta adds nothing */
                        float bd = or_block_bound(blocks, bmax, t_fb[j] + at / BLOCK_SIZE - t_first[j], bsrc, t_w[j],
                                                  t_scale[j]);
                        if (!or_below(bd + t_others[j], theta)) {
                            off[r] = o;
                            term[r] = j;
                            c[r] = x;
                        }
                    }
                }
                for (uint jj = 0; jj < nc; jj++) { /* uniform: a term's additions before the next's */
                    for (uint r = 0; r < OR_REGS; r++)
                        if (term[r] == jj && off[r] < OR_PART) or_add(acc, touched, off[r], c[r]);
                    barrier(CLK_LOCAL_MEM_FENCE);
                }
            }
        }
        /* The second pass, where some term was not essential (nt <= OR_TT, one round of
         * records): the documents the essential terms reached whose partial sum with the
         * non-essential terms' M reaches theta are the candidates; each gets its exact sum,
         * term by term in query order (the reference's additions), and the others leave the
         * bitmap. A term's postings of a candidate are found by binary search in its slots
         * (places ascend within a partition) where the candidates are few against its slots,
         * else by reading its places in order and keeping those of candidates. */
        const uint gather = nt ? ne_any : 0u, gspan = gather ? wspan0 : 0u, gt = gather ? nt : 0u;
        const float nsum = ne_sum;
        uint nkept = 0;
        for (uint i = lid; i < gspan; i += BLOCK_SIZE) {
            uint bits = touched[i], keep = 0;
            for (uint b = bits; b; b &= b - 1) {
                uint d = 32 * i + or_low_bit(b);
                if (!or_below(acc[d] + nsum, theta)) {
                    keep |= 1u << (d & 31u);
                    acc[d] = 0.0f;
                    nkept++;
                }
            }
            touched[i] = keep;
        }
        if (nkept) atomic_add(&n_cand, nkept);
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint ncand = n_cand;
        for (uint j = 0; j < gt; j++) { /* uniform: a term's additions before the next's */
            const uint s0 = t_s0[j], len = t_len[j];
            const uint search = (ulong)ncand * (33u - clz(len)) * OR_SEARCH_COST < len;
            const uint sspan = search ? gspan : 0u, rspan = search ? 0u : len;
            for (uint i = lid; i < sspan; i += BLOCK_SIZE)
                for (uint bits = touched[i]; bits; bits &= bits - 1) {
                    uint d = 32 * i + or_low_bit(bits), lo = s0, hi = s0 + len;
                    while (lo < hi) {
                        uint mid = (lo + hi) >> 1;
                        if (O[mid] < d)
                            lo = mid + 1;
                        else
                            hi = mid;
                    }
                    if (lo < s0 + len && O[lo] == d) acc[d] += C[lo];
                }
            for (uint f = lid; f < rspan; f += BLOCK_SIZE) {
                uint o = O[s0 + f];
                if (o < OR_PART && (touched[o >> 5] >> (o & 31u) & 1u)) acc[o] += C[s0 + f];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* candidates: scores >= theta, and of those, where more than k, the ones at or above the
         * k-th largest T (all of them equal to T: topk_select keeps the smaller docIDs of a tie,
         * whatever their order). Written in no particular order (local atomics, no scans: see
         * above on POCL's compiler). */
        theta = or_theta(theta_at, sh);
        if (lid == 0) sh[1] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        uint cnt = 0;
        for (uint i = lid; i < wspan0; i += BLOCK_SIZE) cnt += or_count_word(acc, touched[i], i, theta);
        if (cnt) atomic_add(sh + 1, cnt);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint total = sh[1];
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the k-th largest accumulator T, only where more than k reach theta (then T >= theta);
         * else every one that reaches theta is offered and the select runs no pass (a count of
         * 0: the trip counts, not a branch, skip it). Most partitions, once theta has risen,
         * offer fewer than k, and the select's passes over OR_PART keys cost more than the
         * few postings such a partition reads. */
        const uint over = total > k, sel_span = over ? span : 0;
        /* the select reads every accumulator: those no posting reached get their 0 first */
        for (uint i = lid; i < sel_span / 32; i += BLOCK_SIZE) or_clear_untouched(acc, touched[i], i);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint T, need;
        wg_kth_key_local((__local const uint *)acc, 1, sel_span, k, hist, sh, &T, &need);
        /* where the partition's k-th best T reaches theta it offers exactly k: every score above
         * T (k - need of them) and the need ties at T with the smallest docIDs, since no other
         * document of the partition can be among the query's k best (a partition of many equal
         * scores, a one-term query's, would offer all of them and fill the pool); where T is below
         * theta, the total counted at theta */
        const uint cap = over && as_float(T) >= theta;
        const float least = cap ? as_float(T) : theta;
        const uint m = cap ? k : total;
        if (lid == 0) {
            if (over) /* a lower bound on the query's k-th best */
                atomic_max(ctl + ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA), T);
            sh[0] = m ? atomic_add(ctl + ABI_OR_CTL_AT(q, ABI_OR_CTL_OFFERED), m) : 0;
            sh[1] = 0;
        }
        all_parts += live;
        barrier(CLK_LOCAL_MEM_FENCE);
        uint base = sh[0];
        /* an overflowing pool takes nothing: the count tells the engine */
        const uint wspan = m && base + m <= pool ? wspan0 : 0;
        __global uint *od = pdoc + (ulong)q * pool + base, *ok = pkey + (ulong)q * pool + base;
        __global uint *qh = hist_all + (ulong)q * OR_HIST;
        const float ubmax = as_float(ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_UBMAX)]);
        const float scale = ubmax > 0.0f && !isinf(ubmax) ? (float)OR_HIST / ubmax : 0.0f;
        const uint tie = cap ? T : 0xFFFFFFFFu; /* no score has those bits (a NaN's) */
        uint tbase = 0;
        for (uint b0 = 0; b0 < wspan; b0 += BLOCK_SIZE) { /* uniform; a scan ranks the ties in docID order */
            uint i = b0 + lid, bits = i < wspan ? touched[i] : 0u, nties = 0, tt;
            for (uint b = bits; b; b &= b - 1) nties += as_uint(acc[32 * i + or_low_bit(b)]) == tie;
            uint rank = wg_scan_incl(scan, nties, &tt) - nties + tbase;
            tbase += tt;
            for (; bits; bits &= bits - 1) {
                uint d = 32 * i + or_low_bit(bits);
                float s = acc[d];
                if (s > 0.0f && s >= least && (as_uint(s) != tie || rank++ < need)) {
                    uint pos = atomic_inc(sh + 1);
                    od[pos] = lo + d;
                    ok[pos] = as_uint(s);
                    atomic_inc(qh + (uint)fmin((float)(OR_HIST - 1), s * scale));
                }
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (lid == 0 && wspan && scale > 0.0f)
            atomic_max(ctl + ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA), or_hist_theta(qh, k, scale));
        if (lid == 0) next_ticket = next;
        barrier(CLK_LOCAL_MEM_FENCE); /* sh, acc and next_ticket are reused by the next ticket */
    }
    if (lid == 0 && all_parts) atomic_add(ctl + gbase + ABI_OR_CTL_PARTS, all_parts);
    if (lid == 0 && all_skipped) atomic_add(ctl + gbase + ABI_OR_CTL_SKIPPED, all_skipped);
}

/* One work-group per query, between or_score's launches: theta raised to the k-th largest key of
 * its pool. The pool's entries are exact scores of distinct documents, and the k-th best of any k
 * documents bounds the query's k-th best from below. or_hist_theta raises theta within a launch,
 * but its bins are fractions of the query's largest partition bound: where the k-th best lies far
 * below that (a rare term beside a common one, whose scores are a small fraction of the rare
 * term's), it falls in the lowest bin, theta stays near 0, and every partition offers nearly all
 * of its documents (docs/PERFORMANCE.md, "Ranked OR by docID-range partitions, decoding in the
 * partitions": or_pool_theta). */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_pool_theta(uint k, uint pool, __global uint *ctl, __global const uint *pkey)
{
    __local uint hist[ABI_KTH_BINS], sh[3];
    uint q = get_group_id(0), c = ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_OFFERED)];
    /* an overflowing pool may hold slots nobody wrote: nothing to select (the query runs again) */
    uint count = c <= pool ? c : 0, T, need;
    wg_kth_key(pkey + (ulong)q * pool, 1, count, k, hist, sh, &T, &need);
    if (get_local_id(0) == 0 && need != 0xFFFFFFFFu) atomic_max(ctl + ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA), T);
}

/* One work-group per query: its partitions that are not seeds and whose UB reaches theta, into
 * its queue, in eight bands of UB relative to its largest (the highest band first; docID order
 * within a band). */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_rest(uint np, __global const uint *ub, __global uint *ctl, uint gbase, __global uint *items, __global uint *act)
{
    __local uint scan[BLOCK_SIZE];
    uint q = get_group_id(0), lid = get_local_id(0);
    __global const uint *u = ub + (ulong)q * np;
    __global uint *dst = items + (ulong)q * np;
    float theta = as_float(ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA)]);
    float mx = as_float(ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_UBMAX)]); /* or_plan's largest UB */
    /* no partition to queue where the largest bound is 0 (a hashed query's, an empty one's) */
    const uint span = mx == 0.0f ? 0u : np;
    uint at = 0;
    for (int band = 7; band >= 0; band--) {
        for (uint b0 = 0; b0 < span; b0 += BLOCK_SIZE) { /* uniform */
            uint p = b0 + lid, key = p < np ? u[p] : 0u, n;
            float f = as_float(key);
            uint in_band = isinf(mx) || !(mx > 0.0f) ? band == 7 : (int)min(7.0f, 8.0f * f / mx) == band;
            uint sel = key != 0 && !(key & OR_SEED_BIT) && !or_below(f, theta) && in_band;
            uint pos = wg_scan_incl(scan, sel, &n) - sel + at;
            if (sel) dst[pos] = p;
            at += n;
        }
    }
    if (lid == 0) {
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_QUEUE)] = at;
        if (at) atomic_max(ctl + gbase + ABI_OR_CTL_LONGEST, at);
        /* the rounds its queue reaches into: or_score takes tickets only for the queries listed */
        for (uint r = 0; r < ABI_OR_ROUNDS; r++)
            if (at > ABI_OR_ROUND_FROM(r))
                act[r * get_num_groups(0) + atomic_inc(ctl + gbase + ABI_OR_CTL_ROUND(r))] = q;
    }
}

/* OR by hashing: the queries flagged ABI_QF_HASH, between or_plan and or_score; their lists have
 * no bounds (or_bounds skips them), so they have no partitions to score. A partition costs a
 * group's pass however few postings it holds, and a query whose lists hold few postings together
 * meets about as many partitions as it has postings: scored by partitions, it is all passes and
 * no additions (src/algo/or.c: the rule; docs/PERFORMANCE.md, "Ranked OR: hashing or
 * partitions, chosen per query": the evidence). Its documents go into a
 * hash table of its own instead, 2^ABI_QF_HASH_LOG entries of a docID and a sum in global memory
 * (at least twice its postings, so a probe ends), emptied first (or_hash_clear).
 *
 * or_hash, one work-group per abi_unit of such a query (one per few thousand of its postings,
 * so a long one is not one group's walk while the device idles): the unit's partitions [begin,
 * end) of every list. Term by term in query order, a barrier between terms, every posting there
 * (or_decode's slots; its docID is its partition's first plus its place, its partition found in
 * the list's first slots S among those its block spans) claims its document's entry
 * (atomic_cmpxchg, linear probing) and writes its contribution to a new one or adds it to the
 * one found: the reference's additions in the reference's order, as or_add makes them. Units of
 * one query share its table but never a document, so no entry's sum has two writers.
 *
 * or_hash_offer, one work-group per query: the k-th largest sum T (wg_kth_key) and the offer:
 * every document whose sum is above 0 and at least T (all of them where at most k are) goes to
 * the query's pool, which topk_select ranks (ties at T past the k-th are offered too;
 * topk_select keeps the smaller docIDs). A pool too small takes nothing, and the count tells the
 * engine, which runs the query again with a pool that fits (as for partitions). */
#ifndef OR_HASH_WG
#define OR_HASH_WG BLOCK_SIZE /* work-items of or_hash's groups: the host passes its own */
#endif
#define OR_HASH_EMPTY 0xFFFFFFFFu /* a key that is no docID (docIDs are below 2^32 - 1) */

/* The partition of slot `at` of a decoded list whose first slots are S, in block blk, among
 * [lo, hi]: the last of the partitions the block spans whose first slot is at or before it. */
inline uint or_slot_part(__global const uint *S, __global const idx_block *blk, uint at, uint lo, uint hi)
{
    lo = max(lo, blk->first >> OR_PART_LOG);
    hi = min(hi, blk->last >> OR_PART_LOG);
    while (lo < hi) {
        uint mid = (lo + hi + 1) >> 1;
        if (S[mid] <= at)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The hash tables emptied, four words (two entries) a work-item: words the host rounds to a
 * multiple of four (wide stores of a kernel, where clEnqueueFillBuffer's 8-byte pattern is far
 * slower: docs/PERFORMANCE.md, "Figures moved from code comments") */
__kernel void or_hash_clear(uint words, __global uint4 *htab)
{
    uint i = get_global_id(0);
    if (i < words / 4) htab[i] = (uint4)(OR_HASH_EMPTY, 0u, OR_HASH_EMPTY, 0u);
}

__kernel __attribute__((reqd_work_group_size(OR_HASH_WG, 1, 1)))
void or_hash(__global const uint *in, uint qinfo_base, uint bounds_base, uint units_base,
             __global const idx_block *blocks, uint np, __global const float *C, __global const ushort *O,
             __global const uint *S, __global uint *htab)
{
    const uint lid = get_local_id(0);
    __global const abi_unit *u = UNITS_AT(in, units_base, get_group_id(0));
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, u->query);
    const uint flags = qi->flags, hashed = (flags & ABI_QF_HASH) != 0, lg = ABI_QF_HASH_LOG(flags);
    /* a unit of a query that is not hashed runs the loops zero times */
    const uint E = 1u << lg, nt = hashed ? qi->num_terms : 0u, t0 = qi->term_start;
    const uint p0 = min(u->begin, np), p1 = clamp(u->end, p0, np);
    /* entry i: its key at 2i, its sum at 2i + 1, so that the sum is read from the line the
     * atomic_cmpxchg just brought */
    __global uint *ent = htab + (hashed ? qi->cand_offset : 0u);
    for (uint t = 0; t < nt; t++) { /* uniform: a term's additions before the next's */
        __global const abi_bound *sk = BOUNDS_AT(in, bounds_base, t0 + t);
        uint first, s0, s1; /* the unit's slots of the list */
        __global const uint *st = or_term_slots(sk, S, np, p0, p1, &first, &s0, &s1);
        /* within a term a document has one posting: no two work-items add to one entry */
        for (uint at = s0 + lid; at < s1; at += OR_HASH_WG) {
            uint o = O[at];
            if (o >= OR_PART) continue; /* past the block's postings */
            float c = C[at];
            uint p = or_slot_part(st, blocks + sk->first_block + (at / BLOCK_SIZE - first), at, p0, p1 - 1);
            uint doc = (p << OR_PART_LOG) + o, h = (doc * 0x9E3779B1u) >> (32u - lg);
            /* at most E probes: a forged list of more postings than its df gets wrong sums, never
             * a loop without end */
            for (uint n = 0; n < E; n++) {
                uint old = atomic_cmpxchg(ent + 2 * h, OR_HASH_EMPTY, doc);
                if (old == OR_HASH_EMPTY || old == doc) {
                    ent[2 * h + 1] = as_uint(old == doc ? as_float(ent[2 * h + 1]) + c : c);
                    break;
                }
                h = (h + 1u) & (E - 1u);
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

__kernel __attribute__((reqd_work_group_size(OR_HASH_WG, 1, 1)))
void or_hash_offer(__global const uint *in, uint qinfo_base, uint k, uint pool, __global uint *ctl,
                   __global uint *pdoc, __global uint *pkey, __global const uint *htab)
{
    __local uint hist[ABI_KTH_BINS], sh[3];
    const uint q = get_group_id(0), lid = get_local_id(0);
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    const uint flags = qi->flags, hashed = (flags & ABI_QF_HASH) != 0;
    const uint E = hashed ? 1u << ABI_QF_HASH_LOG(flags) : 0u; /* 0: every loop runs zero times */
    __global const uint *ent = htab + (hashed ? qi->cand_offset : 0u);
    /* the k-th best, even where the pool would hold every document: offering them all would
     * save or_hash the select's passes but cost more in or_pool_theta and topk_select, which
     * would then read pools of up to E / 2 (docs/PERFORMANCE.md, "Figures moved from code
     * comments") */
    uint T, need;
    wg_kth_key(ent + 1, 2, E, k, hist, sh, &T, &need);
    const float least = need == 0xFFFFFFFFu ? 0.0f : as_float(T);
    if (lid == 0) sh[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint cnt = 0;
    for (uint i = lid; i < E; i += OR_HASH_WG) {
        float s = as_float(ent[2 * i + 1]);
        cnt += s > 0.0f && s >= least;
    }
    if (cnt) atomic_add(sh, cnt);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint m = sh[0], span = m <= pool ? E : 0u; /* a pool too small takes nothing */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        /* or_plan cleared it; no partition of the query adds to it */
        if (hashed) ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_OFFERED)] = m;
        sh[1] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint *od = pdoc + (ulong)q * pool, *ok = pkey + (ulong)q * pool;
    for (uint i = lid; i < span; i += OR_HASH_WG) {
        uint2 e = vload2(i, ent);
        if (as_float(e.y) > 0.0f && as_float(e.y) >= least) {
            uint pos = atomic_inc(sh + 1);
            od[pos] = e.x;
            ok[pos] = e.y;
        }
    }
}

/* One work-item per query: its candidates' segment; the batch's counters after the overflow words. */
__kernel void or_finish(uint nq, uint pool, __global const uint *ctl, uint gbase, __global uint *seg,
                        __global uint *out, uint or_at)
{
    uint q = get_global_id(0);
    if (q >= nq) return;
    uint c = ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_OFFERED)];
    seg[2 * q] = q * pool;
    seg[2 * q + 1] = min(c, pool);
    out[or_at + q] = c > pool ? c : 0u;
    if (q == 0) {
        out[or_at + nq] = ctl[gbase + ABI_OR_CTL_PARTS];
        out[or_at + nq + 1] = ctl[gbase + ABI_OR_CTL_SKIPPED];
    }
}

/* One work-group per abi_olist: its blocks' tasks, block b of list l as task task_base + b,
 * {its block, l}. */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_expand(__global const uint *in, uint olists_base, __global abi_task *tasks)
{
    uint l = get_group_id(0);
    __global const abi_olist *ol = OLISTS_AT(in, olists_base, l);
    for (uint b = get_local_id(0); b < ol->num_blocks; b += BLOCK_SIZE) {
        abi_task t = {ol->first_block + b, l};
        tasks[ol->task_base + b] = t;
    }
}

/* One work-group per task: its block decoded once for the batch, each posting's BM25 contribution
 * at its list's weight into C and its docID's place within its partition into O, at slot
 * task * BLOCK_SIZE + i; a block of fewer postings marks its other slots ABI_OR_NO_SLOT. S, per
 * list np + 1 slots: S[p] is the slot of the list's first posting with a docID >= p * OR_PART, so
 * partition p's postings are slots [S[p], S[p + 1]). Each posting writes the entries of the
 * partitions from just after its predecessor's (the previous block's last docID for a block's
 * first posting, none for the list's first) up to its own; the list's last posting also those
 * after its own, up to S[np]: every entry of a valid list once. */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void or_decode(__global const uint *words, uint nwords, __global const idx_block *blocks, __global const float *norms,
               __global const uint *in, uint olists_base, __global const abi_task *tasks, uint np,
               __global float *C, __global ushort *O, __global uint *S)
{
    __local uint vals[BLOCK_SIZE], scan[BLOCK_SIZE], scratch[DECODE_SCRATCH];
    uint g = get_group_id(0), i = get_local_id(0);
    abi_task tk = tasks[g];
    __global const abi_olist *ol = OLISTS_AT(in, olists_base, tk.dst);
    uint blk = tk.block, b = blk - ol->first_block, nb = ol->num_blocks;
    uint doc, tf, n = decode_block(words, nwords, blocks + blk, vals, scan, scratch, &doc, &tf);
    uint at = g * BLOCK_SIZE + i;
    C[at] = i < n ? bm25_contrib(ol->weight, tf, norms[doc]) : 0.0f;
    O[at] = i < n ? (ushort)(doc & (OR_PART - 1u)) : (ushort)ABI_OR_NO_SLOT;
    vals[i] = doc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        __global uint *row = S + (ulong)tk.dst * (np + 1);
        uint from = i > 0 ? (vals[i - 1] >> OR_PART_LOG) + 1 : b > 0 ? (blocks[blk - 1].last >> OR_PART_LOG) + 1 : 0;
        uint to = min(doc >> OR_PART_LOG, np - 1);
        for (uint p = from; p <= to; p++) row[p] = at;
        if (b + 1 == nb && i + 1 == n)
            for (uint p = to + 1; p <= np; p++) row[p] = at + 1;
    }
}

/* One work-group per block of the index: its largest contribution at weight 1. */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void block_maxima(__global const uint *words, uint nwords, __global const idx_block *blocks,
                  __global const float *norms, uint block0, __global float *bmax)
{
    __local uint vals[BLOCK_SIZE], scan[BLOCK_SIZE], scratch[DECODE_SCRATCH];
    __local float best[BLOCK_SIZE];
    uint b = block0 + get_group_id(0), lid = get_local_id(0);
    uint doc, tf, n = decode_block(words, nwords, blocks + b, vals, scan, scratch, &doc, &tf);
    best[lid] = lid < n ? bm25_contrib(1.0f, tf, norms[doc]) : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        if (lid < s) best[lid] = fmax(best[lid], best[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) bmax[b] = best[0];
}
