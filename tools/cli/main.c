/* clsearch: the command line, a thin layer over libclsearch (include/clsearch.h). This file holds
 * the table of commands, which the dispatch, `clsearch help` and `clsearch CMD --help` and the
 * suggestion for a mistyped command all read, and the few things every command shares at its
 * start and end (--force, the library's notices, the check of standard output). The commands
 * themselves are in the files beside it (cli.h).
 *
 * Every command takes -h/--help (its usage, from the table). A command that writes a file checks
 * the file's folder before any work. Exit status: 0 success, 1 failure (the message says what and
 * where), 2 bad usage. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "codec/codec.h"
#include "util/fault.h"

/* What a command's --help adds after its usage, and how its options are refused. */
enum {
    HELP_CODECS = 1,      /* the codecs (the command takes --codec) */
    HELP_MODES = 2,       /* the search modes, after the usage's lines */
    HELP_ENVIRONMENT = 4, /* the environment variables the engine reads */
    HELP_JSON_FILE = 8,   /* what --json FILE does with an existing file */
    GETOPT_REPORTS = 16,  /* getopt reports a refused option itself (bench/'s suites), not bad_option */
    BENCH = HELP_JSON_FILE | HELP_ENVIRONMENT | GETOPT_REPORTS
};

/* One command: its name ("search", or "bench decode" for a suite of bench), what runs it (argv[0]
 * its name, a suite's own; NULL for help and version, which dispatch answers itself), and its
 * usage: its lines of `clsearch help`, which prints them all in this order, and all that
 * `clsearch CMD --help` prints before what flags adds. */
typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    int flags;
    const char *usage; /* %1$s: the codec names */
} command;

