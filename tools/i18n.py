"""The Chinese edition (中文版): catalogs in ``i18n/zh_CN/``, notebooks generated into ``notebooks/zh/``.

``python -m tools.i18n update|report|generate|all|init NN|readme`` (``make i18n`` runs ``all``):

* **Catalogs** (gettext ``.po`` through polib, one per English notebook:
  ``i18n/zh_CN/<stem>.po``; format in ``i18n/README.md``): one entry per Markdown cell
  (msgctxt = the cell id, msgid = its whole source) and one per distinct code comment
  (msgctxt = ``<id>#comment``, msgid = the comment's text), and one per distinct printed
  literal (msgctxt = ``<id>#printed``, msgid = the literal as written, quotes and all: the text a
  cell prints or plots as its lesson, see :func:`printed_literals`).
* **update**: the entries the English notebooks have now are merged into their catalogs: new
  ones are added empty; an entry whose English changed keeps its old translation as *fuzzy*,
  with the English it translated as ``#| msgid`` (so the translator sees what changed);
  entries no cell has any more become obsolete (``#~``). ``init NN`` starts a new catalog.
* **report**: per notebook, the missing, untranslated and stale (fuzzy) entries, and the
  notebooks without a catalog (the ones in :data:`PENDING` are expected: "not yet translated").
* **generate**: ``notebooks/zh/<name>.ipynb`` for every notebook with a catalog: the English
  notebook with each Markdown cell, code comment and printed literal replaced by its
  translation, nothing else in the code changed (a printed literal keeps its {…} fields); links made right for ``notebooks/zh/``.
  An entry that is missing, empty or fuzzy leaves the English in place (the report and
  ``tests/test_i18n.py`` say where).
* **readme**: README.zh.md is written by hand; it records a fingerprint of what it translates
  of README.md (introduction, notebook table). ``report`` and the tests say when that changed or
  when its table differs from ``notebooks/zh/``; ``readme`` records the new fingerprint.

Project tooling, not used inside notebooks; ``tests/test_i18n.py`` checks its output.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import polib

from tools.nbclean import dumps

ROOT = Path(__file__).resolve().parent.parent
EN_DIR = ROOT / "notebooks"
ZH_DIR = EN_DIR / "zh"
CATALOG_DIR = ROOT / "i18n" / "zh_CN"
NOTEBOOK_NAME = re.compile(r"^(\d\d)_[a-z0-9_]+\.ipynb$")
# Notebooks whose Chinese catalog does not exist yet: `report` lists them as "not yet translated"
# and the tests let them be. Empty: every notebook has its catalog. A new notebook gets its
# catalog in the same change; only if it cannot, its number goes here (`report` says when to
# take it out again).
PENDING: tuple[str, ...] = ()
SKIPPED_COMMENTS = ("noqa", "type:", "fmt:", "!", "pragma")
ZH_HEADER = {
    "Project-Id-Version": "gpu-distributed-training",
    "Language": "zh_CN",
    "MIME-Version": "1.0",
    "Content-Type": "text/plain; charset=UTF-8",
    "Content-Transfer-Encoding": "8bit",
}


@dataclass(frozen=True)
class Entry:
    """One translatable text of a notebook: a Markdown cell, a code comment or a printed literal."""

    msgctxt: str
    msgid: str


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def _blank_magics(code: str) -> str:
    """The cell with IPython magic and shell lines (first non-space "%" or "!") emptied, lines kept."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))


