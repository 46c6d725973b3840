#!/usr/bin/env bash
# braid beside what its users would otherwise pick, every system durable (issue #33).
#
#   scripts/peers.sh [--seconds S] [--threads LIST] [other flags of the peers binary]
#
# Builds the peers workspace (peers/, its own workspace and target dir, so the main
# workspace's `cargo test` never builds it) in release and runs it (`--workloads LIST` picks
# some of append,tpcb,account-update,ycsb-a,ycsb-b,ycsb,reopen,kill,memory; all but ycsb by
# default):
#   append:  braid-wal (serial; taurus with a stream per thread), raft-engine, okaywal,
#            RocksDB's WAL and fjall; records of 128 B and 4 KiB (rows append-128, append-4k),
#            each waited for until durable.
#   tpcb:    full TPC-B on braid-engine (serial; taurus), SQLite (WAL, synchronous=FULL),
#            redb (Durability::Immediate), fjall (SyncAll) and RocksDB (TransactionDB, sync
#            writes), each also tuned where it has a tuned variant (below): account, teller
#            and branch balance += delta and a history insert, one durable transaction; 10
#            tellers and 100,000 accounts per branch (--accounts-per-branch), 15% of
#            accounts at another branch; at one branch per thread and at a single branch (one
#            hot branch row; --branches). Checked after a reopen: every account, teller and
#            branch against the history rows, and the history rows against the acknowledged
#            transactions.
#   account-update: TPC-B's account update alone (one row read and written) on the same
#            systems; 100,000 accounts; every balance checked after a reopen.
#   ycsb-a, ycsb-b: YCSB A (50% reads, 50% updates) and B (95% reads, 5% updates), each
#            operation one durable transaction, keys Zipf 0.99 over 100,000 rows of 100 B
#            values; checked row by row after a reopen. ycsb (not by default): the Taurus
#            paper's 2-access transaction, Zipf 0.6.
#   reopen:  per system, a child process commits 1,000,000 account updates and is kill -9'd;
#            the time to reopen until a read answers, and log/data bytes at the kill. SQLite,
#            redb and fjall commit under a relaxed setting there (kill-safe, not power-safe;
#            said in the output), the others durably.
#   kill:    per system, a child process runs full TPC-B from 16 threads (a branch each),
#            printing each transaction once its durable commit returned, and is kill -9'd
#            0.5-2 s in; 5 rounds on one directory. After each: the reopen time, and a check
#            that every acknowledged transaction is there (losses are reported, not hidden)
#            and that every balance agrees with the history rows present.
#   memory:  per system, resident memory per row after loading 1,000,000 accounts in a child
#            process (braid-engine is in-memory; the others page from disk through caches,
#            whose settings the output lists).
# Peers with settings their documentation recommends for durable throughput run twice in
# every workload (tpcb, account-update, ycsb-*, reopen, kill, memory; append for RocksDB and
# fjall), in their defaults and tuned (`--variants default,tuned`, the default; every row and
# label says which): RocksDB (pipelined write, no adaptive yield), fjall (SyncData), SQLite
# (one writer connection behind a mutex), braid-engine serial (checkpoints: a log cap, and one
# after the load). Throughput counts the operations finished inside the window only (the
# drain after it is reported apart), syncs and bytes are counted the same way for every
# system (interposed fdatasync/fsync, wchar), aborts are transactions retried after a backoff
# (TPC-B's included), and a point where any run failed is reported invalid.
# Defaults: 10 s per timed run, median of 3, threads 1,4,16,64; data in target/peers-data (a
# real file system, never tmpfs; each run removes its directory); results in
# target/peers/peers.{json,csv,svg,png} (reopen, kill and memory also in peers-reopen.csv,
# peers-kill.csv and peers-memory.csv) and printed as tables with each system's ratio to the
# best peer. TPC-B at one branch per thread loads threads x 100,000 accounts per run. Each
# row of peers.json's runs has workload, system, variant, threads, branches (tpcb), per_s,
# p50_us, p99_us, thread_min_per_s, thread_max_per_s, syncs_per_s, aborts_per_s (and more);
# its kill rows have acked and lost.
# `peers --help` lists the other flags (--record-bytes, --accounts, --accounts-per-branch,
# --branches, --ycsb-rows, --ycsb-theta, --reopen-txns, --reopen-threads, --kill-threads,
# --kill-rounds, --kill-after-ms, --memory-rows, --systems, --variants, --dir, --out, ...).
#
# RocksDB is Debian's librocksdb (installed here with apt-get if missing, with libclang for
# the binding's bindgen), linked through rust-rocksdb 0.20 (ROCKSDB_LIB_DIR). The binding's C
# API headers are RocksDB 7.9.2's and bookworm's library is 7.8.3 (no rust-rocksdb release
# binds 7.8): every RocksDB row records both, the version the loaded library writes into its
# LOG, and whether the library was built with assert() (NDEBUG undefined), read from its
# symbols and code: Debian's is. `--rocksdb-source` instead links the RocksDB 7.9.2 that
# librocksdb-sys bundles, compiled from source in release with NDEBUG defined (headers and
# library of one version, no debug assertions; the build takes a long time on two cores, once
# per target dir: its own, the usual one's name with `-rocksdb-source` appended).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

args=()
rocksdb_source=0
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds|--threads) args+=("$1" "$2"); shift 2 ;;
        --rocksdb-source) rocksdb_source=1; shift ;;
        -h|--help) sed -n '2,69p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done

need=()
pkgs=(libclang-dev clang)
[ "$rocksdb_source" = 1 ] || pkgs+=(librocksdb-dev)
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ "$rocksdb_source" = 1 ]; then
    unset ROCKSDB_LIB_DIR
    sysver=$(awk '/^name = "librocksdb-sys"/ { getline; gsub(/version = |"/, ""); print }' "$root/peers/Cargo.lock")
    export PEERS_ROCKSDB_LIB="built from source: RocksDB ${sysver#*+} bundled by librocksdb-sys $sysver, release, NDEBUG defined (no assert())"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/peers/target}-rocksdb-source"
else
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
fi

cd "$root/peers"
cargo build --release --quiet
# The binary's defaults are this tree's target/peers-data and target/peers; CARGO_TARGET_DIR,
# if set, is where cargo put it.
exec "${CARGO_TARGET_DIR:-$root/peers/target}/release/peers" "${args[@]}"
