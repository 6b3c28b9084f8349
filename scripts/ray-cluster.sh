#!/usr/bin/env bash
# A Ray cluster started apart, as users start one: `ray start --head` and a second `ray start
# --address` (a second node, here on the same machine), for `corpus extract --engine ray --address`.
#
#   scripts/ray-cluster.sh start DIR [NODES] [CPUS]   # prints the address HOST:PORT (also DIR/address)
#   scripts/ray-cluster.sh stop DIR                   # every process of that cluster, gone
#
# No log monitor: a contextlens driver joins with log_to_driver=False and reads no worker's output
# through it, and it polls every log of its node (5-8 CPU s a node over the test suite).
# NODES (default 2) nodes of CPUS (default 1) CPUs each. Each node is one `ray start --block` in a
# session of its own (setsid): its Ray processes (GCS, raylet, agents, workers) are in that process
# group, and `ray start --block` stops them when it is terminated. `stop` terminates the groups,
# waits 5 s, kills what is left of them, then any process still naming the cluster's own temp dir
# (every Ray process of the cluster names it), by id: never `ray stop`, which stops every Ray of
# the machine's user, another job's included. Ray's deadlines are for a quiet machine (a raylet
# must register within 30 s, hard-coded): a node that did not start is stopped and tried again, up
# to TRIES times. The environment: RAY (the `ray` command; default: the one on PATH), PYTHON (for
# a free port; default: the interpreter next to `ray`), RAY_CLUSTER_START_SECONDS (per try, 300).
set -euo pipefail

RAY=${RAY:-$(command -v ray || true)}
PYTHON=${PYTHON:-$(dirname "${RAY:-/}")/python}
START_SECONDS=${RAY_CLUSTER_START_SECONDS:-300}
TRIES=4
STARTED="Ray runtime started."
# what a job's cluster needs, and patience for a loaded machine (the tests' and corpus extract's own)
export RAY_enable_metrics_collection=0 RAY_USAGE_STATS_ENABLED=0
# Ray's token authentication: off unless RAY_AUTH_MODE=token is set. A head node turns it on by
# itself when it finds a token (~/.ray/auth_token, which a local `ray.init` writes), and then a worker
# node and a driver are refused ("InvalidAuthToken") unless they too run with RAY_AUTH_MODE=token;
# with RAY_AUTH_MODE=token set here, every node and driver of the cluster needs it and the token.
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
export RAY_health_check_timeout_ms=${RAY_health_check_timeout_ms:-60000}
export RAY_health_check_failure_threshold=${RAY_health_check_failure_threshold:-20}
# the head waits for its GCS to write its port (30 s by default, Ray's other start-up deadline): 300 s
export RAY_gcs_server_port_wait_time_s=${RAY_gcs_server_port_wait_time_s:-300}

die() { echo "ray-cluster.sh: $*" >&2; exit 2; }

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cluster_pids() {  # the processes whose command line names the cluster's temp dir (read here, not by grep,
    local f line   # whose own command line would name it)
    for f in /proc/[0-9]*/cmdline; do
        line=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
        case "$line" in *"$1"*) f=${f#/proc/}; echo "${f%/cmdline}" ;; esac
    done
}

group_alive() { kill -0 -- "-$1" 2>/dev/null; }

stop_groups() {  # SIGTERM to each node's group (ray start --block stops its processes), 5 s, then SIGKILL
    local pgid waited=0 alive=1
    for pgid in "$@"; do kill -TERM -- "-$pgid" 2>/dev/null || true; done
    while [ "$alive" = 1 ] && [ "$waited" -lt 25 ]; do
        alive=0
        for pgid in "$@"; do group_alive "$pgid" && alive=1; done
        [ "$alive" = 0 ] || { sleep 0.2; waited=$((waited + 1)); }
    done
    for pgid in "$@"; do kill -KILL -- "-$pgid" 2>/dev/null || true; done
    waited=0  # a killed process is gone once reaped: wait for that (10 s at most)
    for pgid in "$@"; do
        while group_alive "$pgid" && [ "$waited" -lt 50 ]; do sleep 0.2; waited=$((waited + 1)); done
    done
}

start_node() {  # start_node DIR N ARGS...: one node, its `ray start` pid in DIR/node-N.pid
    local dir=$1 n=$2 try log pid deadline
    shift 2
    for try in $(seq 1 "$TRIES"); do
        log="$dir/node-$n.log"
        setsid "$RAY" start --block --disable-usage-stats --include-log-monitor=False --num-cpus="$CPUS" --temp-dir="$(cat "$dir/temp")" "$@" \
            </dev/null >"$log" 2>&1 &
        pid=$!
        echo "$pid" >"$dir/node-$n.pid"
        deadline=$((SECONDS + START_SECONDS))
        while kill -0 "$pid" 2>/dev/null && ! grep -qs "$STARTED" "$log" && [ "$SECONDS" -lt "$deadline" ]; do
            sleep 0.2
        done
        grep -q "$STARTED" "$log" && kill -0 "$pid" 2>/dev/null && return 0
        stop_groups "$pid"
        echo "ray-cluster.sh: node $n did not start (try $try of $TRIES): $(grep -v '^\s*$' "$log" | tail -1)" >&2
    done
    return 1
}

start() {
    local dir=$1 nodes=${2:-2} port n
    CPUS=${3:-1}
    [ -x "$RAY" ] || die "no \`ray\` command (pip install 'contextlens[corpus-ray]', or set RAY)"
    [ ! -e "$dir/address" ] || die "$dir holds a cluster already ($(cat "$dir/address")); stop it first"
    mkdir -p "$dir"
    mktemp -d /tmp/raycl.XXXXXX >"$dir/temp"  # short: Ray's socket paths must fit 107 bytes
    port=$(free_port)
    if ! start_node "$dir" 0 --head --port="$port" --include-dashboard=false; then
        stop "$dir"; die "the head node did not start; its log: $dir/node-0.log"
    fi
    # the head's GCS as Ray names it (the node's IP: what `ray.get_runtime_context().gcs_address` says)
    cp "$(cat "$dir/temp")/ray_current_cluster" "$dir/address"
    for n in $(seq 1 $((nodes - 1))); do
        if ! start_node "$dir" "$n" --address="$(cat "$dir/address")"; then
            stop "$dir"; die "node $n did not start; its log: $dir/node-$n.log"
        fi
    done
    echo "$(cat "$dir/address")"
}

stop() {
    local dir=$1 f temp pid groups=()
    [ -d "$dir" ] || die "no cluster folder $dir"
    for f in "$dir"/node-*.pid; do [ -f "$f" ] && groups+=("$(cat "$f")"); done
    [ ${#groups[@]} -eq 0 ] || stop_groups "${groups[@]}"
    rm -f "$dir"/node-*.pid
    temp=$(cat "$dir/temp" 2>/dev/null || true)
    if [ -n "$temp" ]; then  # a process of the cluster outside the groups (none seen): by id
        for pid in $(cluster_pids "$temp"); do kill -KILL "$pid" 2>/dev/null || true; done
        rm -rf -- "$temp"
    fi
    rm -f "$dir/address" "$dir/temp"
}

case "${1:-}" in
    pids) [ $# -eq 2 ] || die "usage: $0 pids DIR"; cluster_pids "$(cat "$2/temp")" ;;
    start) [ $# -ge 2 ] || die "usage: $0 start DIR [NODES] [CPUS]"; start "$2" "${3:-2}" "${4:-1}" ;;
    stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
    *) die "usage: $0 start DIR [NODES] [CPUS] | stop DIR" ;;
esac
