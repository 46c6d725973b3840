#!/usr/bin/env bash
# Recovery A/B of two braid binaries on the dbx1000 workload's logs (YCSB, 1 M rows of 1 KB,
# 2 requests per transaction, half reads, Zipf 0.6, every column incremented): for each
# variant, one log written once by NEW (bench --commits N --keep, 2 threads, logs on tmpfs, not
# power-safe), then `braid recover --threads 2` from a fresh copy of it by OLD and NEW
# alternately, ROUNDS rounds. Prints medians; keeps every recovery's JSON.
#   run.sh OLD NEW [OUT] [ROUNDS]
set -euo pipefail
old=$1 new=$2 out=${3:-$(dirname "$0")/out} rounds=${4:-5}
mkdir -p "$out"
d=/dev/shm/single-log-ab
trap 'rm -rf "$d" "$d-copy"' EXIT
# name | scheme flags | logs | commits (as many as DBx1000's log of the 3e8a3ff sitting held)
variants=("serial|--scheme serial --logging data|1|500000"
          "taurus-data|--scheme taurus --logging data|1|485000"
          "plover|--scheme plover --logging data|1|422000"
          "silor|--scheme silor --logging data --cc occ --scheme-opt silor.epoch_ms=5|1|735000")
for v in "${variants[@]}"; do
  IFS='|' read -r name flags logs n <<< "$v"
  rm -rf "$d"; mkdir -p "$d"
  # shellcheck disable=SC2086
  "$new" bench --workload ycsb --device file --dir "$d" --ycsb-update increment --pregenerate 1000000 \
      --rows 1000000 --theta 0.6 --read-fraction 0.5 --accesses 2 --threads 2 --logs "$logs" --repeat 1 \
      $flags --commits "$n" --seconds 60 --keep --json "$d/bench.json" > "$out/bench-$name.txt" 2>&1
  db=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['results'][0]['runs'][0]['dir'])" "$d/bench.json")
  for r in $(seq 1 "$rounds"); do
    for b in old new; do
      bin=$old; [ "$b" = new ] && bin=$new
      rm -rf "$d-copy"; cp -a "$db" "$d-copy"
      "$bin" recover --dir "$d-copy" --threads 2 --json "$out/$name-$b-$r.json" > "$out/$name-$b-$r.txt" 2>&1
      python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('$name $b round $r', round(d['txn_per_s']), d['txns'])" "$out/$name-$b-$r.json"
    done
  done
done
python3 - "$out" <<'PY'
import json, glob, os, re, statistics, sys
out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "*-*-*.json"))):
    m = re.fullmatch(r"(.+)-(old|new)-(\d+)\.json", os.path.basename(f))
    if m:
        rows.setdefault(m[1], {}).setdefault(m[2], []).append(json.load(open(f))["txn_per_s"])
for name, r in rows.items():
    a, b = r.get("old", []), r.get("new", [])
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:12} old {ma:>10,.0f}  new {mb:>10,.0f}  {mb / ma:.2f}x  (n={len(a)}; old: "
              f"{', '.join(f'{x:,.0f}' for x in a)}; new: {', '.join(f'{x:,.0f}' for x in b)})")
PY
