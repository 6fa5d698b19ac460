"""How heavy the Chinese prose of the catalogs is (issue 49 item 2), per catalog.

``python -m tools.zh_sentences [--check] [NN … | path.po …]`` prints, for each catalog in ``i18n/zh_CN/``
(or the numbers / files given), over the prose of its Markdown entries:

* the median sentence length in characters (spaces not counted; a code span and a link count
  as their text: the method of issue 49's figures);
* the share of sentences over 120 characters;
* （ , —— and ； per 1,000 characters.

Prose only: fenced code, headings, tables, list items (with their continuation lines), HTML tags
and the badge table are left out; block quotes count. A sentence ends at 。！？ (or ?! followed by
a space) and at the end of a paragraph. Issue 49's goal, d2l-zh's level: median ≤ 45, ≤ 10 % over
120, （ ≤ 3 and ； ≤ 1 per 1,000 characters, no ——.

Project tooling, not used inside notebooks.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import polib

from tools import i18n

GOAL = {"median": 45, "over120": 0.10, "paren": 3.0, "dash": 0.0, "semi": 1.0}
_LIST = re.compile(r"^\s*(?:[*+-]|\d+\.)\s")
_END = re.compile(r"(?<=[。！？])|(?<=[?!])(?=\s)")


def prose_paragraphs(markdown: str) -> list[str]:
    """The paragraphs a reader reads as running text (see the module's docstring)."""
    text = re.sub(r"```.*?```", "\n\n", markdown, flags=re.S)
    text = re.sub(r"<table.*?</table>", "\n\n", text, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        lines, in_list = [], False
        for line in block.split("\n"):
            stripped = line.strip()
            if _LIST.match(line):
                in_list = True
                continue
            if in_list and line.startswith((" ", "\t")):
                continue  # a list item's continuation line
            in_list = False
            if not stripped or stripped.startswith(("#", "|")) or re.fullmatch(r"[-*_]{3,}", stripped):
                continue
            lines.append(stripped.lstrip("> ").strip())
        if lines:
            paragraphs.append("".join(lines) if i18n._CJK.search(lines[0]) else " ".join(lines))
    return paragraphs


def _plain(paragraph: str) -> str:
    """A paragraph as characters a reader reads: a code span as its text, a link as its text."""
    text = re.sub(r"(`+)(.+?)\1", r"\2", paragraph)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"https?://\S+", "U", text)
    return text.replace("*", "")


@dataclass
class Figures:
    name: str
    sentences: int
    characters: int
    median: float
    over120: float
    paren: float
    dash: float
    semi: float

    def meets_goal(self) -> bool:
        return (self.median <= GOAL["median"] and self.over120 <= GOAL["over120"]
                and self.paren <= GOAL["paren"] and self.dash <= GOAL["dash"] and self.semi <= GOAL["semi"])


def figures(po: polib.POFile, name: str) -> Figures:
    lengths, chars, paren, dash, semi = [], 0, 0, 0, 0
    for entry in po:
        if entry.obsolete or not entry.msgstr or "#" in entry.msgctxt:  # Markdown cells only
            continue
        for paragraph in prose_paragraphs(entry.msgstr):
            text = _plain(paragraph)
            body = re.sub(r"\s", "", text)
            chars += len(body)
            paren += body.count("（")
            dash += body.count("——")
            semi += body.count("；")
            lengths += [len(re.sub(r"\s", "", s)) for s in _END.split(text) if re.sub(r"\s", "", s)]
    per_k = 1000 / chars if chars else 0.0
    return Figures(
        name=name, sentences=len(lengths), characters=chars,
        median=statistics.median(lengths) if lengths else 0.0,
        over120=sum(n > 120 for n in lengths) / len(lengths) if lengths else 0.0,
        paren=paren * per_k, dash=dash * per_k, semi=semi * per_k,
    )


def catalogs(selection: list[str]) -> list[Path]:
    if not selection:
        return sorted(i18n.CATALOG_DIR.glob("*.po"))
    found = []
    for item in selection:
        path = Path(item)
        found += [path] if path.suffix == ".po" else sorted(i18n.CATALOG_DIR.glob(f"{item}_*.po"))
    return found


def table(rows: list[Figures]) -> str:
    lines = [f"{'catalog':34} {'sent.':>6} {'median':>6} {'>120':>6} {'（/k':>6} {'——/k':>6} {'；/k':>6}  goal"]
    for f in rows:
        lines.append(f"{f.name[:34]:34} {f.sentences:6d} {f.median:6.0f} {f.over120:6.0%} "
                     f"{f.paren:6.1f} {f.dash:6.1f} {f.semi:6.1f}  {'met' if f.meets_goal() else '-'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Sentence figures of the Chinese catalogs (issue 49).")
    parser.add_argument("catalogs", nargs="*", help="notebook numbers or .po files (default: every catalog)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a catalog misses issue 49's goal")
    args = parser.parse_args(argv)
    rows = [figures(polib.pofile(str(p)), p.stem) for p in catalogs(args.catalogs)]
    print(table(rows))
    print(f"goal (issue 49, d2l-zh): median <= {GOAL['median']}, <= {GOAL['over120']:.0%} over 120, "
          f"（ <= {GOAL['paren']:g}, —— 0, ； <= {GOAL['semi']:g} per 1,000 characters")
    return 1 if args.check and not all(f.meets_goal() for f in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