static const command commands[] = {
    {"devices", cmd_devices, HELP_ENVIRONMENT,
     "  clsearch devices [-v] [--json]              list OpenCL platforms and devices\n"
     "                  -v: the kernel parameters in force on each device;\n"
     "                  --json: one JSON object a line, a device each (no line when there is none)\n"},
    {"index", cmd_index, HELP_CODECS,
     "  clsearch index -c {jsonl,beir,html,trec,smart,files} -o INDEX INPUT...\n"
     "                  [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive]\n"
     "                  [--threads N] [--memory MB] [--codec %1$s] [--block 64|128|256|512]\n"
     "                  [--pfor-depth 0..3] [--store FIELD,...|none] [-q|--quiet] [-v|--verbose]\n"
     "                  [--allow-duplicate-ids] [--allow-empty] [--follow-links] [--force] [--shards N]\n"
     "                  [-d|--device DEVICE]\n"
     "                  a document id given twice is an error unless --allow-duplicate-ids (the\n"
     "                  first is kept); an INPUT without documents is an error unless --allow-empty;\n"
     "                  -o must not name an input or an existing non-index file unless --force,\n"
     "                  nor a read-only file\n"
     "                  INPUT: files, folders, .gz, archives (.tar[.gz|.xz|...], .zip), each read to its\n"
     "                  end (a tar cut short or a zip without its central directory is an error; a\n"
     "                  zip must be a file, not compressed nor a pipe); a folder is read within it:\n"
     "                  a symbolic link leading out of it is skipped (a note says how many) unless\n"
     "                  --follow-links, which follows every link, to files and folders, each folder\n"
     "                  once; links to folders are followed only then;\n"
     "                  --store: the per-document fields kept for search's --fields and --json:\n"
     "                  jsonl, beir: any top-level key (a non-string value as its JSON text);\n"
     "                  html: title, path; trec: any element of a <DOC> (headline, ...); smart:\n"
     "                  title (.T), authors (.A), bibliography (.B); files: path (the absolute path,\n"
     "                  ARCHIVE:ENTRY inside an archive). Default: title for beir, html and smart,\n"
     "                  path for files, none for jsonl and trec. The inputs, made absolute, are\n"
     "                  recorded as the collection's roots (stats shows them);\n"
     "                  files: a folder tree, archive or file of plain text, docno = relative path\n"
     "                  (%%XX-escaped), *.gz decompressed, binary files skipped;\n"
     "                  --threads: analysis and encoding threads (default: all cores); --memory MB:\n"
     "                  the inverted postings kept in memory (default: a quarter of the machine's),\n"
     "                  beyond which runs are spilled to unnamed files in $TMPDIR (else /tmp) and\n"
     "                  merged at the end, the index the same bytes; -q, --quiet: no progress\n"
     "                  line (shown when stderr is a terminal: MB/s and tokens/s) and no notes; -v: each\n"
     "                  stage's time (reading and analysis, spills, inversion, merging and encoding,\n"
     "                  writing) and the peak memory; --shards N (1 to 1024): INDEX.0 .. INDEX.<N-1>, the\n"
     "                  set `clsearch index` then `clsearch shard -n N` writes, byte for byte (the index\n"
     "                  is written whole to a temporary file beside INDEX.0, then cut), written as a set;\n"
     "                  INDEX's folder must exist and be writable (checked before any input is read);\n"
     "                  -d DEVICE (gpu, cpu, P:D as `clsearch devices` lists them): the postings are\n"
     "                  encoded and compressed on that OpenCL device, every codec, into the file the\n"
     "                  host writes, byte for byte; a device that cannot is an error (no fallback);\n"
     "                  without -d the host encodes; -v names the device and its parameters\n"},
    {"search", cmd_search, HELP_MODES | HELP_ENVIRONMENT,
     "  clsearch search -x INDEX {-q TOPICS | QUERY...} [-f {auto,tsv,anserini,trec,smart,mq}] [-k K]\n"
     "                  [-m MODE] [--k1 0.9] [--b 0.4] [-d DEVICE] [-o RUN] [--tag TAG] [--json] [-v]\n"
     "                  [--device-mem BYTES] [--batch-ms MS] [--placement auto|replicate|shard]\n"
     "                  [--fields FIELD,...|none] [--deadline-ms D] [--rerank MODEL [--rerank-depth N]]\n"
     "                  --deadline-ms: the time the search should take (-v counts queries_late);\n"
     "                  --rerank: a second ranking stage, a LightGBM (text) or XGBoost (JSON) model over\n"
     "                  the feature table's columns (features --list): the top N of the first stage\n"
     "                  (default 1000) re-ranked by the model's score (ties to the smaller docID), the\n"
     "                  top K kept; the run's score is the model's (--json: \"score\" the model's,\n"
     "                  \"first_score\" the first stage's); -v names the model, the depth and where it ran;\n"
     "                  -q, --topics TOPICS: a topics file, '-' for standard input (a pipe works,\n"
     "                  in any format -f auto recognises); reading no topic is an error;\n"
     "                  QUERY...: instead of -q, one query, the words joined by spaces, qid 1\n"
     "                  (--qid ID names it otherwise); a query's terms weigh 1 each and repeats add,\n"
     "                  term^W weighs every term the analyzer makes of 'term' W (a decimal number\n"
     "                  from 1e-9 to 1e9: 'apple^2.5 pie'); a bad weight is an error naming the query;\n"
     "                  -o RUN: write the run there (its folder is checked first), else standard output;\n"
     "                  never over the index, the topics, a read-only file or an existing file\n"
     "                  that is not a run (--force lifts all but the read-only rule); qids must differ;\n"
     "                  --json: one JSON object a hit, {\"qid\", \"rank\", \"docno\", \"score\"},\n"
     "                  instead of TREC run lines (qid Q0 docno rank score tag), with \"fields\":\n"
     "                  {\"title\": ..., ...} when the index stores fields (all, or those of --fields;\n"
     "                  null: the document lacks it);\n"
     "                  --fields: stored fields (index --store; stats lists them) to print: after\n"
     "                  each run line's six columns a tab, then the values separated by tabs (\\t,\n"
     "                  \\n, \\r, \\\\ escaped; absent: empty), a file for reading, not trec_eval;\n"
     "                  DEVICE: auto, gpu, cpu, ref, or P:D (default $CLSEARCH_DEVICE, else auto);\n"
     "                  gpu on a host of several GPUs: every one; a list (1:0,1:2; cpu,cpu): one\n"
     "                  engine over those devices, the index on each, a search's queries shared out\n"
     "                  (--placement replicate), or each device a range of the documents, every search\n"
     "                  on each, merged (shard); auto (default): shard where the index does not fit\n"
     "                  every device; a device that fails a batch is set aside, the batch run on others;\n"
     "                  the first search on a device compiles its kernels and says so on stderr;\n"
     "                  --device-mem BYTES (e.g. 8G; default $CLSEARCH_DEVICE_MEM, else the device's):\n"
     "                  the device memory the engine may take; an index taking more than half of it\n"
     "                  has its lists cached on the device (LRU by bytes), uploaded as batches need them;\n"
     "                  --batch-ms MS (default $CLSEARCH_BATCH_MS, else 25): the time a device batch\n"
     "                  aims at, past 1,024 queries (the cost model: the rate measured on earlier batches)\n"},
    {"features", cmd_features, HELP_MODES,
     "  clsearch features --list [-x INDEX]          the learning-to-rank features: number, name, definition\n"
     "                  (with -x: the index's numeric stored fields too)\n"
     "  clsearch features -x INDEX -q TOPICS --qrels QRELS [-f FORMAT] [-k DEPTH] [-m MODE] [-d DEVICE]\n"
     "                  [--k1 0.9] [--b 0.4] [--mu 2500] [--lambda 0.1] [-o FILE]\n"
     "                  training data for a second ranking stage: each topic's top DEPTH (default 1000)\n"
     "                  from the first stage (search's engine on DEVICE, as search: $CLSEARCH_DEVICE, else\n"
     "                  auto; every device ranks the same), a line a candidate in rank order:\n"
     "                  'label qid:Q 1:v 2:v ... # docno' (SVMlight/LETOR, as scikit-learn's\n"
     "                  load_svmlight_file reads it), the label the qrels' relevance (TREC: qid\n"
     "                  iteration docno relevance; 0 when unjudged), after a head of '#' lines naming\n"
     "                  the features; a qid not all digits is written as its topic's place, the qid\n"
     "                  after the docno; --k1, --b: BM25 of both stages; --mu, --lambda: the Dirichlet\n"
     "                  and Jelinek-Mercer smoothing; -o FILE: written whole or not at all (the rules\n"
     "                  of search -o), else standard output\n"},
    {"stats", cmd_stats, 0,
     "  clsearch stats INDEX [--codecs] [--json]    sizes; --codecs: every codec and block size;\n"
     "                  the collection's format and roots, the stored fields (documents having each);\n"
     "                  --json: the same as one JSON object on one line (\"sizes\": the index's own\n"
     "                  codec first, then with --codecs every codec and block size)\n"},
    {"check", cmd_check, 0,
     "  clsearch check INDEX [--threads N] [-v]     verifies what opening leaves to first use: the postings\n"
     "                  checksum, every block decoded strictly, every max_score; prints 'INDEX: ok' or\n"
     "                  the first damage (section, term, block) and exits 1; --threads: default all cores;\n"
     "                  -v: what was checked and how long it took\n"},
    {"recode", cmd_recode, HELP_CODECS,
     "  clsearch recode INDEX -o OUT [--codec %1$s] [--block 64|128|256|512] [--force]\n"
     "                  [--pfor-depth 0..3]         the same index in another codec or block size\n"},
    {"shard", cmd_shard, 0,
     "  clsearch shard INDEX -n N -o OUT [-v] [--force]\n"
     "                  the index cut into N (1 to 1024) ranges of documents holding about equal postings,\n"
     "                  OUT.0 .. OUT.<N-1> (a range may be empty), each keeping the whole collection's\n"
     "                  statistics: a document scores on its shard as on the index, and the shards' top k\n"
     "                  (docIDs plus each shard's base, stats shows it) merge into the index's; written as a\n"
     "                  set (none replaced unless all are whole); -v: each shard's documents\n"},
    {"generate", cmd_generate, HELP_CODECS,
     "  clsearch generate -o DIR [--scale S] [--docs N] [--queries N] [--vocab N] [--doc-len N] [--seed S]\n"
     "                  [--force]\n"
     "                  a generated text collection: DIR/corpus.jsonl and DIR/topics.tsv (existing ones\n"
     "                  of another kind are not replaced without --force, read-only ones never)\n"
     "  clsearch generate --index FILE [--topics FILE] [--scale small|medium|gov2] [--docs N] [--queries N]\n"
     "                  [--vocab N] [--doc-len N] [--seed S] [--threads N] [--codec C] [--block N]\n"
     "                  [--pfor-depth D] [-q|--quiet] [-v] [--force]\n"
     "                  the same collection straight into an index, no text, on all cores (--threads);\n"
     "                  small 20k documents, medium 2M, gov2 25.2M (~6e9 postings); -q: no progress or totals\n"},
    {"ciff-import", cmd_ciff_import, HELP_CODECS,
     "  clsearch ciff-import FILE.ciff[.gz] -o INDEX [--codec C] [--block N] [--pfor-depth D] [--impact]\n"
     "                  [--no-stem] [--no-stopwords] [--no-lowercase] [--no-possessive] [-v] [--force]\n"
     "                  CIFF (Anserini, PISA, Lucene) to an index; the analyzer flags are what\n"
     "                  queries will use, so give those the CIFF's terms were made with;\n"
     "                  --impact: the tf fields are quantized impacts (SPLADE, uniCOIL: Anserini's\n"
     "                  -impact, PISA's quantized scorer): a document scores the sum of query weight\n"
     "                  x impact (no idf, no length norm; --k1, --b ignored); CIFF does not record it\n"},
    {"ciff-export", cmd_ciff_export, 0, "  clsearch ciff-export INDEX -o FILE.ciff [--description TEXT] [-v] [--force]\n"
                    "                  an impact index exports its impacts as tf (import it with --impact)\n"},
    {"predict", cmd_predict, 0,
     "  clsearch predict -m MODEL [-d ref|DEVICE] [-o OUT] [-v] FILE\n"
     "                  a tree ensemble's raw score of each document of FILE ('-': standard input),\n"
     "                  one a line (%%.9g: the float's exact value back); MODEL: a LightGBM text\n"
     "                  model or an XGBoost JSON model (numeric splits; regression or ranking);\n"
     "                  FILE: SVMlight / LETOR lines \"label [qid:Q] idx:val ... [# comment]\", ids\n"
     "                  as written and increasing, \"nan\" a missing value; a feature a line lacks is\n"
     "                  0 to a LightGBM model and missing to an XGBoost one, as each library has it;\n"
     "                  -d: ref (default), the plain-C evaluator, or a device (auto, cpu, gpu, P:D)\n"
     "                  running the OpenCL kernel, the same bits; -v: the model and which ran;\n"
     "                  a malformed line is an error naming it, and nothing is written\n"},
    {"compare", cmd_compare, 0, "  clsearch compare RUN_A RUN_B                same docnos in the same order, scores within 1e-5\n"},
    {"serve", cmd_serve, 0,
     "  clsearch serve -x INDEX [-d DEVICE] [--listen ADDR:PORT] [--max-batch N] [--max-wait-ms T]\n"
     "                  [--threads N] [--max-queue N] [--max-k K] [--timeout S] [--request-timeout S]\n"
     "                  [--max-conns N] [--max-conns-per-ip N] [--device-mem BYTES] [--placement P]\n"
     "                  [--inflight N] [--deadline-ms D] [--wait-when-idle] [--rerank MODEL [--rerank-depth N]]\n"
     "                  --rerank: a second ranking stage (as search --rerank), the model read once at\n"
     "                  the start; a request's \"rerank\": true|false (default true with a model) says\n"
     "                  whether it applies, and its hits then carry \"first_score\" too;\n"
     "                  the query server: HTTP and JSON, concurrent requests searched together in\n"
     "                  device batches of up to N queries (default 128): at once while an executor is\n"
     "                  idle (--wait-when-idle: not), else the first waiting at most T ms (default 5)\n"
     "                  for others to join;\n"
     "                  --deadline-ms: a request's deadline when it gives none (\"deadline_ms\"; default\n"
     "                  none): requests are taken earliest deadline first, each search on the executor\n"
     "                  predicted to finish it first, and those answered late counted in /metrics; prints 'listening on URL' (--listen default 127.0.0.1:8080, port 0:\n"
     "                  any free one); SIGTERM or SIGINT: stops accepting, answers every request received\n"
     "                  (503 to those not yet queued), closes idle connections, exits 0;\n"
     "                  POST /search {\"query\": \"text\", \"k\": 10, \"mode\": \"or\"} or\n"
     "                  {\"queries\": [{\"qid\": \"1\", \"query\": \"text\"}, ...], ...}; GET /search?q=text&k=10;\n"
     "                  GET /health; GET /metrics (Prometheus text); bad requests get a 4xx JSON error;\n"
     "                  --threads: HTTP threads (default the cores, at most 4); --max-queue: queries waiting\n"
     "                  at most, more get 503 (default 4096); --max-k: the largest k asked (default 1000);\n"
     "                  --timeout: a connection without a request line for S s is closed, bytes trickled\n"
     "                  or not (default 30), and the longest wait for requests to finish at shutdown;\n"
     "                  --request-timeout: a request must arrive whole within S s of its request line, and\n"
     "                  its answer be taken within S s (default 10); --max-conns: connections at most\n"
     "                  (default 1024), --max-conns-per-ip: from one address (default 256); a connection\n"
     "                  past either closes the oldest of its scope without a whole request, or is answered\n"
     "                  503 when every one has a request being answered\n"},
    {"bench copy", bench_copy, BENCH,
     "  clsearch bench copy [-d DEVICES] [-r N] [--mib N] [--json FILE]\n"
     "                  the devices' memory-bandwidth ceiling (copy kernel, bytes read + written)\n"},
    {"bench decode", bench_decode, BENCH,
     "  clsearch bench decode [-d ref,DEVICES] [-r N] [--select 1,0.05] [--algo hs,we,shfl|all]\n"
     "                  [--ceiling GBPS] [--json FILE] [--plot DIR] INDEX...\n"
     "                  decoding speed of whole lists and scattered blocks per scan variant, checked against ref\n"},
    {"bench encode", bench_encode, BENCH,
     "  clsearch bench encode -x INDEX [-d DEVICES] [-t 1,4,16] [--wg 32,64,128,256]\n"
     "                  [--layout CODEC:BLOCK[:DEPTH],...] [-r N] [--json FILE]\n"
     "                  the index writer's encoding of INDEX's lists: host threads against each device\n"
     "                  and WG_ENCODE (kernels, transfers and wall time apart), checked against the host\n"},
    {"bench e2e", bench_e2e, BENCH,
     "  clsearch bench e2e -x INDEX -q TOPICS [-d ref,DEVICES] [-m or,and,and-or] [-k 10,100,1000]\n"
     "                  [-b 1,16,256,1024,4096,16384] [--seconds S] [--json FILE]\n"
     "                  queries/s and latency p50/p95/p99 by batch size, transfers apart\n"},
    {"bench topk", bench_topk, BENCH,
     "  clsearch bench topk [-d DEVICES] [-c ROWSxN:K,...] [-r N] [--json FILE]\n"
     "                  top-k selection alone on dense score rows, every row checked on the host\n"},
    {"bench scan", bench_scan, BENCH,
     "  clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--method lookback,3pass] [--algo all|hs,we,shfl]\n"
     "                  [--wg N,...] [--items N,...] [--json FILE]\n"
     "                  device-wide prefix sum alone (single pass with look-back, or three passes), per\n"
     "                  variant, checked on the host\n"},
    {"bench intersect", bench_intersect, BENCH,
     "  clsearch bench intersect [-d DEVICES] [--terms 2] [--short 1000,10000] [--ratios 1,10,100,1000]\n"
     "                  [--batch 1,64,1024,16384] [--wg 64,128,256,512] [-r N] [--mib N] [--json FILE]\n"
     "                  AND-query list intersection alone, per work-group size, checked on the host\n"},
    {"bench score", bench_score, BENCH,
     "  clsearch bench score [-d DEVICES] [--mode and,or] [--cands 1e3,...] [--lists 1e4,...] [--batch N,...]\n"
     "                  [--wg 64,128,256,512] [-r N] [--mib N] [--json FILE]\n"
     "                  BM25 scoring alone (candidates; dense rows), per work-group size, checked on the host\n"},
    {"bench trees", bench_trees, BENCH,
     "  clsearch bench trees -m MODEL --rows FILE --cols N [-d DEVICE] [-r N] [--variants L:WG:DOCS:LOCAL:TILE,...]\n"
     "                  [--check ROWS]\n"
     "                  a tree ensemble's scoring alone on a float32 matrix file, per kernel variant,\n"
     "                  a sample of rows checked against the C evaluator bit for bit\n"},
    {"bench serve", cmd_bench_serve, BENCH,
     "  clsearch bench serve -x INDEX -q TOPICS [-d DEVICE] [-c 1,4,16,64] [--rate R1,R2,...] [--seed N]\n"
     "                  [--max-batch 1,16,128] [--max-wait-ms 0,5] [--inflight 1,2] [-k 10] [-m or] [--threads N]\n"
     "                  [--deadline-ms D] [--seconds S] [--json FILE]\n"
     "                  the query server in-process on a loopback port, driven by C keep-alive clients\n"
     "                  (1 to 16384, a thread each): queries/s against latency p50/p99 for each batching\n"
     "                  setting and client count; --rate: open loop instead, requests due at Poisson\n"
     "                  arrivals of R a second (--seed, default 1) over a pool of -c connections (default\n"
     "                  256), latency from the due time: offered and achieved rate, p50/p99/p99.9, the\n"
     "                  requests sent, answered, failed and unsent (still queued at the end); --deadline-ms:\n"
     "                  each request's deadline, and the share answered within it (\"in time %%\")\n"},
    {"tune", bench_tune, BENCH,
     "  clsearch tune [-d DEVICE] [-o FILE] [-r N] [--quick] [--json FILE] [--force]\n"
     "                  sweeps the kernel variants on the device, writes the tuning file the engine loads\n"
     "                  (checked first: a file of another kind is not replaced without --force, a\n"
     "                  read-only one never)\n"
     "  clsearch tune --list                        the registry of tunable parameters\n"},
    {"help", NULL, 0, "  clsearch help, clsearch CMD --help          all commands, or one\n"},
    {"version", NULL, 0, "  clsearch version                            the version\n"},
};
#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

