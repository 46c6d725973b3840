#!/usr/bin/env python3
"""The table of scripts/bench-ab.sh: one row per (scheme, device, threads) of the bench JSONs
in OUT_DIR (before-N.json, after-N.json), each cell the median over the rounds of that round's
median; emulations named in a footer from the JSONs' own labels.

    bench-ab-table.py OUT_DIR ROUNDS
"""
import json
import statistics
import sys


def rows(path):
    with open(path) as f:
        d = json.load(f)
    out = {}
    for r in d["results"]:
        key = (r["scheme"], r["device"], r["threads"])
        out[key] = r
    return d, out


def main():
    out_dir, rounds = sys.argv[1], int(sys.argv[2])
    runs = {"before": [], "after": []}
    machine = {}
    for side in runs:
        for n in range(1, rounds + 1):
            d, r = rows(f"{out_dir}/{side}-{n}.json")
            machine[side] = d["machine"]
            runs[side].append(r)
    keys = sorted(set().union(*[set(r) for r in runs["before"] + runs["after"]]),
                  key=lambda k: (k[2], k[0], k[1]))

    def med(side, key, field):
        vals = [r[key][field] for r in runs[side] if key in r and r[key].get(field) is not None]
        return statistics.median(vals) if vals else None

    def fmt(v, nd=0):
        if v is None:
            return "-"
        return f"{v:,.{nd}f}"

    print(f"before {machine['before'].get('git')} (dirty: {machine['before'].get('git_dirty')}), "
          f"after {machine['after'].get('git')} (dirty: {machine['after'].get('git_dirty')}); "
          f"{machine['after'].get('cores')} cores, {machine['after'].get('cpu')}; "
          f"{rounds} rounds alternated, each cell the median of the rounds' medians")
    print()
    print("| scheme | device | thr | txn/s before | after | after/before | x none before | after "
          "| p50 us before | after | p99 us before | after |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    emulations = set()
    for k in keys:
        for side in runs:
            for r in runs[side]:
                if k in r and r[k].get("emulation"):
                    emulations.add(f"{k[1]}: {r[k]['emulation']}")
        tb, ta = med("before", k, "txn_per_s"), med("after", k, "txn_per_s")
        ratio = ta / tb if tb and ta else None
        print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(tb)} | {fmt(ta)} | {fmt(ratio, 2)} "
              f"| {fmt(med('before', k, 'ratio_to_none'), 2)} | {fmt(med('after', k, 'ratio_to_none'), 2)} "
              f"| {fmt(med('before', k, 'p50_us'), 1)} | {fmt(med('after', k, 'p50_us'), 1)} "
              f"| {fmt(med('before', k, 'p99_us'), 1)} | {fmt(med('after', k, 'p99_us'), 1)} |")
    print()
    for e in sorted(emulations):
        print(f"- {e}")


if __name__ == "__main__":
    main()
