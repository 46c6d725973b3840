#!/usr/bin/env bash
# braid beside the Taurus paper's own code, DBx1000_logging (issue #31): YCSB throughput and
# recovery of the paper's logging variants on both systems, in one sitting.
#
#   scripts/dbx1000.sh PATH [--seconds S] [--repeat N] [--threads LIST] [--taurus L|T]
#                           [--only LIST]
#
# PATH is a checkout of https://github.com/yuxiamit/DBx1000_logging (the script does not
# download it). The script builds the variants it runs from that checkout with the code's own
# tools/compile.py, in a copy under target/dbx1000/build/<revision> (the checkout is left as it
# is; binaries built there before are reused): rundb_ND_YCSB_NOWAIT (no logging, 2PL NO_WAIT),
# ND_YCSB_SILO (no logging, Silo OCC), SD_YCSB_NOWAIT (serial data), LD_ and LC_YCSB_NOWAIT
# (Taurus data and command: the lock-table-free builds the paper's figures plot; --taurus T
# takes TD_/TC_ instead), VD_YCSB_NOWAIT (Plover) and BD_YCSB_SILO (Silo-R). It installs the
# Debian packages the code needs (libboost-dev libjemalloc-dev libnuma-dev numactl) when they
# are missing, and makes the code's build scripts work on hosts they did not foresee, without
# touching the source: the Makefile's link line for Linux when the kernel release is not
# "generic" or "aws" (which alone get one), a CPU_FREQ read from /proc/cpuinfo when lscpu's
# model name has no "@ x GHz" for compile.py to read, and GCC's maybe-uninitialized warning
# (raised inside GCC 12's own AVX-512 header) kept a warning under the code's -Werror. What it
# did is printed and recorded in the JSON.
#
# Workload on both: YCSB, 1M rows of 1 KB, 2 requests per transaction, 50% reads, Zipf 0.6;
# updates write and log whole rows (braid --ycsb-update row, as DBx1000 does). Each point at
# 1 log, and at T threads > 1 also T logs for Taurus, Plover and Silo-R (serial has one).
# DBx1000 runs with scripts/runExpr.py's RAM-disk flags, its logs in ./logs of a run
# directory on /dev/shm; braid uses `--device file` in /dev/shm. Recovery: DBx1000 again
# with -Lr1 on the log just written; braid `bench --commits N --keep` (N: the transactions
# DBx1000's log of the same round held), then `braid recover`, same thread count. Rounds
# alternate the systems; each point is the median of --repeat rounds (default 3), runs of
# --seconds (default 3; DBx1000 runs a transaction count per thread, sized from a short
# calibration run to last about as long), threads 1,2 by default. --only takes a comma list of
# the logging variants (serial, taurus-data, taurus-command, plover, silor; default all), and
# runs them with the no-logging runs their ratios need.
# Prints the tables under a line naming the host's CPU (model, cores, MHz, vector extensions;
# also in every CSV row, and the whole flag list in the JSON's machine record); writes
# target/dbx1000/dbx1000.{json,csv}; removes its /dev/shm files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; }
seconds=3 repeat=3 threads_arg=1,2 taurus=L dbx= only=serial,taurus-data,taurus-command,plover,silor
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --threads) threads_arg=$2; shift 2 ;;
        --taurus) taurus=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
        *) [ -z "$dbx" ] || { echo "one PATH only" >&2; exit 2; }; dbx=$1; shift ;;
    esac
done
where="Get it with: git clone https://github.com/yuxiamit/DBx1000_logging, then give this script
the checkout's path; the script builds the variants it runs."
if [ -z "$dbx" ]; then
    echo "usage: scripts/dbx1000.sh PATH [options]: PATH is a DBx1000_logging checkout." >&2
    echo "$where" >&2
    exit 2
fi
[ -d "$dbx" ] || { echo "$dbx: no such directory. $where" >&2; exit 2; }
dbx=$(cd "$dbx" && pwd)
case "$taurus" in L|T) ;; *) echo "--taurus takes L or T" >&2; exit 2 ;; esac
for v in ${only//,/ }; do
    case "$v" in serial|taurus-data|taurus-command|plover|silor) ;;
        *) echo "--only: unknown variant $v (serial, taurus-data, taurus-command, plover, silor)" >&2
           exit 2 ;;
    esac
