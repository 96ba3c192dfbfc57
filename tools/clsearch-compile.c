/* clsearch-compile: the kernel compiler process that libclsearch starts for a program missing
 * from its binary cache, so that a compiler that crashes takes down this process and not the
 * caller (src/device/clx_compile.h). Not run by hand: its arguments are the library's. */
#include "device/clx_compile.h"

int main(int argc, char **argv) { return clx_compile_main(argc, argv); }
