#!/usr/bin/env bash
# `haptics check` beside OMPL.app's own checker on OMPL.app's own files, in one run:
# the robot origins, and the verdict and clearance on every stored .path whose meshes
# exist. By hand, outside the test suite (OMPL.app's files are never copied here):
#
#   benches/compare/build_ompl_plan.sh OMPLAPP_DIR        # builds target/compare/ompl_plan
#   benches/compare/check_vs_ompl.sh OMPLAPP_DIR/resources/3D
#
# OMPL.app's side (ompl_plan --origin / --check): RigidBodyGeometry::getRobotCenter, and
# its FCL state validity checker at the states of OMPL's DiscreteMotionValidator and in a
# dense sweep (no robot point moves more than 0.2% of the world's diagonal between two
# states). Ours: `haptics inspect` (origin) and `haptics check --report` (verdict,
# certified minimum clearance, first collision). Prints one JSON line per row.
set -euo pipefail
RES=${1:?usage: $0 OMPLAPP_RESOURCES_3D}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OMPL=${OMPL_PLAN:-$ROOT/target/compare/ompl_plan}
HAPTICS=${HAPTICS:-$ROOT/target/release/haptics}
OUT=${OUT:-$ROOT/target/compare/check}
mkdir -p "$OUT"
[ -x "$HAPTICS" ] || (cd "$ROOT" && cargo build --release -p haptics-app)

echo "# origins: ours (haptics inspect) beside OMPL.app's (float sum) and the f64 mean of assimp's vertices"
for cfg in "$RES"/*.cfg; do
    robot=$(sed -n 's/^robot *= *//p' "$cfg" | head -1)
    [ -f "$RES/$robot" ] || continue
    ours=$("$HAPTICS" inspect "$RES/$robot" | sed -n 's/^robot origin.*: (\(.*\))$/\1/p')
    ompl=$("$OMPL" "$cfg" --origin 2>/dev/null || true)
    echo "{\"cfg\":\"$(basename "$cfg")\",\"ours\":[$ours],\"ompl\":$ompl}"
done

echo "# stored paths: OMPL.app's checker beside haptics check"
for path in "$RES"/*.path; do
    name=$(basename "$path" .path)
    cfg="$RES/$name.cfg"
    [ -f "$cfg" ] || continue
    ompl=$("$OMPL" "$cfg" --check "$path" 2>/dev/null) || { echo "{\"problem\":\"$name\",\"ompl\":\"failed (meshes missing?)\"}"; continue; }
    start=$(date +%s.%N)
    "$HAPTICS" check "$cfg" --path "$path" --report "$OUT/$name.json" >/dev/null 2>&1 || true
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    echo "{\"problem\":\"$name\",\"ours\":$(tr -d '\n ' < "$OUT/$name.json"),\"ours_wall_s\":$wall,\"ompl\":$ompl}"
done