done
selected() { [[ ",$only," == *",$1,"* ]]; }
IFS=, read -r -a threads <<< "$threads_arg"
case "$(hostname)" in
    ip-*) echo "DBx1000 writes its logs to /data0.. on hosts named ip-* (EC2); this script needs
them in its own tmpfs directory: run it on a host with another name." >&2; exit 2 ;;
    yx*) echo "DBx1000 caps every run at 100 transactions on hosts named yx*; use another host." >&2
        exit 2 ;;
esac

# The variants, built from the checkout with its own tools/compile.py.
variants=(ND_YCSB_NOWAIT ND_YCSB_SILO SD_YCSB_NOWAIT "${taurus}D_YCSB_NOWAIT"
    "${taurus}C_YCSB_NOWAIT" VD_YCSB_NOWAIT BD_YCSB_SILO)
src=$dbx
[ -f "$src/tools/compile.py" ] && [ -f "$src/Makefile" ] && [ -f "$src/benchmarks/YCSB_schema.txt" ] || {
    echo "$src is not a DBx1000_logging checkout (tools/compile.py, Makefile, benchmarks/)." >&2
    echo "$where" >&2; exit 2; }
src_rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unversioned)
dbx=$root/target/dbx1000/build/$src_rev
need=()
for p in libboost-dev libjemalloc-dev libnuma-dev numactl g++ make; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing DBx1000's build dependencies: ${need[*]}" >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y -q "${need[@]}" >&2
    else sudo apt-get install -y -q "${need[@]}" >&2; fi
fi
adapt=()
build_env=(env)
case "$(uname -r | cut -d- -f3)" in
    generic|aws|Microsoft) ;;
    *) build_env+=("LDFLAGS=-Wall -L. -L./libs -g -ggdb -std=c++0x -O3 -pthread -lrt -ljemalloc -lnuma")
       adapt+=("LDFLAGS set to the Makefile's Linux link line (kernel release $(uname -r) is none it names)") ;;
esac
if ! lscpu | grep -q '^Model name:.*@'; then
    mkdir -p "$dbx/.shim"
    cat > "$dbx/.shim/lscpu" <<'SHIM'
#!/bin/sh
ghz=$(awk -F: '/cpu MHz/{printf "%.3f", $2/1000; exit}' /proc/cpuinfo)
/usr/bin/lscpu "$@" | sed "s/^\(Model name:.*\)$/\1 @ ${ghz}GHz/"
SHIM
    chmod +x "$dbx/.shim/lscpu"
    build_env+=("PATH=$dbx/.shim:$PATH")
    adapt+=("CPU_FREQ from /proc/cpuinfo ($(awk -F: '/cpu MHz/{printf "%.3f", $2/1000; exit}' /proc/cpuinfo) GHz): lscpu's model name has no @ GHz")
fi
build_env+=('MAKEFLAGS=CC=g++\ -Wno-error=maybe-uninitialized')
adapt+=("g++ -Wno-error=maybe-uninitialized (a warning inside GCC's own AVX-512 header)")
if [ ! -d "$dbx" ] || [ ! -f "$dbx/Makefile" ]; then
    mkdir -p "$dbx"
    tar -C "$src" --exclude=.git --exclude='rundb_*' -cf - . | tar -C "$dbx" -xf -
fi
for v in "${variants[@]}"; do
    [ -x "$dbx/rundb_$v" ] && continue
    echo "building DBx1000 variant $v in $dbx (its tools/compile.py)" >&2
    (cd "$dbx" && "${build_env[@]}" python3 tools/compile.py "$v") > "$dbx/build-$v.log" 2>&1 || true
    if [ ! -x "$dbx/rundb_$v" ] || grep -q "Error in job" "$dbx/build-$v.log"; then
        rm -f "$dbx/rundb_$v"
        echo "building rundb_$v failed; the end of $dbx/build-$v.log:" >&2
        tail -n 20 "$dbx/build-$v.log" >&2
        exit 1
    fi
