#!/usr/bin/env bash
# Planning against OMPL.app, side by side in one run on one machine: `haptics plan` vs
# OMPL's RRTConnect in OMPL.app's own SE3 setup (benches/compare/ompl_plan.cpp, FCL
# checker, discrete motion validation). By hand, outside the test suite:
#
#   benches/compare/build_ompl_plan.sh /path/to/omplapp-checkout   # once
#   cargo build --release
#   benches/compare/plan_vs_ompl.sh
#
# For each problem and seed both planners run, interleaved (which goes first alternates
# with the seed), pinned to the same core (taskset -c $CORE), with the cfg's [benchmark]
# time_limit (capped at TIME_CAP) passed to both. Then every path is checked by the
# other side: each of ours by OMPL.app's own checker (`ompl_plan --check`: its FCL
# validity checker at the states of OMPL's DiscreteMotionValidator and in a dense sweep
# at 0.2% of the world's diagonal), each of OMPL's continuously by `haptics check` (exit 0
# collision-free, 1 collides). A summary is printed: per problem, solved counts, median
# planning time (solve only, no simplification; a failed run counts at the time limit),
# the ratio OMPL/ours, our paths OMPL.app finds invalid, and OMPL paths that collide.
#
# Env: OMPLAPP_RESOURCES  folder of the .cfg files (default /tmp/omplapp)
#      PROBLEMS           default "Easy cubicles Twistycool alpha-1.5", each with SEEDS
#      SEEDS              default "1 2 3 4 5 6 7 8 9 10"
#      MORE_PROBLEMS      default "" (none), each with MORE_SEEDS (default "1 2 3 4 5")
#      TIME_CAP           the longest time limit given, s (default 60)
#      PLAN_OUT           output folder (default /tmp/plan-out)
#      OMPL_PLAN          OMPL's program (default target/compare/ompl_plan_ndebug, the
#                         variant on FCL built without assertions, else ompl_plan)
#      HAPTICS            our binary (default target/release/haptics)
#      CORE               the core both sides run on (default 1)
#      OURS_ARGS          extra options of `haptics plan` (default none), e.g.
#                         "--clearance 0.002"; printed with the run
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

RES=${OMPLAPP_RESOURCES:-/tmp/omplapp}
PROBLEMS=${PROBLEMS:-Easy cubicles Twistycool alpha-1.5}
SEEDS=${SEEDS:-1 2 3 4 5 6 7 8 9 10}
MORE_PROBLEMS=${MORE_PROBLEMS:-}
MORE_SEEDS=${MORE_SEEDS:-1 2 3 4 5}
TIME_CAP=${TIME_CAP:-60}
OUT=${PLAN_OUT:-/tmp/plan-out}
HAPTICS=${HAPTICS:-$ROOT/target/release/haptics}
CORE=${CORE:-1}
if [ -z "${OMPL_PLAN:-}" ]; then
    if [ -x "$ROOT/target/compare/ompl_plan_ndebug" ]; then
        OMPL_PLAN=$ROOT/target/compare/ompl_plan_ndebug
    else
        OMPL_PLAN=$ROOT/target/compare/ompl_plan
    fi
fi
for f in "$OMPL_PLAN" "$HAPTICS"; do
    [ -x "$f" ] || { echo "missing $f (see the header of $0)" >&2; exit 2; }
done
RUN="nice -n 10 taskset -c $CORE"
mkdir -p "$OUT"
RUNS=$OUT/runs.tsv          # problem seed side rc file time_limit
: > "$RUNS"
: > "$OUT/ompl.jsonl"
: > "$OUT/ompl.log"
: > "$OUT/ours.log"

time_limit() {  # the cfg's [benchmark] time_limit
    awk -F= '/^\[/{sec=$0} sec=="[benchmark]" && $1 ~ /^[ \t]*time_limit[ \t]*$/ {gsub(/[ \t]/,"",$2); print $2; exit}' "$1"
}

