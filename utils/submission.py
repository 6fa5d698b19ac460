"""Write and validate a Kaggle "Quick, Draw! Doodle Recognition Challenge" submission.

The format Kaggle expects (``sample_submission.csv``)::

    key_id,word
    9000003627287624,The_Eiffel_Tower airplane donut

one row per ``key_id`` of ``test_simplified.csv``, three guesses separated by single
spaces, best first, spaces inside a class name written as underscores. The validator
checks what Kaggle's scorer would reject or silently score as zero: header, row count,
every test key exactly once, three known class names per row, no repeats.

No TensorFlow here. Used in notebook 06 and ``scripts/train_quickdraw.py``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "HEADER",
    "SubmissionError",
    "SubmissionReport",
    "kaggle_word",
    "submission_rows",
    "validate_submission",
    "write_submission",
]

HEADER = ("key_id", "word")


class SubmissionError(ValueError):
    """A submission file that Kaggle would reject or score wrongly (message names the line)."""


def kaggle_word(name: str) -> str:
    """A class name as Kaggle writes it in submissions: ``"The Eiffel Tower"`` → ``"The_Eiffel_Tower"``.

    Used in notebook 06.
    """
    word = name.strip().replace(" ", "_")
    if not word:
        raise ValueError("empty class name")
    return word


def submission_rows(
    key_ids: Sequence[Any], top_indices: Any, class_names: Sequence[str], k: int = 3
) -> list[tuple[str, str]]:
    """``(key_id, "w1 w2 w3")`` rows from the ``k`` best class indices per drawing.

    ``top_indices`` has shape ``(N, >=k)`` (e.g. from ``utils.metrics.top_k_indices``);
    ``class_names`` is the label map's ordered names (Google or Kaggle spelling).
    Used in notebook 06.
    """
    top = np.asarray(top_indices)
    if top.ndim != 2 or top.shape[1] < k:
        raise ValueError(f"top_indices must have shape (N, >={k}), got {top.shape}")
    if len(key_ids) != len(top):
        raise ValueError(f"{len(key_ids)} key_ids but {len(top)} prediction rows")
    if not np.issubdtype(top.dtype, np.integer):
        raise ValueError(f"top_indices must be integer class indices, got {top.dtype}")
    if top.size and (top.min() < 0 or top.max() >= len(class_names)):
        raise ValueError(f"class index out of range 0..{len(class_names) - 1}")
    words = [kaggle_word(n) for n in class_names]
    rows = []
    for key, row in zip(key_ids, top[:, :k], strict=True):
        if len(set(row.tolist())) != k:
            raise ValueError(f"key_id {key}: repeated class in {row.tolist()}")
        rows.append((str(int(key)), " ".join(words[i] for i in row)))
    return rows


def write_submission(
    path: str | Path,
    key_ids: Sequence[Any],
    top_indices: Any,
    class_names: Sequence[str],
    k: int = 3,
) -> Path:
    """Write ``submission.csv`` (header ``key_id,word``) and return its path.

    Used in notebook 06 and ``scripts/train_quickdraw.py --predict``.
    """
    path = Path(path)
    rows = submission_rows(key_ids, top_indices, class_names, k)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


@dataclass
class SubmissionReport:
    """What :func:`validate_submission` found in a valid file."""

    rows: int
    classes_used: int
    first_choice_counts: dict[str, int] = field(default_factory=dict)


def _words(where: str, word_text: str, k: int, valid: set[str]) -> list[str]:
    """The ``k`` class names of one row's word field; :class:`SubmissionError` at ``where`` if
    they are not ``k`` known names, single-space separated, none repeated."""
    words = word_text.split(" ")
    if len(words) != k or any(not w for w in words):
        raise SubmissionError(
            f"{where}: {word_text!r} is not {k} names separated by single "
            "spaces (spaces inside a class name must be underscores)"
        )
    unknown = [w for w in words if w not in valid]
    if unknown:
        raise SubmissionError(f"{where}: unknown class {unknown[0]!r}")
    if len(set(words)) != k:
        raise SubmissionError(f"{where}: repeated class in {word_text!r}")
    return words


def validate_submission(
    path: str | Path,
    class_names: Iterable[str],
    expected_key_ids: Iterable[Any] | None = None,
    k: int = 3,
) -> SubmissionReport:
    """Check a submission file; raise :class:`SubmissionError` naming the first bad line.

    Checks: the header is exactly ``key_id,word``; each row has two fields; ``key_id`` is
    an integer and appears once; the word field holds exactly ``k`` names separated by
    single spaces, each a known class in Kaggle spelling (underscores), none repeated;
    with ``expected_key_ids`` (the ``key_id`` column of ``test_simplified.csv``), the file
    has one row per expected key and no others. Used in notebook 06.
    """
    path = Path(path)
    valid = {kaggle_word(n) for n in class_names}
    seen: set[int] = set()
    first: dict[str, int] = {}
    used: set[str] = set()
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise SubmissionError(f"{path}: empty file (expected header 'key_id,word')")
        if tuple(h.strip() for h in header) != HEADER:
            raise SubmissionError(f"{path}:1: header {header!r}, expected ['key_id', 'word']")
        for line, row in enumerate(reader, start=2):
            if len(row) != 2:
                raise SubmissionError(f"{path}:{line}: {len(row)} fields, expected 2: {row!r}")
            key_text, word_text = row
            try:
                key = int(key_text)
            except ValueError:
                raise SubmissionError(f"{path}:{line}: key_id {key_text!r} is not an integer") from None
            if key in seen:
                raise SubmissionError(f"{path}:{line}: key_id {key} appears twice")
            seen.add(key)
            words = _words(f"{path}:{line}", word_text, k, valid)
            first[words[0]] = first.get(words[0], 0) + 1
            used.update(words)
    if not seen:
        raise SubmissionError(f"{path}: no rows after the header")
    if expected_key_ids is not None:
        expected = {int(x) for x in expected_key_ids}
        missing, extra = expected - seen, seen - expected
        if missing or extra:
            raise SubmissionError(
                f"{path}: {len(seen)} rows for {len(expected)} test drawings; "
                f"{len(missing)} key_ids missing (e.g. {sorted(missing)[:3]}), "
                f"{len(extra)} unexpected (e.g. {sorted(extra)[:3]})"
            )
    return SubmissionReport(rows=len(seen), classes_used=len(used), first_choice_counts=first)
