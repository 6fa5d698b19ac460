"""Slide types (tools/slidemeta.py) and the slides/site build (tools/build_site.py), on a tiny
executed notebook made here: fast, no Chromium (tools/check_site.sh does the screenshots)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools.nbclean import KERNELS, clean_notebook
from tools.slidemeta import add_slide_metadata, missing, slide_type


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(text: str, outputs: list | None = None) -> dict:
    return {
        "cell_type": "code",
        "metadata": {},
        "source": text,
        "outputs": outputs or [],
        "execution_count": None,
    }


def tiny_notebook() -> dict:
    cells = [
        md("# 3 · Tiny (小)\n\nbadges"),
        md("## Overview\n\nA tiny chapter about adding numbers.\n\n**Lecture slot:** ~5 min (core: §1)."),
        md("## Setup"),
        code("import utils\ncourse = utils.setup(chapter=3)"),
        md("## 1 · Adding (加法)\n\nTwo and two."),
        code(
            "2 + 2",
            [
                {
                    "output_type": "execute_result",
                    "data": {"text/plain": "4"},
                    "metadata": {},
                    "execution_count": 1,
                }
            ],
        ),
        md("It is four."),
        md("### A detail"),
        code("\n".join(f"x{i} = {i}" for i in range(20))),
        md("## Summary\n\nDone."),
    ]
    for index, cell in enumerate(cells):
        cell["id"] = f"cell-{index}"
    return {
        "cells": cells,
        "metadata": {"kernelspec": dict(KERNELS["python3"])},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_slide_types_follow_the_rules() -> None:
    nb = tiny_notebook()
    types = [slide_type(nb["cells"], i) for i in range(len(nb["cells"]))]
    expected = ["slide", "slide", "skip", "skip", "slide", "fragment", "subslide", "subslide", "-", "slide"]
    assert types == expected


def test_slide_metadata_is_idempotent_keeps_manual_types_and_survives_cleaning() -> None:
    nb = tiny_notebook()
    assert missing(nb) == list(range(len(nb["cells"])))
    nb["cells"][6]["metadata"] = {"slideshow": {"slide_type": "notes"}}  # set by hand in RISE
    once = add_slide_metadata(nb)
    assert missing(once) == [] and add_slide_metadata(once) == once
    assert once["cells"][6]["metadata"]["slideshow"] == {"slide_type": "notes"}
    assert add_slide_metadata(nb, reset=True)["cells"][6]["metadata"]["slideshow"] == {
        "slide_type": "subslide"
    }
    cleaned = clean_notebook(once)  # nbclean keeps slideshow.slide_type, drops the rest
    assert [c["metadata"] for c in cleaned["cells"]] == [c["metadata"] for c in once["cells"]]
    once["cells"][0]["metadata"]["slideshow"]["extra"] = 1
    once["cells"][1]["metadata"]["slideshow"] = {"slide_type": "bogus"}
    cleaned = clean_notebook(once)
    assert cleaned["cells"][0]["metadata"] == {"slideshow": {"slide_type": "slide"}}
    assert cleaned["cells"][1]["metadata"] == {}


def test_slides_and_site_build_from_an_executed_notebook(tmp_path: Path) -> None:
    pytest.importorskip("nbconvert", reason="nbconvert is not installed: the slides/site build cannot run")
    from tools import build_site

    source = tmp_path / "executed"
    source.mkdir()
    nb = add_slide_metadata(tiny_notebook())
    (source / "03_tiny.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    notebooks = build_site.find_notebooks(source)
    assert [p.name for p in notebooks] == ["03_tiny.ipynb"]

    out = tmp_path / "build"
    (slides,) = build_site.build_slides(notebooks, out / "slides")
    text = slides.read_text(encoding="utf-8")
    assert slides.name == "03_tiny.slides.html" and "Reveal.initialize" in text
    # one <section> per slide, nested for subslides: 4 slides (title, overview, §1, summary)
    top = re.findall(r"<section>\s*<section>", text)
    assert len(top) == 4, len(top)
    assert not re.search(r"utils.*setup", text)  # the setup cell is skipped
    assert "It is four." in text and re.search(r"x19.*=.*19", text)

    index = build_site.build_book(notebooks, out / "site", out / "slides")
    page = (out / "site" / "03_tiny.html").read_text(encoding="utf-8")
    assert re.search(r"utils.*setup", page) and "<pre>4</pre>" in page  # the page has code and outputs
    home = index.read_text(encoding="utf-8")
    assert 'href="03_tiny.html"' in home and 'href="../slides/03_tiny.slides.html"' in home
    assert "3 · Tiny (小)" in home and "A tiny chapter about adding numbers." in home
    assert (
        "<strong>Lecture slot:</strong> ~5 min (core: §1)." in home
        and "1 of 1 executed with full settings" in home
    )


def test_notebooks_without_an_executed_copy_come_from_notebooks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools import build_site

    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "build").mkdir()
    for name in ("03_tiny.ipynb", "04_other.ipynb"):
        (root / "notebooks" / name).write_text(json.dumps(tiny_notebook()), encoding="utf-8")
    monkeypatch.setattr(build_site, "ROOT", root)
    assert build_site.find_notebooks() == [
        root / "notebooks" / "03_tiny.ipynb",
        root / "notebooks" / "04_other.ipynb",
    ]
    assert "no executed notebooks" in capsys.readouterr().out
    (root / "build" / "03_tiny.ipynb").write_text(json.dumps(tiny_notebook()), encoding="utf-8")  # `make run`
    assert build_site.find_notebooks() == [
        root / "build" / "03_tiny.ipynb",
        root / "notebooks" / "04_other.ipynb",
    ]
    assert "no executed copy of 04_other" in capsys.readouterr().out


def test_the_chinese_edition_builds_with_the_english_outputs_and_a_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """notebooks/zh/ → build/slides/zh, build/site/zh: outputs from the English executed copy where
    the code is the same, Overview and slot found through the English cells, links both ways."""
    pytest.importorskip("nbconvert", reason="nbconvert is not installed: the slides/site build cannot run")
    from tools import build_site

    root = tmp_path / "project"
    for folder in ("notebooks/zh", "build"):
        (root / folder).mkdir(parents=True)
    english = add_slide_metadata(tiny_notebook())
    executed = json.loads(json.dumps(english))
    for cell in english["cells"]:
        cell.pop("outputs", None) if cell["cell_type"] == "markdown" else cell.update(outputs=[])
    chinese = json.loads(json.dumps(english))
    chinese["cells"][0]["source"] = "# 3 · 小\n\nbadges"
    chinese["cells"][1]["source"] = "## 概览\n\n一个关于加法的小章节。\n\n**课时安排：** 约 5 分钟（核心：§1）。"
    chinese["cells"][5]["source"] = "2 + 2  # 二加二"  # a translated comment: still the same code
    (root / "notebooks" / "03_tiny.ipynb").write_text(json.dumps(english), encoding="utf-8")
    (root / "notebooks" / "zh" / "03_tiny.ipynb").write_text(json.dumps(chinese), encoding="utf-8")
    (root / "build" / "03_tiny.ipynb").write_text(json.dumps(executed), encoding="utf-8")  # `make run`
    monkeypatch.setattr(build_site, "ROOT", root)
    assert build_site.find_chinese() == [root / "notebooks" / "zh" / "03_tiny.ipynb"]

    out = root / "build"
    assert build_site.main(["all"]) == 0
    page = (out / "site" / "zh" / "03_tiny.html").read_text(encoding="utf-8")
    assert "<pre>4</pre>" in page and "二加二" in page and 'href="../03_tiny.html"' in page
    assert 'href="zh/03_tiny.html"' in (out / "site" / "03_tiny.html").read_text(encoding="utf-8")
    home = (out / "site" / "zh" / "index.html").read_text(encoding="utf-8")
    assert "一个关于加法的小章节。" in home and "<strong>课时安排：</strong> 约 5 分钟（核心：§1）。" in home
    assert 'href="../../slides/zh/03_tiny.slides.html"' in home and 'href="../index.html"' in home
    assert 'href="zh/index.html"' in (out / "site" / "index.html").read_text(encoding="utf-8")
    slides = (out / "slides" / "zh" / "03_tiny.slides.html").read_text(encoding="utf-8")
    assert "Reveal.initialize" in slides and 'href="../03_tiny.slides.html"' in slides
    chinese["cells"][5]["source"] = "2 + 3  # 二加三"  # different code: the English output does not fit
    (root / "notebooks" / "zh" / "03_tiny.ipynb").write_text(json.dumps(chinese), encoding="utf-8")
    assert build_site.read_notebook(root / "notebooks" / "zh" / "03_tiny.ipynb", "zh").cells[5].outputs == []
    chinese["cells"][5]["source"] = 'print("二加二")'  # printed text translated: no English output
    english_print = json.loads(json.dumps(executed))
    english_print["cells"][5]["source"] = 'print("two and two")'
    (root / "notebooks" / "zh" / "03_tiny.ipynb").write_text(json.dumps(chinese), encoding="utf-8")
    (root / "build" / "03_tiny.ipynb").write_text(json.dumps(english_print), encoding="utf-8")
    assert build_site.read_notebook(root / "notebooks" / "zh" / "03_tiny.ipynb", "zh").cells[5].outputs == []
    (root / "build" / "zh").mkdir()  # `make run-zh`: the Chinese executed copy wins
    (root / "build" / "zh" / "03_tiny.ipynb").write_text(json.dumps(executed), encoding="utf-8")
    assert build_site.read_notebook(root / "notebooks" / "zh" / "03_tiny.ipynb", "zh").cells[5].outputs


def with_check_cell(nb: dict) -> dict:
    """``nb`` with a check cell after the ``2 + 2`` cell (index 6), as tools/nbclean.py leaves it."""
    check = code("#@title Check: two and two make four\nassert 2 + 2 == 4, 'arithmetic'")
    check["metadata"] = {"tags": ["check"]}
    check["id"] = "cell-check"
    nb["cells"].insert(6, check)
    return clean_notebook(nb)


def test_check_cells_are_skipped_by_slides_and_the_next_cell_placed_without_them() -> None:
    nb = add_slide_metadata(with_check_cell(tiny_notebook()), reset=True)
    check = nb["cells"][6]
    assert check["metadata"] == {
        "tags": ["check"], "jupyter": {"source_hidden": True}, "cellView": "form", "slideshow": {"slide_type": "skip"}
    }
    types = [c["metadata"]["slideshow"]["slide_type"] for c in nb["cells"]]
    # as without the check cell: "It is four." follows code, so a subslide
    assert types == ["slide", "slide", "skip", "skip", "slide", "fragment", "skip", "subslide", "subslide", "-", "slide"]
    nb["cells"][6]["metadata"]["slideshow"] = {"slide_type": "fragment"}  # set by hand: a check cell stays skipped
    assert add_slide_metadata(nb)["cells"][6]["metadata"]["slideshow"] == {"slide_type": "skip"}


def test_check_cells_are_folded_on_the_site_and_absent_from_the_slides(tmp_path: Path) -> None:
    pytest.importorskip("nbconvert", reason="nbconvert is not installed: the slides/site build cannot run")
    from tools import build_site

    source = tmp_path / "executed"
    source.mkdir()
    nb = with_check_cell(tiny_notebook())
    nb["cells"][6]["metadata"]["slideshow"] = {"slide_type": "-"}  # a stale slide type: the build skips it anyway
    (source / "03_tiny.ipynb").write_text(json.dumps(add_slide_metadata(nb)), encoding="utf-8")
    notebooks = build_site.find_notebooks(source)
    (slides,) = build_site.build_slides(notebooks, tmp_path / "slides")
    assert "two and two make four" not in slides.read_text(encoding="utf-8")
    build_site.build_book(notebooks, tmp_path / "site")
    page = (tmp_path / "site" / "03_tiny.html").read_text(encoding="utf-8")
    folded = re.search(r'<details class="check-cell"><summary>(.*?)</summary>(.*?)</details>', page, re.S)
    assert folded and folded.group(1) == "Check: two and two make four"
    assert "arithmetic" in folded.group(2) and folded.group(2).count("<div") == folded.group(2).count("</div>")
    assert page.count('<details class="check-cell">') == 1 and "details.check-cell" in page  # its style
    assert "x19" in page  # the other cells are untouched


def test_fold_checks_leaves_pages_without_check_cells_alone() -> None:
    from tools.build_site import check_title, fold_checks

    assert fold_checks("<html><head></head><body><div>x</div></body></html>", []) == (
        "<html><head></head><body><div>x</div></body></html>"
    )
    assert check_title({"source": ["#@title 检查：四\n", "assert ok"]}) == "检查：四"
    assert check_title({"source": "assert ok"}) == "Check"


def test_a_program_that_calls_utils_setup_is_not_the_setup_cell() -> None:
    from tools.slidemeta import is_setup

    assert is_setup(code("import utils\n\ncourse = utils.setup(chapter=4)"))
    program = code("%%writefile programs/scaling.py\nimport utils\nchild = utils.setup(chapter=4, logical_devices=2)")
    assert not is_setup(program)  # a program a slide shows, not the plumbing slides skip
    cells = [md("## 1 · A program\n\nIt runs in a fresh process."), program]
    assert slide_type(cells, 1) == "fragment"  # shown with its explanation, not skipped


def test_slide_overflow_says_tall_and_wide() -> None:
    from tools.slide_overflow import overflowing

    fits = {"height": 690, "width": 1240, "cut": 0, "slide": [1240, 700]}
    assert overflowing(fits) == []
    assert overflowing({**fits, "height": 702}) == ["tall"]
    assert overflowing({**fits, "cut": 1}) == ["wide"] and overflowing({**fits, "width": 1300}) == ["wide"]


@pytest.mark.slow
def test_slide_overflow_measures_a_built_slideshow_in_chromium(tmp_path: Path) -> None:
    """A 60-line cell is taller than the slide, a 150-character line is cut off at the right, a
    %%writefile program's slide is counted apart, and a short slide fits (reveal.js offline:
    tools/get_revealjs.sh)."""
    pytest.importorskip("nbconvert", reason="nbconvert is not installed: the slides cannot be built")
    from tools import build_site, slide_overflow

    chrome = slide_overflow.browser()
    if chrome is None or not (build_site.ROOT / "build" / "reveal.js" / "dist" / "reveal.js").is_file():
        pytest.skip("needs chromium and build/reveal.js (tools/get_revealjs.sh)")
    nb = tiny_notebook()
    nb["cells"][8]["source"] = "\n".join(f"x{i} = {i}" for i in range(60))  # "### A detail"'s code: tall
    nb["cells"][5]["source"] = "y = " + " + ".join(["1"] * 50)  # §1's code: a 200-character line
    program = code("%%writefile programs/w.py\n" + "\n".join(f"print({i})" for i in range(60)))
    program["id"] = "cell-program"
    nb["cells"].insert(9, program)
    source = tmp_path / "executed"
    source.mkdir()
    (source / "03_tiny.ipynb").write_text(json.dumps(add_slide_metadata(nb, reset=True)), encoding="utf-8")
    (slides,) = build_site.build_slides(build_site.find_notebooks(source), tmp_path / "slides")
    measured = slide_overflow.measure(slides, chrome)
    how = {(s["title"][:12], s["program"]): slide_overflow.overflowing(s) for s in measured}
    assert how[("1 · Adding (", False)] == ["wide"]
    assert how[("x0 = 0 x1 = ", False)] == ["tall"]  # on a subslide of its own (slidemeta.too_tall)
    assert how[("A detail¶", False)] == []
    assert how[("%%writefile ", True)] == ["tall"]
    assert how[("Summary¶", False)] == [] and how[("3 · Tiny (小)", False)] == []
    lines, over, total = slide_overflow.report([slides], chrome)
    assert (over, total) == (2, len(measured)) and "(3 with the 1 of %%writefile programs)" in lines[3]


def test_a_cell_that_would_not_fit_under_its_explanation_gets_a_slide_of_its_own() -> None:
    from tools.slidemeta import SLIDE_HEIGHT, height, too_tall

    text = md("## 2 · A section\n\n" + "A line of explanation that runs on for a while. " * 4 + "\n\n* one\n* two")
    short, medium, long = (code("\n".join(f"x{i} = {i}" for i in range(n))) for n in (8, 15, 26))
    assert height(short) < height(medium) < height(long) < SLIDE_HEIGHT  # alone, each fits
    types = [slide_type([text, cell], 1) for cell in (short, medium, long)]
    assert types == ["fragment", "-", "subslide"]
    assert not too_tall([long], 0)  # no explanation before it: nothing to move it away from


def test_text_that_would_not_fit_under_the_text_before_it_starts_a_subslide() -> None:
    long_text = md("\n\n".join("A paragraph of explanation, long enough to wrap over two lines. " * 2 for _ in range(6)))
    cells = [md("## 3 · A section\n\nIntro."), long_text, long_text, long_text, code("x = 1")]
    types = [slide_type(cells, i) for i in range(len(cells))]
    assert types == ["slide", "-", "subslide", "subslide", "fragment"]
