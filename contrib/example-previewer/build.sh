#!/usr/bin/env bash
# Builds the example previewer into OUT (default ./out) with a plugin.toml that
# states its sha256, ready for `kule plugins install OUT`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/out}"
mkdir -p "$out"
(cd "$here" && go build -o "$out/kule-previewer-ini" .)
sum="$(sha256sum "$out/kule-previewer-ini" | cut -d' ' -f1)"
sed "s/^sha256 = .*/sha256 = \"$sum\"/" "$here/plugin.toml" > "$out/plugin.toml"
echo "$out"
