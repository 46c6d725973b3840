#!/usr/bin/env bash
# Recovery A/B on the dbx1000 workload's logs (YCSB, 1 M rows of 1 KB, 2 requests per
# transaction, half reads, Zipf 0.6, every column incremented; 2 workers, logs as files on
# tmpfs, not power-safe): for each VARIANT, one log written once by B's binary (bench
# --commits N --keep), then `braid recover --threads 2` of a fresh copy by A and B
# alternately, ROUNDS rounds. Prints each round and the medians; keeps every recovery's JSON
# as OUT/<variant>-<label>-<round>.json.
#   recover-ab.sh OUT ROUNDS A B VARIANT...
# A, B: "label=binary [recover flags]", e.g. "old=/tmp/braid-5f4ac44" or
#       "shares=target/release/braid --taurus-recovery shares".
# VARIANT: "name|bench flags|logs|commits", e.g. "plover|--scheme plover --logging data|2|487000".
# With WRITE=each in the environment, each recovery is of a log its own binary has just
# written (for a change of what the log holds, which the other binary cannot read); the
# logs then differ between rounds and sides, each of the same length.
set -euo pipefail
write=${WRITE:-once}
out=$1 rounds=$2 a=$3 b=$4
shift 4
mkdir -p "$out"
d=/dev/shm/recover-ab
trap 'rm -rf "$d" "$d-copy"' EXIT
label() { echo "${1%%=*}"; }
cmd() { echo "${1#*=}"; }
read -r -a bbin <<< "$(cmd "$b")"
# Write the variant's log with binary $1 (bench --commits N --keep); sets db.
write_log() {
  rm -rf "$d"; mkdir -p "$d"
  # shellcheck disable=SC2086
  "$1" bench --workload ycsb --device file --dir "$d" --ycsb-update increment --pregenerate 1000000 \
      --rows 1000000 --theta 0.6 --read-fraction 0.5 --accesses 2 --threads 2 --logs "$logs" --repeat 1 \
      $flags --commits "$n" --seconds 60 --keep --json "$d/bench.json" > "$out/bench-$name.txt" 2>&1
  db=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['results'][0]['runs'][0]['dir'])" "$d/bench.json")
}
for v in "$@"; do
  IFS='|' read -r name flags logs n <<< "$v"
  [ "$write" = each ] || write_log "${bbin[0]}"
  for r in $(seq 1 "$rounds"); do
    for side in "$a" "$b"; do
      l=$(label "$side")
      read -r -a bin <<< "$(cmd "$side")"
      [ "$write" != each ] || write_log "${bin[0]}"
      rm -rf "$d-copy"; cp -a "$db" "$d-copy"
      "${bin[@]:0:1}" recover --dir "$d-copy" --threads 2 "${bin[@]:1}" --json "$out/$name-$l-$r.json" \
          > "$out/$name-$l-$r.txt" 2>&1
      python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('$name $l round $r', round(d['txn_per_s']), d['txns'])" \
          "$out/$name-$l-$r.json"
    done
  done
done
python3 - "$out" "$(label "$a")" "$(label "$b")" <<'PY'
import json, glob, os, re, statistics, sys
out, la, lb = sys.argv[1:4]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    m = re.fullmatch(rf"(.+)-({re.escape(la)}|{re.escape(lb)})-(\d+)\.json", os.path.basename(f))
    if m:
        rows.setdefault(m[1], {}).setdefault(m[2], []).append((int(m[3]), json.load(open(f))["txn_per_s"]))
for name, r in rows.items():
    a, b = [x for _, x in sorted(r.get(la, []))], [x for _, x in sorted(r.get(lb, []))]
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:12} {la} {ma:>10,.0f}  {lb} {mb:>10,.0f}  {mb / ma:.2f}x  (n={len(a)}; {la}: "
              f"{', '.join(f'{x:,.0f}' for x in a)}; {lb}: {', '.join(f'{x:,.0f}' for x in b)})")
PY
