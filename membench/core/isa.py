"""Which instruction set this process computes with, and the switch that makes any x86-64 CPU
compute as an AVX2-only one.

    python -m membench.core.isa                      # what this machine and process have
    python -m membench.core.isa avx2 -- COMMAND ...  # COMMAND (and its children) on the AVX2 path
    python -m membench.core.isa avx2 --vendor amd -- COMMAND ...   # ... reported as an AMD CPU

Start at :func:`isa_class` (what records and estimates read) and :func:`main`. ``avx2`` masks
CPUID itself for the command's processes (:file:`membench/core/_cpuidmask.c`, through
``LD_PRELOAD``): every library sees an x86-64-v3 CPU (AVX2 and FMA, no AVX-512, VNNI, AMX,
GFNI, VAES) and dispatches what it would run on one. The caps of oneDNN and OpenVINO are set as
well, and glibc's own choice through ``GLIBC_TUNABLES``; the command's environment gets
``MEMBENCH_ISA=avx2``. Why a mask and not the libraries' own switches: docs/speed.md (its
opening).

The instrument with which membench's speed and figures are measured on the AVX2 path; no
default run loads it. It needs Linux on x86-64 with CPUID faulting (``cpuid_fault``: Intel CPUs
since Ivy Bridge, and KVM guests) and the compiled mask (built by ``pip install -e .``); without
either it refuses rather than measure the native path under another name.

Standard library only (:mod:`membench.core.estimate` uses :func:`isa_class` before the
virtualenv exists). Touches nothing: it reads ``/proc/cpuinfo`` and starts the command.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys
from pathlib import Path

#: what ``avx2`` masks (the bits of CPUID leaf 7 cleared by the C mask), for the record
MASKED = ("avx512*", "avx_vnni", "avx_ifma", "amx_*", "gfni", "vaes", "vpclmulqdq")
#: the environment a command on the AVX2 path gets besides LD_PRELOAD: the caps the libraries
#: have of their own (belt and braces: the CPUID mask already decides for them)
CAPS = {
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OV_CPU_MAX_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL,"
    "-AVX512_VNNI,-AVX512_BF16,-AVX512_FP16,-AMX_BF16,-AMX_TILE,-AMX_INT8",
}
ENV = "MEMBENCH_ISA"


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's flags as the kernel reports them (``/proc/cpuinfo``; empty where it cannot be
    read). The CPUID mask does not change them: :func:`isa_class` says what a process sees."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return set()
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
    return flags


def class_of(flags: set[str]) -> str:
    """The instruction-set class of a flag set: ``amx`` (AMX tiles, bf16 matrix units),
    ``avx512-bf16``, ``avx512``, ``avx2`` (AVX2 and FMA), ``baseline`` or ``unknown`` (no
    flags read)."""
    if not flags:
        return "unknown"
    if {"amx_bf16", "amx_tile"} <= flags:
        return "amx"
    if "avx512_bf16" in flags:
        return "avx512-bf16"
    if "avx512f" in flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    return "baseline"


def mask_library() -> Path | None:
    """The compiled CPUID mask (``membench/core/_cpuidmask*.so``), or None when the install
    built none (no C compiler)."""
    here = Path(__file__).resolve().parent
    found = sorted(glob.glob(str(here / "_cpuidmask*.so")))
    return Path(found[0]) if found else None


def masked() -> bool:
    """Whether this process's CPUID is masked to the AVX2 path (the mask is loaded and armed)."""
    lib = mask_library()
    if lib is None or str(lib) not in os.environ.get("LD_PRELOAD", ""):
        return False
    try:
        return bool(ctypes.CDLL(str(lib)).membench_cpuid_mask_armed())
    except (OSError, AttributeError):
        return False


def isa_class() -> str:
    """The instruction-set class this process computes with: ``avx2`` under the mask
    (``$MEMBENCH_ISA``), else the CPU's (:func:`class_of`)."""
    if os.environ.get(ENV) == "avx2":
        return "avx2"
    return class_of(cpu_flags())


def describe() -> dict:
    """What records say about the instruction set of a measurement."""
    flags = cpu_flags()
    model = ""
    try:
        for line in (
            Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
        ):
            if line.startswith("model name"):
                model = line.split(":", 1)[-1].strip()
                break
    except OSError:
        pass
    path = isa_class()
    return {
        "isa": path,
        "cpu_class": class_of(flags),
        "cpu_model": model,
        "cpus": os.cpu_count() or 1,
        "forced": "CPUID masked to x86-64-v3 (membench.core.isa avx2)"
        if os.environ.get(ENV) == "avx2"
        else None,
        "vendor_reported": os.environ.get("MEMBENCH_CPUID_VENDOR") or None,
    }


def can_mask() -> str | None:
    """Why the AVX2 path cannot be forced here (None when it can)."""
    import platform

    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"the CPUID mask needs Linux on x86-64 (this is {sys.platform} {platform.machine()})"
    if mask_library() is None:
        return (
            "membench/core/_cpuidmask*.so was not built (no C compiler at install): "
            "pip install -e . with gcc present"
        )
    if "cpuid_fault" not in cpu_flags():
        return "this CPU (or hypervisor) has no CPUID faulting (flag cpuid_fault)"
    return None


def avx2_env(base: dict[str, str] | None = None, vendor: str | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) for a command on the AVX2 path."""
    why = can_mask()
    if why:
        raise SystemExit(f"membench.core.isa: cannot force the AVX2 path: {why}")
    env = dict(os.environ if base is None else base)
    lib = str(mask_library())
    pre = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib if not pre else (pre if lib in pre else f"{lib}:{pre}")
    env.update(CAPS)
    env[ENV] = "avx2"
    env.pop("PYTHONFAULTHANDLER", None)  # its SIGSEGV handler would take the CPUID faults
    if vendor:
        env["MEMBENCH_CPUID_VENDOR"] = vendor
    else:
        env.pop("MEMBENCH_CPUID_VENDOR", None)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m membench.core.isa",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "path",
        nargs="?",
        choices=["avx2"],
        help="run COMMAND on this path (without: print what this process has)",
    )
    ap.add_argument("--vendor", choices=["amd"], help="also report this CPU vendor")
    ap.add_argument("command", nargs="*", help="-- COMMAND [ARGS...]")
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = argv[argv.index("--") + 1 :] if "--" in argv else []
    a = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if a.path is None:
        d = describe()
        why = can_mask()
        print(
            f"instruction set: {d['isa']} (CPU class {d['cpu_class']}; {d['cpu_model']}; "
            f"{d['cpus']} CPUs)"
        )
        print(
            "AVX2 path: "
            + (
                "available (python -m membench.core.isa avx2 -- COMMAND)"
                if why is None
                else f"not available: {why}"
            )
        )
        return 0
    if a.command:
        ap.error("put the command after --: python -m membench.core.isa avx2 -- COMMAND")
    if not cmd:
        ap.error("give the command after --")
    env = avx2_env(vendor=a.vendor)
    sys.stdout.flush()
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        print(f"membench.core.isa: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 127
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main())
