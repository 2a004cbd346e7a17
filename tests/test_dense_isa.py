"""The dense reference system on the AVX2 path and on this machine's own path: the same
rankings, cartridges and figures. The AVX2 path is forced with the CPUID mask
(membench.core.isa), so every library in the run's processes dispatches the kernels of an
x86-64-v3 CPU; the native path is whatever this CPU offers (CI: AVX-512 and AMX).

A live run of part of the conversation dev split on both paths (``--limit`` LIMIT queries,
hash-chosen, over the holders they are asked of; bench/dense_isa.py, each path with an embedding
cache of its own), and the record of the whole dev split (bench/results/dense-isa.json, made by
the same script) held to the frozen figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from membench.core import isa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

RECORD = REPO / "bench" / "results" / "dense-isa.json"
#: conversation dev queries of the live run (the whole split is the record's)
LIMIT = 100


def test_the_mask_makes_an_avx2_cpu_for_every_library():
    """Under the mask, numpy (its own CPUID reader), OpenVINO's oneDNN and MLAS-based
    kernels and the dense engine's refusal of bf16 all see an AVX2-only CPU."""
    why = isa.can_mask()
    if why:
        pytest.fail(f"the AVX2 path cannot be forced on this machine: {why}")
    code = (
        "import json\n"
        "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
        "from membench.core import isa\n"
        "from membench.systems.dense import cpu_has_bf16\n"
        "print(json.dumps({'avx2': f['AVX2'], 'avx512f': f['AVX512F'], "
        "'vnni': f['AVX512VNNI'], 'masked': isa.masked(), 'isa': isa.isa_class(), "
        "'bf16': cpu_has_bf16()}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "membench.core.isa", "avx2", "--", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {
        "avx2": True,
        "avx512f": False,
        "vnni": False,
        "masked": True,
        "isa": "avx2",
        "bf16": False,
    }
    # and a process without it is not masked (the mask is never loaded by default)
    plain = subprocess.run(
        [sys.executable, "-c", "from membench.core import isa; print(isa.masked())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert plain.stdout.strip() == "False"


def test_bf16_is_refused_on_the_avx2_path():
    code = (
        "from membench.systems.dense import DenseEngine\n"
        "from membench.core.errors import MembenchError\n"
        "try:\n"
        "    DenseEngine(use_cache=False, runtime='torch', precision='bf16')\n"
        "except MembenchError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "membench.core.isa", "avx2", "--", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("refused: dense precision=bf16 refused: this CPU has no AMX")


def test_conversation_dev_gives_the_same_rankings_on_both_paths(built, tmp_path, capsys):
    """LIMIT conversation dev queries: the same ranked atoms with the same scores at every rank
    (to 1e-5: float noise; measured 7e-7), the same cartridge and the same figures on the AVX2
    path as on the native one, for every query and over every atom of the holders asked of.
    Where two atoms' scores differ by less than the noise (a few float32 steps), their order
    may differ between the paths (measured on the whole split: 6 of 1,003 queries, none above
    rank 20); ties of equal scores are broken by atom id on both."""
    import dense_isa

    for path in ("native", "avx2"):
        dense_isa.run(path, tmp_path, "dense", ["conversation"], LIMIT, built.out, ["streams=2"])
    res = dense_isa.compare(tmp_path, built.out)
    with capsys.disabled():
        print(
            f"\nconversation dev on both paths: {res['identical_rankings']}/{res['queries']} "
            f"identical rankings, {res['identical_cartridges']} identical cartridges, "
            f"{res['figures_equal_1e-12']}/{res['figures']} figures equal; largest vector "
            f"difference {res['largest_vector_difference']:.1e} over "
            f"{res['vectors_compared']} vectors"
        )
    assert res["queries"] == LIMIT and res["vectors_compared"] > 1000
    assert 0 < res["largest_vector_difference"] < 1e-5  # different kernels, float noise only
    assert res["identical_hit_sets"] == res["queries"]
    assert res["largest_score_difference_at_a_rank"] < 1e-5, res["first_difference"]
    assert res["identical_rankings"] >= 0.98 * res["queries"]
    assert res["first_rank_that_differs"] is None or res["first_rank_that_differs"] > 10
    # a cartridge may differ only where two atoms tied within the float noise swapped places
    assert res["identical_cartridges"] + len(res["cartridges_differing_by_a_tie"]) == res["queries"]
    assert res["figures_equal_1e-12"] == res["figures"], res["figures_differing"]


def test_the_whole_dev_record_holds_the_frozen_figures():
    """bench/results/dense-isa.json: the whole dev split on both paths, made with the default
    dense system; its figures are the frozen ones, and both paths gave the same."""
    from membench.analysis.expected import EXPECTED

    rec = json.loads(RECORD.read_text())
    frozen = json.loads(EXPECTED.read_text())["systems"]["dense"]["modalities"]
    assert rec["system"] == "dense" and rec["modalities"] == "all" and rec["limit"] is None
    assert rec["queries"] == frozen["all"]["holder_correctness"]["n"]
    assert rec["figures_equal_printed"] == rec["figures"]
    # a cartridge differs only where two atoms tied within the float noise swapped places
    assert rec["tie"] <= 1e-5
    assert rec["identical_cartridges"] + len(rec["cartridges_differing_by_a_tie"]) == rec["queries"]
    assert len(rec["cartridges_differing_by_a_tie"]) <= 0.001 * rec["queries"]
    assert rec["identical_hit_sets"] == rec["queries"]
    assert rec["largest_score_difference_at_a_rank"] < 1e-5
    for mod, figs in rec["all_figures"].items():
        for k, v in figs.items():
            want = frozen[mod][k]["value"]
            assert (v is None and want is None) or v == pytest.approx(want, abs=1e-12), (mod, k)


def test_the_instruction_set_class_is_read_from_the_flags():
    assert isa.class_of({"fpu", "avx2", "fma", "avx512f", "amx_bf16", "amx_tile"}) == "amx"
    assert isa.class_of({"avx2", "fma", "avx512f", "avx512_bf16"}) == "avx512-bf16"
    assert isa.class_of({"avx2", "fma", "avx512f"}) == "avx512"
    assert isa.class_of({"avx2", "fma"}) == "avx2"
    assert isa.class_of({"sse2", "avx"}) == "baseline"
    assert isa.class_of(set()) == "unknown"
    assert isa.cpu_flags("processor : 0\nflags\t: fpu avx2 fma\n") == {"fpu", "avx2", "fma"}


def test_the_avx2_environment_preloads_the_mask_and_caps_the_libraries():
    if isa.can_mask():
        pytest.skip(isa.can_mask())
    env = isa.avx2_env({"LD_PRELOAD": "/x/other.so", "PYTHONFAULTHANDLER": "1"}, vendor="amd")
    lib = str(isa.mask_library())
    assert env["LD_PRELOAD"] == f"{lib}:/x/other.so" and "PYTHONFAULTHANDLER" not in env
    assert env["MEMBENCH_ISA"] == "avx2" and env["MEMBENCH_CPUID_VENDOR"] == "amd"
    assert env["ONEDNN_MAX_CPU_ISA"] == env["OV_CPU_MAX_ISA"] == "AVX2"
    again = isa.avx2_env(env)  # preloaded once, whatever is asked twice
    assert again["LD_PRELOAD"].count(lib) == 1 and "MEMBENCH_CPUID_VENDOR" not in again


def test_cpuid_itself_answers_avx2_and_the_vendor_asked_for():
    """CPUID executed in a masked process (the mask's own test functions, through ctypes)
    answers without AVX-512F, and with the vendor AMD when asked for."""
    if isa.can_mask():
        pytest.skip(isa.can_mask())
    code = (
        "import ctypes\n"
        "from membench.core import isa\n"
        "lib = ctypes.CDLL(str(isa.mask_library()))\n"
        "buf = ctypes.create_string_buffer(13)\n"
        "lib.membench_cpuid_vendor(buf)\n"
        "lib.membench_cpuid_leaf7_ebx.restype = ctypes.c_uint\n"
        "print(buf.value.decode(), bool(lib.membench_cpuid_leaf7_ebx() & (1 << 16)))\n"
    )
    for vendor, want in ((["--vendor", "amd"], "AuthenticAMD"), ([], None)):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "membench.core.isa",
                "avx2",
                *vendor,
                "--",
                sys.executable,
                "-c",
                code,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        got_vendor, avx512 = out.stdout.split()
        assert avx512 == "False"
        if want:
            assert got_vendor == want
        else:
            assert got_vendor in ("GenuineIntel", "AuthenticAMD")  # the CPU's own
