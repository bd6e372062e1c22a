#!/usr/bin/env bash
# Benchmark: kule new against cp -a --reflink=auto, and kule status (10
# changed files) against git status, on a tree of 100,000 small files in
# 1,000 directories. Prints medians and ratios. Usage:
#   KULE=bin/kule [NEW_RUNS=n] [SETTLE=0] [FRESH=1] contrib/bench/tree.sh [files] [runs]
# (NEW_RUNS: how many kule new / cp rounds, default runs; SETTLE: see
# settle; FRESH: see fresh.)
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

# settle waits until the kernel has written back what earlier rounds left
# (the deleted copies too): with SETTLE=1 (the default) each copy starts on
# a quiet disk, from a tree in the page cache, so both measure their own
# work; SETTLE=0 times them while the last round's write-back is under way,
# where cp's time swings between 5 s and 60 s here.
settle() {
  sync
  [ "${SETTLE:-1}" = 1 ] || return 0
  for _ in $(seq 600); do
    kb=$(awk '/^(Dirty|Writeback):/ {s += $2} END {print s}' /proc/meminfo)
    [ "$kb" -lt 16384 ] && break
    sleep 0.1
  done
  find "$work/tree" -type f -exec cat {} + >/dev/null # the tree in the page cache, for both
}
# fresh (FRESH=1, root): each copy goes to an ext4 made for it, on a loop
# device, so that neither meets inodes another copy just freed: the fairest
# measure of the two copies' own work.
fs="$work/fs"
fresh() {
  [ "${FRESH:-0}" = 1 ] || return 0
  if mountpoint -q "$fs" 2>/dev/null; then umount "$fs"; fi
  rm -f "$work/fs.img"; truncate -s 4G "$work/fs.img"
  mkfs.ext4 -q -F "$work/fs.img" && mkdir -p "$fs" && mount -o loop "$work/fs.img" "$fs"
}
# The trap runs under set -e too: an umount of what is not mounted must not
# end it before the rm (that left the 4 GB image and the tree behind).
cleanup() {
  if mountpoint -q "$fs" 2>/dev/null; then umount "$fs" || umount -l "$fs" || true; fi
  rm -rf "$work" || true
}
trap cleanup EXIT
time_cp() {
  local dst="$work/cp"
  rm -rf "$dst"; fresh; [ "${FRESH:-0}" = 1 ] && dst="$fs/cp"; settle
  s=$(now); cp -a --reflink=auto "$work/tree" "$dst"; e=$(now); cp_t+=("$(echo "$e - $s" | bc)")
  rm -rf "$dst"
}
time_new() {
  rm -rf "$KULE_HOME"; fresh; [ "${FRESH:-0}" = 1 ] && export KULE_HOME="$fs/home"; settle
  s=$(now); "$KULE" new "$work/tree" >/dev/null; e=$(now); new_t+=("$(echo "$e - $s" | bc)")
}
# Each goes first in turn: only the very first copy is made where no
# earlier copy was just deleted (after one, ext4 searches past the inodes it
# freed for each new file: a later cp took 5 to 8 times as long here).
new_t=(); cp_t=()
for i in $(seq "${NEW_RUNS:-$RUNS}"); do
  if ((i % 2)); then time_cp; time_new; else time_new; rm -rf "$KULE_HOME"; time_cp; fi
done
echo "cp rounds: ${cp_t[*]}; kule new rounds: ${new_t[*]}"
if [ "${FRESH:-0}" = 1 ]; then
  umount "$fs"; export KULE_HOME="$work/home" # the status rounds beside git's tree
fi
[ -d "$KULE_HOME/tasks" ] || "$KULE" new "$work/tree" >/dev/null # the status rounds need a task
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
