#!/usr/bin/env bash
# Downloads through the task's proxy: `curl -o /dev/null` of a file of MIB
# MiB (default 200) from a server on the host's loopback, direct on the host
# (the peer) and inside `kule exec T --allow-host 127.0.0.1:PORT -- curl ...`,
# for plain HTTP and for HTTPS, in one loop of RUNS rounds (default 5), the
# downloads of a round in a rotating order so that the machine's load
# falls on each side alike. Medians and ratios are printed.
#
# `kule exec --no-sandbox` is measured too: the proxy alone, curl told of it
# by HTTP_PROXY, without the sandbox's bridge; the difference is the
# bridge's (the helper's hand-over of each connection).
#
# Two figures for the kule side: the whole command a person types (kule's
# start, the sandbox, the proxy, the scan of the copy afterwards) and the
# transfer alone, from curl's own -w '%{time_total} %{speed_download}' inside
# the sandbox, so that the sandbox's start is kept apart from the proxy's
# throughput.
#
# What each path crosses inside kule exec: the sandbox has its own network
# namespace, whose 127.0.0.1:PORT the helper hands, connection by connection,
# to kule, which hands it to the task's proxy in the same process. Plain
# HTTP is read and forwarded request by request by the proxy (logged,
# secrets put in and blanked, registries read-only); HTTPS to 127.0.0.1 is a
# CONNECT tunnel, bytes passed as they are (the run's authority signs no
# certificate for an address, so nothing is intercepted), and curl checks
# the server's certificate itself: it is told the test server's certificate
# with --cacert, a file in the task's copy (the sandbox's working
# directory). The proxy has no setting to trust another authority for a
# host it intercepts, and this script adds none: an intercepted download
# is measured by the Go benchmark `go test -run XXX -bench Download100MB
# ./kernel/internal/proxy` instead.
#
# The servers are Python's http.server with the body sent in 1 MiB pieces
# (sendfile(2) for plain HTTP), threaded, the same for both sides.
#
# KULE_BEFORE=path/to/another/kule measures a second build in the same loop
# (its downloads among the others of each round, on the same task), so that
# a change is judged against its own before on a machine whose load moves.
# Put kule-sandbox beside each kule (`make build` does).
#
#   KULE=bin/kule [KULE_BEFORE=old/kule] bash contrib/bench/proxy.sh [MIB] [RUNS]
set -euo pipefail
MIB=${1:-200}
RUNS=${2:-5}
KULE=${KULE:-kule}
abs() { realpath "$(command -v "$1" || echo "$1")"; }
KULE=$(abs "$KULE")
declare -A BIN=([kule]=$KULE)
[ -n "${KULE_BEFORE:-}" ] && BIN[before]=$(abs "$KULE_BEFORE")
for tool in curl python3 openssl; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 1; }
done
[ -n "${EPOCHREALTIME:-}" ] || { echo "needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }
work=$(mktemp -d "${BENCH_DIR:-/tmp}/kule-bench.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work" || true
}
trap cleanup EXIT
export HOME="$work/home" KULE_HOME="$work/home/.kule"
proj=$work/home/proj
mkdir -p "$proj" "$work/srv"
echo hello >"$proj/a.txt"
head -c "${MIB}M" /dev/urandom >"$work/srv/file.bin"
size=$((MIB << 20))
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/srv/key.pem" -out "$proj/cert.pem" 2>/dev/null

cat >"$work/srv/serve.py" <<'EOF'
import http.server, os, ssl, sys
path, portfile, cert, key = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
size = os.path.getsize(path)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        with open(path, "rb") as f:
            if cert:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    self.wfile.write(b)
            else:
                self.wfile.flush()
                self.connection.sendfile(f)
    def log_message(self, *a):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
EOF
python3 "$work/srv/serve.py" "$work/srv/file.bin" "$work/srv/http.port" "" "" &
pids+=($!)
python3 "$work/srv/serve.py" "$work/srv/file.bin" "$work/srv/https.port" "$proj/cert.pem" "$work/srv/key.pem" &
pids+=($!)
for _ in $(seq 100); do
  [ -s "$work/srv/http.port" ] && [ -s "$work/srv/https.port" ] && break
  sleep 0.05
done
[ -s "$work/srv/http.port" ] && [ -s "$work/srv/https.port" ] || { echo "the test servers did not start" >&2; exit 1; }
hp=$(cat "$work/srv/http.port") sp=$(cat "$work/srv/https.port")
declare -A url=([http]="http://127.0.0.1:$hp/file.bin" [https]="https://127.0.0.1:$sp/file.bin")
declare -A port=([http]=$hp [https]=$sp)

cd "$proj"
"$KULE" new . >/dev/null
T=$("$KULE" list | grep -oE '^[0-9a-f]{8}' | head -1)

# curl's own figures: the transfer's seconds and bytes per second, and the
# size, which must be the whole file.
fmt='%{time_total} %{speed_download} %{size_download}\n'
now() { T_NS=$((${EPOCHREALTIME/./} * 1000)); }
declare -A WALL XFER SPEED # [side,scheme] = one word per round
check() { # check OUT: curl's line, the whole file
  local got
  read -r _ _ got <<<"$1"
  [ "$got" = "$size" ] || { echo "a download was $got bytes, not $size: $1" >&2; cat "$work/err" >&2; exit 1; }
}
run() { # run SIDE SCHEME
  local side=$1 scheme=$2 out t0
  now; t0=$T_NS
  if [ "$side" = direct ]; then
    out=$(curl -sS --fail --cacert "$proj/cert.pem" -o /dev/null -w "$fmt" "${url[$scheme]}" 2>"$work/err") ||
      { echo "direct curl ${url[$scheme]} failed:" >&2; cat "$work/err" >&2; exit 1; }
  else
    local bin=${BIN[$side]:-$KULE} how=()
    [ "$side" = nosandbox ] && how=(--no-sandbox)
    out=$("$bin" exec "$T" "${how[@]}" --allow-host "127.0.0.1:${port[$scheme]}" -- \
      curl -sS --fail --cacert cert.pem -o /dev/null -w "$fmt" "${url[$scheme]}" 2>"$work/err") ||
      { echo "kule exec $T -- curl ${url[$scheme]} failed:" >&2; cat "$work/err" >&2; exit 1; }
    out=$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+$' <<<"$out" | tail -n1)
  fi
  now
  check "$out"
  local t s
  read -r t s _ <<<"$out"
  WALL[$side,$scheme]+="$(((T_NS - t0) / 1000)) " # µs
  XFER[$side,$scheme]+="$t "
  SPEED[$side,$scheme]+="$s "
}
legs=("direct http" "kule http" "nosandbox http" "direct https" "kule https" "nosandbox https")
[ -n "${BIN[before]:-}" ] && legs+=("before http" "before https")
# One round unmeasured, so that neither side pays the page cache's first read.
for leg in "${legs[@]}"; do
  # shellcheck disable=SC2086 # the leg is two words
  run $leg
done
unset WALL XFER SPEED
declare -A WALL XFER SPEED
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < RUNS; i++)); do
  for ((k = 0; k < ${#legs[@]}; k++)); do
    # shellcheck disable=SC2086
    run ${legs[(i + k) % ${#legs[@]}]}
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# ratios A B: the per-round ratios A[i] / B[i] of two lists measured in the
# same round (the load moves less within a round), one a line.
ratios() { paste <(tr ' ' '\n' <<<"$1" | sed '/^$/d') <(tr ' ' '\n' <<<"$2" | sed '/^$/d') | awk '{print $1 / $2}' | tr '\n' ' '; }
printf 'a %d MiB download, median of %d rounds on %s, %s cores (load before: %s)\n' "$MIB" "$RUNS" "$(uname -n)" "$(nproc)" "$load0"
sides=(kule nosandbox)
[ -n "${BIN[before]:-}" ] && sides+=(before)
for scheme in http https; do
  dw=$(median "${WALL[direct,$scheme]}") dx=$(median "${XFER[direct,$scheme]}") ds=$(median "${SPEED[direct,$scheme]}")
  awk -v s="$scheme" -v dw="$dw" -v dx="$dx" -v ds="$ds" 'BEGIN {
    printf "  %s\n", (s == "http" ? "plain HTTP (forwarded by the proxy)" : "HTTPS (the CONNECT tunnel)")
    printf "    direct curl:                  %8.3f s whole, %8.3f s transfer, %7.0f MB/s\n", dw / 1e6, dx, ds / 1e6
  }'
  for side in "${sides[@]}"; do
    kw=$(median "${WALL[$side,$scheme]}") kx=$(median "${XFER[$side,$scheme]}") ks=$(median "${SPEED[$side,$scheme]}")
    rx=$(median "$(ratios "${XFER[$side,$scheme]}" "${XFER[direct,$scheme]}")")
    label="curl inside kule exec"
    [ "$side" = nosandbox ] && label="kule exec --no-sandbox"
    awk -v label="$label" -v name="${BIN[$side]:-$KULE}" -v dw="$dw" -v kw="$kw" -v dx="$dx" -v kx="$kx" -v ds="$ds" -v ks="$ks" -v rx="$rx" 'BEGIN {
      printf "    %-30s%8.3f s whole, %8.3f s transfer, %7.0f MB/s  (%s)\n", label ":", kw / 1e6, kx, ks / 1e6, name
      printf "      kule / direct: whole command %.2f× the time; transfer %.2f× the time (round by round %.2f×), %.2f of the throughput\n", kw / dw, kx / dx, rx, ks / ds
    }'
  done
done
echo "goals: plain HTTP within 1.2× of direct's time, HTTPS at ≥ 0.95 of direct's throughput"
for leg in "${legs[@]}"; do
  # shellcheck disable=SC2086
  set -- $leg
  echo "  transfer seconds, $1 $2: ${XFER[$1,$2]}"
done
echo "load: $(uptime)"
