#!/usr/bin/env bash
# The same `braid bench` from two binaries in one sitting, alternated, so that a change can be
# shown not to move the figures: rounds run before, after, before, after, ... with the order
# swapped every other pair (B A A B B A ...), and each cell of the table is the median of the
# rounds' medians. Run it on an otherwise idle machine; nothing else may build or measure
# meanwhile (timings from a loaded machine are not results).
#
#   scripts/bench-ab.sh BEFORE_BIN AFTER_BIN OUT_DIR [ROUNDS] [-- bench arguments]
#
# BEFORE_BIN / AFTER_BIN: two `braid` binaries (e.g. built from two worktrees); OUT_DIR gets each
# round's JSON (before-N.json, after-N.json) and table.md. ROUNDS defaults to 3. The bench
# arguments default to none: the default `braid bench`.
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,13p "$0"; exit 2; }
before=$(realpath "$1"); after=$(realpath "$2"); out=$3; shift 3
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"; out=$(realpath "$out")
here=$(dirname "$(realpath "$0")")
# Both binaries run from the same empty working directory, so relative defaults agree.
work=$(mktemp -d /tmp/braid-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { # $1 = before|after, $2 = round
    local side=$1 round=$2 bin=$before
    shift 2
    [ "$side" = after ] && bin=$after
    echo "== round $round: $side ($(date +%T))"
    (cd "$work" && "$bin" bench "$@" --json "$out/$side-$round.json" >"$out/$side-$round.txt" 2>&1) ||
        { cat "$out/$side-$round.txt"; exit 1; }
}
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then first=before second=after; else first=after second=before; fi
    run "$first" "$r" "$@"
    run "$second" "$r" "$@"
done
python3 "$here/bench-ab-table.py" "$out" "$rounds" | tee "$out/table.md"
