#!/usr/bin/env bash
# The loom models of braid's lock-free protocols (the `loom_*` modules of braid-wal's and
# braid-rewind's integration tests: stream reservation, Taurus PLV/CLV publication and RLV
# replay, gsn passive group commit and Remote Flush Avoidance's page writer, Aether's consolidation array and the waiting primitive
# (`Progress`) that its members and every other waiter park in, REWIND's list
# append/remove), built with `--cfg loom` in a target directory of their own so the normal
# build stays cached. Each model bounds its own preemptions; LOOM_MAX_PREEMPTIONS set here
# overrides them all.
#
#   scripts/loom.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR=${LOOM_TARGET_DIR:-$PWD/target/loom}
cargo test -p braid-wal --lib "$@" -- loom_
cargo test -p braid-rewind --test integration "$@" -- loom_
