"""The Chinese edition (tools/i18n.py): catalogs complete and current, notebooks/zh/ generated from
them and committed, code identical to the English cell by cell, notebook 01's glossary used."""

from __future__ import annotations

import io
import json
import re
import tokenize
from pathlib import Path

import polib
import pytest
from markdown_it import MarkdownIt

from tools import i18n

TRANSLATED = i18n.translated_notebooks()
CATALOGS = {p.name: polib.pofile(str(i18n.catalog_path(p))) for p in TRANSLATED}
ZH = sorted(i18n.ZH_DIR.glob("*.ipynb"))


def code_tokens(source: str) -> list[tuple[int, str]]:
    """The cell's tokens without comments (magic lines blanked, and compared apart)."""
    return i18n.code_signature(source)[0]


def magics(source: str) -> list[str]:
    return i18n.code_signature(source)[1]


def test_code_signature_ignores_comments_only() -> None:
    """Independent of i18n.code_signature: tokenize's own view of a changed comment and a changed name."""
    code = "%time x = 1  # one\ny = x  # two\n"
    assert i18n.code_signature(code) == i18n.code_signature(code.replace("# two", "# 二"))
    assert i18n.code_signature(code) != i18n.code_signature(code.replace("y = x", "y = x + 0"))
    assert i18n.code_signature(code) != i18n.code_signature(code.replace("%time", "%timeit"))
    plain = [t.string for t in tokenize.generate_tokens(io.StringIO("y = x  # two\n").readline)]
    assert "# two" in plain and "# two" not in [s for _, s in i18n.code_signature("y = x  # two\n")[0]]


def test_notebooks_without_a_catalog_are_the_pending_ones() -> None:
    """A notebook has a catalog, or is listed in tools/i18n.py PENDING ("not yet translated")."""
    missing = [p.name for p in i18n.english_notebooks() if not i18n.catalog_path(p).is_file()]
    unlisted = [name for name in missing if name[:2] not in i18n.PENDING]
    assert not unlisted, f"no catalog for {unlisted}: `python -m tools.i18n init NN`, translate, `make i18n`"
    assert {"01", "02"} <= {p.name[:2] for p in TRANSLATED}


def test_the_chinese_notebooks_are_generated_and_committed() -> None:
    """notebooks/zh/ is exactly what the generator makes from the catalogs now."""
    expected = i18n.expected_editions()
    assert sorted(expected) == ZH, f"notebooks/zh/ holds {[p.name for p in ZH]}: run `make i18n`"
    for path, text in expected.items():
        assert path.read_text(encoding="utf-8") == text, f"notebooks/zh/{path.name} is out of date: run `make i18n`"


