#!/usr/bin/env bash
# Fetch the pinned upstream CRDs and chart files the offline validation reads (same bytes as
# shared/upstream; each file is checked against the sha256 in scripts/upstream-pins.tsv).
# Usage: scripts/fetch-upstream.sh [DEST]   (default .upstream; then the tests and render find it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:-$here/../.upstream}"
base="${UPSTREAM_RAW_BASE:-https://raw.githubusercontent.com}"
failed=0
while IFS=$'\t' read -r file repo commit path sha; do
  case "$file" in ''|\#*) continue ;; esac
  out="$dest/$file"
  mkdir -p "$(dirname "$out")"
  if [ -f "$out" ] && echo "$sha  $out" | sha256sum -c --status; then continue; fi
  echo "fetch $repo@${commit:0:8} $path"
  if ! curl -fsSL --retry 3 "$base/$repo/$commit/$path" -o "$out.tmp"; then
    echo "  failed to download $base/$repo/$commit/$path" >&2; failed=1; rm -f "$out.tmp"; continue
  fi
  if echo "$sha  $out.tmp" | sha256sum -c --status; then mv "$out.tmp" "$out"
  else echo "  checksum mismatch for $file (upstream changed?)" >&2; rm -f "$out.tmp"; failed=1; fi
done < "$here/upstream-pins.tsv"
[ "$failed" = 0 ] && echo "upstream files ready in $dest" || { echo "some files could not be fetched" >&2; exit 1; }
