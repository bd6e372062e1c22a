#!/usr/bin/env bash
# Benchmark: kule commit of CHANGED modified files in a tree of FILES small
# files, against copying the same files into the folder with an fsync each
# (what a commit must do at the least), and kule undo of that commit against
# the commit itself. The whole commands a person types are timed. Prints
# medians and ratios. Usage:
#   KULE=bin/kule [PROFILE=dir] contrib/bench/commit.sh [files] [changed] [runs]
# (PROFILE: write the CPU profiles of the last round's commit and undo there.)
set -euo pipefail
KULE=${KULE:-kule}
FILES=${1:-100000}
CHANGED=${2:-500}
RUNS=${3:-3}
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

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# the changed files: one in each of the first CHANGED directories, wrapping
changed=()
for i in $(seq 0 $((CHANGED - 1))); do
  changed+=("$(printf 'd%04d/f%03d.txt' $((i % DIRS)) $((i / DIRS)))")
done
printf '%s\n' "${changed[@]}" > "$work/changed.txt"

"$KULE" new "$work/tree" >/dev/null
id=$("$KULE" list --json | sed -n 's/.*"id": "\([0-9a-f]\{8\}\)".*/\1/p' | head -n1)
copy="$KULE_HOME/tasks/$id/copy"

# The peer: the same bytes written over the same files, each by a temp file,
# fsync and rename (python, one process for all, as kule is), then one fsync
# per directory.
mkdir -p "$work/staged"
peer() {
  python3 - "$work/tree" "$work/staged" "$work/changed.txt" <<'PY'
import os, sys
tree, staged, lst = sys.argv[1:4]
dirs = set()
for rel in open(lst).read().split():
    data = open(os.path.join(staged, rel.replace("/", "_")), "rb").read()
    dst = os.path.join(tree, rel)
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, dst)
    dirs.add(os.path.dirname(dst))
for d in dirs:
    fd = os.open(d, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
PY
}

prof() {
  local name=$1; shift
  if [ -n "${PROFILE:-}" ]; then KULE_CPUPROFILE="$PROFILE/$name.pprof" "$@"; else "$@"; fi
}
commit_t=(); undo_t=(); peer_t=()
for r in $(seq "$RUNS"); do
  # the task changes the files (not timed)
  for rel in "${changed[@]}"; do echo "run $r" >> "$copy/$rel"; done
  "$KULE" status "$id" >/dev/null
  sync
  s=$(now); prof commit "$KULE" commit "$id" >/dev/null; e=$(now); commit_t+=("$(echo "$e - $s" | bc)")
  for rel in "${changed[@]}"; do cp "$work/tree/$rel" "$work/staged/${rel//\//_}"; done
  sync
  s=$(now); prof undo "$KULE" undo "$id" >/dev/null; e=$(now); undo_t+=("$(echo "$e - $s" | bc)")
  sync
  # the same writes, by the peer, then put back so the next round starts alike
  s=$(now); peer; e=$(now); peer_t+=("$(echo "$e - $s" | bc)")
  (cd "$work/tree" && for rel in "${changed[@]}"; do cp "$copy/$rel" "$rel"; done)
done
echo "commit rounds: ${commit_t[*]}; undo rounds: ${undo_t[*]}; peer rounds: ${peer_t[*]}"
m_c=$(printf '%s\n' "${commit_t[@]}" | median); m_u=$(printf '%s\n' "${undo_t[@]}" | median)
m_p=$(printf '%s\n' "${peer_t[@]}" | median)
printf '%-40s %8.3f s\n' "copy $CHANGED files with fsyncs (median)" "$m_p" "kule commit (median)" "$m_c" "kule undo (median)" "$m_u"
printf '%-40s %8.2f×  (goal ≤ 3)\n' "kule commit / copy with fsyncs" "$(echo "$m_c / $m_p" | bc -l)"
printf '%-40s %8.2f×  (goal ≤ 1.5)\n' "kule undo / kule commit" "$(echo "$m_u / $m_c" | bc -l)"
echo "tree: $FILES files; changed: $CHANGED; load: $(uptime)"