@pytest.mark.parametrize("path", ZH, ids=lambda p: p.name)
def test_code_is_identical_cell_by_cell(path: Path) -> None:
    """Same cells, same ids and types; code cells have the same tokens once comments are removed."""
    zh = i18n.load(path)
    en = i18n.load(i18n.EN_DIR / path.name)
    assert [(c["id"], c["cell_type"]) for c in zh["cells"]] == [(c["id"], c["cell_type"]) for c in en["cells"]]
    assert zh["metadata"] == en["metadata"]
    for zc, ec in zip(zh["cells"], en["cells"], strict=True):
        assert zc["metadata"] == ec["metadata"], f"zh/{path.name} cell {zc['id']}: metadata differs"
        if ec["cell_type"] == "code":
            z, e = i18n.source(zc), i18n.source(ec)
            assert code_tokens(z) == code_tokens(e), f"zh/{path.name} cell {zc['id']}: code differs from English"
            assert magics(z) == magics(e), f"zh/{path.name} cell {zc['id']}: magic lines differ"


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: p.name)
def test_every_cell_and_comment_is_translated_and_current(path: Path) -> None:
    """A stale translation (English changed, catalog not) or an untranslated entry fails here."""
    found = i18n.problems(i18n.load(path), CATALOGS[path.name], path.stem)
    assert not found, "\n".join(found[:20]) + "\nrun `make i18n`, then translate what the report lists"


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: p.name)
def test_translations_keep_code_links_and_structure(path: Path) -> None:
    """Code spans, URLs, headings, paragraphs, lists and tables of each Markdown cell are kept;
    comments stay one line and keep the `extra code` marker tools/lesson_lines.py reads."""
    bad = []
    for entry in CATALOGS[path.name]:
        if entry.obsolete or not entry.msgstr:
            continue
        if entry.msgctxt.endswith("#comment"):
            if "\n" in entry.msgstr or (entry.msgid.startswith("extra code") != entry.msgstr.startswith("extra code")):
                bad.append(f"{entry.msgctxt} {entry.msgid!r}: one line, `extra code` kept")
            continue
        bad += [f"{entry.msgctxt}: {p}" for p in i18n.structure_problems(entry.msgid, entry.msgstr)]
    assert not bad, f"{path.stem}: " + "\n".join(bad[:20])


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: p.name)
def test_glossary_terms_are_used(path: Path) -> None:
    """Notebook 01's glossary is the term base: an English term in a cell → its Chinese term there."""
    terms = i18n.term_base()
    bad = []
    for entry in CATALOGS[path.name]:
        if entry.obsolete or not entry.msgstr or entry.msgctxt.endswith("#comment"):
            continue
        missing = i18n.term_problems(entry.msgid, entry.msgstr, terms, entry.tcomment)
        bad += [f"cell {entry.msgctxt}: {', '.join(missing)}"] if missing else []
    assert not bad, (
        f"{path.stem}: glossary terms without their Chinese term (or a `# not a term: …` "
        "translator comment):\n" + "\n".join(bad)
    )


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: p.name)
def test_no_rejected_variants(path: Path) -> None:
    """One Chinese term per concept: no variant of tools/i18n.py REJECTED (批次大小, 全局批次,
    集合操作, 自定义循环, 输入管道 outside the slides' title, 综合项目, 预演, 延迟步数, GPU 内存, a bare
    epoch or scope …) in any translated cell or comment, emphasis included, code spans aside."""
    bad = [
        f"{entry.msgctxt}: {variant}"
        for entry in CATALOGS[path.name]
        if not entry.obsolete and entry.msgstr
        for variant in i18n.rejected_variants(entry.msgid, entry.msgstr)
    ]
    assert not bad, f"{path.stem}: rejected variants (→ the term to use):\n" + "\n".join(bad)


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: p.name)
def test_slide_names_are_glossed_at_first_use(path: Path) -> None:
    """The slides name the algorithms in English: Ring AllReduce（环形全归约）, Parameter Server（参数服务器）,
    Scatter Reduce（分散归约）, All Gather（全收集） at the first Markdown cell that uses the term."""
    found = i18n.slide_name_problems(CATALOGS[path.name])
    assert not found, f"{path.stem}: " + "\n".join(found)


def test_term_law_checks_can_fail() -> None:
    """Controls: emphasis no longer hides a term; variants, glosses and slide titles as specified."""
    terms = i18n.term_base()
    assert terms["staleness"] == ("陈旧度",) and terms["batch size"] == ("批量大小",)
    assert i18n.term_problems("The *global* batch size.", "*全局*批次大小。", terms) == [
        "'global batch size' → 全局批量大小", "'batch size' → 批量大小"]
    assert i18n.term_problems("the `batch size`", "`batch size`", terms) == []
    assert i18n.rejected_variants("x", "**全局批次**，每个 epoch 在 scope 中") == [
        "全局批次 → 全局批量（大小）", "epoch → 轮", "scope → 作用域"]
    assert i18n.rejected_variants("x", "一轮（epoch），`strategy.scope()`，`epochs=2`") == []
    assert i18n.rejected_variants("## 6 · The input pipeline (输入管道)", "## 6 · 输入管道") == []
    assert i18n.rejected_variants("The input pipeline.", "输入管道。") != []
    po = i18n.new_catalog()
    po.append(polib.POEntry(msgctxt="a", msgid="Ring all-reduce.", msgstr="环形全归约。"))
    po.append(polib.POEntry(msgctxt="b", msgid="Ring all-reduce.", msgstr="Ring AllReduce（环形全归约）。"))
    assert i18n.slide_name_problems(po) == [
        "cell a: first 环形全归约 without the slides' name: Ring AllReduce（环形全归约）"]


