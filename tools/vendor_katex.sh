#!/usr/bin/env bash
# Refresh the KaTeX files the docs site serves itself (docs/assets/katex/): no page loads
# anything from another host, so the site renders offline and builds without a network.
# Usage: bash tools/vendor_katex.sh [VERSION]   (needs npm; run from anywhere)
set -euo pipefail
VERSION="${1:-0.19.1}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/docs/assets/katex"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "katex@$VERSION" >/dev/null && tar xzf "katex-$VERSION.tgz")
rm -rf "$DEST" && mkdir -p "$DEST/fonts"
cp "$TMP/package/dist/katex.min.js" "$TMP/package/dist/katex.min.css" "$TMP/package/LICENSE" "$DEST/"
# woff2 only: every browser that runs KaTeX reads it, and it is the first source each @font-face lists
cp "$TMP/package/dist/fonts/"*.woff2 "$DEST/fonts/"
echo "katex@$VERSION from the npm registry" > "$DEST/VERSION"
echo "vendored katex@$VERSION into $DEST"
