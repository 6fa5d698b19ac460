#!/usr/bin/env bash
# Look at the built site and one slideshow as a person would: headless Chromium screenshots.
# Usage: bash tools/check_site.sh [NN]   (after `make book`; NN: the notebook whose slides to
# shoot, default 06). Writes build/screenshots/site_index.png, site_NN.png and slides_NN.png
# (the first slide) and slides_NN_3.png (the third), then prints their paths: open them and look.
# The Chinese edition too, when built: site_zh_index.png, and slides_zh_MM.png / slides_zh_MM_3.png of
# notebook NN's Chinese slides, or of the first Chinese slideshow (MM) if NN has none yet.
# Needs chromium (Debian: apt-get install chromium); exit 3 if it is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NN="${1:-06}"
BROWSER="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$BROWSER" ]]; then
    echo "check_site: no Chromium found (Debian: apt-get install -y chromium)" >&2
    exit 3
fi
SITE="$ROOT/build/site"
SLIDES="$(ls "$ROOT"/build/slides/"$NN"_*.slides.html 2>/dev/null | head -1 || true)"
PAGE="$(ls "$SITE"/"$NN"_*.html 2>/dev/null | head -1 || true)"
if [[ ! -f "$SITE/index.html" || -z "$SLIDES" || -z "$PAGE" ]]; then
    echo "check_site: build/site/index.html or notebook $NN's page/slides missing: run \`make book\` first" >&2
    exit 1
fi
OUT="$ROOT/build/screenshots"
mkdir -p "$OUT"
PROFILE="$(mktemp -d)"
trap 'rm -rf "$PROFILE"' EXIT
shoot() {  # shoot URL FILE
    "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$PROFILE" \
        --virtual-time-budget=5000 --window-size=1280,800 --screenshot="$2" "$1" >/dev/null 2>&1
    [[ -s "$2" ]] || { echo "check_site: no screenshot written for $1" >&2; exit 1; }
    echo "$2"
}
shoot "file://$SITE/index.html" "$OUT/site_index.png"
shoot "file://$PAGE" "$OUT/site_$NN.png"
shoot "file://$SLIDES" "$OUT/slides_$NN.png"
shoot "file://$SLIDES#/3" "$OUT/slides_${NN}_3.png"
if [[ -f "$SITE/zh/index.html" ]]; then
    shoot "file://$SITE/zh/index.html" "$OUT/site_zh_index.png"
    ZH_SLIDES="$(ls "$ROOT"/build/slides/zh/"$NN"_*.slides.html 2>/dev/null | head -1 || true)"
    [[ -n "$ZH_SLIDES" ]] || ZH_SLIDES="$(ls "$ROOT"/build/slides/zh/*.slides.html 2>/dev/null | head -1 || true)"
    if [[ -n "$ZH_SLIDES" ]]; then
        MM="$(basename "$ZH_SLIDES" | cut -c1-2)"
        shoot "file://$ZH_SLIDES" "$OUT/slides_zh_$MM.png"
        shoot "file://$ZH_SLIDES#/3" "$OUT/slides_zh_${MM}_3.png"
    fi
fi
