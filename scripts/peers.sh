#!/usr/bin/env bash
# braid beside what its users would otherwise pick, every system durable (issue #33).
#
#   scripts/peers.sh [--seconds S] [--threads LIST] [other flags of the peers binary]
#
# Builds the peers workspace (peers/, its own workspace and target dir, so the main
# workspace's `cargo test` never builds it) in release and runs it (`--workloads LIST` picks
# some of append,txn,ycsb,reopen,memory; all by default):
#   append: braid-wal (serial; taurus with a stream per thread), raft-engine, okaywal,
#           RocksDB's WAL and fjall; records of 128 B and 4 KiB, each waited for until durable.
#   txn:    TPC-B's account update on braid-engine (serial default; taurus), SQLite (WAL,
#           synchronous=FULL), redb (Durability::Immediate), fjall (SyncAll) and RocksDB
#           (TransactionDB, sync writes); 100,000 accounts.
#   ycsb:   YCSB's transaction on the same systems, durable: 2 accesses, each a read with
#           p=0.5 else an update, keys Zipf theta 0.6 (the Taurus paper's, braid's default)
#           over 100,000 rows of 100 B values; checked row by row after a reopen.
#   reopen: per system, a child process commits 1,000,000 TPC-B transactions and is kill -9'd;
#           the time to reopen until a read answers, and log/data bytes at the kill. SQLite,
#           redb and fjall commit under a relaxed setting there (kill-safe, not power-safe;
#           said in the output), the others durably.
#   memory: per system, resident memory per row after loading 1,000,000 accounts in a child
#           process (braid-engine is in-memory; the others page from disk through caches,
#           whose settings the output lists).
# Peers with settings their documentation recommends for durable throughput run twice, in
# their defaults and tuned (`--variants default,tuned`, the default; every row and label says
# which): RocksDB (pipelined write, no adaptive yield), fjall (SyncData), SQLite (one writer
# connection behind a mutex), braid-engine serial (checkpoints: a log cap, and one after the
# load). Throughput counts the operations finished inside the window only (the drain after it
# is reported apart), syncs and bytes are counted the same way for every system (interposed
# fdatasync/fsync, wchar), aborts are transactions retried after a backoff, and a point where
# any run failed is reported invalid.
# Defaults: 10 s per timed run, median of 3, threads 1,4,16,64; data in target/peers-data (a
# real file system, never tmpfs; each run removes its directory); results in
# target/peers/peers.{json,csv,svg,png} (reopen and memory also in peers-reopen.csv and
# peers-memory.csv) and printed as tables with each system's ratio to the best peer. A full
# default run takes about an hour on two cores (ycsb about 15 min of it, reopen 3 to 4,
# memory under 1). `peers --help` lists the other flags (--record-bytes, --accounts,
# --ycsb-rows, --ycsb-theta, --reopen-txns, --reopen-threads, --memory-rows, --systems,
# --dir, --out, ...).
#
# RocksDB is Debian's librocksdb (installed here with apt-get if missing, with libclang for
# the binding's bindgen), linked through rust-rocksdb 0.20 (ROCKSDB_LIB_DIR): compiling RocksDB
# from source takes far longer on two cores. The binding's C API headers are RocksDB 7.9.2's
# and bookworm's library is 7.8.3 (no rust-rocksdb release binds 7.8): every RocksDB row
# records both, the version the loaded library writes into its LOG, and whether the library
# was built with assert() (NDEBUG undefined), read from its symbols and code: Debian's is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds|--threads) args+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done

need=()
for p in librocksdb-dev libclang-dev clang; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

libdir=$(dirname "$(dpkg -L librocksdb-dev | grep -m1 '/librocksdb\.so$')")
lib=$(dpkg-query -W -f='${Package} ${Version}\n' 'librocksdb[0-9]*' 2>/dev/null | grep -v -- -dev | head -n1)
so=$(readlink -f "$libdir/librocksdb.so")
# A library built without NDEBUG keeps its assert()s, each a call of __assert_fail (Debian's
# 7.8.3 has thousands: its RocksDB rows run with RocksDB's debug assertions on). grep without
# -q reads all of nm's output, so no SIGPIPE fails the pipeline under pipefail.
if ! command -v nm >/dev/null; then
    build="build flags not read (no nm)"
elif ! nm -D --undefined-only "$so" 2>/dev/null | grep -w __assert_fail >/dev/null; then
    build="no assert() calls (NDEBUG)"
elif command -v objdump >/dev/null; then
    calls=$(objdump -d --no-show-raw-insn "$so" | grep -c 'call.*<__assert_fail@plt>' || true)
    build="assert() compiled in, $calls call sites (NDEBUG not defined)"
else
    build="assert() compiled in (NDEBUG not defined)"
fi
export ROCKSDB_LIB_DIR=$libdir
export PEERS_ROCKSDB_LIB="Debian ${lib:-librocksdb (version unknown)}, $(basename "$so"), $build"

cd "$root/peers"
cargo build --release --quiet
# The binary's defaults are this tree's target/peers-data and target/peers.
exec "$root/peers/target/release/peers" "${args[@]}"
