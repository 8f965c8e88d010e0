#!/usr/bin/env bash
# Build benches/compare/ompl_plan.cpp: OMPL.app's own SE3 rigid-body setup planning an
# OMPL.app .cfg with RRTConnect (see the comment at the top of ompl_plan.cpp).
# By hand, outside the test suite and cargo:
#
#   benches/compare/build_ompl_plan.sh OMPLAPP_DIR
#
# OMPLAPP_DIR: a checkout of github.com/ompl/omplapp (needs src/omplapp and benchmark/),
# e.g. from a bare clone:  mkdir -p /tmp/omplapp-src &&
#   git --git-dir=omplapp.git archive HEAD src benchmark | tar -x -C /tmp/omplapp-src
# Nothing of omplapp is copied into this repository: its sources are compiled from
# OMPLAPP_DIR into $OUT_DIR/build.
#
# Needs (Debian 12): g++ libompl-dev (1.5.2) libfcl-dev libccd-dev libassimp-dev
# libeigen3-dev liboctomap-dev libboost-{filesystem,program-options,serialization}1.74.0
#
# Builds, into $OUT_DIR (default target/compare):
#   ompl_plan          linked against Debian's libfcl (built with assertions on: it
#                      imports __assert_fail)
#   ompl_plan_ndebug   linked against FCL 0.7.0 (Debian's version) compiled here the way
#                      FCL's own Release build does (-O3 -DNDEBUG + its x64 SSE flags),
#                      like the FCL bundled in the python-fcl wheel. Source: $FCL_SRC (an
#                      FCL source tree) or, by default, tag $FCL_TAG of a bare clone at
#                      $FCL_GIT (default /work/.mirror/flexible-collision-library+fcl/repo).
#                      Skipped with a message when neither is there.
# Env: OUT_DIR, JOBS (parallel compiles, default 2), CXX (default g++),
#      OMPLAPP_RESOURCES (baked in as OMPLAPP_RESOURCE_DIR, the mesh fallback folder;
#      default OMPLAPP_DIR/resources; the cfg's own folder is searched first).
set -euo pipefail

