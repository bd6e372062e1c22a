#!/usr/bin/env bash
# Benchmark: kule new of a folder of large files against cp -a of the same
# folder, on the same file system, interleaved (each first in turn), each
# started after a sync so neither waits on the other's write-back. Also
# prints the CPU time kule new took (user + system), which the shared
# machine's disk does not blur. Usage:
#   KULE=bin/kule contrib/bench/newlarge.sh [files] [MiB each] [runs]
set -euo pipefail
KULE=${KULE:-kule}
FILES=${1:-5}
MIB=${2:-200}
RUNS=${3:-3}
work=$(mktemp -d "${BENCH_DIR:-/tmp}/kule-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export KULE_HOME="$work/home"
mkdir -p "$work/src"
for i in $(seq "$FILES"); do head -c "${MIB}M" /dev/urandom > "$work/src/f$i.bin"; done
sync
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
cp_t=(); new_t=(); cpu_t=()
time_cp() { sync; s=$(now); cp -a "$work/src" "$work/cp"; e=$(now); cp_t+=("$(echo "$e - $s" | bc)"); rm -rf "$work/cp"; }
time_new() {
  sync; s=$(now)
  local TIMEFORMAT='%U %S'
  { time "$KULE" new "$work/src" >/dev/null; } 2>"$work/cpu"
  cpu=$(tail -n1 "$work/cpu" | awk '{print $1 + $2}')
  e=$(now); new_t+=("$(echo "$e - $s" | bc)"); cpu_t+=("$cpu"); rm -rf "$KULE_HOME"
}
for i in $(seq "$RUNS"); do
  if ((i % 2)); then time_cp; time_new; else time_new; time_cp; fi
done
echo "cp rounds: ${cp_t[*]}; kule new rounds: ${new_t[*]}; kule new CPU: ${cpu_t[*]}"
m_cp=$(printf '%s\n' "${cp_t[@]}" | median); m_new=$(printf '%s\n' "${new_t[@]}" | median)
m_cpu=$(printf '%s\n' "${cpu_t[@]}" | median)
printf '%-28s %8.3f s\n' "cp -a (median)" "$m_cp" "kule new (median)" "$m_new" "kule new CPU (median)" "$m_cpu"
printf '%-28s %8.2f×  (goal ≤ 1.0)\n' "kule new / cp -a" "$(echo "$m_new / $m_cp" | bc -l)"
echo "$FILES files of $MIB MiB; load: $(uptime)"
