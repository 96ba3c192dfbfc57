/* Section checksums of the index file (docs/FORMAT.md, "Checksums").
 *
 * A section's bytes are cut into chunks of IDX_CHUNK bytes (the last may be shorter; an empty
 * section has none); each chunk's digest is XXH3_64bits of its bytes, and the section's
 * checksum is XXH3_64bits of the chunk digests laid end to end as little-endian u64s. The chunks
 * hash independently, so a section verifies on every core (ck_sums), and a reader that streams a
 * section in chunks (the OpenCL engine's upload) can verify each chunk where it lands. */
#ifndef CLS_CHECKSUM_H
#define CLS_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "index/index.h"

/* At most this many threads hash at once: past it, a host's memory bandwidth, not its cores,
 * bounds the hashing of mapped sections. */
#define CK_MAX_THREADS 16u

/* Chunks of a section of size bytes. */
static inline uint64_t ck_nchunks(uint64_t size) { return size / IDX_CHUNK + (size % IDX_CHUNK != 0); }

/* The digest of chunk c of the size bytes at data (c < ck_nchunks(size)). */
uint64_t ck_chunk(const void *data, uint64_t size, uint64_t c);

/* A section's checksum from its n chunk digests, in order. */
uint64_t ck_combine(const uint64_t *digests, uint64_t n);

/* The threads to hash with: the online cores, at most CK_MAX_THREADS. */
unsigned ck_threads(void);

typedef struct ck_part {
    const void *data;
    uint64_t size;
} ck_part;

/* The checksum of each of nparts byte ranges into sums[], every chunk of every part one unit of
 * work for up to threads threads (the caller's included; fewer when there is little to hash, or
 * when a thread cannot be started). CLS_E_NOMEM if the digests cannot be held (8 bytes a chunk). */
cls_status ck_sums(const ck_part *parts, unsigned nparts, unsigned threads, uint64_t *sums);

#endif