/* Whether c is the command cmd names: its name, or for a suite its family ("bench"). */
static int in_family(const command *c, const char *cmd)
{
    size_t n = strlen(cmd);
    return strncmp(c->name, cmd, n) == 0 && (c->name[n] == '\0' || c->name[n] == ' ');
}

/* The command named exactly name ("index", "bench e2e"), or NULL. */
static const command *find_command(const char *name)
{
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

/* The suites of bench, joined by sep ("copy,decode,..."), into buf. */
static const char *bench_suites(char *buf, size_t len, const char *sep)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NUM_COMMANDS && at < len; i++) {
        if (strncmp(commands[i].name, "bench ", 6) != 0) continue;
        int k = snprintf(buf + at, len - at, "%s%s", at ? sep : "", commands[i].name + 6);
        if (k < 0) break;
        at += (size_t)k;
    }
    return buf;
}

/* The codec names from the codec table, "raw|bp|pfor|optpfd|rice", for the usage lines. */
static const char *codec_names(char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int c = 0; c < CLS_NUM_CODECS && at < len; c++) {
        int k = snprintf(buf + at, len - at, "%s%s", c ? "|" : "", cls_codec_name((cls_codec)c));
        if (k < 0) break;
        at += (size_t)k;
    }
    return buf;
}

