#!/usr/bin/env bash
# DBx1000 under jemalloc's defaults and under MALLOC_CONF=thp:always,metadata_thp:always
# (what scripts/dbx1000.sh gives it beside braid's heap on 2 MiB pages), alternated round by
# round: no logging (2PL NO_WAIT) and serial data logging at 2 threads, the script's flags.
#   dbx-malloc.sh BUILD_DIR [ROUNDS]
# BUILD_DIR: where scripts/dbx1000.sh built DBx1000 (target/dbx1000/build/<revision>).
set -euo pipefail
b=$1 rounds=${2:-5}
d=/dev/shm/dbx-malloc
trap 'rm -rf "$d"' EXIT
common=(-s1000000 -R2 -r0.5 -z0.6 -Tp0 -Tl30000000 -Lz10 -Lw10 -Lad0 -Lal1 -LB1048576 -LK33554432 -LD2 -LR1 -Li1)
numa=(); command -v numactl >/dev/null && numa=(numactl -i all --)
for r in $(seq 1 "$rounds"); do
  for v in "none|ND_YCSB_NOWAIT|-l320003 -Lb2621440|700000" "serial|SD_YCSB_NOWAIT|-l320003 -Lb32768000|400000"; do
    IFS='|' read -r name bin flags gx <<< "$v"
    for conf in "" "thp:always,metadata_thp:always"; do
      rm -rf "$d"; mkdir -p "$d/logs"; ln -s "$b/benchmarks" "$d/benchmarks"
      # shellcheck disable=SC2086
      (cd "$d" && MALLOC_CONF=$conf timeout 300 "${numa[@]}" "$b/rundb_$bin" -t2 -Ln1 -Lr0 "${common[@]}" \
          $flags -Gx"$gx" > out.txt 2>&1) || true
      echo "$name ${conf:-default} round $r $(awk '$1 == "Throughput:" { print $2; exit }' "$d/out.txt")"
    done
  done
done
