"""Give every notebook cell a slide type, so each notebook can be shown as a slideshow.

``python -m tools.slidemeta [--check] [--reset] NB...``: ``make format`` fills in
``metadata.slideshow.slide_type`` where a cell has none (a type a lecturer set by hand in
JupyterLab's RISE or its property inspector is kept; ``--reset`` recomputes all of them);
``make lint`` and the hygiene test (``--check``) fail when a cell has none. The rules
(:func:`slide_type`), deterministic and idempotent:

* a Markdown cell with an H1 or H2 heading starts a **slide**; H3 and deeper a **subslide**;
* the setup section (its ``## Setup`` heading cell and the setup code cell) is **skip**: plumbing;
* a check cell (tagged ``check``: the folded asserts behind a claim) is **skip**, and the cell
  after it is placed as if the check cell were not there;
* other Markdown: a **subslide** when it follows code (a new step of the story), else it
  continues the slide (``-``) — unless the slide would then be taller than the slide
  (:func:`too_tall`): then a **subslide**;
* a code cell right after its explanation stays on that slide: a **fragment** (it appears on
  the next key press) when short, else it simply continues the slide (``-``; the slides
  scroll) — unless the explanation and the cell together would not fit the slide
  (:func:`too_tall`, reveal.js's 1240×700 at a projector's 1280×720): then the cell gets a
  **subslide** of its own; a code cell after another code cell starts a **subslide**.

``jupyter nbconvert --to slides`` (``make slides``) and RISE read these. Project tooling, not
used inside notebooks.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from tools.nbclean import (  # one list of types, one serialisation (run as python -m tools.slidemeta)
    SLIDE_TYPES,
    dumps,
    is_check,
)

SHORT_CODE_LINES = 12
# Heights in the slide's pixels (reveal.js 1240x700, tools/build_site.py), measured in Chromium
# with tools/slide_overflow.py on slides of known cells: a code line, a code cell's frame and the
# slide's padding, a wrapped line of text (about 105 characters), a paragraph's margin, headings.
SLIDE_HEIGHT = 700
CODE_LINE, CODE_FRAME = 22.8, 72
TEXT_LINE, TEXT_CHARS, PARAGRAPH = 26, 105, 17
HEADING = {1: 120, 2: 81}  # deeper: 70
_HEADING = re.compile(r"^(#{1,6})\s", re.M)


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def heading_level(cell: dict[str, Any]) -> int:
    """Level of the first line's Markdown heading (0 when the cell does not start with one)."""
    if cell.get("cell_type") != "markdown":
        return 0
    first = _source(cell).lstrip("\n").split("\n", 1)[0]
    match = _HEADING.match(first)
    return len(match.group(1)) if match else 0


def is_setup(cell: dict[str, Any]) -> bool:
    """The setup code cell (``course = utils.setup(...)``) or the ``## Setup`` heading."""
    source = _source(cell)
    if cell.get("cell_type") == "code":  # not a %%writefile program that calls utils.setup itself
        return "course = utils.setup(" in source and not source.lstrip().startswith("%%")
    return source.lstrip().split("\n", 1)[0].strip().lower().startswith("## setup")


def height(cell: dict[str, Any]) -> float:
    """About how tall a cell (its source, not its outputs) is on a slide, in the slide's pixels."""
    lines = _source(cell).strip("\n").splitlines()
    if cell.get("cell_type") == "code":
        return CODE_FRAME + CODE_LINE * len(lines)
    total, paragraph = 0.0, False
    for line in lines:
        match = _HEADING.match(line)
        if match:
            total += HEADING.get(len(match.group(1)), 70)
            paragraph = False
        elif not line.strip():
            paragraph = False
        else:
            total += TEXT_LINE * -(-len(line.strip()) // TEXT_CHARS) + (0 if paragraph else PARAGRAPH)
            paragraph = True
    return total


def too_tall(cells: list[dict[str, Any]], index: int) -> bool:
    """True if cell ``index`` and the Markdown right before it on the same slide would be taller
    than the slide together. The run of Markdown cells before it (from a heading, or from text
    after code) is laid out first, each cell that would not fit starting a subslide of its own."""
    shown = [i for i in range(index) if not is_check(cells[i])]
    run: list[int] = []
    for j in reversed(shown):
        cell = cells[j]
        if cell.get("cell_type") != "markdown" or is_setup(cell):
            break
        run.insert(0, j)
        if heading_level(cell):
            break
    text = 0.0
    for j in run:
        text = height(cells[j]) if text and text + height(cells[j]) > SLIDE_HEIGHT else text + height(cells[j])
    return text > 0 and text + height(cells[index]) > SLIDE_HEIGHT


def slide_type(cells: list[dict[str, Any]], index: int) -> str:
    """The slide type the rules above give cell ``index`` of ``cells``."""
    cell = cells[index]
    shown = [c for c in cells[:index] if not is_check(c)]  # slides skip check cells
    previous = shown[-1] if shown else None
    if is_setup(cell) or is_check(cell):
        return "skip"
    level = heading_level(cell)
    if level in (1, 2):
        return "slide"
    if level >= 3:
        return "subslide"
    if cell.get("cell_type") == "markdown":
        after_code = previous is not None and previous.get("cell_type") == "code"
        return "subslide" if after_code or too_tall(cells, index) else "-"
    lines = _source(cell).strip().count("\n") + 1
    after_text = previous is not None and previous.get("cell_type") == "markdown" and not is_setup(previous)
    if not after_text or too_tall(cells, index):
        return "subslide"
    return "fragment" if lines <= SHORT_CODE_LINES else "-"


def add_slide_metadata(nb: dict[str, Any], reset: bool = False) -> dict[str, Any]:
    """Return a copy of ``nb`` where every cell has ``metadata.slideshow.slide_type``."""
    nb = json.loads(json.dumps(nb))
    cells = nb.get("cells", [])
    for index, cell in enumerate(cells):
        metadata = cell.setdefault("metadata", {})
        current = metadata.get("slideshow", {}).get("slide_type")
        if reset or current not in SLIDE_TYPES or (is_check(cell) and current != "skip"):
            metadata["slideshow"] = {"slide_type": slide_type(cells, index)}
    return nb


def missing(nb: dict[str, Any]) -> list[int]:
    """Indices of the cells without a valid slide type."""
    return [
        i
        for i, c in enumerate(nb.get("cells", []))
        if c.get("metadata", {}).get("slideshow", {}).get("slide_type") not in SLIDE_TYPES
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Add slide types to notebook cells.")
    parser.add_argument("--check", action="store_true", help="report cells without one, do not write")
    parser.add_argument("--reset", action="store_true", help="recompute every cell's slide type")
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    bad = []
    for path in args.notebooks:
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        if args.check:
            if missing(nb):
                bad.append(f"{path} (cells {missing(nb)[:5]})")
            continue
        new = dumps(add_slide_metadata(nb, reset=args.reset))
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"slide types set in {path}")
    if bad:
        print("cells without a slide type (run `make format`): " + ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
