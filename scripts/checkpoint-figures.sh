#!/usr/bin/env bash
# Checkpoint figures for the README: throughput with background checkpoints as a ratio to
# the same run without them, and recovery time against the checkpoint interval.
#
#   scripts/checkpoint-figures.sh [rows] [seconds]
#
# YCSB (defaults but `rows` rows), 2 threads, pmem device in /dev/shm, schemes serial and
# taurus (data logging). Throughput: `braid bench --repeat 3`, medians, with and without
# `--checkpoint-interval 2`. Recovery: a 2-thread taurus run of `seconds` seconds per
# interval is kept and recovered with `braid recover --threads 2`, which reports checkpoint
# loading and log replay separately. Needs jq.
set -euo pipefail
rows=${1:-200000}
secs=${2:-12}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -q
braid=${CARGO_TARGET_DIR:-$root/target}/release/braid
out=${TMPDIR:-/tmp}/braid-ckfig
rm -rf "$out" && mkdir -p "$out"

echo "## Throughput with checkpoints every 2 s (ratio to the same scheme without)"
echo
echo "| scheme | without (txn/s) | with (txn/s) | ratio | checkpoints per run |"
echo "|---|---|---|---|---|"
for s in serial taurus; do
    "$braid" bench --scheme "$s" --threads 2 --rows "$rows" --seconds "$secs" --repeat 3 \
        --json "$out/no-$s.json" --csv "$out/no-$s.csv" >/dev/null
    "$braid" bench --scheme "$s" --threads 2 --rows "$rows" --seconds "$secs" --repeat 3 \
        --checkpoint-interval 2 --json "$out/ck-$s.json" --csv "$out/ck-$s.csv" >/dev/null
    a=$(jq '.results[0].txn_per_s' "$out/no-$s.json")
    b=$(jq '.results[0].txn_per_s' "$out/ck-$s.json")
    n=$(jq '[.results[0].runs[].checkpoints] | add / length' "$out/ck-$s.json")
    printf '| %s | %.0f | %.0f | %.2f | %.1f |\n' "$s" "$a" "$b" "$(echo "$b / $a" | bc -l)" "$n"
done

echo
echo "## Recovery time against the checkpoint interval (taurus, 2 streams, ${secs} s run)"
echo
echo "| interval | checkpoint load (s) | log replayed (txns) | log replay (s) | total open (s) |"
echo "|---|---|---|---|---|"
for i in 0 8 4 2 1; do
    d="$out/run-$i"
    "$braid" bench --scheme taurus --threads 2 --rows "$rows" --seconds "$secs" --repeat 1 \
        --checkpoint-interval "$i" --keep --dir "$d" \
        --json "$out/run-$i.json" --csv "$out/run-$i.csv" >/dev/null
    db=$(jq -r '.results[0].runs[0].dir' "$out/run-$i.json")
    start=$(date +%s.%N)
    "$braid" recover --dir "$db" --threads 2 --json "$out/rec-$i.json" >/dev/null
    end=$(date +%s.%N)
    load=$(jq '.load_seconds' "$out/rec-$i.json")
    txns=$(jq '.txns' "$out/rec-$i.json")
    replay=$(jq '.seconds' "$out/rec-$i.json")
    label=$([ "$i" = 0 ] && echo "none (loader + whole log)" || echo "$i s")
    printf '| %s | %.3f | %s | %.3f | %.2f |\n' "$label" "$load" "$txns" "$replay" \
        "$(echo "$end - $start" | bc -l)"
    rm -rf "$d"
done