static void print_codecs(void)
{
    printf("Codecs (--codec):\n");
    for (int c = 0; c < CLS_NUM_CODECS; c++) {
        const cdc_codec *d = cdc_get((cls_codec)c);
        printf("  %-8s %s\n", d->name, d->help);
    }
}

static void print_environment(void)
{
    printf("Environment: CLSEARCH_DEVICE, CLSEARCH_CACHE_DIR (program binaries), CLSEARCH_KERNEL_DIR\n"
           "(kernel sources instead of the embedded ones), CLSEARCH_TUNING (tuning file; 'none' ignores it;\n"
           "default CACHE_DIR/tuning.json), CLSEARCH_PARAMS (NAME=VALUE,... over the tuned values),\n"
           "CLSEARCH_PROGRAM_CACHE (binary, driver or auto: which cache keeps compiled programs),\n"
           "CLSEARCH_COMPILER (the kernel compiler process; 'none': compile in this process).\n");
}

/* One command's usage lines, and the search modes where it takes them. */
static void print_usage(const command *c)
{
    char codecs[256];
    codec_names(codecs, sizeof codecs);
    printf(c->usage, codecs);
    if (c->flags & HELP_MODES)
        for (cls_mode m = 0; cls_mode_name(m); m++)
            printf("                  -m %-7s %s%s\n", cls_mode_name(m), cls_mode_help(m),
                   m == CLS_MODE_OR ? " (default)" : "");
}

