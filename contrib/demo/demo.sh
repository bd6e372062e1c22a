#!/usr/bin/env bash
# Kule's main job on a sample folder, in a throw-away KULE_HOME:
# new → exec (an edit, a delete, a move) → status → commit → undo.
set -euo pipefail
KULE=${KULE:-kule}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KULE_HOME="$work/kule-home"
cp -a "$here/contrib/samples/notes-and-code" "$work/notes-and-code"
folder="$work/notes-and-code"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step kule new "$folder"
"$KULE" new "$folder"
id=$("$KULE" list --json | sed -n 's/.*"id": "\([0-9a-f]\{8\}\)".*/\1/p' | head -n1)

step kule exec "$id" -- sh -c "'echo ... >> notes/plan.md; rm notes/drafts.md; mv photos/2025 photos/2026'"
"$KULE" exec "$id" -- sh -c 'echo "- Water the basil." >> notes/plan.md; rm notes/drafts.md; mv photos/2025 photos/2026; echo "debug" > run.log'

step kule status "$id"
"$KULE" status "$id"

step "ls $folder/notes   # the folder is untouched until commit"
ls "$folder/notes"

step kule commit "$id"
"$KULE" commit "$id"
ls "$folder/notes" "$folder/photos"

step kule undo "$id"
"$KULE" undo "$id"
ls "$folder/notes" "$folder/photos"
tail -n 2 "$folder/notes/plan.md"

step kule history "$id" --verify
"$KULE" history "$id" --verify
