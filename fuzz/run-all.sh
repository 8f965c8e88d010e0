#!/usr/bin/env bash
# Runs every fuzz target for RUNS inputs (default 10^6), then minimizes its corpus
# (keeping the seed-* inputs under their names), and prints one line per target: inputs
# tried, edges covered, features, corpus size, crashes. Crashing inputs land in
# fuzz/artifacts/TARGET/; copy each into fuzz/regressions/TARGET/ with the fix.
# Usage, from the repository root: fuzz/run-all.sh [RUNS] [TARGET...]
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -u
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
# Build once, optimized and with debug assertions (so an integer overflow panics, as it
# does in the test profile); the runs below use the binaries directly (so editing the
# sources while they run does not rebuild them).
cargo +nightly fuzz build -O -a >/dev/null 2>&1 || { echo "cargo fuzz build failed"; exit 1; }
bin=fuzz/target/x86_64-unknown-linux-gnu/release
mkdir -p fuzz/logs
printf '%-16s %10s %8s %8s %8s %8s %8s\n' target inputs seconds cov features corpus crashes
for t in "${targets[@]}"; do
    log=fuzz/logs/$t.log
    mkdir -p "fuzz/artifacts/$t"
    start=$(date +%s)
    # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: 2 GB is a leak or an
    # unbounded allocation; -max_len: inputs up to 16 KB (the seeds are smaller).
    "$bin/$t" "fuzz/corpus/$t" -runs="$runs" -max_len=16384 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" \
        >"$log" 2>&1
    status=$?
    seconds=$(( $(date +%s) - start ))
    crashes=$(ls "fuzz/artifacts/$t" | wc -l)
    # Minimize: merge into a fresh directory, then put the seeds back under their names.
    min=$(mktemp -d)
    "$bin/$t" -merge=1 "$min" "fuzz/corpus/$t" >>"$log" 2>&1
    cp "fuzz/corpus/$t"/seed-* "$min"/ 2>/dev/null
    rm -rf "fuzz/corpus/$t" && mv "$min" "fuzz/corpus/$t" && chmod 755 "fuzz/corpus/$t"
    executed=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    corpus=$(ls "fuzz/corpus/$t" | wc -l)
    printf '%-16s %10s %8s %8s %8s %8s %8s%s\n' "$t" "${executed:-?}" "$seconds" "${cov:-?}" \
        "${ft:-?}" "$corpus" "$crashes" "$([ $status -ne 0 ] && echo "  (exit $status, see $log)")"
done