done
printf '%s\n' "${adapt[@]}" > "$dbx/adaptations.txt"

cd "$root"
# The tree's state when the binary is built, before anything else can change it.
braid_rev=$(git rev-parse HEAD 2>/dev/null || true)
braid_dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | head -c1)
cargo build --release -p braid --quiet
braid=${CARGO_TARGET_DIR:-$root/target}/release/braid
out=$root/target/dbx1000
mkdir -p "$out"
work=$(mktemp -d -p /dev/shm braid-dbx1000.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
results=$work/results.tsv
: > "$results"
numa=()
command -v numactl >/dev/null && numa=(numactl -i all --)   # as runExpr.py runs them

# DBx1000's flags, from scripts/runExpr.py (shortEC2_8 with the RAM-disk replacers: -LD2 -LR1
# -Li1, i3metal_nvme2's -LB/-LK), with 1M rows instead of its 500M.
common="-s1000000 -R2 -r0.5 -z0.6 -Tp0 -Tl30000000 -Lz10 -Lw10 -Lad0 -Lal1 -LB1048576 -LK33554432 -LD2 -LR1 -Li1"
dbx_flags() { # kind recover
    case "$1:$2" in
        none:0) echo "-l320003 -Lb2621440" ;;
        data:0) echo "-l320003 -Lb32768000" ;;
        command:0) echo "-l1280003 -Lb52428800" ;;
        data:1) echo "-l320003 -Lb33554432" ;;
        command:1) echo "-l160003 -Lb33554432" ;;
    esac
}
# variant -> DBx1000 binary, kind, braid flags
spec() {
    case "$1" in
        none) echo "ND_YCSB_NOWAIT|none|--scheme none" ;;
        none-occ) echo "ND_YCSB_SILO|none|--scheme none --cc occ" ;;
        serial) echo "SD_YCSB_NOWAIT|data|--scheme serial --logging data" ;;
        taurus-data) echo "${taurus}D_YCSB_NOWAIT|data|--scheme taurus --logging data" ;;
        taurus-command) echo "${taurus}C_YCSB_NOWAIT|command|--scheme taurus --logging command" ;;
        plover) echo "VD_YCSB_NOWAIT|data|--scheme plover --logging data" ;;
        # DBx1000's Silo-R epoch is its EPOCH_PERIOD, 5 ms; braid's silor defaults to SiloR's 40.
        silor) echo "BD_YCSB_SILO|data|--scheme silor --logging data --cc occ --scheme-opt silor.epoch_ms=5" ;;
    esac
}
configs=()
for t in "${threads[@]}"; do
    if selected serial || selected taurus-data || selected taurus-command || selected plover; then
        configs+=("none $t 1")
    fi
    if selected silor; then configs+=("none-occ $t 1"); fi
    if selected serial; then configs+=("serial $t 1"); fi
    for v in taurus-data taurus-command plover silor; do
        selected "$v" || continue
        configs+=("$v $t 1")
        if [ "$t" -gt 1 ]; then configs+=("$v $t $t"); fi
    done
done

num() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
limit=$((seconds * 20 + 300))

# One DBx1000 process in run directory $1 (schema linked from the checkout, logs in $1/logs).
dbx_run() { # dir binary recover gx threads logs kind
    local d=$1 bin=$2 rec=$3 gx=$4 t=$5 l=$6 kind=$7
    # shellcheck disable=SC2046
    (cd "$d" && timeout "$limit" "${numa[@]}" "$dbx/rundb_$bin" -t"$t" -Ln"$l" -Lr"$rec" $common \
        $(dbx_flags "$kind" "$rec") -Gx"$gx") > "$d/out-$rec.txt" 2>&1 || true
    local thr
    thr=$(num Throughput: "$d/out-$rec.txt")
    if [ -z "$thr" ]; then
        echo "DBx1000 rundb_$bin -t$t -Ln$l -Lr$rec failed; its output ends:" >&2
        tail -n 5 "$d/out-$rec.txt" >&2
        echo nan
    else
        echo "$thr"
    fi
}
new_dir() { local d; d=$(mktemp -d -p "$work" dbx.XXXXXX); mkdir "$d/logs"; ln -s "$dbx/benchmarks" "$d/benchmarks"; echo "$d"; }