static void help(void)
{
    printf("clsearch %s: query processing on OpenCL devices\n\n", cls_version());
    for (size_t i = 0; i < NUM_COMMANDS; i++) print_usage(&commands[i]);
    printf("\nEvery command takes -h, --help: its own usage. Exit status: 0 success, 1 failure, 2 bad usage.\n\n");
    print_codecs();
    printf("\n");
    print_environment();
}

/* `clsearch CMD --help`: cmd's usage ("bench": every suite's) and what it refers to. 0 when
 * cmd names a command. */
static int command_help(const char *cmd)
{
    int found = 0, flags = 0;
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (in_family(&commands[i], cmd)) {
            if (!found) printf("usage:\n");
            print_usage(&commands[i]);
            found = 1;
            flags |= commands[i].flags;
        }
    if (!found) return 1;
    if (flags & HELP_CODECS) {
        printf("\n");
        print_codecs();
    }
    if (flags & HELP_JSON_FILE)
        printf("\n--json FILE: the suite's JSON lines after FILE's own, FILE replaced once the suite is done;\n"
               "never one of the suite's inputs, nor a file that is not JSON lines without --force (which\n"
               "writes over it), nor a read-only file.\n");
    if (flags & HELP_ENVIRONMENT) {
        printf("\n");
        print_environment();
    }
    return 0;
}

