#!/usr/bin/env bash
# Benchmark: how kule status grows with the tree, beside git status with
# core.untrackedCache=true (and the fsmonitor off), on trees of each size
# given (files in directories of 100), 10 files changed in the copy and in
# the git tree alike. Prints, per size, the median time and the largest
# resident memory of each over RUNS rounds, and their ratios. The same
# program runs on both sides of each row; every tree is removed after it.
# Usage:
#   KULE=bin/kule [RUNS=n] [BACKENDS="copy overlay"] contrib/bench/statusgrowth.sh [sizes...]
# (default sizes: 1000 10000 100000; 300000 and 1000000 take minutes to
# build.) BACKENDS lists the workspace backends to make a row for (each
# a task made with KULE_BACKEND set to it; "auto" lets Kule pick); the
# 10 changes are made by one `kule exec`, so on the overlay backend they
# pass through its overlay and fold. BEFORE=path/to/an/older/kule adds its
# `kule status` of a task made with it of the same tree (in a home of its
# own: each reads the manifests it writes), its rounds taken in turn with
# KULE's, and the ratios of the two (after ÷ before).
set -euo pipefail
KULE=${KULE:-kule}
RUNS=${RUNS:-5}
read -r -a backends <<<"${BACKENDS:-auto}"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${BENCH_DIR:-/tmp}/kule-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# measure CMD...: prints "seconds maxrss_kib" of one run of CMD.
measure() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
s = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
e = time.monotonic()
print("%.4f %d" % (e - s, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
PY
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

BEFORE=${BEFORE:-}
if [ -n "$BEFORE" ]; then
  printf '%-9s %-9s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s\n' backend files "git s" "git MiB" "before s" "before MiB" "kule s" "kule MiB" "time ×" "mem ×" "t/before" "m/before"
else
  printf '%-9s %-9s %10s %10s %10s %10s %8s %8s\n' backend files "git s" "git MiB" "kule s" "kule MiB" "time ×" "mem ×"
fi
for n in "${sizes[@]}"; do
  rm -rf "$work/tree" "$work/home" "$work/home-before"
  export KULE_HOME="$work/home"
  python3 "$here/maketree.py" "$work/tree" "$n"
  (cd "$work/tree" && git init -q && git config gc.auto 0 && git config core.untrackedCache true &&
    git config core.fsmonitor false && git add -A && git -c user.email=b@b -c user.name=b commit -qm tree && git gc -q)
  for d in 0 1 2 3 4 5 6 7 8 9; do
    f=$(printf 'd%05d/f%03d.txt' "$d" 1)
    [ -e "$work/tree/$f" ] || f=$(printf 'd00000/f%03d.txt' "$d")
    echo changed >> "$work/tree/$f"
  done
  git -C "$work/tree" status --porcelain >/dev/null # warm
  gt=(); gm=()
  for _ in $(seq "$RUNS"); do
    read -r t m < <(measure git -C "$work/tree" status --porcelain); gt+=("$t"); gm+=("$m")
  done
  git -C "$work/tree" checkout -q -- . # the task is made of the tree as committed
  g=$(printf '%s\n' "${gt[@]}" | median); gmem=$(printf '%s\n' "${gm[@]}" | sort -n | tail -n1)
  for b in "${backends[@]}"; do
    if [ "$b" = auto ]; then unset KULE_BACKEND; else export KULE_BACKEND=$b; fi
    # mktask KULE: makes a task of the tree with that kule, in a home of
    # its own (each kule reads the manifests it writes), and makes the 10
    # changes in it; prints its id.
    mktask() {
      rm -rf "$KULE_HOME"
      "$1" new --yes "$work/tree" >/dev/null # --yes: 300,000 files are over the plain-copy warning
      local id changes= d f
      id=$("$1" list --json | sed -n 's/.*"id": "\([0-9a-f]\{8\}\)".*/\1/p' | head -n1)
      for d in 0 1 2 3 4 5 6 7 8 9; do
        f=$(printf 'd%05d/f%03d.txt' "$d" 1)
        [ -e "$work/tree/$f" ] || f=$(printf 'd00000/f%03d.txt' "$d")
        changes="$changes echo changed >> $f;"
      done
      "$1" exec "$id" -- sh -c "$changes" >/dev/null 2>&1
      "$1" status "$id" >/dev/null # warm
      echo "$id"
    }
    if [ -n "$BEFORE" ]; then
      bid=$(KULE_HOME="$work/home-before" mktask "$BEFORE")
    fi
    id=$(mktask "$KULE")
    kt=(); km=(); bt=(); bm=()
    for _ in $(seq "$RUNS"); do
      read -r t m < <(measure "$KULE" status "$id"); kt+=("$t"); km+=("$m")
      if [ -n "$BEFORE" ]; then
        read -r t m < <(KULE_HOME="$work/home-before" measure "$BEFORE" status "$bid"); bt+=("$t"); bm+=("$m")
      fi
    done
    backend=$("$KULE" list --json | sed -n 's/.*"backend": "\([a-z]*\)".*/\1/p' | head -n1)
    k=$(printf '%s\n' "${kt[@]}" | median)
    kmem=$(printf '%s\n' "${km[@]}" | sort -n | tail -n1)
    if [ -n "$BEFORE" ]; then
      p=$(printf '%s\n' "${bt[@]}" | median)
      pmem=$(printf '%s\n' "${bm[@]}" | sort -n | tail -n1)
      printf '%-9s %-9s %10.3f %10.1f %10.3f %10.1f %10.3f %10.1f %8.2f %8.2f %8.2f %8.2f\n' "${backend:-?}" "$n" "$g" "$(echo "$gmem / 1024" | bc -l)" \
        "$p" "$(echo "$pmem / 1024" | bc -l)" "$k" "$(echo "$kmem / 1024" | bc -l)" \
        "$(echo "$k / $g" | bc -l)" "$(echo "$kmem / $gmem" | bc -l)" "$(echo "$k / $p" | bc -l)" "$(echo "$kmem / $pmem" | bc -l)"
    else
      printf '%-9s %-9s %10.3f %10.1f %10.3f %10.1f %8.2f %8.2f\n' "${backend:-?}" "$n" "$g" "$(echo "$gmem / 1024" | bc -l)" "$k" "$(echo "$kmem / 1024" | bc -l)" \
        "$(echo "$k / $g" | bc -l)" "$(echo "$kmem / $gmem" | bc -l)"
    fi
  done
done
echo "runs: $RUNS; load: $(uptime)"