# Transactions per thread for each DBx1000 point: a short run measures its rate.
declare -A gx
echo "calibrating DBx1000 run lengths (${seconds} s each)" >&2
for c in "${configs[@]}"; do
    read -r v t l <<< "$c"
    IFS='|' read -r bin kind _ <<< "$(spec "$v")"
    d=$(new_dir)
    thr=$(dbx_run "$d" "$bin" 0 30000 "$t" "$l" "$kind")
    rm -rf "$d"
    [ "$thr" = nan ] && thr=100000
    gx[$c]=$(awk -v r="$thr" -v s="$seconds" -v t="$t" 'BEGIN { g = int(r * s / t); print (g < 20000 ? 20000 : g) }')
done

record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$results"; }
jq_() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

run_dbx() { # round variant threads logs
    local r=$1 v=$2 t=$3 l=$4 bin kind d thr rec txns est
    IFS='|' read -r bin kind _ <<< "$(spec "$v")"
    d=$(new_dir)
    thr=$(dbx_run "$d" "$bin" 0 "${gx[$v $t $l]}" "$t" "$l" "$kind")
    est=$(awk '/Estimated CPU_FREQ is/ { print $4; exit }' "$d/out-0.txt")
    record dbx1000 "$v" "$t" "$l" "$r" txn_per_s "$thr"
    record dbx1000 "$v" "$t" "$l" "$r" est_cpu_ghz "${est:-nan}"
    local line="DBx1000 $(printf %.0f "$thr") txn/s"
    if [ "$kind" != none ] && [ "$thr" != nan ]; then
        # DBx1000's reader can stop before its first read block arrives and replay nothing
        # (seen with small command logs); such a run is tried once more, then left out.
        for _ in 1 2; do
            rec=$(dbx_run "$d" "$bin" 1 "${gx[$v $t $l]}" "$t" "$l" "$kind")
            txns=$(num num_commits: "$d/out-1.txt")
            [ "${txns:-0}" = 0 ] || break
        done
        if [ "${txns:-0}" = 0 ]; then
            echo "DBx1000 rundb_$bin -t$t -Ln$l -Lr1 replayed no transaction; left out" >&2
            rec=nan txns=nan
        fi
        record dbx1000 "$v" "$t" "$l" "$r" recovery_txn_per_s "$rec"
        record dbx1000 "$v" "$t" "$l" "$r" recovery_txns "${txns:-nan}"
        line+=", recovery $(printf %.0f "$rec") txn/s"
    fi
    rm -rf "$d"
    echo "$line"
}

# braid's YCSB run into directory DIR: braid_bench DIR THREADS LOGS "SCHEME FLAGS" MORE...
braid_bench() {
    local d=$1 t=$2 l=$3 bflags=$4
    shift 4
    # shellcheck disable=SC2086
    "$braid" bench --workload ycsb --device file --dir "$d" --ycsb-update row --rows 1000000 \
        --theta 0.6 --read-fraction 0.5 --accesses 2 --threads "$t" --logs "$l" --repeat 1 \
        $bflags "$@" --json "$d/bench.json" --csv "$d/bench.csv" > "$d/bench.txt" 2>&1
}

# A braid bench in DIR failed: say so with the end of its output, record METRIC as nan for the
# point, and remove DIR.
bench_failed() { # dir what metric round variant threads logs
    local d=$1 what=$2 metric=$3 r=$4 v=$5 t=$6 l=$7
    echo "$what ($v, $t threads, $l logs) failed; its output ends:" >&2
    tail -n 5 "$d/bench.txt" >&2
    record braid "$v" "$t" "$l" "$r" "$metric" nan
    rm -rf "$d"
}

