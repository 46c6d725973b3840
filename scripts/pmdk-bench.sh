#!/usr/bin/env bash
# PMDK (libpmemobj) baseline for braid-rewind, next to braid-rewind's own figures for the
# same operations: 1-word transactions, and inserts and lookups of 1M random keys in a
# B+-tree (each insert one transaction), pools on /dev/shm.
#
#   scripts/pmdk-bench.sh [keys] [word_txs]
#
# Installs Debian's libpmemobj-dev (needs root), builds crates/braid-rewind/pmdk/pmdk_bench.c,
# runs it with PMEM_IS_PMEM_FORCE=1 (libpmem flushes with CLWB/CLFLUSHOPT as on real
# persistent memory) and prints its JSON line, then runs the matching braid-rewind
# experiments (`braid bench rewind --experiment word-tx` and `insert-lookup`), which print
# tables and write JSON next to the PMDK binary.
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

echo "# PMDK libpmemobj ($dir, PMEM_IS_PMEM_FORCE=1)"
PMEM_IS_PMEM_FORCE=1 "$out" "$dir/braid-pmdk-pool-$$" "$keys" "$wtx"

echo "# braid-rewind ($dir)"
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build --release -q -p braid
braid="$CARGO_TARGET_DIR/release/braid"
# PMDK's loop charges no emulated NVM write latency, so neither does braid's here (the
# paper's 150 ns per line is `braid bench rewind`'s default, for its own figures).
"$braid" bench rewind --experiment word-tx --transactions "$wtx" --runs 3 --dir "$dir" \
    --nvm-write-ns 0 --json "$out-word-tx.json" --plot "$out-plots"
"$braid" bench rewind --experiment insert-lookup --keys "$keys" --runs 1 --dir "$dir" \
    --json "$out-insert-lookup.json" --plot "$out-plots"
