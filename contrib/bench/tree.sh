#!/usr/bin/env bash
# Benchmark: kule new against cp -a --reflink=auto, and kule status (10
# changed files) against git status, on a tree of 100,000 small files in
# 1,000 directories. Prints medians and ratios. Usage:
#   KULE=bin/kule [NEW_RUNS=n] contrib/bench/tree.sh [files] [runs]
# (NEW_RUNS: how many kule new / cp rounds, default runs.)
set -euo pipefail
KULE=${KULE:-kule}
FILES=${1:-100000}
RUNS=${2:-5}
DIRS=$(( FILES / 100 ))
work=$(mktemp -d "${BENCH_DIR:-/tmp}/kule-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export KULE_HOME="$work/home"

echo "building $FILES files in $DIRS directories under $work" >&2
python3 - "$work/tree" "$FILES" "$DIRS" <<'PY'
import os, sys, random
root, files, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(1)
for d in range(dirs):
    p = os.path.join(root, f"d{d:04d}")
    os.makedirs(p, exist_ok=True)
    for f in range(files // dirs):
        with open(os.path.join(p, f"f{f:03d}.txt"), "w") as fh:
            fh.write(("line %d of %d/%d\n" % (random.randint(0, 1 << 30), d, f)) * random.randint(1, 40))
PY
# gc.auto=0: a background gc would pack objects while cp and kule copy them;
# pack once, as a real repository is.
(cd "$work/tree" && git init -q && git config gc.auto 0 && git add -A && git -c user.email=b@b -c user.name=b commit -qm tree && git gc -q)

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

new_t=(); cp_t=()
for i in $(seq "${NEW_RUNS:-$RUNS}"); do
  rm -rf "$work/cp" "$KULE_HOME"; sync
  s=$(now); cp -a --reflink=auto "$work/tree" "$work/cp"; e=$(now); cp_t+=("$(echo "$e - $s" | bc)")
  rm -rf "$work/cp"; sync
  s=$(now); "$KULE" new "$work/tree" >/dev/null; e=$(now); new_t+=("$(echo "$e - $s" | bc)")
done
id=$("$KULE" list --json | sed -n 's/.*"id": "\([0-9a-f]\{8\}\)".*/\1/p' | head -n1)
copy="$KULE_HOME/tasks/$id/copy"
for d in $(seq 0 9); do echo changed >> "$copy/d000$d/f001.txt"; echo changed >> "$work/tree/d000$d/f001.txt"; done
# warm both once, as a person's second status would be
git -C "$work/tree" status --porcelain >/dev/null; "$KULE" status "$id" >/dev/null
# Three timings per run, interleaved so that load from others hits all alike:
# git status; kule status as a person repeats it (the names of files whose
# bytes did not change come from the task's summary, so no differ starts);
# and kule status right after a kule exec that changed the 10 files again
# (not timed): their names are new, so the differ process starts and names
# them.
st_t=(); git_t=(); cold_t=()
for i in $(seq "$RUNS"); do
  s=$(now); git -C "$work/tree" status --porcelain >/dev/null; e=$(now); git_t+=("$(echo "$e - $s" | bc)")
  s=$(now); "$KULE" status "$id" >/dev/null; e=$(now); st_t+=("$(echo "$e - $s" | bc)")
  "$KULE" exec "$id" -- sh -c 'for d in 0 1 2 3 4 5 6 7 8 9; do echo "run '"$i"'" >> d000$d/f001.txt; done' >/dev/null 2>&1
  s=$(now); "$KULE" status "$id" >/dev/null; e=$(now); cold_t+=("$(echo "$e - $s" | bc)")
done
"$KULE" status "$id" > "$work/status.txt"; sed -n 2p "$work/status.txt"
grep -q "by hand in the folder" "$work/status.txt" || { echo "kule status did not report the person's edits meeting the task" >&2; exit 1; }

m_new=$(printf '%s\n' "${new_t[@]}" | median); m_cp=$(printf '%s\n' "${cp_t[@]}" | median)
m_st=$(printf '%s\n' "${st_t[@]}" | median); m_git=$(printf '%s\n' "${git_t[@]}" | median)
m_cold=$(printf '%s\n' "${cold_t[@]}" | median)
printf '%-34s %8.3f s\n' "cp -a --reflink=auto (median)" "$m_cp" "kule new (median)" "$m_new"
printf '%-34s %8.2f×  (goal ≤ 1.2)\n' "kule new / cp" "$(echo "$m_new / $m_cp" | bc -l)"
printf '%-34s %8.3f s\n' "git status (median)" "$m_git" "kule status (median)" "$m_st"
printf '%-34s %8.3f s\n' "kule status after exec (median)" "$m_cold"
printf '%-34s %8.2f×  (goal ≤ 1.0)\n' "kule status / git status" "$(echo "$m_st / $m_git" | bc -l)"
printf '%-34s %8.2f×\n' "kule status after exec / git" "$(echo "$m_cold / $m_git" | bc -l)"
echo "load: $(uptime)"
