#!/usr/bin/env bash
# Berkeley DB and PMDK beside braid-rewind on REWIND's B+-tree mix (REWIND §5.2, Fig. 7
# right) and Berkeley DB on its rollback and recovery (Fig. 8): builds
# crates/braid-rewind/peers/bdb_btree_mix.c and bdb_rollback_recovery.c (Debian's libdb-dev,
# 5.3) and pmdk_btree_mix.c (Debian's libpmemobj-dev) into OUTDIR, where
# `braid bench rewind --peers OUTDIR` (btree-mix, recovery, all) finds and runs them.
# The Berkeley DB programs charge BRAID_NVM_WRITE_NS per 64-byte line they write (braid sets
# it to its NVM write latency).
#
#   scripts/rewind-peers.sh [--smoke] [OUTDIR]     (OUTDIR defaults to target/peers)
#
# Installs the two -dev packages with apt-get only if they are missing (needs root then).
# --smoke also runs each program once on a tiny mix (pools on /dev/shm) to show it works;
# the script runs no benchmark otherwise.
set -euo pipefail
smoke=0
if [ "${1:-}" = "--smoke" ]; then
    smoke=1
    shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-target/peers}
src="$root/crates/braid-rewind/peers"

missing=()
[ -e /usr/include/db.h ] || missing+=(libdb-dev)
if ! pkg-config --exists libpmemobj 2>/dev/null && [ ! -e /usr/include/libpmemobj.h ]; then
    missing+=(libpmemobj-dev)
fi
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v gcc >/dev/null || missing+=(gcc)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update
    apt-get install -y "${missing[@]}"
fi

mkdir -p "$out"
pmdk_version=$(pkg-config --modversion libpmemobj 2>/dev/null || true)
pmdk_flags=$(pkg-config --cflags --libs libpmemobj 2>/dev/null || echo -lpmemobj)
gcc -O2 -g -Wall -o "$out/bdb_btree_mix" "$src/bdb_btree_mix.c" -ldb
gcc -O2 -g -Wall -o "$out/bdb_rollback_recovery" "$src/bdb_rollback_recovery.c" -ldb
# shellcheck disable=SC2086 # pkg-config's flags are words
gcc -O2 -g -Wall ${pmdk_version:+-DPMDK_VERSION="\"$pmdk_version\""} \
    -o "$out/pmdk_btree_mix" "$src/pmdk_btree_mix.c" $pmdk_flags

echo "Berkeley DB peer: $out/bdb_btree_mix, $out/bdb_rollback_recovery"
echo "PMDK peer:        $out/pmdk_btree_mix"
echo "run: braid bench rewind --experiment btree-mix --peers $out"

if [ $smoke = 1 ]; then
    dir=/dev/shm
    [ -d "$dir" ] || dir=${TMPDIR:-/tmp}
    BRAID_NVM_WRITE_NS=150 "$out/bdb_btree_mix" "$dir" 1000 1000 0,0.5,1
    BRAID_NVM_WRITE_NS=150 "$out/bdb_rollback_recovery" "$dir" 1000 100 400
    PMEM_IS_PMEM_FORCE=1 "$out/pmdk_btree_mix" "$dir" 1000 1000 0,0.5,1
fi
