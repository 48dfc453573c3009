#!/usr/bin/env bash
# Fenced writes on Fencer's store beside the same fenced writes on etcd 3.4, interleaved, with one command:
#
#   bench/store-vs-etcd.sh [--rounds N] [--warmup SECONDS] [--duration SECONDS] [--writers N] [--value-bytes N]
#                          [--results DIR]
#
# For each round and each workload (--writers writers on their own scopes, then on one scope) it runs, each on
# fresh servers and data: `fencer bench store` on one Fencer peer, `fencer bench store` on three Fencer peers (the
# replicated store), and EtcdFencedWrites (fencer-compare) on three etcd members, which does the same write as one
# etcd transaction If(fence < token + 1) Then(put value, put fence). Then it prints a Markdown table: per workload
# and system the median writes/s, min-max, p50/p99 latency, and Fencer three peers / etcd as the median of the
# rounds' ratios. Every server listens on 127.0.0.1 only, on free ports, and is stopped by its PID when the script
# ends, however it ends; its temporary directories are removed. docs/performance.md says what it measures.
#
# Needs Java 17, curl, and etcd 3.4: when `etcd` is missing it installs Debian's etcd-server with apt (as root, or
# through sudo), keeping apt from starting a system etcd. It builds fencer-cli/target/fencer.jar and the compare
# module (`./mvnw -Pcompare package`, never `install`) when they are missing.
# Environment: SERVER_JAVA_OPTS (default -Xmx512m) for the Fencer servers' JVMs.
set -euo pipefail

ROOT="$(cd -P "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAR="$ROOT/fencer-cli/target/fencer.jar"
COMPARE="$ROOT/fencer-compare/target"
SERVER_JAVA_OPTS="${SERVER_JAVA_OPTS:--Xmx512m}"
READY_SECONDS=120 # the longest a server (group) may take to serve on a busy 2-core machine

rounds=3 warmup=30 duration=30 writers=64 value_bytes=256 results=""

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

# whole NAME VALUE MIN MAX: fails unless VALUE is a whole number in [MIN, MAX], naming the option.
whole() {
  if ! [[ "$2" =~ ^[0-9]{1,9}$ ]] || (($2 < $3 || $2 > $4)); then
    echo "store-vs-etcd: $1 '$2' is not a whole number in [$3, $4]" >&2
    exit 2
  fi
}

while (($#)); do
  case "$1" in
    --rounds) rounds="${2-}"; whole --rounds "$rounds" 1 100; shift 2 ;;
    --warmup) warmup="${2-}"; whole --warmup "$warmup" 0 3600; shift 2 ;;
    --duration) duration="${2-}"; whole --duration "$duration" 1 3600; shift 2 ;;
    --writers) writers="${2-}"; whole --writers "$writers" 1 4096; shift 2 ;;
    --value-bytes) value_bytes="${2-}"; whole --value-bytes "$value_bytes" 0 1048576; shift 2 ;;
    --results) results="${2-}"; [ -n "$results" ] || usage; shift 2 ;;
    -h | --help) usage ;;
    *) echo "store-vs-etcd: unknown option $1" >&2; usage ;;
  esac
done

