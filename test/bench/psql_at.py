"""psql from the Python parts of the SQL benchmarks (bench_costs.sh,
bench_parallel.sh): psql(*commands) runs them in one session of the cluster
the environment names and returns the unaligned output, or exits on an error."""
import subprocess
import sys


def psql(*cmds):
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]
    for c in cmds:
        args += ["-c", c]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: " + r.stderr)
    return r.stdout
