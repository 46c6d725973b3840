#!/usr/bin/env bash
# The public API of each library crate, as a checked-in listing (docs/api/<crate>.txt): every
# line in the crate's src/ that begins a `pub` item (fn, struct, enum, trait, type, const,
# static, mod, use; `pub(crate)` and the like are not public), by file, in file order, with
# the line's text and without line numbers, so that moving code does not change it but
# adding, removing or changing a public item does. Items behind the `testing` cargo feature
# are marked "[testing]" (the attribute on the line before, a crate's testing module, or
# braid-wal's fault-injecting file system).
#
#   scripts/api.sh            write the listings and print each crate's count
#   scripts/api.sh --check    fail (CI) when a listing differs from the code: a change to
#                             the public API is a decision, recorded by committing the listing
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && check=1
crates=(braid-wal braid-engine braid-pmem braid-rewind braid-nats braid-workloads braid-testkit)
item='^[ \t]*pub (unsafe |async |const |extern "C" )*(fn|struct|enum|trait|type|const|static|mod|use|union) '
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "${crates[@]}"; do
    out="$tmp/$c.txt"
    (
        cd "crates/$c"
        find src -name '*.rs' | LC_ALL=C sort | while read -r f; do
            awk -v f="$f" -v re="$item" '
                $0 ~ re {
                    line = $0; sub(/^[ \t]+/, "", line); sub(/[ \t]*\{$/, "", line)
                    mark = (prev ~ /feature = "testing"/ || f ~ /(\/testing\.rs|\/fs\/fault\/)/) ? " [testing]" : ""
                    print f ": " line mark
                }
                { prev = $0 }' "$f"
        done
    ) > "$out"
    n=$(wc -l < "$out")
    t=$(grep -c '\[testing\]$' "$out" || true)
    if [ $check -eq 1 ]; then
        if ! diff -u "docs/api/$c.txt" "$out" > "$tmp/$c.diff"; then
            echo "api: the public API of $c differs from docs/api/$c.txt:" >&2
            cat "$tmp/$c.diff" >&2
            echo "api: if the change is meant, run scripts/api.sh and commit docs/api/$c.txt" >&2
            status=1
        fi
    else
        cp "$out" "docs/api/$c.txt"
    fi
    printf '%-16s %4d public item lines (%d of them only with the testing feature)\n' "$c" "$n" "$t"
done
exit $status
