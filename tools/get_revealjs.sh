#!/usr/bin/env bash
# Put reveal.js (and the require.js and jQuery that nbconvert's slides template loads it with,
# and MathJax 2.7.7 for the formulas: its CommonHTML output and the fast preview it shows first,
# without which every formula showed twice; 12 MB) into build/reveal.js, so the
# slideshows of `make slides` and the pages of `make book` work offline; without them they load
# all of these from CDNs. From the npm registry with npm's own client; reveal.js 4.0.2 and
# require.js 2.1.10 are the versions nbconvert's slides template names (jQuery 2.0.3, which it
# names too, is not on npm: 2.2.4, the last 2.x, stands in).
# Usage: bash tools/get_revealjs.sh     (needs node/npm; once, before `make slides`)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/build/reveal.js"
if [[ -f "$DEST/dist/reveal.js" && -f "$DEST/vendor/require.js" && -f "$DEST/vendor/mathjax/MathJax.js" ]]; then
    echo "get_revealjs: $DEST is there already"
    exit 0
fi
if ! command -v npm >/dev/null; then
    echo "get_revealjs: npm not found: install Node.js, or let the slides load reveal.js from the internet" >&2
    exit 3
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent reveal.js@4.0.2 requirejs@2.1.10 jquery@2.2.4 mathjax@2.7.7 >/dev/null)
mkdir -p "$DEST/vendor/mathjax" "$TMP/x"
tar -xzf "$TMP/reveal.js-4.0.2.tgz" -C "$DEST" --strip-components=1
tar -xzf "$TMP/requirejs-2.1.10.tgz" -C "$TMP/x" package/require.js
tar -xzf "$TMP/jquery-2.2.4.tgz" -C "$TMP/x" package/dist/jquery.min.js
cp "$TMP/x/package/require.js" "$TMP/x/package/dist/jquery.min.js" "$DEST/vendor/"
tar -xzf "$TMP/mathjax-2.7.7.tgz" -C "$DEST/vendor/mathjax" --strip-components=1 package/MathJax.js \
    package/config package/extensions package/jax/input/TeX package/jax/output/CommonHTML \
    package/jax/output/PreviewHTML package/jax/element package/fonts/HTML-CSS/TeX/woff
echo "get_revealjs: reveal.js 4.0.2, require.js 2.1.10, jQuery 2.2.4 and MathJax 2.7.7 in $DEST"
