#!/usr/bin/env bash
# The prefetch of drawn-ahead transactions (Worker::prefetch, bench --prefetch-ahead), A/B: the
# dbx1000 workload (YCSB, 1 M rows of 1 KB, 2 requests per transaction, half reads, Zipf 0.6,
# every column incremented, 3,000,000 transactions drawn per worker before the clock) run by
# one release binary with --prefetch-ahead 0 and with B, alternated round by round. Logs on
# tmpfs (not power-safe).
#   run.sh BRAID [OUT] [ROUNDS] [B]
# BRAID: a braid binary (a release build of a clean tree). OUT defaults to ./out here. Prints
# medians; keeps every run's JSON (each records params.prefetch_ahead).
set -euo pipefail
bin=$1 out=${2:-$(dirname "$0")/out} rounds=${3:-3} batch=${4:-8}
mkdir -p "$out"
d=/dev/shm/prefetch-ab
trap 'rm -rf "$d"' EXIT
common=(--workload ycsb --device file --ycsb-update increment --pregenerate 3000000 --rows 1000000
        --theta 0.6 --read-fraction 0.5 --accesses 2 --repeat 1)
variants=("none-1t|--scheme none|1|1" "none|--scheme none|2|1" "serial|--scheme serial --logging data|2|1"
          "taurus-data|--scheme taurus --logging data|2|1" "taurus-data-2logs|--scheme taurus --logging data|2|2"
          "plover|--scheme plover --logging data|2|1"
          "silor|--scheme silor --logging data --cc occ --scheme-opt silor.epoch_ms=5|2|1")
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name flags threads logs <<< "$v"
    for p in 0 "$batch"; do
      rm -rf "$d"; mkdir -p "$d"
      # shellcheck disable=SC2086
      "$bin" bench "${common[@]}" --dir "$d" --threads "$threads" --logs "$logs" $flags --seconds 3 \
          --prefetch-ahead "$p" --json "$out/bench-$name-p$p-$r.json" > /dev/null 2>&1
      python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('$name --prefetch-ahead $p round $r', round(d['results'][0]['txn_per_s']))" "$out/bench-$name-p$p-$r.json"
    done
  done
done
python3 - "$out" "$batch" <<'PY'
import json, glob, os, re, statistics, sys
out, batch = sys.argv[1], sys.argv[2]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "bench-*.json"))):
    m = re.fullmatch(r"bench-(.+)-p(\d+)-(\d+)\.json", os.path.basename(f))
    if not m:
        continue
    d = json.load(open(f))
    rows.setdefault(m[1], {}).setdefault(int(m[2]), []).append(d["results"][0]["txn_per_s"])
    rows[m[1]]["git"] = d.get("git")
for name, r in rows.items():
    a, b = r.get(0, []), r.get(int(batch), [])
    if not a or not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name:20} --prefetch-ahead 0 {ma:>10,.0f}  {batch} {mb:>10,.0f}  {mb / ma:.2f}x  "
          f"(n={len(a)}; 0: {', '.join(f'{x:,.0f}' for x in a)}; {batch}: {', '.join(f'{x:,.0f}' for x in b)})")
PY
