"""Class names and the label map: Google spellings, Kaggle spellings, one index each.

Google writes a class as ``The Eiffel Tower`` (file ``The Eiffel Tower.ndjson``); Kaggle's
competition files and submissions write ``The_Eiffel_Tower``. Both map to one label index
through :class:`LabelMap`, which is explicit, ordered, and saved next to a model as JSON
so that predictions can be turned back into names later.

Used in notebooks 04, 05 and 06 (and the Horovod scripts of 07), through ``quickdraw``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path

LABELS_FILENAME = "labels.json"
_FORMAT = "quickdraw-labels/1"


def google_name(name: str) -> str:
    """Google's spelling of a class name: ``The_Eiffel_Tower`` -> ``The Eiffel Tower``.

    Used by every reader in ``quickdraw`` (notebooks 04-06).
    """
    return " ".join(name.replace("_", " ").split())


def kaggle_name(name: str) -> str:
    """Kaggle's spelling of a class name (submissions, file names): spaces -> ``_``.

    Used when writing Kaggle-format CSVs and submissions (notebook 06).
    """
    return google_name(name).replace(" ", "_")


@lru_cache(maxsize=1)
def google_categories() -> tuple[str, ...]:
    """The 345 Quick, Draw! category names as Google spells them, sorted.

    Taken from the file names of Google's ``full/simplified`` dataset (see
    ``quickdraw/README.md``). Used by :mod:`quickdraw.download`.
    """
    text = (Path(__file__).with_name("categories.txt")).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


class UnknownClassError(KeyError):
    """A class name that the label map does not hold."""


class LabelMap(Sequence[str]):
    """An ordered list of class names; index ``i`` is label ``i``.

    Lookups accept the Google spelling, the Kaggle spelling and (when unambiguous) any
    letter case: ``labels.index("The_Eiffel_Tower") == labels.index("The Eiffel Tower")``.
    ``labels[i]`` gives the Google spelling; :meth:`kaggle` the Kaggle one.

    Used in notebooks 04, 05 and 06: build it from the data
    (:func:`quickdraw.resolve_labels`), save it with the model (:meth:`save`) and
    load it back (:meth:`load`). This module imports nothing from the rest of
    ``quickdraw`` (the readers import it, not the other way round).
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._names: tuple[str, ...] = tuple(google_name(n) for n in names)
        if not self._names:
            raise ValueError("a label map needs at least one class name")
        self._index: dict[str, int] = {}
        folded: dict[str, list[int]] = {}
        for i, name in enumerate(self._names):
            if not name:
                raise ValueError(f"empty class name at index {i}")
            if name in self._index:
                raise ValueError(f"duplicate class name {name!r} (index {self._index[name]} and {i})")
            self._index[name] = i
            folded.setdefault(name.casefold(), []).append(i)
        self._folded = {k: v[0] for k, v in folded.items() if len(v) == 1}

    # -- Sequence protocol -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, i):  # type: ignore[override]
        return self._names[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelMap) and self._names == other._names

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        head = ", ".join(repr(n) for n in self._names[:4])
        more = ", ..." if len(self) > 4 else ""
        return f"LabelMap([{head}{more}], n={len(self)})"

    # -- lookups -----------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Class names in label order, Google spelling."""
        return self._names

    def get(self, name: str) -> int | None:
        """Label index of ``name`` (Google or Kaggle spelling, any case), or None."""
        key = google_name(name)
        i = self._index.get(key)
        if i is None:
            i = self._folded.get(key.casefold())
        return i

    def index(self, name: str, *args: object) -> int:  # type: ignore[override]
        """Label index of ``name``; raises :class:`UnknownClassError` naming the class."""
        i = self.get(name)
        if i is None:
            raise UnknownClassError(f"unknown class name {name!r} (the label map has {len(self)} classes)")
        return i

    def kaggle(self, i: int) -> str:
        """Kaggle spelling of label ``i`` (``The_Eiffel_Tower``), for submissions."""
        return kaggle_name(self._names[i])

    def kaggle_names(self) -> list[str]:
        """All names in Kaggle spelling, in label order."""
        return [kaggle_name(n) for n in self._names]

    # -- persistence -------------------------------------------------------------------
    def to_json(self) -> str:
        """JSON text of the map: format tag and the ordered names."""
        return json.dumps({"format": _FORMAT, "names": list(self._names)}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> LabelMap:
        """Inverse of :meth:`to_json`; also accepts a bare JSON list of names."""
        data = json.loads(text)
        if isinstance(data, list):
            return cls(data)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"not a label map (expected format {_FORMAT!r})")
        return cls(data["names"])

    def save(self, path: str | Path) -> Path:
        """Write the map as JSON. ``path`` may be a directory (a model dir): then
        ``labels.json`` inside it. Returns the file written."""
        path = Path(path)
        if path.is_dir() or not path.suffix:
            path.mkdir(parents=True, exist_ok=True)
            path = path / LABELS_FILENAME
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> LabelMap:
        """Read a map written by :meth:`save` (a file, or a directory holding labels.json)."""
        path = Path(path)
        if path.is_dir():
            path = path / LABELS_FILENAME
        return cls.from_json(path.read_text(encoding="utf-8"))
