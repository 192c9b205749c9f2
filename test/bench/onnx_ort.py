"""Runs ONNX Runtime for bench_nn.py and bench_translate.py: installs
onnxruntime-node into a cache directory outside the repository when it is
missing, runs ort_run.mjs on a job and returns its JSON result.

The CPU runtime ships inside the npm package; its post-install step would
only fetch GPU binaries (from a host this machine may not reach), so it is
skipped with ONNXRUNTIME_NODE_INSTALL=skip.
"""
import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "1.30"


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "corpq-bench", "ort")


def ensure_runtime():
    """(directory holding node_modules/onnxruntime-node, None) or (None, why not)."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "node and npm are needed for onnxruntime-node"
    d = cache_dir()
    if os.path.exists(os.path.join(d, "node_modules", "onnxruntime-node", "package.json")):
        return d, None
    os.makedirs(d, exist_ok=True)
    pj = os.path.join(d, "package.json")
    if not os.path.exists(pj):
        with open(pj, "w") as fh:
            json.dump({"name": "corpq-bench-ort", "private": True}, fh)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "onnxruntime-node@" + VERSION],
                       cwd=d, env=env, capture_output=True, text=True)
    if p.returncode:
        return None, "npm install onnxruntime-node@%s failed: %s" % (VERSION, p.stderr.strip()[-500:])
    return d, None


def run(job, node_dir):
    """ort_run.mjs on job (a dict); its result dict."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(job, fh)
        path = fh.name
    try:
        # --single-threaded: no V8 background threads (ort_run.mjs, header)
        p = subprocess.run(["node", "--single-threaded", os.path.join(HERE, "ort_run.mjs"), path],
                           env=dict(os.environ, ORT_NODE_DIR=node_dir),
                           capture_output=True, text=True)
    finally:
        os.unlink(path)
    if p.returncode:
        raise RuntimeError("ort_run.mjs failed: " + p.stderr.strip()[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def options_line(threads=1, version=VERSION):
    """How the sessions run; version: the one ort_run.mjs reported, when known."""
    return ("onnxruntime-node %s, %d intra-op thread(s), 1 inter-op thread, graph optimisation "
            "'all', CPU execution provider" % (version, threads))
