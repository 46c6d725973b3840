#!/usr/bin/env bash
# The public API of each library crate, as a checked-in listing (docs/api/<crate>.txt): every
# line in the crate's src/ that begins a `pub` item (fn, struct, enum, trait, type, const,
# static, mod, use; `pub(crate)` and the like are not public), by file, in file order, with
# the line's text and without line numbers, so that moving code does not change it but
# adding, removing or changing a public item does. Items public only with the `testing` cargo
# feature are listed too, marked "[testing]": items gated on the feature (by their attributes,
# an impl block's, or a crate's testing module and braid-wal's fault-injecting file system),
# and `pub(crate)` items that `#[cfg_attr(feature = "testing", visibility::make(pub))]` makes
# public only with it. The count printed is what a user holds: the lines without the feature.
#
#   scripts/api.sh            write the listings and print each crate's counts
#   scripts/api.sh --check    fail (CI) when a listing differs from the code: a change to
#                             the public API is a decision, recorded by committing the listing
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && check=1
crates=(braid-wal braid-engine braid-pmem braid-rewind braid-nats braid-workloads braid-testkit)
item='^[ \t]*pub (unsafe |async |const |extern "C" )*(fn|struct|enum|trait|type|const|static|mod|use|union) '
titem='^[ \t]*pub\(crate\) (unsafe |async |const |extern "C" )*(fn|struct|enum|trait|type|const|static|mod|use|union) '
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "${crates[@]}"; do
    out="$tmp/$c.txt"
    (
        cd "crates/$c"
        find src -name '*.rs' | LC_ALL=C sort | while read -r f; do
            awk -v f="$f" -v re="$item" -v tre="$titem" '
                # A public item is testing-only when its attributes (the run of attribute and
                # doc lines above it) gate it on the feature or make it public only with it,
                # when it sits in an impl block so gated, or in a testing-only file.
                /^[ \t]*(#\[|\/\/\/)/ { attrs = attrs $0 "\n"; next }
                {
                    gated = (attrs ~ /feature = "testing"/) || (f ~ /(\/testing\.rs|\/fs\/fault\/)/)
                    if ($0 ~ /^impl/) inimpl = (attrs ~ /feature = "testing"/)
                    if ($0 ~ /^\}/) inimpl = 0
                    if ($0 ~ re || ($0 ~ tre && attrs ~ /visibility::make\(pub\)/)) {
                        line = $0; sub(/^[ \t]+/, "", line); sub(/[ \t]*\{$/, "", line)
                        sub(/^pub\(crate\) /, "pub ", line)
                        print f ": " line ((gated || inimpl) ? " [testing]" : "")
                    }
                    attrs = ""
                }' "$f"
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
    printf '%-16s %4d public item lines without the testing feature (%d more with it)\n' "$c" "$((n - t))" "$t"
done
exit $status
