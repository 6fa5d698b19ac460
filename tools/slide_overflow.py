"""Count the slides that do not fit a projector: ``python tools/slide_overflow.py [SLIDES.html ...]``.

``make slide-check`` builds the slideshows (``tools/build_site.py slides`` → ``build/slides/``)
and runs this on each: it opens the slideshow in headless Chromium at a projector's 1280×720,
goes to every slide in turn (vertical slides included, every fragment in place) and measures
it in the slide's own coordinates (reveal.js's 1240×700, before scaling):

* **tall**: the slide's content is taller than the slide (``scrollHeight`` > 700): it runs off
  the bottom, or scrolls;
* **wide**: wider than the slide, or a code block whose lines are cut off at the right (its
  ``scrollWidth`` over its width).

A slide showing a ``%%writefile`` program is counted apart (``program``): a program may scroll
(issue 45: at most 5 other overflowing slides in the whole course). It prints one row per
notebook and the slides that overflow (``h/v``: reveal.js's indices, ``#/h/v`` in the address),
and exits 1 if more than 5 slides overflow in all, programs apart (issue 45's goal; ``--max N``).

``--screenshot NN H/V`` writes build/screenshots/slide_NN_H_V.png of one slide at 1280×720 to
look at. No browser automation package: Chromium's own ``--dump-dom`` runs a copy of the
slideshow with a small measuring script added, which writes its findings into the page.
Needs chromium (Debian: ``apt-get install -y chromium``; exit 3 if missing). Project tooling,
not part of ``make test`` (one Chromium start per notebook).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WINDOW = "1280,720"
# Runs in the slideshow once reveal.js is ready: every slide, measured, written into the page.
MEASURE = """
<script>
require(["reveal.js/dist/reveal.js"], function (Reveal) {
  function measure() {
    Reveal.configure({transition: "none", backgroundTransition: "none", viewDistance: 1000});
    var W = Reveal.getConfig().width, H = Reveal.getConfig().height, out = [];
    Reveal.getSlides().forEach(function (s) {
      var at = Reveal.getIndices(s);
      Reveal.slide(at.h, at.v || 0);
      s.querySelectorAll(".fragment").forEach(function (f) { f.classList.add("visible"); });
      var cut = 0;
      s.querySelectorAll("pre").forEach(function (p) { if (p.scrollWidth > p.clientWidth + 1) cut++; });
      var program = Array.prototype.some.call(s.querySelectorAll("pre"), function (p) {
        return /^\\s*%%writefile/.test(p.textContent);
      });
      var head = s.querySelector("h1, h2, h3, h4");
      out.push({h: at.h, v: at.v || 0, height: s.scrollHeight, width: s.scrollWidth, cut: cut,
                program: program, slide: [W, H],
                title: (head ? head.textContent : s.textContent).replace(/\\s+/g, " ").trim().slice(0, 60)});
    });
    var pre = document.createElement("pre");
    pre.id = "slide-overflow";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  if (Reveal.isReady()) { measure(); } else { Reveal.addEventListener("ready", measure); }
});
</script>
"""
RESULT = re.compile(r'<pre id="slide-overflow">(.*?)</pre>', re.S)


def browser() -> str | None:
    """The Chromium to use (None: none installed)."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if found := shutil.which(name):
            return found
    return None


def _chromium(chrome: str, profile: str, *args: str, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    command = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--window-size={WINDOW}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def measure(slides: Path, chrome: str) -> list[dict[str, Any]]:
    """Every slide of a slideshow measured (see the module docstring): one dict per slide."""
    text = slides.read_text(encoding="utf-8")
    probe = slides.with_name(f".{slides.stem}.measure.html")  # beside it: reveal.js is found the same way
    probe.write_text(text.replace("</html>", MEASURE + "</html>"), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            done = _chromium(chrome, profile, "--virtual-time-budget=60000", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink(missing_ok=True)
    found = RESULT.search(done.stdout)
    if not found:
        raise RuntimeError(f"{slides.name}: no measurement (reveal.js not loaded?) {done.stderr[-500:]}")
    return json.loads(html.unescape(found.group(1)))


def overflowing(slide: dict[str, Any]) -> list[str]:
    """How a measured slide overflows: "tall", "wide" (empty: it fits)."""
    width, height = slide["slide"]
    out = []
    if slide["height"] > height + 1:
        out.append("tall")
    if slide["width"] > width + 1 or slide["cut"]:
        out.append("wide")
    return out


def report(paths: list[Path], chrome: str) -> tuple[list[str], int, int]:
    """Text lines of the report, the overflowing slides (programs apart) and all slides."""
    lines = [f"{'slideshow':46} {'slides':>6} {'over':>5} {'tall':>5} {'wide':>5} {'program':>8}"]
    total = {"slides": 0, "over": 0, "tall": 0, "wide": 0, "program": 0}
    details = []
    for path in paths:
        slides = measure(path, chrome)
        over = [(s, overflowing(s)) for s in slides if overflowing(s)]
        lesson = [(s, how) for s, how in over if not s["program"]]
        tall = sum("tall" in how for _, how in lesson)
        wide = sum("wide" in how for _, how in lesson)
        lines.append(f"{path.name:46} {len(slides):6d} {len(lesson):5d} {tall:5d} {wide:5d} {len(over) - len(lesson):8d}")
        total["slides"] += len(slides)
        total["over"] += len(lesson)
        total["program"] += len(over) - len(lesson)
        total["tall"] += tall
        total["wide"] += wide
        for s, how in over:
            details.append(f"  {path.name[:2]} #/{s['h']}/{s['v']:<3} {'+'.join(how):9} {s['height']:5d}×{s['width']:<5d}"
                           f"{' program' if s['program'] else ''}  {s['title']}")
    lines.append(f"{'total':46} {total['slides']:6d} {total['over']:5d} {total['tall']:5d} {total['wide']:5d} "
                 f"{total['program']:8d}")
    lines.append(f"overflowing slides: {total['over']} of {total['slides']} "
                 f"({total['over'] + total['program']} with the {total['program']} of %%writefile programs)")
    return lines + details, total["over"], total["slides"]


def screenshot(slides: Path, where: str, out: Path, chrome: str) -> Path:
    """A PNG of slide ``where`` ("H/V") of a slideshow at 1280×720."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        _chromium(chrome, profile, "--virtual-time-budget=10000", f"--screenshot={out}", f"{slides.as_uri()}#/{where}")
    if not out.is_file():
        raise RuntimeError(f"no screenshot of {slides.name} #/{where}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slides", nargs="*", type=Path, help="slideshows (default: build/slides/NN_*.slides.html)")
    parser.add_argument("--max", type=int, default=5, help="overflowing slides allowed in all, programs apart (default 5)")
    parser.add_argument("--screenshot", nargs=2, metavar=("NN", "H/V"), help="one slide as a PNG instead")
    args = parser.parse_args(argv)
    chrome = browser()
    if chrome is None:
        print("slide_overflow: no Chromium found (Debian: apt-get install -y chromium)", file=sys.stderr)
        return 3
    paths = args.slides or sorted((ROOT / "build" / "slides").glob("[0-9][0-9]_*.slides.html"))
    if not paths:
        print("slide_overflow: no slideshows: run `make slides` first", file=sys.stderr)
        return 1
    if args.screenshot:
        nn, where = args.screenshot
        (path,) = [p for p in paths if p.name.startswith(nn)] or [None]
        if path is None:
            print(f"slide_overflow: no slideshow {nn}", file=sys.stderr)
            return 1
        out = ROOT / "build" / "screenshots" / f"slide_{nn}_{where.replace('/', '_')}.png"
        print(screenshot(path, where, out, chrome))
        return 0
    lines, over, _ = report(paths, chrome)
    print("\n".join(lines))
    return 1 if over > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
