"""Mechanical first aid for a Chinese catalog (issue 49), to be reviewed by a translator:

``python -m tools.zh_fix terms NN …``  the rejected variants of ``tools.i18n.REJECTED`` replaced by
    the law's terms (批次大小 → 批量大小, 全局批次 → 全局批量, 集合操作 → 集合通信操作, 自定义循环 →
    自定义训练循环, 综合项目 → 实战, 延迟步数 → 陈旧度, 输入管道 → 输入流水线 and GPU 内存 → 显存 outside
    the slides' titles, "epoch" → 轮, "scope" → 作用域 in prose, code spans untouched);
``python -m tools.zh_fix gloss NN …``  the slides' names added at the first use of their Chinese term
    (Ring AllReduce（环形全归约） …);
``python -m tools.zh_fix punct NN …``  running prose (not lists, tables, headings, quotes) with each ；
    made a sentence end (， inside brackets) and each —— a colon or a comma.

Each rewrites ``i18n/zh_CN/NN_*.po`` in place; read the diff (``git diff -U0 --word-diff``), fix what
reads badly, then ``python -m tools.i18n generate NN`` and ``pytest tests/test_i18n.py -k NN``.
Project tooling, not used inside notebooks.
"""

from __future__ import annotations

import argparse
import re
import sys

import polib

from tools import i18n

_CJK = "[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]"
SIMPLE = [("延迟步数", "陈旧度"), ("全局批次", "全局批量"), ("集合操作", "集合通信操作"), ("集合运算", "集合通信操作"),
          ("自定义循环", "自定义训练循环"), ("综合项目", "实战"), ("批次大小", "批量大小"), ("预演", "演练")]
_PROTECT = re.compile(r"(```.*?```|(`+).+?\2|\]\([^)]*\)|<[^>]+>|“[^“”]*”|\$[^$]+\$)", re.S)
_LIST = re.compile(r"^\s*(?:[*+-]|\d+\.)\s")


def _outside_code(text: str, fn) -> str:
    kept: list[str] = []

    def hide(match: re.Match) -> str:
        kept.append(match.group(0))
        return f"\ue000{len(kept) - 1}\ue001"

    return re.sub("\ue000(\\d+)\ue001", lambda m: kept[int(m.group(1))], fn(_PROTECT.sub(hide, text)))


def _words(text: str) -> str:
    text = re.sub(r"每个 ?epochs?", "每轮", text)
    text = re.sub(r"一个 ?epoch", "一轮", text)
    text = re.sub(r"(\d+|[一二两三四五六七八九十几多]) ?个 ?epochs?", r"\1 轮", text)
    text = re.sub(r"epochs? ?数", "轮数", text)
    text = re.sub(r"(?<![A-Za-z_（-])epochs?(?![A-Za-z_）-])", "轮", text)
    text = re.sub(r"(?<![A-Za-z_.（-])scopes?(?![A-Za-z_(）-])", "作用域", text)
    text = re.sub(f"(?<={_CJK}) (轮|作用域)", r"\1", text)
    return re.sub(f"(轮|作用域) (?={_CJK})", r"\1", text)


def fix_terms(english: str, chinese: str) -> str:
    lines = []
    for line in chinese.split("\n"):
        for old, new in SIMPLE:
            line = line.replace(old, new)
        heading = line.lstrip().startswith("#")
        if not (heading and "输入管道" in english):
            line = line.replace("输入管道", "输入流水线")
        if "GPU内存" not in english and "GPU 内存" not in english:
            line = re.sub(f"(?<={_CJK})? ?GPU ?内存", "显存", line)
        lines.append(line)
    return _outside_code("\n".join(lines), _words)


def add_glosses(po: polib.POFile) -> None:
    for chinese, name in i18n.SLIDE_NAMES.items():
        cells = [e for e in po if not e.obsolete and e.msgstr and not e.msgctxt.endswith("#comment")]
        first = next((e for e in cells if chinese in i18n._prose(e.msgstr)), None)
        if first is None or f"{name}（{chinese}）" in first.msgstr:
            continue
        glossed = f"{name}（{chinese}）"
        first.msgstr = _outside_code(first.msgstr, lambda t, c=chinese, g=glossed: t.replace(c, g, 1))
        first.msgstr = re.sub(f"(?<=[\u4e00-\u9fff]){re.escape(glossed)}", f" {glossed}", first.msgstr)


def _semis_and_dashes(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch in "（("
        depth -= ch in "）)" and depth > 0
        out.append(("，" if depth else "。") if ch == "；" else ch)
    sentences = re.split(r"(?<=[。！？])", "".join(out))
    result = [s.replace("——", "，") if s.count("——") >= 2 else s.replace("——", "：" if "：" not in s else "，")
              for s in sentences]
    return "".join(result).replace("，，", "，").replace("：，", "：").replace("。，", "。")


def fix_punct(markdown: str) -> str:
    blocks = re.split(r"(```.*?```)", markdown, flags=re.S)
    out = []
    for block in blocks:
        if block.startswith("```"):
            out.append(block)
            continue
        new, paragraph, in_list = [], [], False

        def flush(new: list[str] = new, paragraph: list[str] = paragraph) -> None:
            if paragraph:
                new.append(_outside_code("\n".join(paragraph), _semis_and_dashes))
                paragraph.clear()

        for line in block.split("\n"):
            stripped = line.strip()
            if _LIST.match(line) or (in_list and line.startswith((" ", "\t")) and stripped):
                in_list = True
                flush()
                new.append(line)
                continue
            in_list = False
            if not stripped or stripped.startswith(("#", "|", "<", ">")):
                flush()
                new.append(line)
                continue
            paragraph.append(line)
        flush()
        out.append("\n".join(new))
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mechanical fixes of Chinese catalogs (review the diff).")
    parser.add_argument("what", choices=("terms", "gloss", "punct"))
    parser.add_argument("numbers", nargs="+")
    args = parser.parse_args(argv)
    for number in args.numbers:
        for path in sorted(i18n.CATALOG_DIR.glob(f"{number}_*.po")):
            po = polib.pofile(str(path), wrapwidth=0)
            if args.what == "gloss":
                add_glosses(po)
            for entry in po:
                if entry.obsolete or not entry.msgstr:
                    continue
                if args.what == "terms":
                    entry.msgstr = fix_terms(entry.msgid, entry.msgstr)
                elif args.what == "punct" and not entry.msgctxt.endswith("#comment"):
                    entry.msgstr = fix_punct(entry.msgstr)
            po.save()
            print(f"zh_fix {args.what}: {path.relative_to(i18n.ROOT)} (review: git diff -U0 --word-diff {path.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
