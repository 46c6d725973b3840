#!/usr/bin/env bash
# Reopen time of braid-engine's default configuration (serial on the file device) after N
# transactions, without checkpoints (`CheckpointOptions::off()`, the default before the log was
# bounded) and with the default's automatic checkpoints (a checkpoint every 16 MiB of log and
# at least the last checkpoint's size: `--checkpoint-log-mb 16 --checkpoint-log-ratio 1`).
# `braid bench --keep` commits the transactions and closes the database (a close takes no
# checkpoint, so the log is what a kill -9 after the last commit leaves, less any torn tail);
# `braid recover` reopens it, reporting the initial image (the loader, or the checkpoint
# loaded) and the log replay apart, and the script times the whole command.
#
#   scripts/reopen-bounded.sh [transactions,...] [dir]
#
# Two workloads: full TPC-B (`--workload tpcb`: account, teller and branch updates and a
# history insert, so the database grows by a row per transaction), and a one-row update of a
# fixed table (YCSB, 100,000 rows of one 8-byte column, one uniform update per transaction: the
# shape of the peers' account-update). Default: 1000000 transactions, in /var/tmp (ext4 on the
# root disk here). One thread; commits are pipelined (`braid bench`'s 256 in flight) instead of
# waited for one by one, so a million transactions take seconds rather than minutes: the log
# holds the same records either way. "log on disk" is the apparent size of the segment files
# (whole 64 MiB segments). One reopen per point, page cache warm. Needs jq.
set -euo pipefail
counts=${1:-1000000}
parent=${2:-/var/tmp}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -q -p braid
braid=${CARGO_TARGET_DIR:-$root/target}/release/braid
out=$(mktemp -d "$parent/braid-reopen-XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "| workload | checkpoints | transactions | log on disk (MB) | checkpoint loaded (MB) | initial image (s) | log replayed (MB) | replay (s) | reopen, whole command (s) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for wl in tpcb update; do
    case $wl in
    tpcb) work=(--workload tpcb) ;;
    update) work=(--workload ycsb --rows 100000 --columns 1 --column-bytes 8 --accesses 1
        --read-fraction 0 --theta 0) ;;
    esac
    for n in ${counts//,/ }; do
        for mode in off default; do
            flags=()
            [ "$mode" = default ] && flags=(--checkpoint-log-mb 16 --checkpoint-log-ratio 1)
            d="$out/$wl-$mode-$n"
            "$braid" bench "${work[@]}" --scheme serial --device file --threads 1 --repeat 1 \
                --commits "$n" --seconds 600 --keep --dir "$d" "${flags[@]}" \
                --json "$d.json" --csv "$d.csv" >/dev/null
            db=$(jq -r '.results[0].runs[0].dir' "$d.json")
            held=$(du -sb --apparent-size "$db/log" | cut -f1)
            start=$(date +%s.%N)
            "$braid" recover --dir "$db" --json "$d-rec.json" >/dev/null
            end=$(date +%s.%N)
            printf '| %s | %s | %s | %.1f | %.1f | %.3f | %.1f | %.3f | %.3f |\n' "$wl" "$mode" \
                "$n" "$(echo "$held / 1000000" | bc -l)" \
                "$(jq '(.checkpoint.bytes // 0) / 1000000' "$d-rec.json")" \
                "$(jq '.load_seconds' "$d-rec.json")" \
                "$(jq '.bytes / 1000000' "$d-rec.json")" "$(jq '.seconds' "$d-rec.json")" \
                "$(echo "$end - $start" | bc -l)"
            rm -rf "$d"
        done
    done
done
