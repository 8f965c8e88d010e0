#!/usr/bin/env bash
# Planner Arena, side by side: OMPL's RRTConnect in OMPL.app's own SE3 setup, run by
# OMPL's own benchmark class (ompl::tools::Benchmark, through `ompl_plan --benchmark`),
# and `haptics plan --benchmark`, each writing OMPL's benchmark log; OMPL's own
# ompl_benchmark_statistics reads all the logs into one SQLite database (what Planner
# Arena, plannerarena.org, loads), and arena_plot.py draws the time and solved plots
# Planner Arena draws from it. By hand, outside the test suite:
#
#   benches/compare/build_ompl_plan.sh /path/to/omplapp-checkout   # once
#   cargo build --release
#   benches/compare/arena_vs_ompl.sh
#
# Both sides run on one core (taskset -c $CORE), one problem after the other, which goes
# first alternating per problem, with the cfg's [benchmark] time_limit (capped at
# TIME_CAP). Needs Debian's ompl-demos (ompl_benchmark_statistics) and python3-matplotlib.
#
# Env: OMPLAPP_RESOURCES  folder of the .cfg files (default /tmp/omplapp)
#      PROBLEMS           default "Easy cubicles Twistycool"
#      RUNS               runs per planner and problem (default 10)
#      TIME_CAP           the longest time limit given, s (default 20)
#      ARENA_OUT          output folder (default /tmp/arena-out): the logs, arena.db,
#                         arena.png
#      PYTHON             an interpreter with matplotlib for the plot (default: the first
#                         of python3 and /usr/bin/python3 that imports it)
#      OMPL_PLAN, HAPTICS, CORE as in plan_vs_ompl.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
RES=${OMPLAPP_RESOURCES:-/tmp/omplapp}
PROBLEMS=${PROBLEMS:-Easy cubicles Twistycool}
RUNS=${RUNS:-10}
TIME_CAP=${TIME_CAP:-20}
OUT=${ARENA_OUT:-/tmp/arena-out}
HAPTICS=${HAPTICS:-$ROOT/target/release/haptics}
CORE=${CORE:-1}
if [ -z "${OMPL_PLAN:-}" ]; then
    OMPL_PLAN=$ROOT/target/compare/ompl_plan_ndebug
    [ -x "$OMPL_PLAN" ] || OMPL_PLAN=$ROOT/target/compare/ompl_plan
fi
for f in "$OMPL_PLAN" "$HAPTICS"; do
    [ -x "$f" ] || { echo "missing $f (see the header of $0)" >&2; exit 2; }
done
command -v ompl_benchmark_statistics >/dev/null || { echo "needs ompl_benchmark_statistics (Debian's ompl-demos)" >&2; exit 2; }
if [ -z "${PYTHON:-}" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import matplotlib' 2>/dev/null; then PYTHON=$p; break; fi
    done
fi
[ -n "${PYTHON:-}" ] || { echo "needs matplotlib for the plot (python3-matplotlib), or PYTHON=" >&2; exit 2; }
RUN="nice -n 10 taskset -c $CORE"
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT/arena.db"

time_limit() {  # the cfg's [benchmark] time_limit
    awk -F= '/^\[/{sec=$0} sec=="[benchmark]" && $1 ~ /^[ \t]*time_limit[ \t]*$/ {gsub(/[ \t]/,"",$2); print $2; exit}' "$1"
}
run_ompl() { $RUN "$OMPL_PLAN" "$1" --seed 1 --benchmark "$RUNS" --time-limit "$2" --log "$OUT/ompl-$3.log" 2>> "$OUT/ompl.stderr"; }
run_ours() { $RUN "$HAPTICS" plan "$1" --seed 1 --benchmark "$RUNS" --time-limit "$2" --out-log "$OUT/haptics-$3.log" --quiet; }

i=0
LOGS=()
for p in $PROBLEMS; do
    cfg=$RES/$p.cfg
    [ -f "$cfg" ] || { echo "missing $cfg" >&2; exit 2; }
    tl=$(time_limit "$cfg")
    tl=$(python3 -c 'import sys; print(min(float(sys.argv[1] or 20), float(sys.argv[2])))' "${tl:-}" "$TIME_CAP")
    echo "$p: $RUNS runs each, time limit $tl s"
    if [ $((i % 2)) -eq 0 ]; then run_ompl "$cfg" "$tl" "$p"; run_ours "$cfg" "$tl" "$p"; else run_ours "$cfg" "$tl" "$p"; run_ompl "$cfg" "$tl" "$p"; fi
    i=$((i + 1))
    LOGS+=("$OUT/ompl-$p.log" "$OUT/haptics-$p.log")
done
ompl_benchmark_statistics "${LOGS[@]}" -d "$OUT/arena.db" > "$OUT/statistics.out"
"$PYTHON" benches/compare/arena_plot.py "$OUT/arena.db" "$OUT/arena.png"
echo "database: $OUT/arena.db (load it at plannerarena.org); plot: $OUT/arena.png"
