#!/usr/bin/env bash
# The heap on 2 MiB pages (braid_pmem::heap), A/B: the dbx1000 workload (YCSB, 1 M rows of
# 1 KB, 2 requests per transaction, half reads, Zipf 0.6, every column incremented), run by
# two release binaries of braid alternated round by round, and the recovery of one log written
# by the second, recovered by each from a fresh copy. Logs on tmpfs (not power-safe).
#   run.sh BEFORE AFTER [OUT] [ROUNDS]
# BEFORE/AFTER: braid binaries (release builds of two clean trees). OUT defaults to a directory
# named after both revisions here. Prints medians; keeps every run's JSON.
set -euo pipefail
before=$1 after=$2 rounds=${4:-3}
out=${3:-$(dirname "$0")/out}
mkdir -p "$out"
d=/dev/shm/heap-ab
trap 'rm -rf "$d"' EXIT
common=(--workload ycsb --device file --ycsb-update increment --pregenerate 3000000 --rows 1000000
        --theta 0.6 --read-fraction 0.5 --accesses 2 --threads 2 --repeat 1)
variants=("none|--scheme none|1" "serial|--scheme serial --logging data|1"
          "taurus-data-2logs|--scheme taurus --logging data|2" "plover-2logs|--scheme plover --logging data|2"
          "silor|--scheme silor --logging data --cc occ --scheme-opt silor.epoch_ms=5|1")
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name flags logs <<< "$v"
    for b in before after; do
      bin=$before; [ $b = after ] && bin=$after
      rm -rf "$d"; mkdir -p "$d"
      # shellcheck disable=SC2086
      "$bin" bench "${common[@]}" --dir "$d" --logs "$logs" $flags --seconds 3 \
          --json "$out/bench-$name-$b-$r.json" > /dev/null 2>&1
      python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('$name $b round $r', round(d['results'][0]['txn_per_s']))" "$out/bench-$name-$b-$r.json"
    done
  done
done
# Recovery: one log per scheme written once by AFTER, recovered by each binary in turn.
for v in "silor|--scheme silor --logging data --cc occ --scheme-opt silor.epoch_ms=5|1" "taurus-data|--scheme taurus --logging data|1"; do
  IFS='|' read -r name flags logs <<< "$v"
  rm -rf "$d"; mkdir -p "$d/w"
  # shellcheck disable=SC2086
  "$after" bench "${common[@]}" --dir "$d/w" --logs "$logs" $flags --commits 600000 --seconds 60 --keep \
      --json "$d/w/bench.json" > /dev/null 2>&1
  db=$(python3 -c "import json;print(json.load(open('$d/w/bench.json'))['results'][0]['runs'][0]['dir'])")
  for r in $(seq 1 "$rounds"); do for b in before after; do
    bin=$before; [ $b = after ] && bin=$after
    rm -rf "$d/copy"; cp -a "$db" "$d/copy"
    "$bin" recover --dir "$d/copy" --threads 2 --json "$out/recover-$name-$b-$r.json" > /dev/null 2>&1
    python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('recover $name $b round $r', round(d['txn_per_s']), d['txns'])" "$out/recover-$name-$b-$r.json"
  done; done
done
python3 - "$out" <<'PY'
import json, glob, os, re, statistics, sys
out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    m = re.fullmatch(r"(bench|recover)-(.+)-(before|after)-(\d+)\.json", os.path.basename(f))
    if not m:
        continue
    d = json.load(open(f))
    v = d["results"][0]["txn_per_s"] if m[1] == "bench" else d["txn_per_s"]
    rows.setdefault((m[1], m[2]), {}).setdefault(m[3], []).append(v)
    heap = d["machine"].get("heap", "the system allocator (before heap was recorded)")
    rows[(m[1], m[2])].setdefault("heap_" + m[3], heap)
for (kind, name), r in rows.items():
    b, a = statistics.median(r["before"]), statistics.median(r["after"])
    print(f"{kind:8} {name:20} before {b:>10,.0f}  after {a:>10,.0f}  {a / b:.2f}x  (n={len(r['before'])})")
print("before heap:", rows[next(iter(rows))]["heap_before"])
print("after heap: ", rows[next(iter(rows))]["heap_after"])
PY