run_ompl() {  # problem seed cfg tl
    local p=$1 s=$2 cfg=$3 tl=$4 path=$OUT/ompl-$1-$2.path json=$OUT/ompl-$1-$2.json
    rm -f "$path" "$json"
    timeout $(( ${tl%.*} * 3 + 60 )) $RUN "$OMPL_PLAN" "$cfg" --seed "$s" --time-limit "$tl" --out "$path" \
        > "$json" 2>> "$OUT/ompl.log"
    local rc=$?
    cat "$json" >> "$OUT/ompl.jsonl"
    printf '%s\t%s\tompl\t%s\t%s\t%s\n' "$p" "$s" "$rc" "$json" "$tl" >> "$RUNS"
    echo "  ompl $p seed $s: rc $rc $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("solved" if d["solved"] else "FAILED", "%.3f s" % d["time_s"])' "$json" 2>/dev/null)"
}

run_ours() {  # problem seed cfg tl
    local p=$1 s=$2 cfg=$3 tl=$4 path=$OUT/ours-$1-$2.path json=$OUT/ours-$1-$2.json
    rm -f "$path" "$json"
    # shellcheck disable=SC2086 # OURS_ARGS is a list of options
    timeout $(( ${tl%.*} * 3 + 60 )) $RUN "$HAPTICS" plan "$cfg" --seed "$s" --time-limit "$tl" \
        --out "$path" --report "$json" --quiet ${OURS_ARGS:-} >> "$OUT/ours.log" 2>&1
    local rc=$?
    printf '%s\t%s\tours\t%s\t%s\t%s\n' "$p" "$s" "$rc" "$json" "$tl" >> "$RUNS"
    echo "  ours $p seed $s: rc $rc $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("solved" if d["solved"] else "FAILED", "%.3f s" % d["seconds"])' "$json" 2>/dev/null)"
}

echo "OMPL: $OMPL_PLAN"
echo "ours: $HAPTICS ${OURS_ARGS:-}"
echo "problems: $PROBLEMS (seeds $SEEDS); $MORE_PROBLEMS (seeds $MORE_SEEDS); cap ${TIME_CAP} s; core $CORE; out $OUT"
# "problem seed" pairs, in run order: seed-major, so that every problem has early results.
PAIRS=$OUT/pairs.txt
: > "$PAIRS"
for s in $(printf '%s\n' $SEEDS $MORE_SEEDS | sort -nu); do
    for p in $PROBLEMS; do
        case " $SEEDS " in *" $s "*) echo "$p $s" >> "$PAIRS" ;; esac
    done
    for p in $MORE_PROBLEMS; do
        case " $MORE_SEEDS " in *" $s "*) echo "$p $s" >> "$PAIRS" ;; esac
    done
done
while read -r p s; do
    cfg=$RES/$p.cfg
    [ -f "$cfg" ] || { echo "missing $cfg" >&2; exit 2; }
    tl=$(time_limit "$cfg")
    tl=$(python3 -c 'import sys; print(min(float(sys.argv[1] or 20), float(sys.argv[2])))' "${tl:-}" "$TIME_CAP")
    if [ $((s % 2)) -eq 1 ]; then
        run_ompl "$p" "$s" "$cfg" "$tl"; run_ours "$p" "$s" "$cfg" "$tl"
    else
        run_ours "$p" "$s" "$cfg" "$tl"; run_ompl "$p" "$s" "$cfg" "$tl"
    fi
done < "$PAIRS"

# Every OMPL path checked continuously by `haptics check`, every one of ours by OMPL.app's
# own checker (not timed).
CHECKS=$OUT/checks.tsv      # problem seed rc
OURS_CHECKS=$OUT/ours-checks.tsv   # problem seed json
: > "$CHECKS"
: > "$OURS_CHECKS"
while read -r p s; do
    path=$OUT/ompl-$p-$s.path
    if [ -s "$path" ]; then
        nice -n 10 "$HAPTICS" check "$RES/$p.cfg" --path "$path" \
            --report "$OUT/check-ompl-$p-$s.json" > "$OUT/check-ompl-$p-$s.txt" 2>&1
        printf '%s\t%s\t%s\n' "$p" "$s" "$?" >> "$CHECKS"
    fi
    path=$OUT/ours-$p-$s.path
    if [ -s "$path" ]; then
        nice -n 10 "$OMPL_PLAN" "$RES/$p.cfg" --check "$path" > "$OUT/ompl-check-ours-$p-$s.json" 2>> "$OUT/ompl.log"
        printf '%s\t%s\t%s\n' "$p" "$s" "$OUT/ompl-check-ours-$p-$s.json" >> "$OURS_CHECKS"
    fi
