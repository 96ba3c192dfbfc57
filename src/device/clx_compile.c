/* Compiling a kernel program in a child process (clx_compile.h says why).
 *
 * The parent writes the source to a private folder (in the cache folder, else $TMPDIR or /tmp),
 * starts the helper with posix_spawn (fork-safe in a process with OpenCL threads, as fork alone
 * is not), its standard output and error going to a log file there, and waits for it. The
 * helper finds the same device by its indices, checks that name and driver agree, builds with
 * clx_build_source (the same retry and fault injection as in-process), and writes the binary to
 * a temporary name that it renames when whole; its exit status says what happened:
 *   0  built: out.bin holds the binary; the file is also how success is told when the caller
 *      reaps children itself (SIGCHLD ignored) and waitpid has nothing to report;
 *   1  the build failed: the log holds "error: " and the message with the build log;
 *   2  anything else (a file it could not read or write): "error: " and why;
 *   3  the process cannot open the device (a GPU that one process holds alone, its compute mode
 *      exclusive; a platform missing from its environment): CLS_E_NODEVICE, on which the caller
 *      compiles in its own process and says so;
 *   a signal: the compiler crashed; the log's last lines are what it said.
 * Notices the helper sent ("notice: ...", the empty-log retry) are passed on to the caller's. */
#define _GNU_SOURCE /* dladdr */
#include "device/clx_compile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/clx_guard.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/readfile.h"

extern char **environ;

#define COMPILE_PROTOCOL "clsearch-compile-1"
#define HELPER_NAME "clsearch-compile"

/* ---- The environment the helper gets ------------------------------------------------------ */

/* OCL_ICD_FILENAMES as the process started. The ocl-icd loader splits that variable in place
 * when OpenCL first starts (the colons become string ends in the environment itself), so a
 * child started later sees the first library alone: on the GPU host, POCL without NVIDIA's, and
 * no GPU. The value is kept before any OpenCL call, and the helper gets it whole. */
static char *icd_filenames;

__attribute__((constructor)) static void keep_icd_filenames(void)
{
    const char *v = getenv("OCL_ICD_FILENAMES");
    if (v && *v) icd_filenames = strdup(v);
}

/* The environment for the helper: this process's, with OCL_ICD_FILENAMES as it started (*fixed
 * holds that entry; both freed by the caller), or environ itself (NULL in *fixed). */
static char **helper_environment(char **fixed)
{
    *fixed = NULL;
    if (!icd_filenames) return environ;
    size_t n = 0;
    while (environ[n]) n++;
    char **env = malloc((n + 2) * sizeof *env);
    size_t len = strlen("OCL_ICD_FILENAMES=") + strlen(icd_filenames) + 1;
    if (!env || !(*fixed = malloc(len))) {
        free(env);
        return environ;
    }
    snprintf(*fixed, len, "OCL_ICD_FILENAMES=%s", icd_filenames);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OCL_ICD_FILENAMES=", 18) != 0) env[k++] = environ[i];
    env[k++] = *fixed;
    env[k] = NULL;
    return env;
}

/* ---- Finding the helper ------------------------------------------------------------------ */

static int usable(const char *path) { return access(path, X_OK) == 0; }

/* dir/HELPER_NAME, then dir/../libexec/clsearch/HELPER_NAME, where dir is the folder of file. */
static int beside(const char *file, char *out, size_t len)
{
    if (!file || !strchr(file, '/')) return 0;
    size_t dn = (size_t)(strrchr(file, '/') - file);
    snprintf(out, len, "%.*s/%s", (int)dn, file, HELPER_NAME);
    if (usable(out)) return 1;
    snprintf(out, len, "%.*s/../%s/clsearch/%s", (int)dn, file, CLSEARCH_LIBEXECDIR_NAME, HELPER_NAME);
    return usable(out);
}

int clx_compiler_path(char *out, size_t len)
{
    const char *env = getenv("CLSEARCH_COMPILER");
    if (env && *env) {
        if (strcmp(env, "none") == 0) return 0;
        snprintf(out, len, "%s", env);
        return 1; /* named: used as it is, so a wrong name is an error, not a quiet fallback */
    }
    Dl_info info;
    if (dladdr((void *)clx_compiler_path, &info) && beside(info.dli_fname, out, len)) return 1;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        if (beside(self, out, len)) return 1;
    }
    static const char *const known[] = {CLSEARCH_COMPILER_INSTALLED, CLSEARCH_COMPILER_BUILT};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (*known[i] && usable(known[i])) {
            snprintf(out, len, "%s", known[i]);
            return 1;
        }
    return 0;
}

