"""Build the course's slides (``make slides``) and its static site (``make book``).

``python tools/build_site.py slides|book|all [--source DIR] [--out DIR]``

* **Source**: the executed notebooks ``make run`` leaves in ``build/`` (full settings, with
  outputs and figures). For a notebook without an executed copy there (``make run`` not done,
  or notebook 07 where Horovod cannot be built), its source in ``notebooks/`` is used instead
  (no outputs): the build says which, and the index marks them.
* **slides** → ``build/slides/NN_name.slides.html``: reveal.js slideshows from the cells'
  slide types (tools/slidemeta.py), one per notebook, with scrolling for long cells.
  reveal.js (with require.js, jQuery and MathJax) comes from ``build/reveal.js`` when it is
  there (``tools/get_revealjs.sh`` puts it there from the npm registry; it is copied next to the
  slides, so they and the site's formulas work offline), else from CDNs, as nbconvert does by
  default.
* **book** → ``build/site/index.html`` + ``NN_name.html``: every notebook rendered to HTML
  (nbconvert's lab template) and an index page with each chapter's title, overview and
  lecture slot, linking to its page and, when built, its slides.

Why not Jupyter Book: version 2 (mystmd) downloads its site theme at build time, which an
offline machine cannot; version 1 would add Sphinx and a dozen packages to the course
environment for what an index page and nbconvert already give. Project tooling (issue 15),
not used inside notebooks.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_NAME = re.compile(r"^\d\d_[a-z0-9_]+\.ipynb$")
CDN_REVEAL = "https://unpkg.com/reveal.js@4.0.2"
MATHJAX = "MathJax.js?config=TeX-AMS_CHTML-full,Safe"  # the configuration nbconvert's templates use


def find_notebooks(source: Path | None = None) -> list[Path]:
    """The notebooks to build: those in ``source`` if given; else, for every notebook in
    notebooks/, its executed copy in build/ (``make run``) or, failing that, itself (and a
    message naming those)."""
    if source is not None:
        return sorted(p for p in source.glob("*.ipynb") if NOTEBOOK_NAME.match(p.name))
    chosen, missing = [], []
    for path in sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if NOTEBOOK_NAME.match(p.name)):
        executed = ROOT / "build" / path.name
        chosen.append(executed if executed.is_file() else path)
        if not executed.is_file():
            missing.append(path.stem)
    if missing:
        what = (
            "no executed notebooks"
            if len(missing) == len(chosen)
            else f"no executed copy of {', '.join(missing)}"
        )
        print(
            f"build_site: build/ holds {what} (run `make run` first); using notebooks/ for those, without outputs"
        )
    return chosen


def _has_outputs(path: Path) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return any(c.get("outputs") for c in nb.get("cells", []) if c.get("cell_type") == "code")


def _markdown(nb: dict[str, Any]) -> list[str]:
    return ["".join(c["source"]) for c in nb.get("cells", []) if c.get("cell_type") == "markdown"]


def chapter_info(path: Path) -> dict[str, str]:
    """Title (first H1), the first paragraph of the Overview and its lecture-slot line."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = _markdown(nb)
    title = next(
        (line[2:].strip() for c in cells for line in c.splitlines() if line.startswith("# ")), path.stem
    )
    overview = next((c for c in cells if c.lstrip().startswith("## Overview")), "")
    paragraphs = [p.strip() for p in overview.split("\n\n")[1:] if p.strip()]
    summary = re.sub(r"\s+", " ", paragraphs[0]) if paragraphs else ""
    slot = next((p for p in paragraphs if "Lecture slot" in p), "")
    return {"title": title, "summary": summary, "slot": re.sub(r"\s+", " ", slot)}


def inline_markdown(text: str) -> str:
    """One paragraph of Markdown as HTML without the enclosing <p> (mistune, nbconvert's renderer)."""
    import mistune

    return re.sub(r"^<p>|</p>\s*$", "", mistune.html(text).strip())


def sync_slide_types(nb: Any, source: Path) -> int:
    """Give an executed copy the slide types its source notebook has now (they may have changed
    since `make run`): cell by cell where the cells' code is the same. Returns the cells changed."""
    if not source.is_file():
        return 0
    cells = json.loads(source.read_text(encoding="utf-8")).get("cells", [])
    if len(cells) != len(nb.cells):
        return 0
    changed = 0
    for cell, src in zip(nb.cells, cells, strict=True):
        slideshow = src.get("metadata", {}).get("slideshow")
        if (
            slideshow
            and "".join(src["source"]) == cell.source
            and cell.metadata.get("slideshow") != slideshow
        ):
            cell.metadata["slideshow"] = dict(slideshow)
            changed += 1
    return changed