def _tokens(code: str, where: str) -> list[tokenize.TokenInfo]:
    """The Python tokens of a code cell's source (magics blanked); raises naming ``where``."""
    try:
        return list(tokenize.generate_tokens(io.StringIO(_blank_magics(code)).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise ValueError(f"{where}: cannot tokenize the code cell ({error})") from error


def comment_tokens(code: str, where: str = "cell") -> list[tokenize.TokenInfo]:
    """The COMMENT tokens of a code cell's source (magics blanked)."""
    return [t for t in _tokens(code, where) if t.type == tokenize.COMMENT]


def code_signature(code: str, where: str = "cell") -> tuple[list[tuple[int, str]], list[str]]:
    """What must not change between the English and the Chinese cell: the tokens without the
    comments, each printed literal reduced to its {…} fields, and the magic and shell lines
    (which are not Python)."""
    magics = [line for line in code.split("\n") if line.lstrip().startswith(("%", "!"))]
    printed = printed_literals(code)
    tokens: list[tuple[int, str]] = []
    for token in _tokens(code, where):
        inside = next((p for p in printed if p.start <= token.start < p.end), None)
        if inside is not None:  # a printed literal: its translation may differ, not its fields
            if token.start == inside.start:
                tokens.append((-1, inside.fields))
        elif token.type != tokenize.COMMENT:
            tokens.append((token.type, token.string))
    return tokens, magics


# What a notebook prints or plots as its lesson: the string literals passed straight to these
# calls (print's arguments, plot titles and axis labels). Other literals (dictionary keys, column
# names, file names, programs' output that a cell parses) stay as they are.
PRINTING_CALLS = {"print", "title", "suptitle", "set_title", "xlabel", "ylabel", "set_xlabel",
                  "set_ylabel"}
PRINTING_KEYWORDS = {"label", "title", "xlabel", "ylabel", "tick_label", "xticklabels", "yticklabels"}
_WORD = re.compile(r"[^\W\d_]{2,}|[\u4e00-\u9fff]")  # a word, or a Chinese character


@dataclass(frozen=True)
class Printed:
    """One printed string literal of a code cell: its source text and where it is."""

    text: str
    start: tuple[int, int]  # (line, column) as tokenize counts them: lines from 1
    end: tuple[int, int]
    fields: str  # the f-string's replacement fields, which a translation must keep


def _literal_fields(node: ast.expr) -> str:
    """The replacement fields of an f-string (``ast.dump``), "" for a plain string."""
    values = node.values if isinstance(node, ast.JoinedStr) else []
    return repr([ast.dump(v) for v in values if isinstance(v, ast.FormattedValue)])


def _is_text(node: ast.expr) -> bool:
    """A string literal with words in it (not "", ", " or a lone format field), in either language."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_WORD.search(node.value))
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
        return bool(_WORD.search("".join(parts)))
    return False


def printed_literals(code: str) -> list[Printed]:
    """The string literals of a code cell that are printed or plotted text, in source order.

    ``%%writefile`` programs have none: what a program prints is read by the cell that runs it.
    A cell that is not Python (``%%bash``) has none either."""
    if code.lstrip().startswith("%%writefile"):
        return []
    blanked = _blank_magics(code)
    try:
        tree = ast.parse(blanked)
    except SyntaxError:
        return []
    nodes = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        if name in PRINTING_CALLS:
            nodes.extend(call.args)
        nodes.extend(k.value for k in call.keywords if k.arg in PRINTING_KEYWORDS)
    found = [literal_at(blanked, node) for node in _elements(nodes) if _is_text(node)]
    return sorted(found, key=lambda p: p.start)


def literal_at(code: str, node: ast.expr) -> Printed:
    """The string literal ``node`` of ``code``: its source text, where it is, its {…} fields.
    Also for tools/build_assignments.py (the tests' assert messages)."""
    start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    return Printed(ast.get_source_segment(code, node), _columns(code, start), _columns(code, end),
                   _literal_fields(node))


def _elements(nodes: list[ast.expr]) -> list[ast.expr]:
    """The nodes, with a list or tuple of labels (``tick_label=["a", "b"]``) and a comprehension's
    element (``[f"stage {s}" for s in ...]``) in place of the container."""
    found = []
    for node in nodes:
        if isinstance(node, (ast.List, ast.Tuple)):
            found.extend(node.elts)
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            found.append(node.elt)
        else:
            found.append(node)
    return found


def _columns(code: str, position: tuple[int, int]) -> tuple[int, int]:
    """ast's (line, UTF-8 byte offset) as (line, character offset), as tokenize counts."""
    line, offset = position
    text = code.split("\n")[line - 1]
    return line, len(text.encode("utf-8")[:offset].decode("utf-8"))


def literal_problem(english: str, chinese: str) -> str | None:
    """Why ``chinese`` cannot replace the string literal ``english`` (both as written; None: it can)."""
    try:
        node = ast.parse(f"({chinese.strip()})", mode="eval").body  # in brackets: over lines too
    except SyntaxError as error:
        return f"not a Python string literal ({error.msg})"
    if not isinstance(node, (ast.Constant, ast.JoinedStr)) or (
        isinstance(node, ast.Constant) and not isinstance(node.value, str)
    ):
        return "not a single string literal"
    if _literal_fields(node) != _literal_fields(ast.parse(f"({english.strip()})", mode="eval").body):
        return "its {…} fields differ from the English ones"
    return None


def comment_text(token: tokenize.TokenInfo) -> str | None:
    """The translatable text of a comment token ("#" and the space after it removed), or None."""
    text = token.string[1:].strip()
    if not text or text.startswith(SKIPPED_COMMENTS):
        return None
    return text


def extract(nb: dict, name: str = "notebook") -> list[Entry]:
    """The entries of a notebook, in cell order: Markdown cells whole; in code cells each distinct
    comment, then each distinct printed literal (:func:`printed_literals`)."""
    entries: list[Entry] = []
    for index, cell in enumerate(nb["cells"]):
        cell_id = cell.get("id")
        if not cell_id:
            raise ValueError(f"{name} cell {index} has no id: run `make format`")
        if cell["cell_type"] == "markdown":
            entries.append(Entry(cell_id, source(cell)))
        elif cell["cell_type"] == "code":
            seen = set()
            for token in comment_tokens(source(cell), f"{name} cell {cell_id}"):
                text = comment_text(token)
                if text is not None and text not in seen:
                    seen.add(text)
                    entries.append(Entry(f"{cell_id}#comment", text))
            for text in dict.fromkeys(p.text for p in printed_literals(source(cell))):
                entries.append(Entry(f"{cell_id}#printed", text))
    return entries


def english_notebooks() -> list[Path]:
    return sorted(p for p in EN_DIR.glob("*.ipynb") if NOTEBOOK_NAME.match(p.name))


def catalog_path(notebook: Path) -> Path:
    return CATALOG_DIR / f"{notebook.stem}.po"


def new_catalog() -> polib.POFile:
    po = polib.POFile(wrapwidth=0)  # one line of the .po per line of text: diffs a translator can read
    po.metadata = dict(ZH_HEADER)
    return po


def _closest(entry: Entry, candidates: list[polib.POEntry]) -> polib.POEntry | None:
    """The old translated entry of the same cell that ``entry`` most likely replaces."""
    same = [c for c in candidates if c.msgctxt == entry.msgctxt and c.msgstr]
    if not same:
        return None
    if "#" not in entry.msgctxt:
        return same[0]  # one Markdown entry per cell: the cell's old text
    best = max(same, key=lambda c: difflib.SequenceMatcher(None, c.msgid, entry.msgid).ratio())
    return best if difflib.SequenceMatcher(None, best.msgid, entry.msgid).ratio() >= 0.5 else None


def merge(po: polib.POFile, entries: list[Entry]) -> tuple[polib.POFile, dict[str, int]]:
    """A catalog with exactly ``entries`` (in order), translations carried over from ``po``."""
    old = {(e.msgctxt, e.msgid): e for e in po if not e.obsolete}
    unused = [e for e in po if not e.obsolete and (e.msgctxt, e.msgid) not in {(x.msgctxt, x.msgid) for x in entries}]
    merged = new_catalog()
    merged.metadata = dict(po.metadata) | {"Language": "zh_CN"}
    counts = {"new": 0, "fuzzy": 0, "obsolete": 0}
    for entry in entries:
        kept = old.get((entry.msgctxt, entry.msgid))
        if kept is not None:
            merged.append(kept)
            continue
        previous = _closest(entry, unused)
        if previous is None:
            merged.append(polib.POEntry(msgctxt=entry.msgctxt, msgid=entry.msgid, msgstr=""))
            counts["new"] += 1
            continue
        unused.remove(previous)
        merged.append(polib.POEntry(
            msgctxt=entry.msgctxt, msgid=entry.msgid, msgstr=previous.msgstr, flags=["fuzzy"],
            tcomment=previous.tcomment,  # the translator's notes (`# not a term: …`) still apply
            previous_msgctxt=None if previous.msgctxt == entry.msgctxt else previous.msgctxt,
            previous_msgid=previous.previous_msgid or previous.msgid,
        ))
        counts["fuzzy"] += 1
    for entry in unused + [e for e in po if e.obsolete]:
        if entry.msgstr and not entry.obsolete:
            counts["obsolete"] += 1
        if entry.msgstr:  # a translation no cell needs now: kept at the end as #~, for reuse
            entry.obsolete = True
            merged.append(entry)
    return merged, counts


def update(notebook: Path, create: bool = False) -> dict[str, int] | None:
    """Merge the notebook's entries into its catalog (None: no catalog and ``create`` False)."""
    path = catalog_path(notebook)
    if not path.is_file() and not create:
        return None
    po = polib.pofile(str(path), wrapwidth=0) if path.is_file() else new_catalog()
    merged, counts = merge(po, extract(load(notebook), notebook.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = merged.__unicode__()
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return counts


def translations(po: polib.POFile) -> dict[tuple[str, str], str]:
    """``{(msgctxt, msgid): msgstr}`` of the usable entries: translated, not fuzzy, not obsolete."""
    return {
        (e.msgctxt, e.msgid): e.msgstr
        for e in po
        if e.msgstr and not e.obsolete and "fuzzy" not in e.flags
    }


def problems(nb: dict, po: polib.POFile, name: str = "notebook") -> list[str]:
    """What a translator still has to do: one line per missing, empty or stale entry."""
    usable = translations(po)
    by_key = {(e.msgctxt, e.msgid): e for e in po if not e.obsolete}
    found = []
    for entry in extract(nb, name):
        what = {"comment": "comment", "printed": "printed text"}.get(
            entry.msgctxt.partition("#")[2], "Markdown cell")
        cell = entry.msgctxt.split("#")[0]
        first = entry.msgid.strip().split("\n")[0][:60]
        if (entry.msgctxt, entry.msgid) in usable:
            continue
        po_entry = by_key.get((entry.msgctxt, entry.msgid))
        if po_entry is None:
            state = "missing from the catalog (English new or changed: run `make i18n`)"
        elif "fuzzy" in po_entry.flags:
            state = "stale: the English changed since it was translated (fuzzy)"
        else:
            state = "not translated yet"
        found.append(f"{name} cell {cell} ({what} {first!r}): {state}")
    return found


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_URL = re.compile(r"https?://[^\s)\"'<>]+")
_HEADING = re.compile(r"^(#{1,6})\s", re.M)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_ITEM = re.compile(r"^\s*(?:[*+-]|\d+\.)\s", re.M)
_ROW = re.compile(r"^\|.*\|\s*$", re.M)


def _paragraphs(text: str) -> int:
    return len([p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()])


def structure_problems(english: str, chinese: str) -> list[str]:
    """How a translated Markdown cell departs from the English one's fixed parts: code spans,
    URLs, headings, paragraphs, list items and table rows must all be kept."""
    found = []
    for span in dict.fromkeys(m.group(0) for m in _CODE_SPAN.finditer(english)):
        if span not in chinese:
            found.append(f"code span {span} missing")
    for url in dict.fromkeys(_URL.findall(english)):
        if url not in chinese:
            found.append(f"URL {url} missing")
    for what, pattern in (("headings", _HEADING), ("list items", _ITEM), ("table rows", _ROW)):
        if len(pattern.findall(english)) != len(pattern.findall(chinese)):
            found.append(f"{what}: {len(pattern.findall(english))} in English, {len(pattern.findall(chinese))} here")
    if [len(h) for h in _HEADING.findall(english)] != [len(h) for h in _HEADING.findall(chinese)]:
        found.append("heading levels differ")
    if _paragraphs(english) != _paragraphs(chinese):
        found.append(f"paragraphs: {_paragraphs(english)} in English, {_paragraphs(chinese)} here")
    return found


GLOSSARY_NOTEBOOK = "01_distributed_training_theory.ipynb"


def term_base(nb: dict | None = None) -> dict[str, tuple[str, ...]]:
    """``{English term: accepted Chinese renderings}`` from notebook 01's glossary tables
    (``| English | 中文 | where |``, one per slide): "a, b" and "a / b" pair up term by term; a bracketed
    Chinese term after another is an accepted alternative ("过时梯度 (陈旧梯度)"); an English
    one is only a gloss ("工作节点 (worker)": 工作节点 is required). LAW_TERMS added, and
    winning where they differ."""
    nb = nb if nb is not None else load(EN_DIR / GLOSSARY_NOTEBOOK)
    return _glossary(nb) | LAW_TERMS


def _glossary(nb: dict) -> dict[str, tuple[str, ...]]:
    table = "\n".join(source(c) for c in nb["cells"] if "| English | 中文 |" in source(c))
    if not table:
        raise ValueError(f"{GLOSSARY_NOTEBOOK}: no glossary table '| English | 中文 | …'")
    terms: dict[str, tuple[str, ...]] = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[0] in ("English", "") or set(cells[0]) <= set("-: "):
            continue
        english = re.sub(r"\s*\(.*?\)", "", cells[0])
        split = (lambda text: re.split(r"\s*/\s*", text)) if "/" in english else (lambda text: text.split(", "))
        ens, zhs = split(english), split(cells[1])
        if len(ens) != len(zhs):
            ens, zhs = [english], [cells[1]]
        for en, zh in zip(ens, zhs, strict=True):
            accepted = [a.strip() for a in re.split(r"[()]", zh) if _CJK.search(a)]
            terms[en.strip()] = tuple(dict.fromkeys(accepted))
    return terms


def _prose(markdown: str) -> str:
    """The words of a cell a reader reads: code, URLs, HTML tags and link targets removed, and
    the emphasis markers (``*`` and ``__``), which would split a term ("*global* batch size")."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = _CODE_SPAN.sub(" ", text)
    text = re.sub(r"\]\([^)]*\)|<[^>]+>|https?://\S+", " ", text)
    return text.replace("*", "").replace("__", "")


# The term law (issue 49): one Chinese term per concept. Notebook 01's glossary table is the term
# base; LAW_TERMS adds the concepts it lacks and settles the ones it words otherwise (staleness:
# 陈旧度, not 延迟步数, which reads as latency's 延迟). Each is required where the English prose has
# the term, like the glossary's.
LAW_TERMS: dict[str, tuple[str, ...]] = {
    "staleness": ("陈旧度",),
    "batch size": ("批量大小",),
    "collective op": ("集合通信操作",),
    "custom training loop": ("自定义训练循环",),
    "input pipeline": ("输入流水线", "输入管道"),  # 输入管道 only as the slides' title: REJECTED
    "capstone": ("实战",),
    "epoch": ("轮",),
    "scope": ("作用域",),
    "GPU memory": ("显存",),
    "auto-shard policy": ("分片策略",),
    "learning-rate schedule": ("学习率调度",),
    "policy": ("精度策略", "策略（policy）", "分片策略", "学习率调度"),  # never a bare 策略 (= strategy)
}
# Variants no catalog may use (in prose; a slide title the English quotes in brackets and a gloss
# in full-width brackets, "轮（epoch）", are exempt): pattern → the term to use instead.
REJECTED: dict[str, str] = {
    "批次大小": "批量大小",
    "全局批次": "全局批量（大小）",
    "集合操作": "集合通信操作",
    "集合运算": "集合通信操作",
    "自定义循环": "自定义训练循环",
    "输入管道": "输入流水线 (输入管道 is only the slides' title)",
    "综合项目": "实战",
    "预演": "演练",
    "延迟步数": "陈旧度",
    "迭代周期": "轮",
    r"GPU\s?内存": "显存",
    r"(?<![A-Za-z_])[Ee]pochs?(?![A-Za-z_])": "轮",
    r"(?<![A-Za-z_.])scopes?(?![A-Za-z_(])": "作用域",
}
# The slides' names of the algorithms, glossed at their first use in each notebook that uses them.
SLIDE_NAMES = {"环形全归约": "Ring AllReduce", "参数服务器": "Parameter Server",
               "分散归约": "Scatter Reduce", "全收集": "All Gather"}


def _without_fields(text: str) -> str:
    """A printed f-string's words: its {…} fields are code, not prose. Other text as it is."""
    return re.sub(r"\{[^{}]*\}", " ", text) if text.lstrip()[:2] in ('f"', "f'") else text


def rejected_variants(english: str, chinese: str) -> list[str]:
    """The rejected variants (REJECTED) in a translation's prose."""
    if chinese == english and re.match(r"[rRbBfFuU]{0,2}[\"']", english):
        return []  # a printed literal kept in English (a name, a command line): no Chinese prose
    text = _without_fields(_prose(chinese))
    for title in re.findall(r"[(（*]([^()（）*]*[\u4e00-\u9fff][^()（）*]*)[)）*]", english):
        text = text.replace(title, " ")  # the slides' own titles, as the English quotes them
    text = re.sub(r"（[A-Za-z][A-Za-z .-]*）", " ", text)  # glosses: 轮（epoch）
    text = re.sub(r"“[^“”\u4e00-\u9fff]*”", " ", text)  # English quoted in Chinese quotes
    text = text.replace("frozen-epochs: on purpose", " ")  # a marker tests/test_fit_iterators.py reads
    return [f"{m.group(0)} → {use}" for pattern, use in REJECTED.items() for m in re.finditer(pattern, text)]


def slide_name_problems(po: polib.POFile) -> list[str]:
    """Each slide name's Chinese term (环形全归约 …): its first use in the notebook's Markdown cells
    carries the slides' name, "Ring AllReduce（环形全归约）"."""
    found = []
    cells = [e for e in po if not e.obsolete and e.msgstr and not e.msgctxt.endswith("#comment")]
    for chinese, name in SLIDE_NAMES.items():
        first = next((e for e in cells if chinese in _prose(e.msgstr)), None)
        if first is not None and f"{name}（{chinese}）" not in _prose(first.msgstr):
            found.append(f"cell {first.msgctxt}: first {chinese} without the slides' name: {name}（{chinese}）")
    return found


NOT_A_TERM = re.compile(r"^not a term:\s*(.+)$", re.M)


def term_problems(english: str, chinese: str, terms: dict[str, tuple[str, ...]], note: str = "") -> list[str]:
    """Glossary terms of the English cell whose Chinese term the translation lacks. ``note`` is
    the entry's translator comment: a line ``not a term: pull, push`` exempts words the cell uses
    in another sense ("pulls the weights towards …")."""
    prose, chinese = _without_fields(_prose(english)), _prose(chinese)
    exempt = {
        w.strip().lower() for line in NOT_A_TERM.findall(note) for w in re.sub(r"\(.*?\)", "", line).split(",")
    }
    found = []
    for term, accepted in terms.items():
        if term.lower() in exempt:
            continue
        words = r"[\s-]?".join(re.escape(w) for w in re.split(r"[\s-]", term))
        if re.search(rf"(?<![\w-]){words}(?:s|es)?(?![\w-])", prose, re.I):
            if not any(a in chinese for a in accepted):
                found.append(f"'{term}' → {' / '.join(accepted)}")
    return found


def translate_comments(code: str, usable: dict[tuple[str, str], str], cell_id: str) -> str:
    """``code`` with every translated comment replaced (the "#" and its spacing kept), nothing else."""
    lines = code.split("\n")
    for token in comment_tokens(code, f"cell {cell_id}"):
        text = comment_text(token)
        chinese = usable.get((f"{cell_id}#comment", text)) if text is not None else None
        if chinese is None:
            continue
        if "\n" in chinese:
            raise ValueError(f"cell {cell_id}: the translation of comment {text!r} has a line break")
        body = token.string[1:]
        new = "#" + body[: len(body) - len(body.lstrip())] + chinese.strip()
        (row, start), (_, end) = token.start, token.end
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return "\n".join(lines)


_LINK = re.compile(r"(\]\(|href=\"|src=\")([^)\"\s]+)")
_HOSTED = re.compile(r"(/blob/[^/\s\"]+/notebooks/)(\d\d_[a-z0-9_]+\.ipynb)")


def rewrite_links(markdown: str, translated: set[str]) -> str:
    """Links of a cell made right for ``notebooks/zh/``: a relative link to a notebook with a
    Chinese edition (``translated``: file names) stays as it is (its sibling there), any other
    relative link gains ``../``; Colab and GitHub addresses of such notebooks point to ``zh/``."""

    def relative(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
            return match.group(0)  # absolute address or in-page anchor
        if target.split("#")[0] in translated:
            return match.group(0)
        return match.group(1) + "../" + target

    def hosted(match: re.Match) -> str:
        if match.group(2) in translated:
            return match.group(1) + "zh/" + match.group(2)
        return match.group(0)

    return _HOSTED.sub(hosted, _LINK.sub(relative, markdown))


_CJK_CHAR = "[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"
_CJK_END = re.compile(_CJK_CHAR + r"$")
# A continuation line: indentation and the block-quote markers (">") before its first character.
_CONTINUATION = re.compile(r"^([ \t]*(?:>[ \t]*)*)(" + _CJK_CHAR + ")")
_QUOTES = re.compile(r"^[ \t]*((?:>[ \t]*)*)")


def _join_lines(text: str) -> str:
    """``text`` (no fenced code) with each line break between two Chinese characters removed,
    also where the next line is indented (a list item's continuation) or is the same block
    quote's next line (``> 中文``, or without ``>``: lazy continuation): the break and the next
    line's indentation and ``>`` go. A heading or table row ends at its line; a ``>`` line after
    a plain paragraph starts a quote."""
    lines = text.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        last = out[-1]
        match = _CONTINUATION.match(line)
        joinable = (
            match is not None
            and _CJK_END.search(last)
            and not re.match(r"^\s*(#{1,6}\s|\|)", last)  # a heading or a table row ends at its line
            # the same block quote's next line, or a lazy continuation of its paragraph (no ">")
            and match.group(1).count(">") in (0, _QUOTES.match(last).group(1).count(">"))
        )
        if joinable:
            out[-1] = last + line[match.end(1):]
        else:
            out.append(line)
    return "\n".join(out)


def join_soft_breaks(markdown: str) -> str:
    """A line break between two Chinese characters removed (outside fenced code): Markdown
    renders a soft break as a space, which does not belong between Chinese characters; the
    same inside list items (indented lines) and block quotes (``>`` lines)."""
    parts = re.split(r"(```.*?```)", markdown, flags=re.S)
    return "".join(p if p.startswith("```") else _join_lines(p) for p in parts)


# What quotes must not touch: fenced code, code spans, HTML tags, link targets.
_PROTECTED = re.compile(r"```.*?```|(`+).+?\1|<[^>\n]+>|\]\([^)]*\)", re.S)
_ASCII_QUOTED = re.compile(r'"((?:[^"\n]|\n(?![ \t>]*\n))+)"')  # a pair within one paragraph


def chinese_quotes(markdown: str) -> str:
    """ASCII "…" around prose of a Chinese cell made “…” (code, HTML tags and link targets kept)."""
    kept: list[str] = []

    def hide(match: re.Match) -> str:
        kept.append(match.group(0))
        return f"\ue000{len(kept) - 1}\ue001"

    text = _ASCII_QUOTED.sub(r"“\1”", _PROTECTED.sub(hide, markdown))
    return re.sub("\ue000(\\d+)\ue001", lambda m: kept[int(m.group(1))], text)


def replace_literals(code: str, literals: list[Printed], translations: dict[str, str], where: str) -> str:
    """``code`` with each of ``literals`` that ``translations`` maps (by its text) replaced; raises
    if a translation is not a string literal with the English one's {…} fields."""
    lines = code.split("\n")
    for literal in reversed(literals):  # from the end: earlier positions stay valid
        chinese = translations.get(literal.text)
        if not chinese or chinese == literal.text:
            continue
        problem = literal_problem(literal.text, chinese)
        if problem:
            raise ValueError(f"{where}: the translation of {literal.text!r}: {problem}")
        (first, start), (last, end) = literal.start, literal.end
        lines[first - 1 : last] = (lines[first - 1][:start] + chinese.strip() + lines[last - 1][end:]).split("\n")
    return "\n".join(lines)


def translate_printed(code: str, usable: dict[tuple[str, str], str], cell_id: str) -> str:
    """``code`` with every translated printed literal replaced (:func:`replace_literals`)."""
    translations = {text: chinese for (context, text), chinese in usable.items() if context == f"{cell_id}#printed"}
    return replace_literals(code, printed_literals(code), translations, f"cell {cell_id}")


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def generate_notebook(nb: dict, po: polib.POFile, translated: set[str]) -> dict:
    """The Chinese edition of ``nb``: Markdown and comments from ``po``, code otherwise the same."""
    usable = translations(po)
    zh = copy.deepcopy(nb)
    for cell in zh["cells"]:
        text = source(cell)
        if cell["cell_type"] == "markdown":
            chinese = usable.get((cell["id"], text))
            new = text if chinese is None else chinese_quotes(join_soft_breaks(chinese))
            new = rewrite_links(new, translated)
        elif cell["cell_type"] == "code":
            new = translate_comments(translate_printed(text, usable, cell["id"]), usable, cell["id"])
        else:
            continue
        cell["source"] = lines_of(new)
    return zh


def translated_notebooks() -> list[Path]:
    """The English notebooks that have a catalog (and so a Chinese edition)."""
    return [p for p in english_notebooks() if catalog_path(p).is_file()]


def expected_editions() -> dict[Path, str]:
    """``{notebooks/zh/NAME: JSON text}``: the Chinese notebooks as the catalogs make them now."""
    sources = translated_notebooks()
    names = {p.name for p in sources}
    return {
        ZH_DIR / p.name: dumps(generate_notebook(load(p), polib.pofile(str(catalog_path(p))), names))
        for p in sources
    }


def generate(numbers: list[str] | None = None) -> list[str]:
    """Write ``notebooks/zh/`` (only the editions of ``numbers``, if given); remove editions whose
    catalog is gone. Returns what changed."""
    changed = []
    expected = expected_editions()
    ZH_DIR.mkdir(parents=True, exist_ok=True)
    for path, text in expected.items():
        if numbers and path.name[:2] not in numbers:
            continue
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(f"wrote {path.relative_to(ROOT)}")
    for path in sorted(ZH_DIR.glob("*.ipynb")):
        if path not in expected:
            path.unlink()
            changed.append(f"removed {path.relative_to(ROOT)} (no catalog)")
    return changed


README_EN = ROOT / "README.md"
README_ZH = ROOT / "README.zh.md"
_FINGERPRINT = re.compile(r"指纹 (\{HASH\}|[0-9a-f]{12})")


def _notebook_table(markdown: str) -> list[list[str]]:
    """The rows of a README's notebook table (``| NN | … |``), as lists of cells."""
    return [[c.strip() for c in row.strip().strip("|").split("|")]
            for row in markdown.splitlines() if re.match(r"^\|\s*\d\d\s*\|", row)]


def readme_fingerprint(english: str | None = None) -> str:
    """What README.zh.md translates of README.md, hashed: the introduction (from the top to
    "## The two commands"), the sentence on the Chinese notebooks under the tests, and the
    notebook table."""
    import hashlib

    english = english if english is not None else README_EN.read_text(encoding="utf-8")
    intro = english[: english.index("## The two commands")]
    chinese_runs = re.findall(r"[^.]*The Chinese 00 and 02[^.]*\.", english)
    rows = ["|".join(r) for r in _notebook_table(english)]
    return hashlib.sha256("\n".join([intro, *chinese_runs, *rows]).encode()).hexdigest()[:12]


def _title(notebook: Path) -> str:
    """The Chinese title of a notebook: its first heading, without "N · "."""
    first = next(c for c in load(notebook)["cells"] if c["cell_type"] == "markdown")
    return re.sub(r"^#\s*\d+\s*·\s*", "", source(first).splitlines()[0]).strip()


def readme_problems() -> list[str]:
    """How README.zh.md is out of step: README.md's introduction or table changed since it was
    translated (the fingerprint), or its notebook table differs from the notebooks: one row per
    Chinese notebook, linked, titled as the notebook is, the slides as in README.md."""
    chinese, english = README_ZH.read_text(encoding="utf-8"), README_EN.read_text(encoding="utf-8")
    found = []
    mark = _FINGERPRINT.search(chinese)
    if mark is None or mark.group(1) != readme_fingerprint(english):
        found.append("README.md's introduction or notebook table changed since README.zh.md was "
                     "translated: bring README.zh.md in step, then `python -m tools.i18n readme`")
    slides = {r[0]: re.split(r"\s*\(", r[2])[0] for r in _notebook_table(english) if len(r) > 2}
    rows = {r[0]: r for r in _notebook_table(chinese)}
    editions = {p.name[:2]: p for p in sorted(ZH_DIR.glob("*.ipynb"))}
    if sorted(rows) != sorted(editions):
        found.append(f"README.zh.md's table lists {sorted(rows)}, notebooks/zh/ has {sorted(editions)}")
    for number, path in editions.items():
        row = rows.get(number)
        if row is None:
            continue
        link = re.match(r"^\[(.+?)\]\((.+?)\)", row[1])
        if link is None or link.group(2) != f"notebooks/zh/{path.name}" or link.group(1) != _title(path):
            found.append(f"README.zh.md row {number}: should link [{_title(path)}](notebooks/zh/{path.name})")
        if len(row) < 3 or re.split(r"（", row[2])[0] != slides.get(number):
            found.append(f"README.zh.md row {number}: slides should be {slides.get(number)!r} (README.md)")
    return found


def stamp_readme() -> bool:
    """Write README.md's current fingerprint into README.zh.md (after the translation is updated)."""
    text = README_ZH.read_text(encoding="utf-8")
    new = _FINGERPRINT.sub(f"指纹 {readme_fingerprint()}", text, count=1)
    README_ZH.write_text(new, encoding="utf-8")
    return new != text


def report(numbers: list[str] | None = None) -> tuple[list[str], int]:
    """Lines for a translator, and the number of entries still to translate (of ``numbers``, if given)."""
    lines, todo = [], 0
    for notebook in selected(numbers):
        number = notebook.name[:2]
        path = catalog_path(notebook)
        if not path.is_file():
            state = "not yet translated (listed in PENDING)" if number in PENDING else "NO CATALOG"
            lines.append(f"{notebook.stem}: {state}; start one with `python -m tools.i18n init {number}`")
            todo += number not in PENDING
            continue
        po = polib.pofile(str(path))
        found = problems(load(notebook), po, notebook.stem)
        done = len(translations(po))
        note = " (has a catalog: take it out of PENDING in tools/i18n.py)" if number in PENDING else ""
        lines.append(f"{notebook.stem}: {done} entries translated, {len(found)} to do{note}")
        lines.extend("  " + line for line in found)
        todo += len(found)
    return lines, todo


def selected(numbers: list[str] | None) -> list[Path]:
    """The English notebooks whose numbers are in ``numbers`` (all of them when it is empty)."""
    return [p for p in english_notebooks() if not numbers or p.name[:2] in numbers]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Chinese edition: catalogs and notebooks/zh/.")
    parser.add_argument("what", choices=("update", "report", "generate", "all", "init", "readme"))
    parser.add_argument("numbers", nargs="*", help="the notebook numbers to work on (default: all; init needs them)")
    args = parser.parse_args(argv)
    if args.what == "init":
        for number in args.numbers:
            matches = [p for p in english_notebooks() if p.name.startswith(f"{number}_")]
            if len(matches) != 1:
                parser.error(f"no single notebook {number}_*.ipynb in {EN_DIR}")
            counts = update(matches[0], create=True)
            print(f"i18n: {catalog_path(matches[0]).relative_to(ROOT)}: {counts}")
        return 0
    if args.what == "readme":  # README.zh.md brought in step by hand: record README.md's fingerprint
        print("i18n: README.zh.md fingerprint " + ("updated" if stamp_readme() else "already current"))
        return 0
    if args.what in ("update", "all"):
        for notebook in selected(args.numbers):
            counts = update(notebook)
            if counts and any(counts.values()):
                print(f"i18n: {notebook.stem}: {counts['new']} new, {counts['fuzzy']} stale (fuzzy), "
                      f"{counts['obsolete']} obsolete entries")
    if args.what in ("report", "all"):
        lines, todo = report(args.numbers)
        print("\n".join(lines))
        print(f"i18n: {todo} entries to translate or review" if todo else "i18n: every catalog is complete")
        for line in readme_problems() if not args.numbers else []:
            print(f"i18n: {line}")
    if args.what in ("generate", "all"):
        for line in generate(args.numbers) or ["notebooks/zh/ is up to date"]:
            print(f"i18n: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
