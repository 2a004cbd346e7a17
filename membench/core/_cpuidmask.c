/* An AVX2-only CPU, as every library in a process sees it (membench.core.isa).
 *
 * Loaded with LD_PRELOAD (python -m membench.core.isa avx2 -- COMMAND), this library's
 * constructor turns on CPUID faulting for the process (arch_prctl(ARCH_SET_CPUID, 0); Linux
 * on a CPU with the cpuid_fault flag, which KVM guests and Intel CPUs since Ivy Bridge have)
 * and installs a SIGSEGV handler. Every CPUID instruction executed afterwards, by any library
 * (OpenVINO and its oneDNN and MLAS, ONNX Runtime, PyTorch and MKL, OpenBLAS, numpy), traps
 * to the handler, which runs the real CPUID and clears what an x86-64-v3 CPU (Haswell, Zen 2)
 * does not have: every AVX-512 subset, AVX-VNNI, AVX-IFMA, the AMX tiles, GFNI, VAES,
 * VPCLMULQDQ. The libraries then dispatch the kernels they would run on such a CPU.
 * MEMBENCH_CPUID_VENDOR=amd also reports the vendor string "AuthenticAMD" (libraries such as
 * MKL choose other kernels by vendor). The setting is inherited by threads and forked
 * children; a new program (execve) arms itself again through LD_PRELOAD.
 *
 * It changes which kernels run, nothing else; it is a measuring instrument, never loaded by
 * a default run. A SIGSEGV that is not a CPUID goes to the handler that was there before (the
 * default action: the process dies as it would have). A handler installed later in the
 * process (Python's faulthandler) would take CPUID faults for crashes, so the launcher
 * clears PYTHONFAULTHANDLER.
 *
 * It is built as an optional extension (setup.py) but is not a Python module: Python never
 * imports it, and it uses no Python symbol, so it loads into any program (make, sh, python).
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static struct sigaction previous;
static int vendor_amd;
static int armed;

static long set_cpuid(int enabled) {
    return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled);
}

/* leaf 7, subleaf 0 */
#define EBX7_CLEAR ((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | \
                    (1u << 28) | (1u << 30) | (1u << 31))          /* AVX-512 F..VL */
#define ECX7_CLEAR ((1u << 1) | (1u << 6) | (1u << 8) | (1u << 9) | (1u << 10) | \
                    (1u << 11) | (1u << 12) | (1u << 14))    /* VBMI, VBMI2, GFNI, VAES,
                                                                 VPCLMULQDQ, VNNI, BITALG,
                                                                 VPOPCNTDQ */
#define EDX7_CLEAR ((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | \
                    (1u << 24) | (1u << 25))       /* 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16,
                                                      AVX512-FP16, AMX-TILE, AMX-INT8 */
/* leaf 7, subleaf 1: AVX-VNNI, AVX512-BF16, AVX-IFMA, AVX-VNNI-INT8, AVX-NE-CONVERT */
#define EAX71_CLEAR ((1u << 4) | (1u << 5) | (1u << 23))
#define EDX71_CLEAR ((1u << 4) | (1u << 5))

static void on_segv(int sig, siginfo_t *info, void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    greg_t *r = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)r[REG_RIP];
    if (!armed || ip == NULL || ip[0] != 0x0f || ip[1] != 0xa2) {
        /* not a CPUID: what the process had before (by default: die of the SIGSEGV) */
        if (previous.sa_flags & SA_SIGINFO) {
            if (previous.sa_sigaction) {
                previous.sa_sigaction(sig, info, context);
                return;
            }
        } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
                   previous.sa_handler != NULL) {
            previous.sa_handler(sig);
            return;
        }
        signal(SIGSEGV, SIG_DFL);
        return;                     /* the instruction runs again and faults for real */
    }
    unsigned leaf = (unsigned)r[REG_RAX], sub = (unsigned)r[REG_RCX];
    unsigned a, b, c, d;
    set_cpuid(1);
    __cpuid_count(leaf, sub, a, b, c, d);
    set_cpuid(0);
    if (leaf == 0 && vendor_amd) {  /* "AuthenticAMD" */
        b = 0x68747541u;
        d = 0x69746e65u;
        c = 0x444d4163u;
    } else if (leaf == 7 && sub == 0) {
        b &= ~EBX7_CLEAR;
        c &= ~ECX7_CLEAR;
        d &= ~EDX7_CLEAR;
    } else if (leaf == 7 && sub == 1) {
        a &= ~EAX71_CLEAR;
        d &= ~EDX71_CLEAR;
    } else if (leaf == 0x1d || leaf == 0x1e) {  /* AMX tile palettes */
        a = b = c = d = 0;
    }
    r[REG_RAX] = a;
    r[REG_RBX] = b;
    r[REG_RCX] = c;
    r[REG_RDX] = d;
    r[REG_RIP] += 2;                /* CPUID is 0F A2 */
}

__attribute__((constructor)) static void membench_cpuid_mask(void) {
    const char *v = getenv("MEMBENCH_CPUID_VENDOR");
    vendor_amd = v != NULL && strcmp(v, "amd") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &previous) != 0)
        return;
    if (set_cpuid(0) != 0) {        /* no CPUID faulting here: leave the process as it was */
        sigaction(SIGSEGV, &previous, NULL);
        return;
    }
    armed = 1;
}

/* Read by membench.core.isa through ctypes: whether this process's CPUID is masked. */
int membench_cpuid_mask_armed(void) {
    return armed;
}

/* For the tests (through ctypes, in a masked process): what CPUID answers this process,
 * the vendor string (leaf 0) and the feature bits of leaf 7 (EBX; bit 16: AVX-512F). */
void membench_cpuid_vendor(char *out) {
    unsigned a, b, c, d;
    __cpuid(0, a, b, c, d);
    memcpy(out, &b, 4);
    memcpy(out + 4, &d, 4);
    memcpy(out + 8, &c, 4);
    out[12] = 0;
}

unsigned membench_cpuid_leaf7_ebx(void) {
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    return b;
}
