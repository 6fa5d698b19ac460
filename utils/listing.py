"""Show a program a notebook starts, whole, with its distributed lines highlighted.

``show_program("scripts/workers/mw_keras_worker.py")`` as the last line of a cell displays the
file with line numbers and syntax colours, the lines that make it a distributed program
(``TF_CONFIG``, ``tf.distribute``, the strategy, sharding, the global batch) highlighted; as
text (a terminal, a test) it prints the file with those lines marked ``▶``. Used by notebooks
04, 05, 07 and 10 before they start a worker program, so what runs is on the page.
"""

from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass
from pathlib import Path

from utils.config import PROJECT_ROOT

DISTRIBUTED = re.compile(
    r"TF_CONFIG|TF_USE_LEGACY_KERAS|tf\.distribute|[Ss]trategy\b|strategy\.|auto_shard|num_replicas_in_sync"
    r"|global_batch\s*=|hvd\.|horovod"
)


@dataclass(frozen=True)
class Listing:
    """A program's text and the numbers (from 1) of the lines to highlight."""

    path: Path
    text: str
    highlighted: tuple[int, ...]

    def __repr__(self) -> str:
        lines = self.text.splitlines()
        width = len(str(len(lines)))
        body = "\n".join(f"{'▶' if n in self.highlighted else ' '} {n:{width}d}  {line}"
                         for n, line in enumerate(lines, 1))
        return f"{self.title()}\n{body}"

    def title(self) -> str:
        shown = self.path.relative_to(PROJECT_ROOT) if self.path.is_relative_to(PROJECT_ROOT) else self.path
        return f"{shown} — {len(self.text.splitlines())} lines, the distributed ones highlighted"

    def _repr_html_(self) -> str:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer
        except ImportError:  # pragma: no cover - pygments comes with IPython
            return f"<pre>{html.escape(repr(self))}</pre>"
        formatter = HtmlFormatter(noclasses=True, linenos="inline", hl_lines=list(self.highlighted),
                                  style="default")
        return f"<p><b>{html.escape(self.title())}</b></p>" + highlight(self.text, PythonLexer(), formatter)


def show_program(path: str | Path, pattern: re.Pattern[str] = DISTRIBUTED) -> Listing:
    """The whole program at ``path`` (relative to the working directory or the course's root),
    with the lines matching ``pattern`` highlighted (its module docstring never is)."""
    file = Path(path)
    if not file.is_file() and not file.is_absolute():
        file = PROJECT_ROOT / path
    if not file.is_file():
        raise FileNotFoundError(f"{path}: no such program")
    text = file.read_text(encoding="utf-8")
    body = ast.parse(text).body
    docstring_end = body[0].end_lineno if body and isinstance(body[0], ast.Expr) else 0
    marked = tuple(n for n, line in enumerate(text.splitlines(), 1) if n > docstring_end and pattern.search(line))
    return Listing(file.resolve(), text, marked)
