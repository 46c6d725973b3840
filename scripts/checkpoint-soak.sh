#!/usr/bin/env bash
# Soak: sustained load with a cap on log space; shows the log staying under the cap.
#
#   scripts/checkpoint-soak.sh [seconds] [cap_mb] [scheme] [device]
#
# Runs `braid bench` (YCSB, 200,000 rows, 2 threads, 16 MiB segments) for `seconds` (default 600) with
# `--log-cap-mb cap_mb` (default 256): checkpoints are triggered whenever the log grows by a
# quarter of the cap and truncate it, so the log devices never hold much more than half the
# cap. Prints the checkpoints taken and the most log bytes held (sampled every 50 ms). Needs jq.
set -euo pipefail
secs=${1:-600}
cap=${2:-256}
scheme=${3:-taurus}
device=${4:-file}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -q
braid=${CARGO_TARGET_DIR:-$root/target}/release/braid
out=${TMPDIR:-/tmp}/braid-soak.json
"$braid" bench --scheme "$scheme" --device "$device" --threads 2 --rows 200000 \
    --segment-mb 16 --seconds "$secs" --repeat 1 --log-cap-mb "$cap" --json "$out" \
    --csv "${out%.json}.csv"
jq -r --argjson cap "$cap" '.results[0] as $r | $r.runs[0] |
    "\($r.scheme) on \($r.device), \($r.txn_per_s | floor) txn/s for \(.seconds | floor) s: \(.checkpoints) checkpoints, \(.log_bytes / 1e6 | floor) MB logged, at most \(.max_log_bytes / 1048576 | floor) MiB held (cap \($cap) MiB)"' "$out"
held=$(jq '.results[0].runs[0].max_log_bytes' "$out")
if [ "$held" -gt $((cap << 20)) ]; then
    echo "FAIL: the log exceeded its cap" >&2
    exit 1
fi
