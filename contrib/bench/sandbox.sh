#!/usr/bin/env bash
# The sandbox's cost: `kule exec T -- true` against `true` alone and against
# bubblewrap with the same namespaces (`bwrap --unshare-all --ro-bind / /
# true`), interleaved on the same machine, median of N (default 50) runs.
# kule exec also starts kule, takes the task lock, starts the task's proxy and
# scans the copy for effects afterwards (the sample folder is one small file
# so that the scan stays small); `kule exec --no-sandbox T -- true` does all
# of that without the sandbox, so the sandbox's own cost is the difference,
# set against bubblewrap's own (bwrap minus true). `--no-network` is
# measured too (no proxy, no bridge), against `--no-sandbox --no-network`
# (no proxy either: --no-sandbox alone still starts the proxy, so taking it
# as the baseline of --no-network would subtract the proxy's start). Put kule-sandbox beside kule (`make
# build` does) or kule re-executes itself as the helper. The Go benchmark
# `go test -run XXX -bench BenchmarkSetup ./kernel/internal/sandbox` measures the
# runner alone (no scan, no task lock, no kule start).
#
# KULE_BEFORE=path/to/another/kule measures a second build in the same loop
# (interleaved, each first in turn, same task), so a change is judged against
# its own before on a machine whose load moves. Build both the same way (`go
# build`, not a `cp` of a binary): a copied 46 MB binary sits differently in
# the page cache and took ~600 more page faults (~3 ms) per start here.
#
#   KULE=bin/kule [KULE_BEFORE=old/kule] bash contrib/bench/sandbox.sh [N]
set -euo pipefail
N=${1:-50}
KULE=${KULE:-kule}
command -v bwrap >/dev/null || { echo "bwrap not installed (apt-get install -y bubblewrap)" >&2; exit 1; }
abs() { realpath "$(command -v "$1" || echo "$1")"; }
KULE=$(abs "$KULE")
builds=("$KULE")
[ -n "${KULE_BEFORE:-}" ] && builds+=("$(abs "$KULE_BEFORE")")
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
modes=("" "--no-network" "--no-sandbox" "--no-sandbox --no-network")
declare -A M # M[build,mode] = the times, one word each
declare -a B P
for ((i = 0; i < N; i++)); do
  for ((j = 0; j < ${#builds[@]}; j++)); do
    b=$(((j + i) % ${#builds[@]})) # each build goes first in turn
    for ((m = 0; m < ${#modes[@]}; m++)); do
      # shellcheck disable=SC2086 # the mode is words
      t0=$(now)
      "${builds[b]}" exec "$T" ${modes[m]} -- true >/dev/null 2>"$work/err" || { echo "${builds[b]} exec $T ${modes[m]} -- true failed:" >&2; cat "$work/err" >&2; exit 1; }
      t1=$(now)
      M[$b,$m]+="$((t1 - t0)) "
    done
  done
  t0=$(now); bwrap --unshare-all --ro-bind / / true
  t1=$(now); "$true_bin"
  t2=$(now)
  B+=($((t1 - t0))); P+=($((t2 - t1)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# pairdiff A B: the per-run differences A[i] - B[i] of two lists of times
# measured in the same loop turn (the load moves less within a turn).
pairdiff() { paste <(tr ' ' '\n' <<<"$1" | sed '/^$/d') <(tr ' ' '\n' <<<"$2" | sed '/^$/d') | awk '{print $1 - $2}'; }
b=$(median "${B[@]}"); p=$(median "${P[@]}")
bo=$(median $(pairdiff "${B[*]}" "${P[*]}"))
printf 'median of %d runs on %s, %s cores, load %s\n' "$N" "$(uname -n)" "$(nproc)" "$(cut -d" " -f1 /proc/loadavg)"
awk -v b="$b" -v p="$p" -v bo="$bo" 'BEGIN {
  printf "  true alone:                                    %8.2f ms\n", p / 1e6
  printf "  bwrap --unshare-all --ro-bind / /:             %8.2f ms (its own cost, run by run: %.2f ms)\n", b / 1e6, bo / 1e6
}'
for ((i = 0; i < ${#builds[@]}; i++)); do
  # shellcheck disable=SC2086
  k=$(median ${M[$i,0]}); kn=$(median ${M[$i,1]}); d=$(median ${M[$i,2]}); dn=$(median ${M[$i,3]})
  # The own costs as medians of the differences within each loop turn.
  ko=$(median $(pairdiff "${M[$i,0]}" "${M[$i,2]}")); kno=$(median $(pairdiff "${M[$i,1]}" "${M[$i,3]}"))
  net=$(median $(pairdiff "${M[$i,0]}" "${M[$i,1]}"))
  awk -v k="$k" -v kn="$kn" -v d="$d" -v dn="$dn" -v b="$b" -v p="$p" -v ko="$ko" -v kno="$kno" -v bo="$bo" -v net="$net" -v name="${builds[i]}" 'BEGIN {
    printf "  %s\n", name
    printf "    kule exec T -- true (with its scan):         %8.2f ms\n", k / 1e6
    printf "    kule exec T --no-network -- true:            %8.2f ms\n", kn / 1e6
    printf "    kule exec T --no-sandbox -- true:            %8.2f ms\n", d / 1e6
    printf "    kule exec T --no-sandbox --no-network -- true: %6.2f ms\n", dn / 1e6
    printf "    kule exec / bwrap: %.2f   kule exec / true: %.2f   bwrap / true: %.2f\n", k / b, k / p, b / p
    printf "    the network path in the sandbox (exec minus --no-network, run by run): %.2f ms\n", net / 1e6
    printf "    own cost, run by run: sandbox %.2f ms (--no-network %.2f ms), bwrap %.2f ms: sandbox / bwrap %.2f (--no-network %.2f)\n", ko / 1e6, kno / 1e6, bo / 1e6, ko / bo, kno / bo
    printf "    (from the medians: sandbox %.2f ms (--no-network %.2f ms), bwrap %.2f ms: %.2f (--no-network %.2f))\n", (k - d) / 1e6, (kn - dn) / 1e6, (b - p) / 1e6, (k - d) / (b - p), (kn - dn) / (b - p)
  }'
done
