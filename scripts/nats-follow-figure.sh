#!/usr/bin/env bash
# The hot-standby figure of the README: for serial (1 stream), taurus and gsn (2 streams), a writer
# (`braid bench`, YCSB, 1 thread) on a fresh local 3-node cluster, a standby (`braid follow`)
# started 6 s later and promoted 10 s after that; prints each standby's lag and takeover times
# and leaves their JSON in DIR (default target/nats-follow). Run `cargo build --release` first.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/nats-follow}
mkdir -p "$out"
braid=target/release/braid
[ -x "$braid" ] || { echo "build braid first: cargo build --release" >&2; exit 1; }
cluster=$(mktemp -d /tmp/braid-follow-cluster.XXXXXX)
trap 'scripts/nats-cluster.sh stop "$cluster" >/dev/null 2>&1 || true; rm -rf "$cluster"' EXIT
url=$(scripts/nats-cluster.sh start "$cluster" | tail -1)
for scheme in serial taurus gsn; do
  logs=2; [ "$scheme" = serial ] && logs=1
  id=follow-$scheme-$$
  rm -rf "$out/writer-$scheme" "$out/standby-$scheme"
  "$braid" bench --workload ycsb --scheme "$scheme" --logs "$logs" --device nats --nats-url "$url" \
    --db-id "$id" --threads 1 --seconds 25 --repeat 1 --dir "$out/writer-$scheme" \
    >"$out/writer-$scheme.log" 2>&1 &
  writer=$!
  sleep 6
  "$braid" follow --dir "$out/standby-$scheme" --nats-url "$url" --db-id "$id" --seconds 60 \
    --promote-after 10 --then-run 2 --json "$out/follow-$scheme.json"
  if wait "$writer"; then
    echo "the $scheme writer was not fenced" >&2
    exit 1
  fi
  grep -o "this writer was fenced[^(]*" "$out/writer-$scheme.log" | head -1
done