if [ $# -lt 1 ] || [ ! -f "$1/src/omplapp/config.h.in" ] || [ ! -f "$1/benchmark/BenchmarkOptions.cpp" ]; then
    echo "usage: $0 OMPLAPP_DIR   (an omplapp checkout with src/omplapp and benchmark/)" >&2
    exit 2
fi
OMPLAPP_DIR=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR=${OUT_DIR:-$ROOT/target/compare}
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
BUILD=$OUT_DIR/build
JOBS=${JOBS:-2}
CXX=${CXX:-g++}
NICE="nice -n 10"
LIBDIR=/usr/lib/x86_64-linux-gnu
FCL_TAG=${FCL_TAG:-0.7.0}
FCL_GIT=${FCL_GIT:-/work/.mirror/flexible-collision-library+fcl/repo}
mkdir -p "$BUILD"

# --- omplapp's config.h, from its config.h.in (what its CMake configure_file does) ---
# (upstream: OMPLAPP_DIR/resources; a checkout of src/ and benchmark/ alone has none)
RES=${OMPLAPP_RESOURCES:-$OMPLAPP_DIR/resources}
[ -d "$RES" ] || RES=/tmp/omplapp
mkdir -p "$BUILD/include/omplapp"
sed -e "s|@OMPLAPP_RESOURCE_DIR@|$RES|" \
    -e 's|^#cmakedefine01 OMPL_HAS_PQP|#define OMPL_HAS_PQP 0|' \
    "$OMPLAPP_DIR/src/omplapp/config.h.in" > "$BUILD/include/omplapp/config.h.new"
cmp -s "$BUILD/include/omplapp/config.h.new" "$BUILD/include/omplapp/config.h" 2>/dev/null \
    && rm "$BUILD/include/omplapp/config.h.new" \
    || mv "$BUILD/include/omplapp/config.h.new" "$BUILD/include/omplapp/config.h"

# omplapp's CMake default build type is Release (-O3 -DNDEBUG); the brief for this
# comparison is -O2, with NDEBUG so that both variants differ only in the FCL library.
CXXFLAGS_APP="-std=c++17 -O2 -DNDEBUG -pthread -w"
INC_APP="-I$BUILD/include -I$OMPLAPP_DIR/src -I$OMPLAPP_DIR/benchmark -I/usr/include/ompl-1.5 -I/usr/include/eigen3"
APP_SRCS=(
    "$OMPLAPP_DIR/src/omplapp/apps/SE3RigidBodyPlanning.cpp"
    "$OMPLAPP_DIR/src/omplapp/apps/detail/appUtil.cpp"
    "$OMPLAPP_DIR/src/omplapp/geometry/RigidBodyGeometry.cpp"
    "$OMPLAPP_DIR/src/omplapp/geometry/detail/assimpUtil.cpp"
    "$OMPLAPP_DIR/benchmark/BenchmarkOptions.cpp"
    "$ROOT/benches/compare/ompl_plan.cpp"
)
# Shared libraries; Debian ships no unversioned boost .so links, so name the files.
LIBS_COMMON="-lompl -lassimp -lccd -loctomap -loctomath \
    $LIBDIR/libboost_filesystem.so.1.74.0 $LIBDIR/libboost_program_options.so.1.74.0 \
    $LIBDIR/libboost_serialization.so.1.74.0 -lpthread"

# compile_objs OBJDIR DEP EXTRA_FLAGS SRC... : compile (JOBS at a time) what is out of
# date (older than its source or DEP)
compile_objs() {
    local objdir=$1 dep=$2 extra=$3
    shift 3
    mkdir -p "$objdir"
    local todo=()
    for src in "$@"; do
        local obj="$objdir/$(echo "$src" | sed -e 's|^/||' -e 's|/|_|g').o"
        if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$dep" -nt "$obj" ]; then
            todo+=("$src")
        fi
    done
    if [ ${#todo[@]} -gt 0 ]; then
        printf '%s\n' "${todo[@]}" | xargs -P "$JOBS" -I{} sh -c '
            obj="$0/$(echo "$1" | sed -e "s|^/||" -e "s|/|_|g").o"
            echo "  CXX $1" >&2
            exec '"$NICE $CXX"' $2 -c "$1" -o "$obj"' "$objdir" {} "$extra"
    fi
    OBJS=()
    for src in "$@"; do
        OBJS+=("$objdir/$(echo "$src" | sed -e 's|^/||' -e 's|/|_|g').o")
    done
}

# --- variant 1: Debian's FCL -------------------------------------------------------
echo "building ompl_plan (Debian FCL $(pkg-config --modversion fcl 2>/dev/null || echo '?'))" >&2
compile_objs "$BUILD/obj-debian" "$BUILD/include/omplapp/config.h" "$CXXFLAGS_APP $INC_APP -DOMPL_PLAN_VARIANT=\"debian-fcl\"" "${APP_SRCS[@]}"
$NICE $CXX -o "$OUT_DIR/ompl_plan" "${OBJS[@]}" -lfcl $LIBS_COMMON
echo "  -> $OUT_DIR/ompl_plan" >&2

# --- variant 2: FCL built from source, Release (-O3 -DNDEBUG) ----------------------
FCL_DIR=${FCL_SRC:-}
if [ -z "$FCL_DIR" ]; then
    if [ -d "$FCL_GIT" ] && git --git-dir="$FCL_GIT" rev-parse -q --verify "refs/tags/$FCL_TAG" >/dev/null; then
        FCL_DIR=$BUILD/fcl-$FCL_TAG-src
        if [ ! -f "$FCL_DIR/include/fcl/config.h.in" ]; then
            mkdir -p "$FCL_DIR"
            { git --git-dir="$FCL_GIT" archive "$FCL_TAG" include src package.xml 2>/dev/null || true; } | tar -x -C "$FCL_DIR"
        fi
    fi
fi
if [ -z "$FCL_DIR" ] || [ ! -f "$FCL_DIR/include/fcl/config.h.in" ]; then
    echo "no FCL source (set FCL_SRC to an FCL $FCL_TAG tree, or FCL_GIT to a bare clone):" \
         "skipping ompl_plan_ndebug" >&2
    exit 0
fi
# version from package.xml, as FCL's CMakeModules/FCLVersion.cmake reads it
FCL_VER=$(sed -n 's|.*<version>\([0-9.]*\)</version>.*|\1|p' "$FCL_DIR/package.xml" 2>/dev/null | head -1 || true)
FCL_VER=${FCL_VER:-$FCL_TAG}
IFS=. read -r FMAJ FMIN FPAT <<<"$FCL_VER"
OCTO_VER=$(pkg-config --modversion octomap 2>/dev/null || echo 1.9.7)
IFS=. read -r OMAJ OMIN OPAT <<<"$OCTO_VER"
FCL_GEN=$BUILD/fcl-ndebug/include/fcl
mkdir -p "$FCL_GEN"
# config.h as FCL's CMake configures it (octomap on, as in Debian's build)
sed -e "s|@FCL_VERSION@|$FCL_VER|" -e "s|@FCL_MAJOR_VERSION@|$FMAJ|" \
    -e "s|@FCL_MINOR_VERSION@|$FMIN|" -e "s|@FCL_PATCH_VERSION@|${FPAT:-0}|" \
    -e 's|^#cmakedefine01 FCL_HAVE_SSE|#define FCL_HAVE_SSE 0|' \
    -e 's|^#cmakedefine01 FCL_HAVE_OCTOMAP|#define FCL_HAVE_OCTOMAP 1|' \
    -e 's|^#cmakedefine01 FCL_ENABLE_PROFILING|#define FCL_ENABLE_PROFILING 0|' \
    -e "s|@OCTOMAP_MAJOR_VERSION@|$OMAJ|" -e "s|@OCTOMAP_MINOR_VERSION@|$OMIN|" \
    -e "s|@OCTOMAP_PATCH_VERSION@|$OPAT|" \
    "$FCL_DIR/include/fcl/config.h.in" > "$FCL_GEN/config.h.new"
cmp -s "$FCL_GEN/config.h.new" "$FCL_GEN/config.h" 2>/dev/null && rm "$FCL_GEN/config.h.new" \
    || mv "$FCL_GEN/config.h.new" "$FCL_GEN/config.h"
# export.h as CMake's GenerateExportHeader writes it for a static library
[ -f "$FCL_GEN/export.h" ] || cat > "$FCL_GEN/export.h" <<'EOF'
#ifndef FCL_EXPORT_H
#define FCL_EXPORT_H
#define FCL_EXPORT
#define FCL_NO_EXPORT
#define FCL_DEPRECATED __attribute__ ((__deprecated__))
#define FCL_DEPRECATED_EXPORT FCL_EXPORT FCL_DEPRECATED
#define FCL_DEPRECATED_NO_EXPORT FCL_NO_EXPORT FCL_DEPRECATED
#endif
EOF
FCL_INC="-I$BUILD/fcl-ndebug/include -I$FCL_DIR/include"
# FCL's CompilerSettings.cmake Release flags + its FCL_USE_X64_SSE flags (on for x86-64)
FCL_FLAGS="-std=c++11 -pthread -O3 -DNDEBUG -mfpmath=sse -msse -msse2 -msse3 -mssse3 -w \
    $FCL_INC -I/usr/include/eigen3"
mapfile -t FCL_SRCS < <(find "$FCL_DIR/src" -name '*.cpp' | sort)
echo "building FCL $FCL_VER Release (-O3 -DNDEBUG) from $FCL_DIR: ${#FCL_SRCS[@]} files, $JOBS at a time" >&2
compile_objs "$BUILD/fcl-ndebug/obj" "$FCL_GEN/config.h" "$FCL_FLAGS" "${FCL_SRCS[@]}"
FCL_LIB=$BUILD/fcl-ndebug/libfcl_ndebug.a
NEWER=0
for o in "${OBJS[@]}"; do [ "$o" -nt "$FCL_LIB" ] && NEWER=1 && break; done
if [ ! -f "$FCL_LIB" ] || [ $NEWER = 1 ]; then
    rm -f "$FCL_LIB"
    ar rcs "$FCL_LIB" "${OBJS[@]}"
fi

echo "building ompl_plan_ndebug (FCL $FCL_VER Release, static)" >&2
compile_objs "$BUILD/obj-ndebug" "$BUILD/include/omplapp/config.h" "$CXXFLAGS_APP $FCL_INC $INC_APP -DOMPL_PLAN_VARIANT=\"release-fcl-ndebug\"" "${APP_SRCS[@]}"
$NICE $CXX -o "$OUT_DIR/ompl_plan_ndebug" "${OBJS[@]}" "$FCL_LIB" $LIBS_COMMON
if objdump -p "$OUT_DIR/ompl_plan_ndebug" | grep -q 'NEEDED.*libfcl'; then
    echo "error: ompl_plan_ndebug still links Debian's libfcl" >&2
    exit 1
fi
echo "  -> $OUT_DIR/ompl_plan_ndebug" >&2
