#!/usr/bin/env bash
# 4 KiB appends at 1 thread, braid-wal beside okaywal, and the disk's floor under them.
#
#   results/peers/append-4k-1t/run.sh [OUT [FLAGS...]]
#
# OUT defaults to target/append-4k-1t; FLAGS go to scripts/peers.sh (--rocksdb-source, which
# the recorded sitting used, builds in <CARGO_TARGET_DIR>-rocksdb-source).
#
# 1. scripts/append-floor.c, five rounds alternating its four ways of preparing the file
#    (zeroahead: braid's file device; zerosync: zeros written and synced by a second thread;
#    recycled: okaywal's reused segments; unwritten: fallocate only), 8,000 appends of
#    4,096 bytes each, on the root file system (not tmpfs).
# 2. Three invocations of the peers harness (scripts/peers.sh, which builds it), each 5
#    alternated runs of 3 s of braid-wal serial, braid-wal taurus and okaywal, 1 thread.
# Run it on an idle machine, from a clean tree (every peers row records the tree's revision).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="${1:-$root/target/append-4k-1t}"
shift || true
mkdir -p "$out" "$root/target"
gcc -O2 -Wall -pthread -o "$root/target/append-floor" "$root/scripts/append-floor.c"
: >"$out/floor.txt"
for round in 1 2 3 4 5; do
    for mode in zeroahead zerosync recycled unwritten; do
        "$root/target/append-floor" "$mode" "$root/target/append-floor.dat" 8000 4096 \
            | tee -a "$out/floor.txt"
    done
done
for i in 1 2 3; do
    "$root/scripts/peers.sh" "$@" --workloads append --record-bytes 4096 --threads 1 \
        --systems braid-wal,okaywal --variants default --seconds 3 --repeat 5 \
        --out "$out/peers-$i" | tee "$out/peers-$i.txt"
done