run_braid() { # round variant threads logs
    local r=$1 v=$2 t=$3 l=$4 kind bflags d
    IFS='|' read -r _ kind bflags <<< "$(spec "$v")"
    d=$(mktemp -d -p "$work" braid.XXXXXX)
    if ! braid_bench "$d" "$t" "$l" "$bflags" --seconds "$seconds"; then
        bench_failed "$d" "braid bench" txn_per_s "$r" "$v" "$t" "$l"; echo "braid failed"; return
    fi
    local thr
    thr=$(jq_ "$d/bench.json" 'd["results"][0]["txn_per_s"]')
    record braid "$v" "$t" "$l" "$r" txn_per_s "$thr"
    if [ "$kind" != none ] && [ ! -s "$work/emulation" ]; then
        jq_ "$d/bench.json" 'd["results"][0].get("emulation") or ""' > "$work/emulation"
    fi
    rm -rf "$d"
    echo "braid $(printf %.0f "$thr") txn/s"
}

# braid's recovery, on a log of as many transactions as DBx1000's log of the same round held
# (bench --commits N --keep, then braid recover); without DBx1000's count, a --seconds run's.
# Read-only transactions log nothing on either system, and with 2 requests at 50% reads a
# quarter of them read only: N is DBx1000's replayed transactions / 0.75.
run_braid_recovery() { # round variant threads logs
    local r=$1 v=$2 t=$3 l=$4 kind bflags d n lim=(--seconds "$seconds")
    IFS='|' read -r _ kind bflags <<< "$(spec "$v")"
    [ "$kind" != none ] || return 0
    n=$(awk -F'\t' -v v="$v" -v t="$t" -v l="$l" -v r="$r" '$1 == "dbx1000" && $2 == v &&
        $3 == t && $4 == l && $5 == r && $6 == "recovery_txns" { print $7 }' "$results" | tail -n 1)
    case "$n" in
        ''|nan) ;;
        *) lim=(--commits "$(awk -v n="$n" 'BEGIN { printf "%.0f", n / 0.75 }')" --seconds 60) ;;
    esac
    d=$(mktemp -d -p "$work" braid.XXXXXX)
    if ! braid_bench "$d" "$t" "$l" "$bflags" "${lim[@]}" --keep; then
        bench_failed "$d" "braid bench for recovery" recovery_txn_per_s "$r" "$v" "$t" "$l"
        echo "braid recovery failed"; return
    fi
    local db
    db=$(jq_ "$d/bench.json" 'd["results"][0]["runs"][0]["dir"]')
    if "$braid" recover --dir "$db" --threads "$t" --json "$d/rec.json" > "$d/rec.txt" 2>&1; then
        record braid "$v" "$t" "$l" "$r" recovery_txn_per_s "$(jq_ "$d/rec.json" 'd["txn_per_s"]')"
        record braid "$v" "$t" "$l" "$r" recovery_txns "$(jq_ "$d/rec.json" 'd["txns"]')"
        echo "braid recovery $(printf %.0f "$(jq_ "$d/rec.json" 'd["txn_per_s"]')") txn/s" \
            "($(jq_ "$d/rec.json" 'd["txns"]') txns)"
    else
        echo "braid recover ($v, $t threads, $l logs) failed; its output ends:" >&2
        tail -n 5 "$d/rec.txt" >&2
        record braid "$v" "$t" "$l" "$r" recovery_txn_per_s nan
        echo "braid recovery failed"
    fi
    rm -rf "$d"
}

start=$(date +%s)
for r in $(seq 1 "$repeat"); do
    for c in "${configs[@]}"; do
        read -r v t l <<< "$c"
        # Alternate which system goes first.
        if [ $((r % 2)) = 1 ]; then
            a=$(run_dbx "$r" "$v" "$t" "$l"); b=$(run_braid "$r" "$v" "$t" "$l")
        else
            b=$(run_braid "$r" "$v" "$t" "$l"); a=$(run_dbx "$r" "$v" "$t" "$l")
        fi
        c=$(run_braid_recovery "$r" "$v" "$t" "$l")
        echo "[round $r/$repeat] $v, $t threads, $l logs: $a; $b${c:+; $c}" >&2
    done
done
elapsed=$(( $(date +%s) - start ))
cp "$results" "$out/runs.tsv"

DBX_ONLY=$only python3 - "$results" "$out" "$root" "$dbx" "$seconds" "$repeat" "$threads_arg" "$taurus" \
    "$elapsed" "$(cat "$work/emulation" 2>/dev/null)" "$common" "${numa[*]:-}" "$(declare -p gx)" \
    "$braid_rev" "$braid_dirty" "$src" "$(cat "$dbx/adaptations.txt")" <<'PY'
