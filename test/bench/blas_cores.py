"""Run a Python benchmark once per OpenBLAS core type.

OpenBLAS fixes its kernels when the library loads, so each core needs its own
process: the benchmark's parent run starts itself again with --one-core under
OPENBLAS_CORETYPE = each core (the default one as test/blas_core, i.e. the
extension's rule in extension/common/cpu.c, chooses it), prints each child's
report, then a table of the figures every child reports on its line
"RESULT key=value ...", and how the default compares with the best forced core.
A core this CPU cannot execute is skipped with the missing feature named.

    --cores=default,Haswell   only these (default: default and every forced core)
"""
import ctypes
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CORES = ["default", "Prescott", "Sandybridge", "Haswell", "SkylakeX", "Zen"]


def cpu_name():
    """The CPU's model name, which every benchmark prints beside its kernels."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def blas_core(*args):
    exe = os.path.join(ROOT, "test", "blas_core")
    if not os.path.exists(exe):
        subprocess.check_call(["make", "-s", "-C", ROOT, "test/blas_core"])
    return subprocess.run([exe] + list(args), capture_output=True, text=True)


def in_use():
    """'Core (why)' for this process; OpenBLAS must be loaded (the core library is)."""
    lib = ctypes.CDLL("libopenblas.so.0")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    name = lib.openblas_get_corename().decode()
    why = os.environ.get("CORPQ_BENCH_WHY") or (
        "OPENBLAS_CORETYPE" if os.environ.get("OPENBLAS_CORETYPE") else "OpenBLAS's own detection")
    return "%s (%s)" % (name, why)


def is_child():
    return "--one-core" in sys.argv


def result(**figures):
    """The child's machine-readable line for the parent's table."""
    print("RESULT " + " ".join("%s=%.6g" % kv for kv in figures.items()), flush=True)


def run_all(script, higher_is_better):
    """Parent: the script once per core; returns {core: {key: value}}."""
    picked = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--cores=")]
    cores = picked[0] if picked else CORES
    args = [a for a in sys.argv[1:] if not a.startswith("--cores=")]
    results = {}
    for core in cores:
        if core == "default":
            r = blas_core("-v")
            if r.returncode:
                sys.exit("blas_core: " + r.stderr.strip())
            name, why = r.stdout.split("\t")[:2]
            why = "default, " + why
        else:
            r = blas_core(core)
            if r.returncode:
                print("== skip %s: %s" % (core, r.stderr.strip()), flush=True)
                continue
            name, why = core, "forced"
        env = dict(os.environ, OPENBLAS_CORETYPE=name, CORPQ_BENCH_WHY=why)
        print("== %s" % core, flush=True)
        p = subprocess.run([sys.executable, script, "--one-core"] + args, env=env,
                           capture_output=True, text=True)
        for line in p.stdout.splitlines():
            if line.startswith("RESULT "):
                results[core] = {k: float(v) for k, v in
                                 (kv.split("=") for kv in line.split()[1:])}
            else:
                print(line)
        if p.returncode:
            print(p.stderr[-3000:])
            sys.exit("%s failed under %s" % (os.path.basename(script), core))
    table(results, higher_is_better)
    return results


def table(results, higher_is_better):
    if not results:
        return
    keys = list(next(iter(results.values())))
    print("\nper OpenBLAS core (each in its own process):")
    print("  %-12s" % "core" + "".join("%14s" % k for k in keys))
    for core, r in results.items():
        print("  %-12s" % core + "".join("%14.4g" % r.get(k, float("nan")) for k in keys))
    forced = {c: r for c, r in results.items() if c != "default"}
    if "default" in results and forced:
        print("  default / best forced core:" + "".join(
            "  %s %.3f" % (k, results["default"][k] / max(r[k] for r in forced.values()))
            for k in keys if k in higher_is_better))


def sgemm_gflops(lib, m, n, k, seconds):
    """GFLOP/s of the library's cq_sgemm on m x k times (n x k)^T, by
    seconds(fn), the benchmark's timing of a call."""
    import numpy as np
    a = np.random.rand(m, k).astype(np.float32)
    b = np.random.rand(n, k).astype(np.float32)
    c = np.empty((m, n), np.float32)
    f = lib.cq_sgemm
    f.restype = None
    f.argtypes = [ctypes.c_bool, ctypes.c_bool, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                  ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                  ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    t = seconds(lambda: f(False, True, m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, k,
                          0.0, c.ctypes.data, n))
    return 2.0 * m * n * k / t / 1e9
