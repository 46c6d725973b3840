#!/usr/bin/env bash
# The public API of each library crate, as a checked-in listing (docs/api/<crate>.txt): every
# item a user can reach from the crate's root (through public modules and re-exports, other
# crates' items re-exported included), with its public fields, variants, methods and the
# traits it implements, read from rustdoc's JSON by the `api-listing` tool
# (crates/api-listing). The count printed is what a user holds: reachable items without the
# `testing` feature.
#
#   scripts/api.sh            write the listings and print each crate's counts
#   scripts/api.sh --check    fail (CI) when a listing differs from the code: a change to
#                             the public API is a decision, recorded by committing the listing
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run -q -p api-listing -- "$@"