done < "$PAIRS"

python3 - "$RUNS" "$CHECKS" "$PROBLEMS $MORE_PROBLEMS" "$OUT" "$OURS_CHECKS" <<'EOF'
import json, statistics, sys
runs_file, checks_file, problems, out = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
ours_checks = {}
for line in open(sys.argv[5]):
    p, s, f = line.rstrip("\n").split("\t")
    try:
        d = json.load(open(f))
        bad = (d["validator"]["invalid"], d["dense"]["invalid"])
    except Exception:
        bad = None
    ours_checks.setdefault(p, []).append((int(s), bad))
rows = {}
for line in open(runs_file):
    p, s, side, rc, f, tl = line.rstrip("\n").split("\t")
    tl = float(tl)
    try:
        d = json.load(open(f))
    except Exception:
        d = {}
    solved = bool(d.get("solved")) and rc == "0"
    t = d.get("time_s" if side == "ompl" else "seconds")
    t = float(t) if (solved and t is not None) else tl
    rows.setdefault((p, side), []).append((int(s), solved, t, d.get("path_length")))
checks, pens = {}, {}
for line in open(checks_file):
    p, s, rc = line.split()
    checks.setdefault(p, []).append(rc)
    if rc == "1":
        try:
            pen = (json.load(open(f"{out}/check-ompl-{p}-{s}.json")).get("deepest") or {}).get("depth") or 0.0
        except Exception:
            pen = 0.0
        pens.setdefault(p, []).append((int(s), pen))

print()
print(f"{'problem':<14} {'OMPL solved':>11} {'median s':>9} {'ours solved':>11} {'median s':>9}"
      f" {'OMPL/ours':>9} {'ours invalid (OMPL.app)':>24} {'OMPL paths colliding':>21}")
tot_coll = tot_checked = tot_inv = 0
for p in problems:
    o, u = rows.get((p, "ompl"), []), rows.get((p, "ours"), [])
    if not o and not u:
        continue
    mo = statistics.median(t for _, _, t, _ in o) if o else float("nan")
    mu = statistics.median(t for _, _, t, _ in u) if u else float("nan")
    so, su = sum(x[1] for x in o), sum(x[1] for x in u)
    ratio = mo / mu if mu > 0 else float("nan")
    c = checks.get(p, [])
    coll, bad = c.count("1"), sum(1 for r in c if r not in ("0", "1"))
    tot_coll += coll
    tot_checked += len(c) - bad
    cs = f"{coll}/{len(c) - bad}" + (f" ({bad} check errors)" if bad else "")
    oc = ours_checks.get(p, [])
    inv = sum(1 for _, b in oc if b is not None and (b[0] > 0 or b[1] > 0))
    err = sum(1 for _, b in oc if b is None)
    os_ = f"{inv}/{len(oc) - err}" + (f" ({err} check errors)" if err else "")
    tot_inv += inv
    print(f"{p:<14} {so:>5}/{len(o):<5} {mo:>9.4f} {su:>5}/{len(u):<5} {mu:>9.4f} {ratio:>9.2f} {os_:>24} {cs:>21}")
print(f"\nour paths invalid under OMPL.app's checker (validator states or dense sweep): {tot_inv}")
for p in problems:
    for s, b in ours_checks.get(p, []):
        if b is None or b[0] > 0 or b[1] > 0:
            print(f"  {p} seed {s}: " + ("check failed" if b is None else f"{b[0]} validator, {b[1]} dense states invalid"))
print(f"OMPL paths that collide (continuous check, `haptics check` exit 1: closer than its"
      f" tolerance): {tot_coll} of {tot_checked}")
for p in problems:
    for s, pen in pens.get(p, []):
        print(f"  {p} seed {s}: penetration depth {pen:.4g}" + ("" if pen > 0 else " (touching)"))
print("times: planning only (OMPL: solve(); ours: report 'seconds'), no simplification;"
      " a failed run counts at the time limit")
EOF
