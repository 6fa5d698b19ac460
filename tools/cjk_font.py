"""The Chinese characters of the plots: ``utils/fonts/NotoSansCJKsc-course.otf``.

The Chinese edition plots Chinese titles and axis labels (its catalogs' printed literals). Few
machines and not Colab have a Chinese font that matplotlib finds, so the course ships one: Noto
Sans CJK SC (SIL Open Font License, ``utils/fonts/OFL.txt``) cut down to the characters the
catalogs use, a few dozen kilobytes. ``utils.figures.use_course_style`` registers it as the
fallback of matplotlib's default font.

    python -m tools.cjk_font     # after a translation adds characters (tests/test_i18n.py says so)

Needs the full font: ``apt-get install fonts-noto-cjk`` (Debian, Ubuntu). Project tooling.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import polib
from fontTools import subset
from fontTools.ttLib import TTCollection

from tools import i18n

SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
SC_FACE = "Noto Sans CJK SC"  # the collection's simplified-Chinese face
FONT = i18n.ROOT / "utils" / "fonts" / "NotoSansCJKsc-course.otf"
PUNCTUATION = "，。：；、（）“”《》！？…—·"
_WIDE = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”…—·]")


def needed_characters() -> set[str]:
    """Every Chinese character and full-width sign of the catalogs' printed literals."""
    found = set(PUNCTUATION)
    for notebook in i18n.translated_notebooks():
        for entry in polib.pofile(str(i18n.catalog_path(notebook))):
            if entry.msgctxt and entry.msgctxt.endswith("#printed") and not entry.obsolete:
                found.update(_WIDE.findall(entry.msgstr))
    return found


def _sc_face() -> int:
    """The index of the simplified-Chinese face in the collection."""
    for index, font in enumerate(TTCollection(str(SOURCE)).fonts):
        if font["name"].getDebugName(1) == SC_FACE:
            return index
    raise SystemExit(f"{SOURCE} has no {SC_FACE!r} face")


def build() -> Path:
    """Cut the font down to :func:`needed_characters` and write :data:`FONT`."""
    if not SOURCE.is_file():
        raise SystemExit(f"{SOURCE} is missing: apt-get install fonts-noto-cjk")
    options = subset.Options(font_number=_sc_face(), name_IDs=["*"], layout_features=["*"])
    font = subset.load_font(str(SOURCE), options)
    font.recalcTimestamp = False  # the same characters, the same file
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(sorted(needed_characters())))
    subsetter.subset(font)
    FONT.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(FONT))
    return FONT


if __name__ == "__main__":
    path = build()
    print(f"cjk_font: {path.relative_to(i18n.ROOT)}, {path.stat().st_size // 1024} KiB, "
          f"{len(needed_characters())} characters")
    sys.exit(0)
