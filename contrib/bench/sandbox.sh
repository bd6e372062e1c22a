#!/usr/bin/env bash
# The sandbox's cost: `kule exec T -- true` against `true` alone and against
# bubblewrap with the same namespaces (`bwrap --unshare-all --ro-bind / /
# true`), interleaved on the same machine, median of N (default 50) runs.
# kule exec also starts kule, takes the task lock, starts the task's proxy and
# scans the copy for effects afterwards (the sample folder is one small file
# so that the scan stays small); `kule exec --no-sandbox T -- true` does all
# of that without the sandbox, so the sandbox's own cost is the difference,
# set against bubblewrap's own (bwrap minus true). `--no-network` is
# measured too (no proxy, no bridge). Put kule-sandbox beside kule (`make
# build` does) or kule re-executes itself as the helper. The Go benchmark
# `go test -run XXX -bench BenchmarkSetup ./kernel/sandbox` measures the
# runner alone (no scan, no task lock, no kule start).
#
#   KULE=bin/kule bash contrib/bench/sandbox.sh [N]
set -euo pipefail
N=${1:-50}
KULE=${KULE:-kule}
command -v bwrap >/dev/null || { echo "bwrap not installed (apt-get install -y bubblewrap)" >&2; exit 1; }
KULE=$(command -v "$KULE" || echo "$KULE")
work=$(mktemp -d /var/tmp/kule-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/code/proj"
echo hello > "$work/home/code/proj/a.txt"
export HOME="$work/home" KULE_HOME="$work/home/.kule"
cd "$work/home/code/proj"
"$KULE" new . >/dev/null
T=$("$KULE" list | grep -oE '^[0-9a-f]{8}' | head -1)

now() { date +%s%N; }
true_bin=$(command -v true)
declare -a K KN D B P
for ((i = 0; i < N; i++)); do
  t0=$(now); "$KULE" exec "$T" -- true >/dev/null 2>&1
  t1=$(now); "$KULE" exec "$T" --no-network -- true >/dev/null 2>&1
  t2=$(now); "$KULE" exec "$T" --no-sandbox -- true >/dev/null 2>&1
  t3=$(now); bwrap --unshare-all --ro-bind / / true
  t4=$(now); "$true_bin"
  t5=$(now)
  K+=($((t1 - t0))); KN+=($((t2 - t1))); D+=($((t3 - t2))); B+=($((t4 - t3))); P+=($((t5 - t4)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
k=$(median "${K[@]}"); kn=$(median "${KN[@]}"); d=$(median "${D[@]}"); b=$(median "${B[@]}"); p=$(median "${P[@]}")
awk -v k="$k" -v kn="$kn" -v d="$d" -v b="$b" -v p="$p" -v n="$N" -v host="$(uname -n), $(nproc) cores, load $(cut -d" " -f1 /proc/loadavg)" 'BEGIN {
  printf "median of %d runs on %s\n", n, host
  printf "  true alone:                                 %8.2f ms\n", p / 1e6
  printf "  bwrap --unshare-all --ro-bind / /:          %8.2f ms\n", b / 1e6
  printf "  kule exec T -- true (with its scan):        %8.2f ms\n", k / 1e6
  printf "  kule exec T --no-network -- true:           %8.2f ms\n", kn / 1e6
  printf "  kule exec T --no-sandbox -- true:           %8.2f ms\n", d / 1e6
  printf "  kule exec / bwrap: %.2f   kule exec / true: %.2f   bwrap / true: %.2f\n", k / b, k / p, b / p
  printf "  own cost: sandbox %.2f ms (--no-network %.2f ms), bwrap %.2f ms: sandbox / bwrap %.2f (--no-network %.2f)\n", (k - d) / 1e6, (kn - d) / 1e6, (b - p) / 1e6, (k - d) / (b - p), (kn - d) / (b - p)
}'