# --- the machinery itself, on small notebooks made here -------------------------------------


def notebook(*cells: tuple[str, str, str]) -> dict:
    return {
        "cells": [
            {"cell_type": kind, "id": cid, "metadata": {}, "source": text}
            | ({"outputs": [], "execution_count": None} if kind == "code" else {})
            for cid, kind, text in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


CODE = (
    "%%writefile programs/x.py\n"
    "import os  # noqa: F401\n"
    "x = 1  # the answer, almost\n"
    "# the answer, almost\n"
    "s = '# not a comment'\n"
    "#\n"
    "!ls  # a shell line\n"
)


def test_extract_follows_the_catalog_format() -> None:
    nb = notebook(("a", "markdown", "## Hello\n\nWorld"), ("b", "code", CODE))
    assert i18n.extract(nb) == [
        i18n.Entry("a", "## Hello\n\nWorld"),
        i18n.Entry("b#comment", "the answer, almost"),  # once: distinct comments; noqa, magics, "#" skipped
    ]
    with pytest.raises(ValueError, match="cell 0 has no id"):
        i18n.extract({"cells": [{"cell_type": "markdown", "source": "x"}]})


def test_generate_translates_comments_and_markdown_only() -> None:
    nb = notebook(("a", "markdown", "See [03](03_x.ipynb), [docs](../docs/c.md) and "
                   "[Colab](https://colab.research.google.com/github/o/r/blob/main/notebooks/01_y.ipynb)"),
                  ("b", "code", CODE))
    po = i18n.new_catalog()
    po.append(polib.POEntry(msgctxt="a", msgid=i18n.source(nb["cells"][0]), msgstr=i18n.source(nb["cells"][0])))
    po.append(polib.POEntry(msgctxt="b#comment", msgid="the answer, almost", msgstr="答案，差不多"))
    zh = i18n.generate_notebook(nb, po, translated={"01_y.ipynb"})
    code = i18n.source(zh["cells"][1])
    assert "x = 1  # 答案，差不多\n# 答案，差不多\n" in code and "'# not a comment'" in code
    assert code_tokens(code) == code_tokens(CODE) and magics(code) == magics(CODE)
    md = i18n.source(zh["cells"][0])
    assert "(../03_x.ipynb)" in md and "(../../docs/c.md)" in md  # no Chinese 03: the English one
    assert "/blob/main/notebooks/zh/01_y.ipynb" in md


PRINTING = """import matplotlib.pyplot as plt
table = {"step time": 3.0}
print(f"one step takes {table['step time']:.1f} s", "on 2 cores")
print(table["step time"], ", ")
plt.title("Loss per step")
plt.plot([1], label=f"{len(table)} workers")
plt.barh([0, 1], [2, 3], tick_label=["one bar", "other bar"])
plt.gca().set(yticklabels=[f"stage {s}" for s in range(2)])
"""


def test_printed_literals_are_the_lesson_text_only() -> None:
    """print's and the plot labels' own string literals; not keys, separators or programs."""
    found = [p.text for p in i18n.printed_literals(PRINTING)]
    assert found == ["f\"one step takes {table['step time']:.1f} s\"", '"on 2 cores"',
                     '"Loss per step"', 'f"{len(table)} workers"', '"one bar"', '"other bar"',
                     'f"stage {s}"']
    assert i18n.printed_literals("%%writefile w.py\nprint('the result')\n") == []
    assert i18n.printed_literals("%%bash\necho 'not python'\n") == []


def test_printed_literals_translate_with_their_fields_kept() -> None:
    usable = {("b#printed", "f\"one step takes {table['step time']:.1f} s\""):
              "f\"一步用时 {table['step time']:.1f} 秒\"",
              ("b#printed", '"Loss per step"'): '"每一步的损失"'}
    zh = i18n.translate_printed(PRINTING, usable, "b")
    assert "print(f\"一步用时 {table['step time']:.1f} 秒\", \"on 2 cores\")" in zh
    assert 'plt.title("每一步的损失")' in zh and 'print(table["step time"], ", ")' in zh
    assert code_tokens(zh) == code_tokens(PRINTING)  # the same code, the printed text apart
    assert code_tokens(PRINTING.replace("2 cores", "3 cores")) == code_tokens(PRINTING)
    assert code_tokens(PRINTING.replace(":.1f}", ":.2f}")) != code_tokens(PRINTING)
    for wrong, why in [("f\"一步用时 {table['step time']:.2f} 秒\"", "fields differ"),
                       ("\"一步用时", "not a Python string literal"), ("len(x)", "not a single")]:
        key = ("b#printed", "f\"one step takes {table['step time']:.1f} s\"")
        with pytest.raises(ValueError, match=why):
            i18n.translate_printed(PRINTING, {key: wrong}, "b")


def test_printed_literals_over_lines_and_the_term_law() -> None:
    """A two-line literal may stay two lines; the term law reads the words, not the {…} fields,
    and leaves a literal kept in English alone."""
    code = 'print(f"epoch {epoch}: "\n      f"loss {loss:.2f}")\n'
    english = i18n.printed_literals(code)[0]
    chinese = 'f"第 {epoch} 轮："\n      f"损失 {loss:.2f}"'
    assert i18n.literal_problem(english.text, chinese) is None
    zh = i18n.translate_printed(code, {("c#printed", english.text): chinese}, "c")
    assert code_tokens(zh) == code_tokens(code) and zh.count("\n") == code.count("\n")
    assert i18n.rejected_variants(english.text, chinese) == []  # {epoch} is code
    assert i18n.rejected_variants(english.text, 'f"第 {epoch} 个 epoch"') == ["epoch → 轮"]
    assert i18n.rejected_variants('"--epochs 2"', '"--epochs 2"') == []
    terms = {"policy": ("精度策略",)}
    assert i18n.term_problems('f"float32: {POLICY}"', 'f"float32：{POLICY}"', terms) == []
    assert i18n.term_problems('f"the policy {POLICY}"', 'f"{POLICY}"', terms) == ["'policy' → 精度策略"]


def test_the_chinese_font_has_every_printed_character() -> None:
    """The font utils.figures gives matplotlib draws every Chinese character the catalogs print."""
    from fontTools.ttLib import TTFont

    from tools import cjk_font

    cmap = TTFont(cjk_font.FONT).getBestCmap()
    missing = "".join(sorted(c for c in cjk_font.needed_characters() if ord(c) not in cmap))
    assert not missing, f"utils/fonts lacks {missing!r}: run `python -m tools.cjk_font`"


def test_soft_breaks_between_chinese_characters_are_joined() -> None:
    text = "第一行\n第二行，\n`code` 和\nEnglish\n\n* 列表\n* 二\n\n```\n代码\n代码\n```"
    assert i18n.join_soft_breaks(text) == "第一行第二行，\n`code` 和\nEnglish\n\n* 列表\n* 二\n\n```\n代码\n代码\n```"
    # inside a list item (indented continuation) and a block quote (">" lines, lazy continuation)
    assert i18n.join_soft_breaks("* 环形\n  全归约\n* 二") == "* 环形全归约\n* 二"
    assert i18n.join_soft_breaks("> 副本\n> 数\n目") == "> 副本数目"
    # a heading ends at its line; a ">" line after a paragraph starts a quote: both kept
    assert i18n.join_soft_breaks("## 标题\n正文") == "## 标题\n正文"
    assert i18n.join_soft_breaks("正文\n> 引用") == "正文\n> 引用"


def test_ascii_quotes_become_chinese_ones_outside_code() -> None:
    text = '这些"机器"共享 `"x"`、<a href="y">链接</a> 和 [文档](d.md "t")'
    assert i18n.chinese_quotes(text) == '这些“机器”共享 `"x"`、<a href="y">链接</a> 和 [文档](d.md "t")'


MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
CJK = "[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"


def rendering_defects(markdown: str) -> list[str]:
    """What a reader sees wrong in the rendered cell: a space between two Chinese characters
    (a soft break, or a space inside a run of text; a space next to ``**…**`` is Markdown's own,
    needed where the emphasis ends in punctuation) and an ASCII double quote in the text."""
    found = []
    for block in MD.parse(markdown):
        children = block.children
        if not children:
            continue
        for before, token, after in zip([None, *children[:-1]], children, [*children[1:], None], strict=True):
            if token.type == "softbreak" and before is not None and after is not None:
                if re.search(CJK + "$", before.content) and re.match(CJK, after.content):
                    found.append(f"line break: {before.content[-6:]}⏎{after.content[:6]}")
            if token.type == "text":
                found += [f"space: {m.group(0)}" for m in re.finditer(f"{CJK} +{CJK}", token.content)]
                found += [f"ASCII quote: {token.content[:30]}"] if '"' in token.content else []
    return found


def test_rendering_defects_are_seen() -> None:
    """Controls: the check above sees each defect the generator removes."""
    assert rendering_defects("* 环形\n  全归约") == ["line break: 环形⏎全归约"]
    assert rendering_defects("> 副本\n> 数") == ["line break: 副本⏎数"]
    assert rendering_defects('环形 全归约，"机器"') == ["space: 形 全", 'ASCII quote: 环形 全归约，"机器"']
    assert rendering_defects(i18n.chinese_quotes(i18n.join_soft_breaks('* 环形\n  全归约，"机器"'))) == []
    assert rendering_defects("**课时安排：** 约 10 分钟，`a  b`") == []


@pytest.mark.parametrize("path", ZH, ids=lambda p: p.name)
def test_rendered_chinese_has_no_stray_spaces_or_ascii_quotes(path: Path) -> None:
    """Every Markdown cell of a Chinese notebook, rendered (CommonMark + tables): no space between
    two Chinese characters from a line break or inside text, no ASCII "…" quotes."""
    bad = [
        f"cell {cell['id']}: {defect}"
        for cell in i18n.load(path)["cells"]
        if cell["cell_type"] == "markdown"
        for defect in rendering_defects(i18n.source(cell))
    ]
    assert not bad, f"zh/{path.name}: " + "\n".join(bad[:20])


def test_a_stale_translation_is_caught_and_kept_as_fuzzy() -> None:
    """English edited, catalog not: the test above fails naming the cell and `make i18n`; the
    generator keeps the English; `make i18n` marks the old translation fuzzy with its msgid."""
    old = notebook(("a", "markdown", "Two workers."), ("b", "code", "x = 1  # one\ny = 2  # two\n"))
    po, _ = i18n.merge(i18n.new_catalog(), i18n.extract(old))
    for entry, chinese in zip(po, ["两个工作节点。", "一", "二"], strict=True):
        entry.msgstr = chinese
    po[0].tcomment = "not a term: worker (a test)"
    assert i18n.problems(old, po, "nb") == []
    new = notebook(("a", "markdown", "Three workers."), ("b", "code", "x = 1  # one\ny = 2  # two!\n"))
    found = i18n.problems(new, po, "nb")
    assert len(found) == 2 and found[0].startswith("nb cell a (Markdown cell 'Three workers.')")
    assert all("make i18n" in line for line in found)
    assert i18n.source(i18n.generate_notebook(new, po, set())["cells"][0]) == "Three workers."
    merged, counts = i18n.merge(po, i18n.extract(new))
    assert counts == {"new": 0, "fuzzy": 2, "obsolete": 0}
    fuzzy = [e for e in merged if "fuzzy" in e.flags]
    assert [(e.msgid, e.previous_msgid, e.msgstr) for e in fuzzy] == [
        ("Three workers.", "Two workers.", "两个工作节点。"), ("two!", "two", "二")]
    assert fuzzy[0].tcomment == "not a term: worker (a test)"  # the translator's note outlives the edit
    assert all("stale" in line for line in i18n.problems(new, merged, "nb"))


def test_update_writes_new_entries_and_keeps_obsolete_ones(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(i18n, "CATALOG_DIR", tmp_path)
    path = tmp_path / "09_t.ipynb"
    path.write_text(json.dumps(notebook(("a", "markdown", "Hi"), ("b", "markdown", "Bye"))), encoding="utf-8")
    assert i18n.update(path) is None  # no catalog, not asked to start one
    assert i18n.update(path, create=True) == {"new": 2, "fuzzy": 0, "obsolete": 0}
    po = polib.pofile(str(tmp_path / "09_t.po"))
    assert po.metadata["Language"] == "zh_CN" and [e.msgstr for e in po] == ["", ""]
    po[1].msgstr = "再见"
    po.save()
    path.write_text(json.dumps(notebook(("a", "markdown", "Hi"))), encoding="utf-8")
    assert i18n.update(path)["obsolete"] == 1
    assert [(e.msgid, e.obsolete) for e in polib.pofile(str(tmp_path / "09_t.po"))] == [("Hi", False), ("Bye", True)]


def test_term_base_and_its_check() -> None:
    terms = i18n.term_base()
    assert terms["worker"] == ("工作节点",) and terms["stale gradient"] == ("过时梯度", "陈旧梯度")
    assert terms["push"] == ("推送",) and terms["coordinator"] == ("协调器",)
    english = "Each worker pushes its gradient to the parameter server, see `worker_fn`."
    assert i18n.term_problems(english, "每个工作节点把梯度推送给参数服务器。", terms) == []
    assert i18n.term_problems(english, "每个 worker 把梯度推送给参数服务器。", terms) == ["'worker' → 工作节点"]
    assert i18n.term_problems("Call `worker_fn`.", "调用 `worker_fn`。", terms) == []  # code is not prose
    assert i18n.term_problems("It pulls towards x.", "它趋向 x。", terms, "not a term: pull (pulls towards)") == []


def test_structure_check_catches_a_lost_code_span_and_heading() -> None:
    english = "## 1. Ring (环)\n\nUse `tf.distribute` ([docs](https://x.org/a)).\n\n* one\n* two"
    assert i18n.structure_problems(english, "## 1. 环\n\n使用 `tf.distribute`（[文档](https://x.org/a)）。\n\n* 一\n* 二") == []
    found = i18n.structure_problems(english, "### 1. 环\n\n使用 tf.distribute。\n\n* 一")
    assert "code span `tf.distribute` missing" in found and "URL https://x.org/a missing" in found
    assert "heading levels differ" in found and "list items: 2 in English, 1 here" in found


@pytest.mark.parametrize("path", ZH, ids=lambda p: p.name)
def test_relative_links_resolve_from_notebooks_zh(path: Path) -> None:
    """Every relative link of a Chinese notebook points at a file that exists from notebooks/zh/."""
    broken = []
    for cell in i18n.load(path)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for _, target in i18n._LINK.findall(i18n.source(cell)):
            if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
                continue
            if not (path.parent / target.split("#")[0]).exists():
                broken.append(f"cell {cell['id']}: {target}")
    assert not broken, f"zh/{path.name}: " + ", ".join(broken)


def test_report_with_and_without_pending(tmp_path: Path, monkeypatch) -> None:
    """A notebook without a catalog is a to-do ("NO CATALOG") unless its number is in PENDING."""
    monkeypatch.setattr(i18n, "EN_DIR", tmp_path)
    monkeypatch.setattr(i18n, "CATALOG_DIR", tmp_path / "zh_CN")
    (tmp_path / "99_t.ipynb").write_text(json.dumps(notebook(("a", "markdown", "Hi"))), encoding="utf-8")
    monkeypatch.setattr(i18n, "PENDING", ())
    lines, todo = i18n.report()
    assert todo == 1 and "NO CATALOG" in lines[0]
    monkeypatch.setattr(i18n, "PENDING", ("99",))
    lines, todo = i18n.report()
    assert todo == 0 and "not yet translated" in lines[0]


def test_readme_zh_is_in_step_with_readme_and_the_notebooks() -> None:
    """README.zh.md: translated from README.md's current introduction and notebook table (its
    fingerprint), one row per Chinese notebook titled as the notebook is, links that resolve."""
    found = i18n.readme_problems()
    assert not found, "\n".join(found)
    text = i18n.README_ZH.read_text(encoding="utf-8")
    for _, target in i18n._LINK.findall(text):
        if not re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
            assert (i18n.ROOT / target.split("#")[0]).exists(), f"README.zh.md: broken link {target}"
    assert "代替" in text and "在 nbval 下运行中文版的 00、02、09 和 12" in text  # in place of, not in addition


def test_readme_check_sees_a_changed_introduction_and_a_wrong_row(tmp_path: Path, monkeypatch) -> None:
    english = i18n.README_EN.read_text(encoding="utf-8")
    assert i18n.readme_fingerprint(english) != i18n.readme_fingerprint(english.replace("Slurm", "SLURM", 1))
    chinese = i18n.README_ZH.read_text(encoding="utf-8")
    monkeypatch.setattr(i18n, "README_ZH", tmp_path / "README.zh.md")
    (tmp_path / "README.zh.md").write_text(chinese.replace("| 09 | [常见问题]", "| 09 | [问题]"), encoding="utf-8")
    assert i18n.readme_problems() == ["README.zh.md row 09: should link [常见问题](notebooks/zh/09_troubleshooting.ipynb)"]
    monkeypatch.setattr(i18n, "README_EN", tmp_path / "README.md")
    (tmp_path / "README.md").write_text(english.replace("Slurm", "SLURM", 1), encoding="utf-8")
    assert "introduction or notebook table changed" in i18n.readme_problems()[0]


def test_sentence_figures_count_prose_only() -> None:
    """tools/zh_sentences.py: lists, headings, tables and code blocks left out; a code span is its text."""
    from tools import zh_sentences

    po = i18n.new_catalog()
    po.append(polib.POEntry(msgctxt="b#printed", msgid='"x"', msgstr='"不算（括号）；"'))
    po.append(polib.POEntry(msgctxt="a", msgid="x", msgstr=(
        "## 标题不算\n\n第一句很短。第二句用 `tf.distribute.MirroredStrategy`（镜像）；然后结束——好。\n\n"
        "* 列表项不算。\n  续行也不算。\n\n| 表 | 格 |\n|---|---|\n| 不 | 算 |")))
    f = zh_sentences.figures(po, "t")
    # 第一句很短。 | 第二句用tf.distribute.MirroredStrategy（镜像）；然后结束——好。
    assert (f.sentences, f.characters) == (2, 6 + 47)
    assert f.median == (6 + 47) / 2 and f.over120 == 0
    assert round(f.paren * f.characters / 1000) == 1 and round(f.dash * f.characters / 1000) == 1


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: p.name)
def test_sentences_meet_the_goal(path: Path) -> None:
    """Issue 49's goal for the prose of every catalog (d2l-zh's figures): `python -m tools.zh_sentences`."""
    from tools import zh_sentences

    f = zh_sentences.figures(CATALOGS[path.name], path.stem)
    assert f.meets_goal(), f"{path.stem}: {f}"


def test_zh_fix_replaces_rejected_variants_outside_code() -> None:
    """tools/zh_fix.py: its output passes the term law; code spans and the slides' titles kept."""
    from tools import zh_fix

    chinese = "每个 epoch 用**全局批次**，在 scope 中运行 `epochs=2`；自定义循环的输入管道。"
    fixed = zh_fix.fix_terms("Each epoch …", chinese)
    assert fixed == "每轮用**全局批量**，在作用域中运行 `epochs=2`；自定义训练循环的输入流水线。"
    assert i18n.rejected_variants("x", fixed) == []
    assert zh_fix.fix_terms("## 6 · The input pipeline (输入管道)", "## 6 · 输入管道") == "## 6 · 输入管道"
    assert zh_fix.fix_punct("甲；乙——丙。\n\n* 丁；戊") == "甲。乙：丙。\n\n* 丁；戊"