/* The command whose name is nearest to a mistyped one (at most two letters added, removed,
 * changed or swapped), or NULL: for "did you mean". A suite counts as its family. */
static const char *nearest_command(const char *typed)
{
    const char *best = NULL;
    size_t best_d = 3, n = strlen(typed);
    if (n > 30) return NULL;
    for (size_t i = 0; i < NUM_COMMANDS; i++) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(commands[i].name, " "), commands[i].name);
        size_t m = strlen(name);
        /* optimal string alignment distance: insertions, deletions, substitutions, transpositions */
        size_t d[32][32];
        for (size_t a = 0; a <= n; a++) d[a][0] = a;
        for (size_t b = 0; b <= m; b++) d[0][b] = b;
        for (size_t a = 1; a <= n; a++)
            for (size_t b = 1; b <= m; b++) {
                size_t v = d[a - 1][b - 1] + (typed[a - 1] != name[b - 1]);
                if (d[a - 1][b] + 1 < v) v = d[a - 1][b] + 1;
                if (d[a][b - 1] + 1 < v) v = d[a][b - 1] + 1;
                if (a > 1 && b > 1 && typed[a - 1] == name[b - 2] && typed[a - 2] == name[b - 1] && d[a - 2][b - 2] + 1 < v)
                    v = d[a - 2][b - 2] + 1;
                d[a][b] = v;
            }
        if (d[n][m] < best_d) {
            best_d = d[n][m];
            best = commands[i].name;
        }
    }
    if (!best) return NULL;
    static char out[32];
    snprintf(out, sizeof out, "%.*s", (int)strcspn(best, " "), best);
    return out;
}

