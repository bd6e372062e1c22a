#!/usr/bin/env bash
# The sandbox's cost: `kule exec T -- /usr/bin/true` against `/usr/bin/true`
# alone and against bubblewrap with the same namespaces (`bwrap --unshare-all
# --ro-bind / / /usr/bin/true`): the same program on every side, by its path,
# so that no side runs a shell's builtin `true` and saves a process; interleaved on the same machine, median of N (default 50) runs.
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
# Besides the wall times it prints each side's CPU (user+sys of the
# process and everything it started, from the shell's `times`), the mean
# over the N runs: on a shared machine CPU moves less with the load than
# wall time does. The clock and the CPU are read without starting a
# process, so that the script's own forks are not counted to either side.
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

[ -n "${EPOCHREALTIME:-}" ] || { echo "needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }
# now sets T_NS to the clock in nanoseconds; cpu sets C_MS to the CPU of
# the shell's children so far, in milliseconds (times prints 0m1.234s).
now() { T_NS=$((${EPOCHREALTIME/./} * 1000)); }
ctimes=$work/times
cpu() {
  local u s m
  times >"$ctimes"
  { read -r _; read -r u s; } <"$ctimes"
  C_MS=0
  for m in "$u" "$s"; do
    m=${m%s}
    local sec=${m#*m}
    C_MS=$((C_MS + 10#${m%%m*} * 60000 + 10#${sec%.*} * 1000 + 10#${sec#*.}))
  done
}
declare -A C # C[build,mode] = the CPU of all its runs, in ms
CB=0 CP=0
true_bin=$(command -v true)
modes=("" "--no-network" "--no-sandbox" "--no-sandbox --no-network")
declare -A M # M[build,mode] = the times, one word each
declare -a B P
for ((i = 0; i < N; i++)); do
  for ((j = 0; j < ${#builds[@]}; j++)); do
    b=$(((j + i) % ${#builds[@]})) # each build goes first in turn
    for ((m = 0; m < ${#modes[@]}; m++)); do
      # shellcheck disable=SC2086 # the mode is words
      cpu; c0=$C_MS; now; t0=$T_NS
      "${builds[b]}" exec "$T" ${modes[m]} -- "$true_bin" >/dev/null 2>"$work/err" || { echo "${builds[b]} exec $T ${modes[m]} -- true failed:" >&2; cat "$work/err" >&2; exit 1; }
      now; t1=$T_NS; cpu
      M[$b,$m]+="$((t1 - t0)) "
      C[$b,$m]=$((${C[$b,$m]:-0} + C_MS - c0))
    done
  done
  cpu; c0=$C_MS; now; t0=$T_NS; bwrap --unshare-all --ro-bind / / "$true_bin"
  now; t1=$T_NS; cpu; c1=$C_MS; "$true_bin"
  now; t2=$T_NS; cpu
  B+=($((t1 - t0))); P+=($((t2 - t1)))
  CB=$((CB + c1 - c0)); CP=$((CP + C_MS - c1))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# pairdiff A B: the per-run differences A[i] - B[i] of two lists of times
# measured in the same loop turn (the load moves less within a turn).
pairdiff() { paste <(tr ' ' '\n' <<<"$1" | sed '/^$/d') <(tr ' ' '\n' <<<"$2" | sed '/^$/d') | awk '{print $1 - $2}'; }
b=$(median "${B[@]}"); p=$(median "${P[@]}")
bo=$(median $(pairdiff "${B[*]}" "${P[*]}"))
printf 'median of %d runs on %s, %s cores, load %s\n' "$N" "$(uname -n)" "$(nproc)" "$(cut -d" " -f1 /proc/loadavg)"
awk -v b="$b" -v p="$p" -v bo="$bo" -v cb="$CB" -v cp="$CP" -v n="$N" 'BEGIN {
  printf "  true alone:                                    %8.2f ms, CPU %.2f ms\n", p / 1e6, cp / n
  printf "  bwrap --unshare-all --ro-bind / /:             %8.2f ms, CPU %.2f ms (its own cost, run by run: %.2f ms)\n", b / 1e6, cb / n, bo / 1e6
}'
for ((i = 0; i < ${#builds[@]}; i++)); do
  # shellcheck disable=SC2086
  k=$(median ${M[$i,0]}); kn=$(median ${M[$i,1]}); d=$(median ${M[$i,2]}); dn=$(median ${M[$i,3]})
  # The own costs as medians of the differences within each loop turn.
  ko=$(median $(pairdiff "${M[$i,0]}" "${M[$i,2]}")); kno=$(median $(pairdiff "${M[$i,1]}" "${M[$i,3]}"))
  net=$(median $(pairdiff "${M[$i,0]}" "${M[$i,1]}"))
  awk -v k="$k" -v kn="$kn" -v d="$d" -v dn="$dn" -v b="$b" -v p="$p" -v ko="$ko" -v kno="$kno" -v bo="$bo" -v net="$net" -v name="${builds[i]}" \
    -v ck="${C[$i,0]}" -v ckn="${C[$i,1]}" -v cd="${C[$i,2]}" -v cdn="${C[$i,3]}" -v cb="$CB" -v n="$N" 'BEGIN {
    printf "  %s\n", name
    printf "    kule exec T -- true (with its scan):         %8.2f ms, CPU %.2f ms\n", k / 1e6, ck / n
    printf "    kule exec T --no-network -- true:            %8.2f ms, CPU %.2f ms\n", kn / 1e6, ckn / n
    printf "    kule exec T --no-sandbox -- true:            %8.2f ms, CPU %.2f ms\n", d / 1e6, cd / n
    printf "    kule exec T --no-sandbox --no-network -- true: %6.2f ms, CPU %.2f ms\n", dn / 1e6, cdn / n
    printf "    kule exec / bwrap: %.2f (CPU %.2f)   kule exec / true: %.2f   bwrap / true: %.2f\n", k / b, (cb > 0 ? ck / cb : 0), k / p, b / p
    printf "    the network path in the sandbox (exec minus --no-network, run by run): %.2f ms\n", net / 1e6
    printf "    own cost, run by run: sandbox %.2f ms (--no-network %.2f ms), bwrap %.2f ms: sandbox / bwrap %.2f (--no-network %.2f)\n", ko / 1e6, kno / 1e6, bo / 1e6, ko / bo, kno / bo
    printf "    (from the medians: sandbox %.2f ms (--no-network %.2f ms), bwrap %.2f ms: %.2f (--no-network %.2f))\n", (k - d) / 1e6, (kn - dn) / 1e6, (b - p) / 1e6, (k - d) / (b - p), (kn - dn) / (b - p)
  }'
done
