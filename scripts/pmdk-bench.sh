#!/usr/bin/env bash
# PMDK (libpmemobj) baseline for braid-rewind, next to braid-rewind's own figures for the
# same operations: 1-word transactions, and inserts and lookups of 1M random keys in a
# B+-tree (each insert one transaction), pools on /dev/shm.
#
#   scripts/pmdk-bench.sh [keys] [word_txs]
#
# Installs Debian's libpmemobj-dev (needs root), builds crates/braid-rewind/pmdk/pmdk_bench.c,
# runs it with PMEM_IS_PMEM_FORCE=1 and prints its JSON line, then runs the matching
# braid-rewind experiments (`braid bench rewind --experiment word-tx` and `insert-lookup`,
# only the configurations set beside PMDK: Sealed and Batch no-force 1-word transactions, the
# non-recoverable twin and Sealed no-force inserts), which print tables and write JSON next
# to the PMDK binary.
#
# Equal terms: both pools are files on the same DRAM file system standing in for persistent
# memory (an emulation: not power-safe, no NVM latency charged to either side); both flush
# with the best write-back instruction the CPU has, chosen the same way (CLWB, else
# CLFLUSHOPT, else CLFLUSH: libpmem's order, and braid-pmem's FlushKind::detect) and order
# with SFENCE; neither msyncs (PMEM_IS_PMEM_FORCE=1 makes libpmem treat the mapping as
# persistent memory, braid's Media::Emulated does the same). Both do the same operations on
# the same key count: 4096-word arrays, u64 keys drawn uniformly, 8-byte values, 512-byte
# nodes, one transaction per insert, lookups of every inserted key. The CPU the figures come
# from is printed first.
#
# BRAID_BIN=path runs that braid binary instead of building one (to alternate two builds in
# one sitting); BRAID_ALL_VARIANTS=1 runs every configuration (for a binary older than
# `--variants`).
set -euo pipefail
keys=${1:-1000000}
wtx=${2:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/crates/braid-rewind/pmdk/pmdk_bench.c"
out=${TMPDIR:-/tmp}/braid-pmdk-bench
dir=/dev/shm
[ -d "$dir" ] || dir=${TMPDIR:-/tmp}

if ! pkg-config --exists libpmemobj 2>/dev/null && [ ! -e /usr/include/libpmemobj.h ]; then
    apt-get update
    apt-get install -y libpmemobj-dev pkg-config gcc
fi
gcc -O2 -g -Wall -o "$out" "$src" $(pkg-config --cflags --libs libpmemobj 2>/dev/null || echo -lpmemobj)

echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores;" \
    "flush instructions: $(grep -m1 -o -w 'clwb\|clflushopt' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "# PMDK libpmemobj ($dir, PMEM_IS_PMEM_FORCE=1)"
PMEM_IS_PMEM_FORCE=1 "$out" "$dir/braid-pmdk-pool-$$" "$keys" "$wtx"

echo "# braid-rewind ($dir)"
cd "$root"
if [ -n "${BRAID_BIN:-}" ]; then
    braid=$BRAID_BIN
else
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
    cargo build --release -q -p braid
    braid="$CARGO_TARGET_DIR/release/braid"
fi
word_variants=(--variants sealed-1l-nf,batch-1l-nf)
tree_variants=(--variants nvm,sealed-nf)
if [ "${BRAID_ALL_VARIANTS:-0}" = 1 ]; then
    word_variants=()
    tree_variants=()
fi
# PMDK's loop charges no emulated NVM write latency, so neither does braid's here (the
# paper's 150 ns per line is `braid bench rewind`'s default, for its own figures).
"$braid" bench rewind --experiment word-tx --transactions "$wtx" --runs 3 --dir "$dir" \
    --nvm-write-ns 0 "${word_variants[@]}" --json "$out-word-tx.json" --plot "$out-plots"
"$braid" bench rewind --experiment insert-lookup --keys "$keys" --runs 1 --dir "$dir" \
    "${tree_variants[@]}" --json "$out-insert-lookup.json" --plot "$out-plots"
