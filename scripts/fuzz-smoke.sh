#!/usr/bin/env bash
# Coverage-guided smoke run of every fuzz target (fuzz/fuzz_targets) on the stable toolchain:
# the targets are built with libFuzzer's SanitizerCoverage instrumentation (the flags
# cargo-fuzz passes, minus AddressSanitizer, which needs nightly; `cargo +nightly fuzz run`
# adds it, see fuzz/README.md) and each runs for SECONDS (default 10) from its committed corpus.
# New inputs go to a scratch directory, so the checkout is never modified. A crash leaves its
# input in $OUT/artifacts/<target>/ and prints the command that replays it.
#
#   scripts/fuzz-smoke.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-10}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(record_decode payload_decode gsn_payload silor_mark scan segment_open pmem_ring pertxn_open region_header params rewind_open)
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/../target/fuzz}
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# With an explicit --target, RUSTFLAGS reach the targets but not build scripts (as in cargo-fuzz).
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --quiet --bins --target "$host"
bin=$CARGO_TARGET_DIR/$host/release
out=$(mktemp -d /tmp/braid-fuzz-smoke.XXXXXX)
trap 'rm -rf "$out"' EXIT
for t in "${targets[@]}"; do
    mkdir -p "$out/$t" "$out/artifacts/$t"
    if ! "$bin/$t" "$out/$t" "corpus/$t" -max_total_time="$secs" \
        -rss_limit_mb=2048 -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 \
        >"$out/$t.log" 2>&1; then
        tail -n 30 "$out/$t.log"
        keep=$(mktemp -d /tmp/braid-fuzz-failure.XXXXXX)
        cp -r "$out/artifacts/$t" "$keep/"
        echo "fuzz-smoke: $t FAILED; inputs kept in $keep/$t; replay with:"
        for a in "$keep/$t"/*; do echo "  $bin/$t $a"; done
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz-smoke: $t ok, $runs runs in ${secs}s"
done
