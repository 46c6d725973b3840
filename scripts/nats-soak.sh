#!/usr/bin/env bash
# A longer crash run of the nats device than CI's, on a fresh local 3-node cluster (stopped at
# the end): kill-mode crash-test rounds with the YCSB oracle for serial, taurus and gsn, taking
# checkpoints (and so purging the streams) every 0.2 s, first with every server up, then with
# one server killed (commits go on with two), then again after it returns; every round is
# recovered into an empty directory. ROUNDS (default 20) per part and scheme; summaries go to
# DIR (default target/nats-soak). Run `cargo build --release` first.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
out=${2:-target/nats-soak}
mkdir -p "$out"
braid=target/release/braid
[ -x "$braid" ] || { echo "build braid first: cargo build --release" >&2; exit 1; }
cluster=$(mktemp -d /tmp/braid-soak-cluster.XXXXXX)
trap 'scripts/nats-cluster.sh stop "$cluster" >/dev/null 2>&1 || true; rm -rf "$cluster"' EXIT
url=$(scripts/nats-cluster.sh start "$cluster" | tail -1)
part() {
  local name=$1
  for scheme in serial taurus gsn; do
    echo "== $name: $scheme, $rounds kill rounds"
    "$braid" crash-test --mode kill --device nats --nats-url "$url" --scheme "$scheme" \
      --threads 2 --rounds "$rounds" --min-ms 300 --max-ms 1500 --checkpoint-interval 0.2 \
      --seed "$RANDOM" --json "$out/$name-$scheme.json" | tail -3
  done
}
part all-up
scripts/nats-cluster.sh kill-node "$cluster" 2
part one-down
scripts/nats-cluster.sh start-node "$cluster" 2
part returned
echo "soak passed: $out"