/* Whether the arguments after the command ask for help: -h or --help before any "--". */
static int asks_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
    }
    return 0;
}

/* Notices from the library (include/clsearch.h, cls_set_notice) on stderr: today the one that a
 * kernel program is being compiled, not loaded from the cache, which takes seconds. An engine
 * builds two programs and tune many, all with the same notice: it is printed once. */
static void on_notice(void *user, const char *line)
{
    static char last[1024];
    (void)user;
    if (strncmp(last, line, sizeof last - 1) == 0) return;
    snprintf(last, sizeof last, "%s", line);
    fprintf(stderr, "%s: %s\n", prog, line);
    fflush(stderr);
}

/* --force (guard_output) goes with every command that writes a file; taken off here, up to a
 * "--", so that each command's options stay its own. Returns the arguments left. */
static int take_force(int argc, char **argv)
{
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc) argv[kept++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--force") == 0) of_set_force(1);
        else argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    return kept;
}

/* help, --help, -h [CMD [SUITE]]: every usage, or that command's. */
static int help_command(int argc, char **argv)
{
    if (argc > 1 && !asks_help(argc, argv)) {
        char which[128];
        snprintf(which, sizeof which, "%s%s%s", argv[1], argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
        return command_help(which) ? usage_error("help: no command '%s'", which) : 0;
    }
    help();
    return 0;
}

/* bench SUITE ...: the suite's command, argv[0] the suite. */
static int run_bench(int argc, char **argv)
{
    char suites[128], msg[256];
    if (argc < 2) {
        snprintf(msg, sizeof msg, "bench: usage: clsearch bench {%s} [options]%%s", bench_suites(suites, sizeof suites, ","));
        return usage_error(msg, "");
    }
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strncmp(commands[i].name, "bench ", 6) == 0 && strcmp(commands[i].name + 6, argv[1]) == 0)
            return commands[i].run(argc - 1, argv + 1);
    snprintf(msg, sizeof msg, "bench: unknown suite '%%s' (%s)", bench_suites(suites, sizeof suites, ", "));
    return usage_error(msg, argv[1]);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        help();
        return 2;
    }
    const char *cmd = argv[1];
    argc--;
    argv++;
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) return help_command(argc, argv);
    if (strcmp(cmd, "bench") == 0) {
        /* bench SUITE --help: the suite's usage; bench --help, or help with no suite: all of them */
        if (asks_help(argc, argv)) {
            char suite[64];
            snprintf(suite, sizeof suite, "bench %s", argv[1]);
            if (command_help(suite) != 0) command_help("bench");
            return 0;
        }
    } else if (asks_help(argc, argv) && command_help(cmd) == 0) {
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("clsearch %s\n", cls_version());
        return 0;
    }
    snprintf(cur_cmd, sizeof cur_cmd, "%s", cmd);
    argc = take_force(argc, argv);
    cls_set_notice(on_notice, NULL);
    /* the commands here say themselves what getopt refused (bad_option); the suites of bench/ let
     * getopt say it */
    opterr = 0;
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (in_family(&commands[i], cmd) && (commands[i].flags & GETOPT_REPORTS)) opterr = 1;
    if (strcmp(cmd, "bench") == 0) return run_bench(argc, argv);
    const command *c = strchr(cmd, ' ') ? NULL : find_command(cmd);
    if (c && c->run) return c->run(argc, argv);
    cur_cmd[0] = '\0'; /* no such command's --help: the list of them */
    const char *near = nearest_command(cmd);
    if (near) fprintf(stderr, "%s: unknown command '%s': did you mean '%s'?\n", prog, cmd, near);
    else fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
    fprintf(stderr, "(see '%s --help')\n", prog);
    return 2;
}

/* Every command's standard output is checked once it is done: a write that failed (a full disk,
 * /dev/full, a closed pipe) is an error and exit 1, whatever the command printed. */
int main(int argc, char **argv)
{
    fault_setup(); /* a malformed CLSEARCH_FAULT stops every command, not only those that count */
    int rc = dispatch(argc, argv);
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
    if (bad && rc == 0) { /* a command that failed has said why already */
        fprintf(stderr, "%s: writing to standard output: %s\n", prog, strerror(e ? e : EIO));
        rc = 1;
    }
    return rc;
}