/* ---- The parent's side ------------------------------------------------------------------- */

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0) && ok;
}

/* The tail of a log: its last `lines` lines, at most max bytes (a pointer into log). */
static const char *log_tail(const char *log, size_t len, int lines, size_t max)
{
    while (len && (log[len - 1] == '\n' || log[len - 1] == ' ')) len--;
    size_t at = len;
    for (int seen = 0; at > 0; at--)
        if (log[at - 1] == '\n' && ++seen == lines) break;
    if (len - at > max) at = len - max;
    return log + at;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGABRT: return "SIGABRT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
    }
}

/* Passes the helper's notices on, and returns where its error message starts (NULL: none). */
static const char *relay(char *log)
{
    const char *error = NULL;
    for (char *line = log; line && *line;) {
        char *nl = strchr(line, '\n');
        if (strncmp(line, "error: ", 7) == 0) {
            error = line + 7; /* the rest of the log, build log included */
            break;
        }
        if (nl) *nl = '\0';
        if (strncmp(line, "notice: ", 8) == 0) err_notice("%s", line + 8);
        if (nl) *nl = '\n';
        line = nl ? nl + 1 : NULL;
    }
    return error;
}

static void remove_folder(const char *dir, const char *const *names, size_t n)
{
    char path[4300];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

cls_status clx_compile_isolated(const char *helper, const clx_device *dev, const char *what, const char *src,
                                size_t src_len, const char *options, unsigned char **bin, size_t *bin_len)
{
    *bin = NULL;
    *bin_len = 0;
    char dir[4200];
    if (!clx_cache_dir(dir, sizeof dir - 32)) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir - 32, "%s", t && *t ? t : "/tmp");
    }
    strcat(dir, "/.compile.XXXXXX");
    if (!mkdtemp(dir))
        return err_set(CLS_E_IO, "compiling the %s: cannot make a folder %s: %s", what, dir, strerror(errno));
    static const char *const names[] = {"source.cl", "out.bin", "out.bin.tmp", "log"};
    char srcp[4300], outp[4300], logp[4300];
    snprintf(srcp, sizeof srcp, "%s/%s", dir, names[0]);
    snprintf(outp, sizeof outp, "%s/%s", dir, names[1]);
    snprintf(logp, sizeof logp, "%s/%s", dir, names[3]);
    if (!write_file(srcp, src, src_len)) {
        cls_status s = err_set(CLS_E_IO, "compiling the %s: cannot write %s: %s", what, srcp, strerror(errno));
        remove_folder(dir, names, 4);
        return s;
    }
    char pidx[16], didx[16];
    snprintf(pidx, sizeof pidx, "%u", dev->info.platform);
    snprintf(didx, sizeof didx, "%u", dev->info.device);
    char *argv[] = {(char *)helper, COMPILE_PROTOCOL, pidx, didx, (char *)dev->info.name,
                    (char *)dev->info.driver_version, srcp, (char *)options, outp, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    char *fixed, **envp = helper_environment(&fixed);
    int rc = posix_spawn(&pid, helper, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (envp != environ) free(envp);
    free(fixed);
    if (rc != 0) {
        cls_status s = err_set(CLS_E_BUILD, "compiling the %s: cannot start %s: %s%s", what, helper, strerror(rc),
                               getenv("CLSEARCH_COMPILER") ? " (CLSEARCH_COMPILER names it)" : "");
        remove_folder(dir, names, 4);
        return s;
    }
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    int reaped_elsewhere = w < 0; /* SIGCHLD ignored: the binary's presence tells success */
    size_t log_len = 0;
    char *log = read_whole_file(logp, &log_len);
    if (!log && !(log = calloc(1, 1))) {
        remove_folder(dir, names, 4);
        return err_set(CLS_E_NOMEM, "out of memory");
    }
    while (log_len && (log[log_len - 1] == '\n' || log[log_len - 1] == ' ')) log[--log_len] = '\0';
    cls_status s = CLS_OK;
    const char *error = relay(log);
    if (!reaped_elsewhere && WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        s = err_set(CLS_E_BUILD,
                    "the OpenCL compiler crashed (%s, signal %d) compiling the %s for device %u:%u %s (%s, driver %s), "
                    "in a child process, so this one goes on; options: %s; what it printed last:\n%s",
                    signal_name(sig), sig, what, dev->info.platform, dev->info.device, dev->info.name,
                    dev->info.platform_version, dev->info.driver_version, options,
                    log_len ? log_tail(log, log_len, 6, 2000) : "(nothing)");
    } else if (!reaped_elsewhere && WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        s = err_set(CLS_E_NODEVICE, "%s", error ? error : "(no message)");
    } else if (!reaped_elsewhere && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        if (error) s = err_set(CLS_E_BUILD, "%s", error);
        else
            s = err_set(CLS_E_BUILD, "%s exited with status %d: %s", helper,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1, log_len ? log_tail(log, log_len, 6, 2000) : "(no message)");
        err_wrap(CLS_E_BUILD, "compiling the %s for device %u:%u %s: ", what, dev->info.platform, dev->info.device,
                 dev->info.name);
    } else if (!(*bin = (unsigned char *)read_whole_file(outp, bin_len)) || *bin_len == 0) {
        free(*bin);
        *bin = NULL;
        s = err_set(CLS_E_BUILD, "compiling the %s: %s left no program binary%s%s", what, helper, error ? ": " : "",
                    error ? error : "");
    }
    free(log);
    remove_folder(dir, names, 4);
    return s;
}

/* ---- The helper's side ------------------------------------------------------------------- */

static void helper_notice(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "notice: %s\n", line);
    fflush(stderr);
}

