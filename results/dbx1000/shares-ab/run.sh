#!/usr/bin/env bash
# Taurus data recovery of several logs at 2 threads, the plans side by side: one log of the
# dbx1000 workload (YCSB, 1 M rows of 1 KB, 2 requests per transaction, half reads, Zipf 0.6,
# every column incremented; 2 workers, LOGS logs, files on tmpfs, not power-safe) written once
# by BRAID, then `braid recover --threads 2` of a fresh copy with `--taurus-recovery auto`
# (the planner: pools and RLV, Alg. 4) and `shares` (recovery/walk.rs) alternately, ROUNDS
# rounds. Prints each round and the medians; keeps every recovery's JSON.
#   run.sh BRAID [OUT] [ROUNDS] [LOGS] [COMMITS]
set -euo pipefail
braid=$1 out=${2:-$(dirname "$0")/out} rounds=${3:-5} logs=${4:-2} n=${5:-337000}
mkdir -p "$out"
d=/dev/shm/shares-ab
trap 'rm -rf "$d" "$d-copy"' EXIT
rm -rf "$d"; mkdir -p "$d"
"$braid" bench --workload ycsb --device file --dir "$d" --ycsb-update increment --pregenerate 1000000 \
    --rows 1000000 --theta 0.6 --read-fraction 0.5 --accesses 2 --threads 2 --logs "$logs" --repeat 1 \
    --scheme taurus --logging data --commits "$n" --seconds 60 --keep --json "$d/bench.json" > "$out/bench.txt" 2>&1
db=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['results'][0]['runs'][0]['dir'])" "$d/bench.json")
for r in $(seq 1 "$rounds"); do
  for plan in auto shares; do
    rm -rf "$d-copy"; cp -a "$db" "$d-copy"
    "$braid" recover --dir "$d-copy" --threads 2 --taurus-recovery "$plan" --json "$out/$plan-$r.json" > "$out/$plan-$r.txt" 2>&1
    python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('$plan round $r', round(d['txn_per_s']), d['txns'], d.get('plan'))" "$out/$plan-$r.json"
  done
done
python3 - "$out" <<'PY'
import json, glob, os, statistics, sys
out = sys.argv[1]
med = {}
for plan in ("auto", "shares"):
    xs = [json.load(open(f))["txn_per_s"] for f in sorted(glob.glob(os.path.join(out, f"{plan}-*.json")))]
    med[plan] = statistics.median(xs)
    print(f"{plan:7} {med[plan]:>12,.0f} txn/s  (n={len(xs)}: {', '.join(f'{x:,.0f}' for x in xs)})")
print(f"shares / auto: {med['shares'] / med['auto']:.2f}x")
PY
