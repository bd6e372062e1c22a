#!/usr/bin/env bash
# Benchmark: how a whole `kule exec T -- /usr/bin/true` grows with the
# folder, per workspace backend, beside bubblewrap running the same
# program with the same namespaces (`bwrap --unshare-all --ro-bind / /
# /usr/bin/true`), which does not grow. The folder has the given number of
# files in directories of 100; each command is timed whole, as a person
# waits for it, and the median of RUNS (default 7) is printed, interleaved
# with bubblewrap's. On the copy backend every command ends with a walk of
# the whole copy; on the overlay backend with a read of what it changed.
# Every tree and home is removed after its row; the clock is read without
# starting a process ($EPOCHREALTIME), so neither side counts a fork of the script.
#
#   KULE=bin/kule [RUNS=n] [BACKENDS="copy overlay"] bash contrib/bench/execgrowth.sh [sizes...]
set -euo pipefail
KULE=$(realpath "$(command -v "${KULE:-kule}")")
RUNS=${RUNS:-7}
read -r -a backends <<<"${BACKENDS:-copy overlay}"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 100000)
command -v bwrap >/dev/null || { echo "bwrap not installed (apt-get install -y bubblewrap)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/kule-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf '%-9s %-9s %12s %12s %8s\n' backend files "kule exec ms" "bwrap ms" ratio
for n in "${sizes[@]}"; do
  rm -rf "$work/tree"
  python3 "$here/maketree.py" "$work/tree" "$n"
  for b in "${backends[@]}"; do
    export KULE_HOME="$work/home" KULE_BACKEND=$b
    rm -rf "$KULE_HOME"
    "$KULE" new --yes "$work/tree" >/dev/null
    id=$("$KULE" list --json | sed -n 's/.*"id": "\([0-9a-f]\{8\}\)".*/\1/p' | head -n1)
    "$KULE" exec "$id" -- /usr/bin/true >/dev/null 2>&1 # warm, and the first status
    kt=(); bt=()
    for _ in $(seq "$RUNS"); do
      s=$EPOCHREALTIME; "$KULE" exec "$id" -- /usr/bin/true >/dev/null 2>&1; e=$EPOCHREALTIME
      kt+=("$(echo "($e - $s) * 1000" | bc -l)")
      s=$EPOCHREALTIME; bwrap --unshare-all --ro-bind / / /usr/bin/true; e=$EPOCHREALTIME
      bt+=("$(echo "($e - $s) * 1000" | bc -l)")
    done
    k=$(printf '%s\n' "${kt[@]}" | median); w=$(printf '%s\n' "${bt[@]}" | median)
    printf '%-9s %-9s %12.1f %12.1f %8.2f\n' "$b" "$n" "$k" "$w" "$(echo "$k / $w" | bc -l)"
    rm -rf "$KULE_HOME"
  done
done
echo "runs: $RUNS; load: $(uptime)"
