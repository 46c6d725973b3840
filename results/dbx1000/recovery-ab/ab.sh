#!/usr/bin/env bash
# Silo-R / serial recovery A/B: one log written by the new binary, recovered by old and new alternately (each from a fresh copy).
set -euo pipefail
NEW=${NEWBIN:-/work/bin-ab/braid-556cbc8}; OLD=/work/bin-ab/braid-d4ad7f3
scheme=$1 logs=$2 flags=$3 n=$4 out=$5
mkdir -p "$out"; d=/dev/shm/rec-ab; rm -rf $d /dev/shm/rec-ab-copy; mkdir -p $d
# shellcheck disable=SC2086
$NEW bench --workload ycsb --device file --dir $d --ycsb-update increment --pregenerate 1000000 --rows 1000000 --theta 0.6 --read-fraction 0.5 --accesses 2 --threads 2 --logs $logs --repeat 1 $flags --commits $n --seconds 60 --keep --json $d/bench.json > "$out/bench-$scheme-$logs.txt" 2>&1
db=$(python3 -c "import json;print(json.load(open('$d/bench.json'))['results'][0]['runs'][0]['dir'])")
for r in $(seq 1 ${ROUNDS:-3}); do for b in old new; do
  rm -rf /dev/shm/rec-ab-copy; cp -a "$db" /dev/shm/rec-ab-copy
  bin=$OLD; [ $b = new ] && bin=$NEW
  $bin recover --dir /dev/shm/rec-ab-copy --threads 2 --json "$out/$scheme-$logs-$b-$r.json" > "$out/$scheme-$logs-$b-$r.txt" 2>&1
  python3 -c "import json;d=json.load(open('$out/$scheme-$logs-$b-$r.json'));print('$scheme $logs $b $r', round(d['txn_per_s']), d['txns'])"
done; done
rm -rf $d /dev/shm/rec-ab-copy
