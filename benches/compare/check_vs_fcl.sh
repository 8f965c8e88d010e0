#!/usr/bin/env bash
# The path check against a dense FCL sweep, side by side in one run on one machine
# (issue: path checks; README performance table). By hand, outside the test suite:
#   pip install python-fcl numpy
#   benches/compare/check_vs_fcl.sh
# The criterion bench writes the problem to target/check-bench/ and prints the haptics
# side (median of 10 runs); the script then times the FCL sweep on the same files.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo bench --bench check -- path_check/knot_100_states 2>&1 | grep -E "triangles|time:"
for run in 1 2 3; do
    python3 benches/compare/fcl_sweep.py target/check-bench
done
