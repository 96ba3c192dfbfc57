/* Generated collections: a seeded synthetic corpus and topics (generate.c), and the same
 * collection straight into an index (generate_index.c). Not part of libclsearch: the command
 * (`clsearch generate`), the tests and the benchmarks link this static library (gen/). */
#ifndef GEN_GENERATE_H
#define GEN_GENERATE_H

#include <stdint.h>

#include "clsearch.h"

typedef struct gen_opts {
    uint64_t seed;
    uint32_t num_docs;
    uint32_t num_queries;
    uint32_t vocab_size;
    double zipf_s;       /* Zipf exponent of term frequencies */
    double mean_doc_len; /* mean document length in tokens (log-normal lengths) */
} gen_opts;

void gen_defaults(gen_opts *o);
/* Writes dir/corpus.jsonl (JSONL collection) and dir/topics.tsv; deterministic for a seed. */
cls_status gen_corpus(const gen_opts *o, const char *dir);

/* A named scale: gen_defaults, then for "small" nothing more (20,000 documents); "gov2":
 * 25,205,179 documents (TREC GOV2's count), a 4,000,000-word vocabulary, 301 tokens a document
 * on average, so ~238 distinct terms a document and ~6.0e9 postings, 10,000 queries; "medium":
 * gov2's model at 2,000,000 documents. CLS_E_ARG for another name. */
cls_status gen_scale(const char *name, gen_opts *o);

/* Generates o's collection straight into an index at index_path, with no text: the very index
 * that gen_corpus's corpus.jsonl, indexed with the default analyzer and b, gives (byte for
 * byte), built by b->threads threads (0: all cores; the file is the same for any number).
 * topics_path (NULL: none) receives o->num_queries topics, gen_corpus's topics.tsv. Each file
 * is written under a temporary name and renamed when complete, the index first. */
cls_status gen_index(const gen_opts *o, const cls_build_opts *b, const char *index_path, const char *topics_path);

/* Progress of gen_index_ex, from the calling thread, at most every 0.1 s: phase "set-up"
 * (vocabulary and document lengths: done/total documents), "counting", "filling" (documents),
 * "encoding" (postings), "gathering" (words), "writing" (0/0), "topics" (queries). */
typedef void (*gen_progress_fn)(void *user, const char *phase, uint64_t done, uint64_t total);

typedef struct gen_index_info {
    uint32_t num_docs, num_terms;
    uint64_t num_tokens, num_postings;
    uint64_t num_words;  /* 32-bit words of coded postings */
    unsigned threads;    /* worker threads used */
    double seconds_setup, seconds_count, seconds_fill, seconds_encode, seconds_write, seconds_topics;
} gen_index_info;

/* gen_index with progress (NULL: none) and totals (info NULL: none). */
cls_status gen_index_ex(const gen_opts *o, const cls_build_opts *b, const char *index_path, const char *topics_path,
                        gen_progress_fn progress, void *user, gen_index_info *info);

#endif