static int helper_fail(int code, cls_status s)
{
    (void)s; /* the parent reports every failure here as CLS_E_BUILD, with this message */
    fprintf(stderr, "error: %s\n", cls_last_error());
    return code;
}

int clx_compile_main(int argc, char **argv)
{
    if (argc != 9 || strcmp(argv[1], COMPILE_PROTOCOL) != 0) {
        fprintf(stderr, "error: %s is the kernel compiler that libclsearch starts itself (protocol %s); it is not "
                        "run by hand\n", HELPER_NAME, COMPILE_PROTOCOL);
        return 2;
    }
    const char *name = argv[4], *driver = argv[5], *srcp = argv[6], *options = argv[7], *outp = argv[8];
    cls_set_notice(helper_notice, NULL);
    char spec[64];
    snprintf(spec, sizeof spec, "%s:%s", argv[2], argv[3]);
    clx_device dev;
    cls_status s = clx_select(spec, &dev);
    if (s != CLS_OK) return helper_fail(3, s);
    if (strcmp(dev.info.name, name) != 0 || strcmp(dev.info.driver_version, driver) != 0)
        return helper_fail(3, err_set(CLS_E_NODEVICE, "device %s here is %s (driver %s), not %s (driver %s): the "
                                                      "platforms are listed in another order in this process",
                                      spec, dev.info.name, dev.info.driver_version, name, driver));
    size_t len = 0;
    char *src = read_whole_file(srcp, &len);
    if (!src) return helper_fail(2, err_set(CLS_E_IO, "cannot read %s: %s", srcp, strerror(errno)));
    /* CLSEARCH_FAULT=compiler-crash:1: the compiler dies as POCL's did on a kernel it could not
     * take (tests/fault.sh), counted in this process: every compile of that number */
    if (fault_hit(FAULT_COMPILER_CRASH)) {
        fprintf(stderr, "%s: injected fault: the compiler aborts\n", HELPER_NAME);
        fflush(stderr);
        abort();
    }
    cl_int e;
    cl_context ctx = clx_create_context(dev.device, &e);
    if (!ctx || e != CL_SUCCESS) {
        free(src);
        return helper_fail(2, clx_fail("clCreateContext", e));
    }
    cl_program prog = NULL;
    s = clx_build_source(ctx, &dev, src, len, options, &prog);
    free(src);
    if (s != CLS_OK) {
        clReleaseContext(ctx);
        return helper_fail(1, s);
    }
    /* the binary: on a driver that compiles kernels at their first launch (POCL), asking for it
     * compiles every kernel of the program, which is the check the caller wants there */
    size_t size = 0;
    unsigned char *bin = NULL;
    e = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    if (e == CL_SUCCESS && size > 0 && (bin = malloc(size)) != NULL)
        e = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    if (e != CL_SUCCESS || !bin || size == 0) {
        free(bin);
        return helper_fail(2, e != CL_SUCCESS ? clx_fail("clGetProgramInfo(CL_PROGRAM_BINARIES)", e)
                                              : err_set(CLS_E_OPENCL, "the driver gave no program binary"));
    }
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", outp);
    int ok = write_file(tmp, bin, size) && rename(tmp, outp) == 0;
    free(bin);
    if (!ok) return helper_fail(2, err_set(CLS_E_IO, "cannot write %s: %s", outp, strerror(errno)));
    return 0;
}
