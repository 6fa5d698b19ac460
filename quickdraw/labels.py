"""Class names and the label map: Google spellings, Kaggle spellings, one index each.

Google writes a class as ``The Eiffel Tower`` (file ``The Eiffel Tower.ndjson``); Kaggle's
files and submissions write ``The_Eiffel_Tower``. Both map to one label index through
:class:`LabelMap`, which is ordered and saved next to a model as JSON so that predictions can
be turned back into names. This module imports nothing else of ``quickdraw`` (the readers
import it). Used in notebooks 04-07 through ``quickdraw``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

LABELS_FILENAME = "labels.json"
_FORMAT = "quickdraw-labels/1"


def google_name(name: str) -> str:
    """Google's spelling of a class name: ``The_Eiffel_Tower`` -> ``The Eiffel Tower``."""
    return " ".join(name.replace("_", " ").split())


def kaggle_name(name: str) -> str:
    """Kaggle's spelling of a class name (submissions, file names): spaces -> ``_``."""
    return google_name(name).replace(" ", "_")


@lru_cache(maxsize=1)
def google_categories() -> tuple[str, ...]:
    """The 345 Quick, Draw! category names as Google spells them, sorted (the file names of
    Google's ``full/simplified`` dataset). Used by :mod:`quickdraw.download`."""
    text = (Path(__file__).with_name("categories.txt")).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


class UnknownClassError(KeyError):
    """A class name that the label map does not hold."""


class LabelMap(tuple[str, ...]):
    """An ordered tuple of class names (Google spelling); index ``i`` is label ``i``.

    Lookups accept the Google spelling, the Kaggle spelling and (when unambiguous) any
    letter case: ``labels.index("The_Eiffel_Tower") == labels.index("The Eiffel Tower")``.
    Build it from the data (:func:`quickdraw.resolve_labels`), save it with the model
    (:meth:`save`) and load it back (:meth:`load`).
    """

    def __new__(cls, names: Iterable[str]) -> LabelMap:
        self = super().__new__(cls, (google_name(n) for n in names))
        if not self:
            raise ValueError("a label map needs at least one class name")
        self._index: dict[str, int] = {}
        folded: dict[str, list[int]] = {}
        for i, name in enumerate(self):
            if not name:
                raise ValueError(f"empty class name at index {i}")
            if name in self._index:
                raise ValueError(f"duplicate class name {name!r} (index {self._index[name]} and {i})")
            self._index[name] = i
            folded.setdefault(name.casefold(), []).append(i)
        self._folded = {k: v[0] for k, v in folded.items() if len(v) == 1}
        return self

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __repr__(self) -> str:
        more = ", ..." if len(self) > 4 else ""
        return f"LabelMap([{', '.join(repr(n) for n in self[:4])}{more}], n={len(self)})"

    @property
    def names(self) -> tuple[str, ...]:
        """Class names in label order, Google spelling."""
        return tuple(self)

    def get(self, name: str) -> int | None:
        """Label index of ``name`` (Google or Kaggle spelling, any case), or None."""
        key = google_name(name)
        i = self._index.get(key)
        return self._folded.get(key.casefold()) if i is None else i

    def index(self, name: str, *args: object) -> int:  # type: ignore[override]
        """Label index of ``name``; raises :class:`UnknownClassError` naming the class."""
        i = self.get(name)
        if i is None:
            raise UnknownClassError(f"unknown class name {name!r} (the label map has {len(self)} classes)")
        return i

    def save(self, path: str | Path) -> Path:
        """Write the map as JSON. ``path`` may be a directory (a model dir): then
        ``labels.json`` inside it. Returns the file written."""
        path = Path(path)
        if path.is_dir() or not path.suffix:
            path.mkdir(parents=True, exist_ok=True)
            path = path / LABELS_FILENAME
        text = json.dumps({"format": _FORMAT, "names": list(self)}, indent=1)
        path.write_text(text + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> LabelMap:
        """Read a map written by :meth:`save` (a file, or a directory holding labels.json)."""
        path = Path(path)
        if path.is_dir():
            path = path / LABELS_FILENAME
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a label map (expected format {_FORMAT!r})")
        return cls(data["names"])