def build_slides(notebooks: list[Path], out: Path) -> list[Path]:
    """Write one reveal.js slideshow per notebook into ``out``; return their paths."""
    import nbformat
    from nbconvert import SlidesExporter

    out.mkdir(parents=True, exist_ok=True)
    local = ROOT / "build" / "reveal.js"
    options: dict[str, Any] = {
        "reveal_scroll": True,  # long cells scroll instead of running off the slide
        "reveal_theme": "white",
        "reveal_width": "1100",  # room for the course's 120-character code lines
        "reveal_height": "700",
        "exclude_input_prompt": True,
        "exclude_output_prompt": True,
    }
    if (local / "dist" / "reveal.js").is_file() and (local / "vendor" / "require.js").is_file():
        if local.resolve() != (out / "reveal.js").resolve():
            shutil.copytree(local, out / "reveal.js", dirs_exist_ok=True)
        options |= {
            "reveal_url_prefix": "reveal.js",
            "require_js_url": "reveal.js/vendor/require.js",
            "jquery_url": "reveal.js/vendor/jquery.min.js",
            "mathjax_url": "reveal.js/vendor/mathjax/" + MATHJAX,
        }
    else:
        options["reveal_url_prefix"] = CDN_REVEAL
        print(
            f"build_site: no build/reveal.js (tools/get_revealjs.sh): the slides load reveal.js from {CDN_REVEAL}"
        )
    exporter = SlidesExporter(**options)
    written = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        synced = sync_slide_types(nb, ROOT / "notebooks" / path.name)
        body, _ = exporter.from_notebook_node(nb)
        if synced:
            print(f"build_site: {path.name}: slide types of {synced} cells taken from notebooks/{path.name}")
        target = out / f"{path.stem}.slides.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
    print(f"build_site: {len(written)} slideshows in {out}")
    return written


def build_book(notebooks: list[Path], out: Path, slides: Path | None = None) -> Path:
    """Render every notebook to HTML in ``out`` and write ``out/index.html``; return the index."""
    from nbconvert import HTMLExporter

    out.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {"template_name": "lab"}
    if slides is not None and (slides / "reveal.js" / "vendor" / "mathjax" / "MathJax.js").is_file():
        options["mathjax_url"] = f"../{slides.name}/reveal.js/vendor/mathjax/{MATHJAX}"  # offline formulas
    exporter = HTMLExporter(**options)
    rows = []
    executed = 0
    for path in notebooks:
        body, _ = exporter.from_filename(str(path))
        ran = _has_outputs(path)
        executed += ran
        (out / f"{path.stem}.html").write_text(body, encoding="utf-8")
        info = chapter_info(path)
        links = [f'<a href="{path.stem}.html">read</a>']
        if slides is not None and (slides / f"{path.stem}.slides.html").is_file():
            links.append(f'<a href="{Path("..") / slides.name / (path.stem + ".slides.html")}">slides</a>')
        rows.append(
            f'<li><h2><a href="{path.stem}.html">{html.escape(info["title"])}</a></h2>'
            f"<p>{inline_markdown(info['summary'])}</p>"
            + (f'<p class="slot">{inline_markdown(info["slot"])}</p>' if info["slot"] else "")
            + f'<p class="links">{" · ".join(links)}'
            + ("" if ran else ' · <span class="todo">not executed: code only</span>')
            + "</p></li>"
        )
    state = (
        f"{executed} of {len(notebooks)} executed with full settings by <code>make run</code> "
        "(outputs and figures included)"
    )
    index = out / "index.html"
    index.write_text(INDEX.format(state=state, rows="\n".join(rows)), encoding="utf-8")
    print(f"build_site: {len(rows)} chapters and {index}")
    return index


INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GPU distributed training with TensorFlow</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; line-height: 1.45; }}
h1 {{ margin-bottom: .2rem; }} .state {{ color: #555; margin-top: 0; }}
ol {{ padding-left: 0; list-style: none; }}
li {{ border-top: 1px solid #ddd; padding: .6rem 0; }}
li h2 {{ font-size: 1.15rem; margin: .2rem 0; }} li p {{ margin: .25rem 0; }}
a {{ color: #0b57d0; text-decoration: none; }} a:hover {{ text-decoration: underline; }}
.slot {{ color: #555; font-size: .92rem; }} .links {{ font-size: .92rem; }} .todo {{ color: #a15c00; }}
</style></head>
<body>
<h1>GPU distributed training with TensorFlow</h1>
<p class="state">{state}.</p>
<ol>
{rows}
</ol>
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message="Cell is missing an id field")  # nbformat 4.4 notebooks
    parser = argparse.ArgumentParser(description="Build the slides and the static site.")
    parser.add_argument("what", choices=("slides", "book", "all"))
    parser.add_argument("--source", type=Path, default=None, help="folder of notebooks (default: build/)")
    parser.add_argument("--out", type=Path, default=ROOT / "build", help="parent folder of slides/ and site/")
    args = parser.parse_args(argv)
    notebooks = find_notebooks(args.source)
    if not notebooks:
        print("build_site: no notebooks found")
        return 1
    slides = args.out / "slides"
    if args.what in ("slides", "all"):
        build_slides(notebooks, slides)
    if args.what in ("book", "all"):
        build_book(notebooks, args.out / "site", slides)
    return 0


if __name__ == "__main__":
    sys.exit(main())
