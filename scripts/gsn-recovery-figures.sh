#!/usr/bin/env bash
# GSN recovery pipeline figures (Wang & Johnson, VLDB 2014, Section 3.2: N scanners partition
# the log records by page into M buckets, M workers sort each bucket by GSN and apply it).
#
#   scripts/gsn-recovery-figures.sh [payment|ycsb] [seconds] [runs]
#
# 1. Writes a log: `braid bench --scheme gsn --threads 2 --device pmem --keep` running TPC-C
#    Payment (default) or YCSB for `seconds` (default 3), one run.
# 2. Recovers that database `runs` times (default 3) for every N, M in {1, 2}
#    (`braid recover --scan-threads N --apply-threads M`); gsn on pmem writes nothing at
#    recovery, so every run replays the same log.
# 3. Prints a table of medians (replay seconds, records/s, txn/s, stage seconds) and writes it
#    with all runs as JSON to $OUT (default results/gsn-recovery).
#
# Extra `braid bench` flags go in $BENCH_ARGS (e.g. BENCH_ARGS="--warehouses 1"). Needs jq.
set -euo pipefail
workload=${1:-payment}
secs=${2:-3}
runs=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/results/gsn-recovery}
target=${CARGO_TARGET_DIR:-$root/target}

command -v jq >/dev/null || { echo "gsn-recovery-figures: needs jq" >&2; exit 1; }
case "$workload" in
    payment) wl=(--workload tpcc --tpcc-mix payment-only) ;;
    ycsb) wl=(--workload ycsb) ;;
    *) echo "gsn-recovery-figures: workload is payment or ycsb, not $workload" >&2; exit 1 ;;
esac

(cd "$root" && CARGO_TARGET_DIR=$target cargo build --release -q -p braid)
braid=$target/release/braid
work=$(mktemp -d /dev/shm/braid-gsn-recovery-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# The 1-minute load average before anything runs: figures taken while other work loads the
# machine are not results, and the table says what the load was.
load=$(cut -d' ' -f1 /proc/loadavg)
echo "# writing the log: gsn, $workload, 2 threads, pmem, ${secs}s" >&2
# shellcheck disable=SC2086
"$braid" bench "${wl[@]}" --scheme gsn --threads 2 --device pmem --seconds "$secs" \
    --repeat 1 --keep --dir "$work" --json "$work/bench.json" --csv "$work/bench.csv" \
    ${BENCH_ARGS:-} >&2
db=$(jq -r '.results[] | select(.scheme == "gsn") | .runs[0].dir' "$work/bench.json")
[ -d "$db" ] || { echo "gsn-recovery-figures: no database kept ($db)" >&2; exit 1; }

for n in 1 2; do
    for m in 1 2; do
        for r in $(seq 1 "$runs"); do
            echo "# recover N=$n M=$m run $r" >&2
            "$braid" recover --dir "$db" --threads 1 --scan-threads "$n" --apply-threads "$m" \
                --json "$work/recover-$n-$m-$r.json" >/dev/null
        done
    done
done

# Medians per (N, M); the stages come from the run with the median replay time.
jq -s --argjson bench "$(cat "$work/bench.json")" --arg load "$load" '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor]
                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  group_by([.scan_threads, .apply_threads])
  | map({
      scan_threads: .[0].scan_threads,
      apply_threads: .[0].apply_threads,
      runs: length,
      txns: .[0].txns,
      records: .[0].records,
      bytes: .[0].bytes,
      seconds: (map(.seconds) | median),
      records_per_s: (map(.records_per_s) | median),
      txn_per_s: (map(.txn_per_s) | median),
      stages: (sort_by(.seconds) | .[length / 2 | floor].stages),
      all_seconds: map(.seconds)
    })
  | { log: ($bench.results[] | select(.scheme == "gsn")
            | { workload, threads, logs, txn_per_s, params }),
      machine: $bench.machine,
      load_average_at_start: ($load | tonumber),
      recovery: . }
' "$work"/recover-*.json >"$out/summary.json"

{
    echo "GSN recovery pipeline, $workload log of a 2-thread gsn run on pmem," \
        "medians of $runs recoveries; braid $(jq -r '.machine.git' "$out/summary.json")," \
        "1-minute load average at the start: $load"
    echo
    echo "| N scan | M apply | txns | records | seconds | records/s | txn/s | scan / plan / partition / apply s |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---|"
    jq -r '.recovery[] | "| \(.scan_threads) | \(.apply_threads) | \(.txns) | \(.records) | \(.seconds * 1000 | round / 1000) | \(.records_per_s | round) | \(.txn_per_s | round) | \(.stages | map(.seconds * 1000 | round / 1000 | tostring) | join(" / ")) |"' \
        "$out/summary.json"
} | tee "$out/summary.md"
