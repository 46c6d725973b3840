#!/usr/bin/env bash
# Plover with its records reserved under the latches and filled after them, against the
# records appended under the latches: two `braid` binaries, the workload of scripts/dbx1000.sh
# (YCSB, 1M rows of 1 KB, 2 requests, 50% reads, Zipf 0.6, whole rows logged, transactions
# drawn before the clock), 2 threads, 1 and 2 logs, log files on tmpfs (/dev/shm, not
# power-safe), 3 s runs alternated over ROUNDS rounds.
#
#   results/dbx1000/plover-reserve-ab/run.sh BEFORE AFTER [ROUNDS] > res.txt
set -euo pipefail
before=$1 after=$2 rounds=${3:-5}
for round in $(seq "$rounds"); do
    for logs in 1 2; do
        for v in before after; do
            bin=$before; [ "$v" = after ] && bin=$after
            d=$(mktemp -d /dev/shm/plover-ab.XXXXXX)
            "$bin" bench --workload ycsb --device file --dir "$d" --ycsb-update increment \
                --pregenerate 3000000 --rows 1000000 --theta 0.6 --read-fraction 0.5 \
                --accesses 2 --threads 2 --logs "$logs" --repeat 1 --scheme plover \
                --logging data --seconds 3 --json "$d/b.json" > "$d/out.txt" 2>&1
            python3 -c "
import json, sys
r = json.load(open('$d/b.json'))['results'][0]
c = r['cpu_ns_per_txn']
print($round, 'plover', 'logs=$logs', '$v', round(r['txn_per_s']), 'worker_ns', round(c['worker']),
      'flusher_ns', round(c['flusher']))"
            rm -rf "$d"
        done
    done
done