import csv, json, math, os, platform, re, statistics, subprocess, sys

(results, out, root, dbx, seconds, repeat, threads_arg, taurus, elapsed, emulation, common,
 numa, gxdecl, braid_rev, braid_dirty, src, adaptations) = sys.argv[1:]
adaptations = [a for a in adaptations.split("\n") if a]
rows = [l.rstrip("\n").split("\t") for l in open(results) if l.strip()]
vals = {}
for system, v, t, l, r, metric, value in rows:
    vals.setdefault((system, v, int(t), int(l), metric), []).append(float(value))


def med(system, v, t, l, metric):
    xs = [x for x in vals.get((system, v, t, l, metric), []) if not math.isnan(x)]
    return statistics.median(xs) if xs else None


def git(d, *args):
    try:
        return subprocess.run(["git", "-C", d, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return None


cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
           platform.processor())
mhz = next((float(l.split(":", 1)[1]) for l in open("/proc/cpuinfo") if l.startswith("cpu MHz")), None)
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
# The vector extensions either system's code can use (DBx1000 is built with -march=native).
simd = [f for f in ("avx512f", "avx512bw", "avx512vl", "avx2", "avx", "sse4_2") if f in flags]
host = f"{cpu}, {os.cpu_count()} cores at {mhz:.0f} MHz (/proc/cpuinfo), {' '.join(simd) or 'no AVX'}" \
    if mhz else f"{cpu}, {os.cpu_count()} cores, {' '.join(simd) or 'no AVX'}"
compiled = {}
for f in os.listdir(dbx):
    m = re.fullmatch(r"rundb_(\w+)\.config", f)
    if m:
        g = re.search(r"^#define CPU_FREQ\s+([\d.]+)", open(os.path.join(dbx, f)).read(), re.M)
        if g:
            compiled[m.group(1)] = float(g.group(1))
est = [x for k, xs in vals.items() if k[4] == "est_cpu_ghz" for x in xs if not math.isnan(x)]
gx = dict(re.findall(r'\["([^"]+)"\]="(\d+)"', gxdecl))

names = {"none": "no logging (2PL NO_WAIT)", "none-occ": "no logging (OCC / Silo)",
         "serial": "serial data", "taurus-data": "taurus data", "taurus-command": "taurus command",
         "plover": "plover data", "silor": "Silo-R (OCC)"}
binary = {"none": "ND_YCSB_NOWAIT", "none-occ": "ND_YCSB_SILO", "serial": "SD_YCSB_NOWAIT",
          "taurus-data": taurus + "D_YCSB_NOWAIT", "taurus-command": taurus + "C_YCSB_NOWAIT",
          "plover": "VD_YCSB_NOWAIT", "silor": "BD_YCSB_SILO"}
base = {v: ("none-occ" if v in ("none-occ", "silor") else "none") for v in names}
points = sorted({(k[1], k[2], k[3]) for k in vals},
                key=lambda p: (p[1], list(names).index(p[0]), p[2]))


def fmt(x, ratio=False):
    if x is None:
        return "-"
    return f"{x:.2f}x" if ratio else f"{x:,.0f}"


def div(a, b):
    return a / b if a is not None and b else None


table, out_rows = [], []
for v, t, l in points:
    d = med("dbx1000", v, t, l, "txn_per_s")
    b = med("braid", v, t, l, "txn_per_s")
    dn = med("dbx1000", base[v], t, 1, "txn_per_s")
    bn = med("braid", base[v], t, 1, "txn_per_s")
    dbest = max((x for x in (med("dbx1000", v, t, ll, "txn_per_s")
                             for (vv, tt, ll) in points if vv == v and tt == t) if x), default=None)
    rd = med("dbx1000", v, t, l, "recovery_txn_per_s")
    rb = med("braid", v, t, l, "recovery_txn_per_s")
    rdbest = max((x for x in (med("dbx1000", v, t, ll, "recovery_txn_per_s")
                              for (vv, tt, ll) in points if vv == v and tt == t) if x), default=None)
    row = {"host_cpu": cpu, "host_cpu_mhz": mhz, "host_simd": " ".join(simd),
           "variant": v, "name": names[v], "dbx1000_binary": "rundb_" + binary[v], "threads": t,
           "logs": l, "dbx1000_txn_per_s": d, "dbx1000_x_none": div(d, dn) if v != base[v] else None,
           "braid_txn_per_s": b, "braid_x_none": div(b, bn) if v != base[v] else None,
           "braid_x_dbx1000": div(b, d), "braid_x_dbx1000_best_logs": div(b, dbest),
           "dbx1000_recovery_txn_per_s": rd, "braid_recovery_txn_per_s": rb,
           "dbx1000_recovery_txns": med("dbx1000", v, t, l, "recovery_txns"),
           "braid_recovery_txns": med("braid", v, t, l, "recovery_txns"),
           "recovery_braid_x_dbx1000": div(rb, rd), "recovery_braid_x_dbx1000_best_logs": div(rb, rdbest),
           "dbx1000_txns_per_thread": int(gx.get(f"{v} {t} {l}", 0)),
           "runs": {f"{s}.{m}": vals.get((s, v, t, l, m), []) for s in ("dbx1000", "braid")
                    for m in ("txn_per_s", "recovery_txn_per_s", "recovery_txns")}}
    out_rows.append(row)

print(f"\n## braid beside DBx1000_logging: YCSB, 1M rows, 2 requests/txn, 50% reads, Zipf 0.6, "
      f"whole-row updates; medians of {repeat} rounds of {seconds} s; logs on tmpfs\n")
print(f"Host: {host}.\n")
print("| variant | thr | logs | DBx1000 txn/s | x none | braid txn/s | x none | braid / DBx1000 | vs DBx1000's best log count |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in out_rows:
    print(f"| {r['name']} | {r['threads']} | {r['logs'] if r['variant'] not in ('none', 'none-occ') else '-'} "
          f"| {fmt(r['dbx1000_txn_per_s'])} | {fmt(r['dbx1000_x_none'], 1)} | {fmt(r['braid_txn_per_s'])} "
          f"| {fmt(r['braid_x_none'], 1)} | {fmt(r['braid_x_dbx1000'], 1)} | {fmt(r['braid_x_dbx1000_best_logs'], 1)} |")
print("\nRecovery of each run's log (replayed transactions per second; transactions replayed):\n")
print("| variant | thr | logs | DBx1000 txn/s | (txns) | braid txn/s | (txns) | braid / DBx1000 | vs DBx1000's best log count |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in out_rows:
    if r["variant"] in ("none", "none-occ"):
        continue
    print(f"| {r['name']} | {r['threads']} | {r['logs']} | {fmt(r['dbx1000_recovery_txn_per_s'])} "
          f"| {fmt(r['dbx1000_recovery_txns'])} | {fmt(r['braid_recovery_txn_per_s'])} "
          f"| {fmt(r['braid_recovery_txns'])} | {fmt(r['recovery_braid_x_dbx1000'], 1)} "
          f"| {fmt(r['recovery_braid_x_dbx1000_best_logs'], 1)} |")
emu = emulation or "log files in RAM (tmpfs): fdatasync is a no-op, not power-safe"
print(f"""
How each counts a transaction. DBx1000 counts one when it has executed and its log record is
in the in-memory log buffer (num_commits; it is made durable later, asynchronously), and
divides by the workers' summed transaction time (rdtsc / CPU_FREQ) or the loggers' busy time,
whichever is larger. braid counts one only once it is durable (commit acknowledged after the
log flush; the bench's default window of commits in flight per worker: 256, and 10,000 for
Silo-R, which acknowledges a whole 5 ms epoch at once), over the wall-clock run. Recovery:
DBx1000's -Lr1 run on the log just written (its Throughput: replayed transactions over replay
time); braid recover's replay rate (initial image load excluded) on a log written to hold as
many transactions as DBx1000's of the same round (braid bench --commits N, N = DBx1000's
replayed transactions / 0.75: read-only transactions log nothing on either system, and a
quarter of them read only). Both systems log the same
bytes: a whole 1 KB row per update. Emulation: both systems' logs are files on tmpfs
(/dev/shm), where fdatasync is a no-op, so neither is power-safe here (braid labels its runs
"{emu}"). Silo-R runs with
DBx1000's 5 ms epoch on both (braid --scheme-opt silor.epoch_ms=5). DBx1000 is unmodified:
its source from {src}, built by this script with its tools/compile.py in {dbx} (Taurus:
rundb_{taurus}D/{taurus}C; build adaptations, none touching the source: {'; '.join(adaptations) or 'none'}),
thread pinning as compiled in
(AFFINITY), {'numactl -i all as runExpr.py' if numa else 'no numactl'}.""")
freqs = sorted(set(compiled.values()))
if est and freqs:
    e = statistics.median(est)
    print(f"DBx1000's CPU_FREQ: compiled {', '.join(f'{f:g}' for f in freqs)} GHz, "
          f"its own estimate at run time {e:.3f} GHz.")
    if any(abs(f - e) / e > 0.05 for f in freqs):
        print("WARNING: a compiled CPU_FREQ differs from the measured one by more than 5%: "
              "DBx1000's throughputs are off by that factor.")
print(f"Elapsed: {int(elapsed) // 60} min {int(elapsed) % 60} s.")

meta = {
    "command": "scripts/dbx1000.sh " + " ".join([src, "--seconds", seconds, "--repeat", repeat,
                                                   "--threads", threads_arg, "--taurus", taurus,
                                                   "--only", os.environ["DBX_ONLY"]]),
    "machine": {"cpu": cpu, "cores": os.cpu_count(), "cpu_mhz": mhz, "kernel": platform.release(),
                "host": platform.node(), "simd": simd, "cpu_flags": flags},
    "braid_git": braid_rev,
    "braid_git_dirty": bool(braid_dirty),
    "dbx1000_path": src, "dbx1000_git": git(src, "rev-parse", "HEAD"),
    "dbx1000_modified_files": [f for f in (git(src, "status", "--porcelain", "--untracked-files=no") or "").split("\n") if f],
    "dbx1000_build_dir": dbx, "dbx1000_build_adaptations": adaptations,
    "dbx1000_cpu_freq_compiled_ghz": compiled,
    "dbx1000_cpu_freq_estimated_ghz": statistics.median(est) if est else None,
    "params": {"workload": "ycsb", "rows": 1000000, "row_bytes": 1000, "requests_per_txn": 2,
               "read_fraction": 0.5, "zipf_theta": 0.6, "update": "whole row", "seconds": float(seconds),
               "repeat": int(repeat), "threads": [int(x) for x in threads_arg.split(",")],
               "taurus_builds": taurus, "log_dir": "/dev/shm (tmpfs)", "emulation": emu,
               "braid": "bench --workload ycsb --device file --ycsb-update row (default --inflight: 256; silor 10000) "
                        "(silor: --cc occ --scheme-opt silor.epoch_ms=5; none-occ: --cc occ); "
                        "recovery: a second run with --commits = DBx1000's recovered transactions "
                        "of the same round / 0.75 (the share that writes), --keep, then "
                        "recover --threads = run threads",
               "dbx1000_common_flags": common, "dbx1000_launcher": numa,
               "dbx1000_flags": {"none": "-l320003 -Lb2621440", "data": "-l320003 -Lb32768000",
                                 "command": "-l1280003 -Lb52428800",
                                 "recover data": "-Lr1 -l320003 -Lb33554432",
                                 "recover command": "-Lr1 -l160003 -Lb33554432"},
               "counting": {"dbx1000": "executed and its record in the log buffer",
                            "braid": "durable (acknowledged after the log flush)"}},
    "elapsed_s": int(elapsed),
    "results": out_rows,
}
with open(os.path.join(out, "dbx1000.json"), "w") as f:
    json.dump(meta, f, indent=2)
cols = [k for k in out_rows[0] if k != "runs"] if out_rows else []
with open(os.path.join(out, "dbx1000.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(out_rows)
print(f"results written to {out}/dbx1000.json and dbx1000.csv")
PY