say() { echo "store-vs-etcd: $*" >&2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/store-vs-etcd.XXXXXX")"
pids=()           # every server this script started and has not stopped yet
made_policy=false # whether this script wrote /usr/sbin/policy-rc.d (and so must remove it)

# stop_pids PID...: stops each of these processes by its PID (TERM, then KILL after 10 s) and waits for it.
stop_pids() {
  local pid i
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if ((${#pids[@]})); then stop_pids "${pids[@]}"; fi
  if $made_policy; then as_root rm -f /usr/sbin/policy-rc.d; fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs Debian's etcd-server unless etcd is on the PATH. A policy-rc.d that exits 101 keeps the package's
# scripts from starting a system etcd (which would take port 2379 and keep running after this script).
install_etcd() {
  if command -v etcd >/dev/null 2>&1; then return; fi
  say "installing Debian's etcd-server with apt"
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    made_policy=true
  fi
  if ! apt-cache show etcd-server >/dev/null 2>&1; then as_root apt-get update -q >&2; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server >&2
  if $made_policy; then as_root rm -f /usr/sbin/policy-rc.d; made_policy=false; fi
}

build() {
  if [ ! -f "$JAR" ]; then
    say "building $JAR"
    (cd "$ROOT" && ./mvnw -B -q -DskipTests -pl fencer-cli -am package) >&2
  fi
  if [ ! -f "$COMPARE/classpath.txt" ] || ! ls "$COMPARE"/fencer-compare-*.jar >/dev/null 2>&1; then
    say "building the compare module (fencer-compare)"
    (cd "$ROOT" && ./mvnw -B -q -Pcompare -pl fencer-compare -am package -DskipTests) >&2
  fi
}

used_ports=" "
# next_port: sets PORT to a port of 127.0.0.1 that nothing listens on and this script has not handed out, below
# the ephemeral range (so no outgoing connection takes it meanwhile). Sets a variable rather than printing, so
# that the ports handed out are remembered (a command substitution would run it in a subshell).
next_port() {
  local candidate i
  for ((i = 0; i < 1000; i++)); do
    candidate=$((20000 + RANDOM % 12000))
    [[ "$used_ports" == *" $candidate "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
      used_ports+="$candidate "
      PORT="$candidate"
      return
    fi
  done
  say "found no free port"
  return 1
}

# wait_for WHAT PID COMMAND...: waits until COMMAND succeeds; when process PID ends first or READY_SECONDS pass,
# prints the end of the figure's server logs and fails.
wait_for() {
  local what="$1" pid="$2" i log
  shift 2
  for ((i = 0; i < READY_SECONDS * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return; fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  say "$what was not ready (ended, or not within $READY_SECONDS s); the servers' logs end:"
  for log in "$figure_dir"/*.log; do
    [ -f "$log" ] && { echo "== $log" >&2; tail -n 20 "$log" >&2; }
  done
  return 1
}

# serving_port LOG: prints the client port a Fencer server's LOG says it serves on; fails while it says none.
serving_port() {
  sed -n 's/^fencer server .* serving on 127\.0\.0\.1:\([0-9][0-9]*\) .*/\1/p' "$1" | grep .
}

# A figure's servers: started into figure_dir, their PIDs in figure_pids and pids, their addresses in servers.
figure_dir=""
figure_pids=()
servers=""

start_fencer_one() {
  local dir="$1" pid
  # shellcheck disable=SC2086
  java $SERVER_JAVA_OPTS -jar "$JAR" server --data "$dir/data" --port 0 --admin-port -1 --http-port 0 \
    >"$dir/server.log" 2>&1 </dev/null &
  pid=$!
  pids+=("$pid") figure_pids=("$pid")
  wait_for "the Fencer peer" "$pid" serving_port "$dir/server.log"
  servers="127.0.0.1:$(serving_port "$dir/server.log")"
}

start_fencer_three() {
  local dir="$1" peers="" addresses=() i pid
  for i in 1 2 3; do
    next_port; addresses+=("127.0.0.1:$PORT")
    next_port; peers+="${peers:+,}n$i=${addresses[$((i - 1))]}:$PORT"
  done
  figure_pids=()
  for i in 1 2 3; do
    # shellcheck disable=SC2086
    java $SERVER_JAVA_OPTS -jar "$JAR" server --id "n$i" --port "${addresses[$((i - 1))]##*:}" --data "$dir/n$i" \
      --peers "$peers" --raft-secret-file "$dir/group.secret" --admin-port -1 --http-port 0 \
      >"$dir/n$i.log" 2>&1 </dev/null &
    pid=$!
    pids+=("$pid") figure_pids+=("$pid")
    # the first peer makes the group secret; the others start once it is there, so they read the same one
    if ((i == 1)); then wait_for "Fencer peer n1's group secret" "$pid" test -s "$dir/group.secret"; fi
  done
  for i in 1 2 3; do
    wait_for "Fencer peer n$i" "${figure_pids[$((i - 1))]}" serving_port "$dir/n$i.log"
  done
  servers="$(IFS=,; echo "${addresses[*]}")"
  # a group serves once it has a leader: lock status answers only then
  wait_for "the Fencer group's leader" "${figure_pids[0]}" \
    java -jar "$JAR" lock status --server "$servers" --timeout 5s
}

start_etcd_three() {
  local dir="$1" cluster="" clients=() peer_urls=() i pid
  for i in 1 2 3; do
    next_port; clients+=("http://127.0.0.1:$PORT")
    next_port; peer_urls+=("http://127.0.0.1:$PORT")
    cluster+="${cluster:+,}e$i=${peer_urls[$((i - 1))]}"
  done
  figure_pids=()
  for i in 0 1 2; do
    etcd --name "e$((i + 1))" --data-dir "$dir/e$((i + 1))" \
      --listen-client-urls "${clients[$i]}" --advertise-client-urls "${clients[$i]}" \
      --listen-peer-urls "${peer_urls[$i]}" --initial-advertise-peer-urls "${peer_urls[$i]}" \
      --initial-cluster "$cluster" --initial-cluster-token "store-vs-etcd" --initial-cluster-state new \
      >"$dir/e$((i + 1)).log" 2>&1 </dev/null &
    pid=$!
    pids+=("$pid") figure_pids+=("$pid")
  done
  for i in 0 1 2; do
    # /health answers true once the member sees a leader
    wait_for "etcd member e$((i + 1))" "${figure_pids[$i]}" \
      sh -c "curl -sf --max-time 2 '${clients[$i]}/health' | grep -q '\"health\":\"true\"'"
  done
  servers="$(IFS=,; echo "${clients[*]}")"
}

compare_classpath() {
  echo "$(cat "$COMPARE/classpath.txt"):$(ls "$COMPARE"/fencer-compare-*.jar)"
}

# run_bench OUT ERR COMMAND...: runs a load generator, its stdout to OUT and stderr to ERR, and returns its exit
# status. In the background with a wait, so that an interrupt stops the script (and, by PID, the generator) at once
# rather than after the generator's run.
run_bench() {
  local out="$1" err="$2" pid status=0 kept=() other
  shift 2
  "$@" >"$out" 2>"$err" </dev/null &
  pid=$!
  pids+=("$pid")
  wait "$pid" || status=$?
  for other in "${pids[@]}"; do [ "$other" = "$pid" ] || kept+=("$other"); done
  pids=(${kept[@]+"${kept[@]}"})
  return "$status"
}

# figure ROUND WORKLOAD SYSTEM: fresh servers, one bench, servers stopped; the summary in results/.
figure() {
  local round="$1" workload="$2" system="$3" dir="$WORK/$1-$2-$3" scopes status=0
  local out="$WORK/results/$1-$2-$3.json"
  mkdir -p "$dir"
  figure_dir="$dir"
  scopes="$writers"
  [ "$workload" = one ] && scopes=1
  say "round $round, $writers writers on $scopes scope(s): $system"
  case "$system" in
    fencer1) start_fencer_one "$dir" ;;
    fencer3) start_fencer_three "$dir" ;;
    etcd3) start_etcd_three "$dir" ;;
  esac
  case "$system" in
    fencer1 | fencer3)
      run_bench "$out" "$dir/bench.err" java -jar "$JAR" bench store --server "$servers" --store "$servers" \
        --writers "$writers" --scopes "$scopes" --value-bytes "$value_bytes" --warmup "${warmup}s" \
        --duration "${duration}s" --json || status=$?
      ;;
    etcd3)
      run_bench "$out" "$dir/bench.err" java -cp "$(compare_classpath)" io.fencer.compare.EtcdFencedWrites \
        --endpoints "$servers" --writers "$writers" --scopes "$scopes" --value-bytes "$value_bytes" \
        --warmup "${warmup}s" --duration "${duration}s" --json || status=$?
      ;;
  esac
  stop_pids "${figure_pids[@]}"
  local kept=() pid
  for pid in "${pids[@]}"; do [[ " ${figure_pids[*]} " == *" $pid "* ]] || kept+=("$pid"); done
  pids=(${kept[@]+"${kept[@]}"})
  if ((status != 0)); then
    say "$system failed (exit $status): $(tail -n 5 "$dir/bench.err")"
    exit 1
  fi
  rm -rf "$dir"
}

install_etcd
case "$(etcd --version 2>/dev/null | head -n 1)" in
  *" 3.4."*) ;;
  *) say "expected etcd 3.4, found: $(etcd --version 2>&1 | head -n 1)" ;;
esac
build
mkdir -p "$WORK/results"
for ((round = 1; round <= rounds; round++)); do
  for workload in own one; do
    for system in fencer1 fencer3 etcd3; do
      figure "$round" "$workload" "$system"
    done
  done
done
if [ -n "$results" ]; then mkdir -p "$results" && cp "$WORK"/results/*.json "$results"/; fi
echo "Fenced writes: $writers writers, $value_bytes-byte values, ${warmup} s warm-up, ${duration} s measured," \
  "$rounds round(s); $(etcd --version 2>/dev/null | head -n 1), fsync on everywhere."
echo
java -cp "$(compare_classpath)" io.fencer.compare.ComparisonTable "$WORK/results"
