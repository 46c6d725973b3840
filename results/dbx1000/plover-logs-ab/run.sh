#!/usr/bin/env bash
# Plover recovery of several logs at 2 threads, A/B of two braid binaries: one log of the
# dbx1000 workload (YCSB, 1 M rows of 1 KB, 2 requests per transaction, half reads, Zipf 0.6,
# every column incremented; 2 workers, LOGS logs, files on tmpfs, not power-safe) written once
# by NEW, then `braid recover --threads 2` of a fresh copy by OLD and NEW alternately, ROUNDS
# rounds. Prints each round and the medians; keeps every recovery's JSON.
#   run.sh OLD NEW [OUT] [ROUNDS] [LOGS] [COMMITS]
set -euo pipefail
old=$1 new=$2 out=${3:-$(dirname "$0")/out} rounds=${4:-5} logs=${5:-2} n=${6:-487000}
mkdir -p "$out"
d=/dev/shm/plover-logs-ab
trap 'rm -rf "$d" "$d-copy"' EXIT
rm -rf "$d"; mkdir -p "$d"
"$new" bench --workload ycsb --device file --dir "$d" --ycsb-update increment --pregenerate 1000000 \
    --rows 1000000 --theta 0.6 --read-fraction 0.5 --accesses 2 --threads 2 --logs "$logs" --repeat 1 \
    --scheme plover --logging data --commits "$n" --seconds 60 --keep --json "$d/bench.json" > "$out/bench.txt" 2>&1
db=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['results'][0]['runs'][0]['dir'])" "$d/bench.json")
for r in $(seq 1 "$rounds"); do
  for b in old new; do
    bin=$old; [ "$b" = new ] && bin=$new
    rm -rf "$d-copy"; cp -a "$db" "$d-copy"
    "$bin" recover --dir "$d-copy" --threads 2 --json "$out/$b-$r.json" > "$out/$b-$r.txt" 2>&1
    python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('$b round $r', round(d['txn_per_s']), d['txns'])" "$out/$b-$r.json"
  done
done
python3 - "$out" <<'PY'
import json, glob, os, statistics, sys
out = sys.argv[1]
med = {}
for b in ("old", "new"):
    xs = [json.load(open(f))["txn_per_s"] for f in sorted(glob.glob(os.path.join(out, f"{b}-*.json")))]
    med[b] = statistics.median(xs)
    print(f"{b:4} {med[b]:>12,.0f} txn/s  (n={len(xs)}: {', '.join(f'{x:,.0f}' for x in xs)})")
print(f"new / old: {med['new'] / med['old']:.2f}x")
PY
