#!/usr/bin/env bash
# The straight start-to-goal motion of every OMPL.app 3D problem whose meshes exist,
# checked by OMPL.app's own checker and by `haptics check`, in one run. By hand, outside
# the test suite (OMPL.app's files are never copied here):
#
#   benches/compare/build_ompl_plan.sh OMPLAPP_DIR        # builds target/compare/ompl_plan*
#   benches/compare/collide_vs_ompl.sh OMPLAPP_DIR/resources/3D
#
# OMPL.app's side (`ompl_plan --check` on a two-state path): its FCL state validity
# checker at the states of OMPL's DiscreteMotionValidator and in a dense sweep (no robot
# point moves more than 0.2% of the world's diagonal between two states), each with its
# first invalid state and its time. Ours: `haptics check PROBLEM.cfg --first-contact`
# (verdict and first collision) and the full check (with the penetration depth), each
# with its report's check time. Prints one JSON line per problem.
#
# Env: OMPL_PLAN (default target/compare/ompl_plan_ndebug, else ompl_plan), HAPTICS,
# OUT (the reports' folder).
set -euo pipefail
RES=${1:?usage: $0 OMPLAPP_RESOURCES_3D}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OMPL=${OMPL_PLAN:-$ROOT/target/compare/ompl_plan_ndebug}
[ -x "$OMPL" ] || OMPL=$ROOT/target/compare/ompl_plan
HAPTICS=${HAPTICS:-$ROOT/target/release/haptics}
OUT=${OUT:-$ROOT/target/compare/collide}
mkdir -p "$OUT"
[ -x "$HAPTICS" ] || (cd "$ROOT" && cargo build --release -p haptics-app)

# The .cfg's start and goal as an OMPL path: `x y z qx qy qz qw` per line (the
# rotation is theta about the axis).
straight_path() {
    python3 - "$1" <<'EOF'
import math, re, sys
v = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\w.]+)\s*=\s*([-+0-9.eE]+)\s*$", line)
    if m:
        v[m.group(1)] = float(m.group(2))
for end in ("start", "goal"):
    ax = [v.get(f"{end}.axis.{c}", 0.0) for c in "xyz"]
    n = math.sqrt(sum(a * a for a in ax)) or 1.0
    th = v.get(f"{end}.theta", 0.0)
    s = math.sin(0.5 * th) / n
    print(*(v[f"{end}.{c}"] for c in "xyz"), *(a * s for a in ax), math.cos(0.5 * th))
EOF
}

for cfg in "$RES"/*.cfg; do
    name=$(basename "$cfg" .cfg)
    robot=$(sed -n 's/^robot *= *//p' "$cfg" | head -1)
    world=$(sed -n 's/^world *= *//p' "$cfg" | head -1)
    { [ -f "$RES/$robot" ] && [ -f "$RES/$world" ]; } || continue
    straight_path "$cfg" > "$OUT/$name.path"
    ompl=$("$OMPL" "$cfg" --check "$OUT/$name.path" 2>/dev/null) || ompl='"failed"'
    "$HAPTICS" check "$cfg" --first-contact --report "$OUT/$name.first.json" >/dev/null 2>&1 || true
    "$HAPTICS" check "$cfg" --report "$OUT/$name.full.json" >/dev/null 2>&1 || true
    first=$(tr -d '\n ' < "$OUT/$name.first.json")
    full=$(tr -d '\n ' < "$OUT/$name.full.json")
    echo "{\"problem\":\"$name\",\"ompl\":$ompl,\"first_contact\":$first,\"full\":$full}"
done
