/* Fault injection, a testing aid: CLSEARCH_FAULT=KIND:N makes the Nth operation of that kind
 * fail (counted from 1 over the process), as the system would fail it, so that the tests can
 * walk every failure point of a search or an index build (tests/fault.sh). Kinds: device-alloc
 * (device buffer creation: CL_MEM_OBJECT_ALLOCATION_FAILURE), enqueue (kernel launch:
 * CL_OUT_OF_RESOURCES), host-alloc (the growable arrays and fault_malloc's callers: NULL),
 * write (the index and run writers: a short write with ENOSPC), build (a kernel program's
 * compilation from source, not a load from the binary cache: clBuildProgram's
 * CL_BUILD_PROGRAM_FAILURE with an empty build log, which clx_build retries once), compiler-crash
 * (the kernel compiler process, clsearch-compile, aborts as a compiler that cannot take a kernel
 * does; counted in that process, which compiles one program: N is 1). Several are
 * comma-separated, a kind up to FAULT_MAX_AT times ("device-alloc:3,write:1", "build:1,build:2":
 * the first build and its retry). KIND:N@E counts only the operations done for the engine's
 * executor E (0-based, as a device list names them: "enqueue:2@1" fails executor 1's second launch),
 * so a test aims a fault at one device of several (E counts searches' operations only, not the
 * executor's creation; on a sharded engine it is the executor's place after empty ranges are left
 * out); KIND:N+ fails the Nth and every later one (a device that breaks: "enqueue:1+@1"). Anything else (an empty item, an unknown kind, a count that is
 * not 1 to 2^64-1 written in digits) stops the process with exit status 2 and a message naming
 * the value and the item. CLSEARCH_FAULT=count fails nothing and prints, at exit, how
 * many operations of each kind the process did: "clsearch fault counts: device-alloc 4 enqueue 9
 * host-alloc 120 write 3 build 0 compiler-crash 0". Unset (the normal case) it costs one load and a branch a
 * call. */
#ifndef CLS_FAULT_H
#define CLS_FAULT_H

#include <stddef.h>

typedef enum fault_kind {
    FAULT_DEVICE_ALLOC,
    FAULT_ENQUEUE,
    FAULT_HOST_ALLOC,
    FAULT_WRITE,
    FAULT_BUILD,
    FAULT_COMPILER_CRASH,
    FAULT_KINDS
} fault_kind;
#define FAULT_MAX_AT 8

/* Reads CLSEARCH_FAULT now (else at the first fault_hit): a program calls it at its start, so a
 * malformed value stops it whatever it goes on to do. */
void fault_setup(void);
/* The engine's executor this thread works for from now (-1: none), for KIND:N@E items. */
void fault_set_executor(int x);
/* Reads CLSEARCH_FAULT again, every count from 0 (tests that change it within one process;
 * nothing may be counting meanwhile). */
void fault_reload(void);
/* Counts one operation of kind k; 1 when it is to fail. */
int fault_hit(fault_kind k);
/* malloc and calloc that fail as host-alloc faults. */
void *fault_malloc(size_t n);
void *fault_calloc(size_t n, size_t size);

#endif
