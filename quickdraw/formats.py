"""Read and write the published Quick, Draw! formats, with a clear answer for bad input.

- Kaggle ``train_simplified/<word>.csv`` (``countrycode,drawing,key_id,recognized,timestamp,
  word``; ``drawing`` is JSON ``[[[x0, x1, ...], [y0, y1, ...]], ...]``, integers 0-255) and
  ``test_simplified.csv`` (``key_id,countrycode,drawing``).
- Google ``simplified/<word>.ndjson``: one JSON object a line, the same fields.
- Google ``raw/<word>.ndjson``: strokes ``[[x...], [y...], [t...]]`` in screen pixels and ms,
  mapped into the 0-255 frame by :func:`normalise_raw` (times kept).
- Google ``numpy_bitmap/<word>.npy``: ``uint8`` ``(N, 784)``, read without pickles.

Bad input: ``strict=True`` raises :class:`QuickDrawFormatError` naming file, line and reason;
``strict=False`` skips the row and counts it in a :class:`ReadReport`. Strokes come back as
``float32`` arrays ``(n, 2)`` (x, y) or ``(n, 3)`` (x, y, t in ms), the renderer's input.
Used in notebooks 04, 05 and 06 through :func:`quickdraw.make_dataset`.
"""

from __future__ import annotations

import csv
import json
import threading
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from quickdraw.labels import LabelMap, google_name

KAGGLE_COLUMNS = ("countrycode", "drawing", "key_id", "recognized", "timestamp", "word")
KAGGLE_TEST_COLUMNS = ("key_id", "countrycode", "drawing")
NPY_SIDE = 28
LAYOUT_DIRS = ("train_simplified", "simplified", "raw", "numpy_bitmap")

csv.field_size_limit(1 << 26)  # some real drawings are long JSON strings


class QuickDrawFormatError(ValueError):
    """A row or file that cannot be read, with the file, line (1-based) and reason."""

    def __init__(self, path: str | Path, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple:  # crosses process boundaries (write_shards' workers)
        return (type(self), (self.path, self.line, self.reason))


_REPORT_LOCK = threading.Lock()  # one for all reports: a report pickles as plain data


class BadDrawing(ValueError):
    """Raised by the parsers for a drawing that is not valid; carries a short reason."""


@dataclass
class ReadReport:
    """Counts of rows read and rows skipped (by reason and by file), with examples.

    Pass one to the readers or to ``make_dataset(report=...)``; print it at the end.
    Thread safe (tf.data may read several files at once). Used in notebooks 04-06.
    """

    max_examples: int = 20
    rows_ok: int = 0
    by_reason: Counter = field(default_factory=Counter)
    by_file: Counter = field(default_factory=Counter)
    examples: list[tuple[str, int | None, str]] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """Number of rows (or whole files) skipped."""
        return sum(self.by_reason.values())

    def ok(self, n: int = 1) -> None:
        """Count ``n`` good rows."""
        with _REPORT_LOCK:
            self.rows_ok += n

    def bad(self, path: str | Path, line: int | None, reason: str) -> None:
        """Count one skipped row (or file, when ``line`` is None)."""
        with _REPORT_LOCK:
            self.by_reason[reason] += 1
            self.by_file[str(path)] += 1
            if len(self.examples) < self.max_examples:
                self.examples.append((str(path), line, reason))

    def merge(self, other: ReadReport) -> None:
        """Add another report's counts and examples (e.g. from a worker process)."""
        with _REPORT_LOCK:
            self.rows_ok += other.rows_ok
            self.by_reason.update(other.by_reason)
            self.by_file.update(other.by_file)
            room = max(0, self.max_examples - len(self.examples))
            self.examples.extend(other.examples[:room])

    def summary(self) -> str:
        """Human-readable report: totals, reasons, files, first examples."""
        lines = [f"read {self.rows_ok} rows, skipped {self.skipped}"]
        for reason, n in self.by_reason.most_common():
            lines.append(f"  {n:6d} x {reason}")
        if self.by_file:
            lines.append("  files with skipped rows:")
            for path, n in self.by_file.most_common():
                lines.append(f"  {n:6d} in {path}")
        if self.examples:
            lines.append("  first examples:")
            for path, line, reason in self.examples:
                where = f"{path}:{line}" if line is not None else path
                lines.append(f"    {where}: {reason}")
        return "\n".join(lines)

    __str__ = summary


@dataclass
class Drawing:
    """One drawing: class name (Google spelling), key_id, strokes and metadata.

    ``strokes``: list of float32 arrays ``(n, 2)`` or ``(n, 3)`` (x, y[, t]) in the 0-255
    frame. ``label`` is the label-map index, or -1 when no map was given.
    """

    word: str
    key_id: int
    strokes: list[np.ndarray]
    countrycode: str = ""
    recognized: bool = True
    timestamp: str = ""
    label: int = -1

    @property
    def has_time(self) -> bool:
        """True when the strokes carry per-point times (raw data)."""
        return bool(self.strokes) and self.strokes[0].shape[1] == 3


def _fail(strict: bool, report: ReadReport | None, path: str | Path, line: int | None, reason: str) -> None:
    if strict:
        raise QuickDrawFormatError(path, line, reason)
    if report is not None:
        report.bad(path, line, reason)


# --- Stroke parsing and validation
def parse_points(drawing: object, *, raw: bool | None = False) -> tuple[np.ndarray, list[int]]:
    """Validate a drawing and return all its points at once: ``(points, ends)``.

    ``points``: C-contiguous ``float32`` ``(N, 2)`` (x, y) or ``(N, 3)`` (x, y, t);
    ``ends``: cumulative stroke lengths (stroke ``i`` is ``points[ends[i-1]:ends[i]]``).
    ``drawing`` is the JSON text or its decoded lists. ``raw=False``: simplified strokes
    ``[[x...], [y...]]`` (extra lists are ignored) with coordinates in ``[0, 255]``;
    ``raw=True``: ``[[x...], [y...], [t...]]``, any finite values; ``raw=None``: decided by
    the first stroke. Raises :class:`BadDrawing` with the reason.
    """
    if isinstance(drawing, (str, bytes)):
        try:
            drawing = json.loads(drawing)
        except ValueError as exc:
            raise BadDrawing(f"malformed JSON in drawing ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(drawing, list):
        raise BadDrawing(f"drawing is a {type(drawing).__name__}, not a list of strokes")
    if not drawing:
        raise BadDrawing("empty drawing (no strokes)")
    if raw is None:
        first = drawing[0]
        raw = isinstance(first, list) and len(first) == 3
    width = 3 if raw else 2
    cols: list[list] = [[] for _ in range(width)]
    ends: list[int] = []
    total = 0
    for s, stroke in enumerate(drawing):
        if type(stroke) is not list or len(stroke) < width:
            raise BadDrawing(f"stroke {s} is not a list of {width} coordinate lists")
        n = _coordinate_lists(stroke, width, s, raw)
        for k in range(width):
            cols[k].extend(stroke[k])
        total += n
        ends.append(total)
    try:
        arr = np.array(cols, dtype=np.float32)  # (width, N): one conversion for the drawing
    except (TypeError, ValueError):
        raise BadDrawing("non-numeric coordinate") from None
    if arr.ndim != 2:
        raise BadDrawing("non-numeric coordinate")
    if not cv2.checkRange(arr)[0]:  # NaN or infinity anywhere
        raise BadDrawing("non-finite coordinate")
    lo, hi = cv2.minMaxLoc(arr[:2])[:2]
    if not raw and (lo < 0 or hi > 255):
        bad = int(np.flatnonzero(((arr < 0) | (arr > 255)).any(axis=0))[0])
        s = next(i for i, e in enumerate(ends) if bad < e)
        raise BadDrawing(f"stroke {s}: coordinate out of range 0..255 ({lo:g}..{hi:g})")
    return np.ascontiguousarray(arr.T), ends


def _coordinate_lists(stroke: list, width: int, s: int, raw: bool) -> int:
    """The common length of a stroke's x, y (and t) lists; raises BadDrawing otherwise."""
    x = stroke[0]
    n = len(x) if type(x) is list else -1
    if n <= 0:
        raise BadDrawing(f"empty stroke {s}")
    y = stroke[1]
    bad_t = width == 3 and (type(stroke[2]) is not list or len(stroke[2]) != n)
    if type(y) is not list or len(y) != n or bad_t:
        raise BadDrawing(f"stroke {s}: x/y{'/t' if raw else ''} lists of different lengths")
    return n


def parse_points_batch(texts: Sequence[str | bytes]) -> list[tuple[np.ndarray, list[int]]]:
    """:func:`parse_points` of many simplified JSON texts. Used by the benchmarks."""
    return [parse_points(text) for text in texts]


def parse_strokes(drawing: object, *, raw: bool | None = False) -> list[np.ndarray]:
    """Validate a drawing (JSON text or decoded lists) and return one ``float32`` array per
    stroke, ``(n, 2)`` or ``(n, 3)``. Same rules and errors as :func:`parse_points`."""
    points, ends = parse_points(drawing, raw=raw)
    return np.split(points, ends[:-1]) if len(ends) > 1 else [points]


def normalise_to_frame(strokes: Sequence[np.ndarray], frame: float = 255.0) -> list[np.ndarray]:
    """Shift and scale strokes like Google's simplified data: minimum at 0, longer side ``frame``.

    Aspect ratio kept; a third column (time) is kept as it is; a drawing with no extent (one
    point) is moved to 0. Returns new ``float32`` arrays. Used by :func:`normalise_raw` and
    :func:`quickdraw.augment_strokes` (after its random hand).
    """
    xy = np.concatenate([s[:, :2] for s in strokes])
    low = xy.min(axis=0)
    extent = float((xy.max(axis=0) - low).max())
    factor = frame / extent if extent > 0 else 1.0
    out = [s.astype(np.float32, copy=True) for s in strokes]
    for t in out:
        t[:, :2] = (t[:, :2] - low) * factor
    return out


def normalise_raw(strokes: list[np.ndarray], size: float = 255.0) -> list[np.ndarray]:
    """Map raw strokes (screen pixels, ms) into the simplified frame (:func:`normalise_to_frame`,
    longer side ``size``); times become ms since the first point. Google's resampling and
    simplification are not applied, so there are more points than in the simplified file."""
    out = normalise_to_frame(strokes, size)
    if out[0].shape[1] > 2:
        t0 = min(float(st[:, 2].min()) for st in out)
        for st in out:
            st[:, 2] -= t0
    return out


def strokes_to_json(strokes: list[np.ndarray], *, with_time: bool = False) -> str:
    """JSON text of strokes in the published layout (ints unless ``with_time``)."""
    if with_time:
        return json.dumps(
            [[[round(float(v), 3) for v in st[:, k]] for k in range(st.shape[1])] for st in strokes]
        )
    return json.dumps([[[int(round(float(v))) for v in st[:, k]] for k in range(2)] for st in strokes])


def _parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes")


def _parse_key(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("boolean key_id")
    return int(str(value).strip())


def _check_word(word: str, labels: LabelMap | None) -> int:
    if labels is None:
        return -1
    i = labels.get(word)
    if i is None:
        raise BadDrawing(f"unknown class name {word!r}")
    return i


# --- Kaggle CSV
@dataclass(frozen=True)
class CsvHeader:
    """Column positions of a Kaggle CSV, from its header row."""

    ncol: int
    drawing: int
    key_id: int
    word: int | None
    countrycode: int | None
    recognized: int | None
    timestamp: int | None

    @property
    def metadata(self) -> tuple[int | None, int | None, int | None]:
        """The columns of countrycode, recognized and timestamp (None: absent)."""
        return self.countrycode, self.recognized, self.timestamp

    @classmethod
    def parse(cls, header: list[str]) -> CsvHeader | None:
        """The header's columns, or None when it is not a Quick, Draw! CSV."""
        cols = {name.strip(): i for i, name in enumerate(header)}
        if "drawing" not in cols or "key_id" not in cols:
            return None
        optional = (cols.get(name) for name in ("word", "countrycode", "recognized", "timestamp"))
        return cls(len(header), cols["drawing"], cols["key_id"], *optional)


def read_csv_header(
    path: str | Path, *, strict: bool = False, report: ReadReport | None = None
) -> CsvHeader | None:
    """The :class:`CsvHeader` of a Kaggle CSV file (None and a report entry when bad)."""
    with open(path, newline="", encoding="utf-8") as f:
        return _header(csv.reader(f), path, strict, report)


def _header(
    reader: Iterator[list[str]], path: str | Path, strict: bool, report: ReadReport | None
) -> CsvHeader | None:
    """The header row of an open CSV reader, parsed (None and a report entry when bad)."""
    try:
        header = next(reader)
    except StopIteration:
        _fail(strict, report, path, 1, "empty file (no header)")
        return None
    except csv.Error as exc:
        _fail(strict, report, path, 1, f"unreadable header ({exc})")
        return None
    hdr = CsvHeader.parse(header)
    if hdr is None:
        _fail(strict, report, path, 1, f"not a Quick, Draw! CSV: header {header!r}")
    return hdr


def parse_csv_row(
    row: list[str], hdr: CsvHeader, path: str | Path, line: int, *, labels: LabelMap | None = None,
    strict: bool = False, report: ReadReport | None = None, word: str | None = None,
) -> Drawing | None:
    """One Kaggle CSV row -> :class:`Drawing`, or None (counted in ``report``) when bad.

    Shared by :func:`read_kaggle_csv` and the tf.data pipeline. ``line`` is 1-based.
    """
    if len(row) != hdr.ncol:
        _fail(strict, report, path, line, f"truncated row: {len(row)} fields, expected {hdr.ncol}")
        return None
    try:
        key_id = _parse_key(row[hdr.key_id])
    except ValueError:
        _fail(strict, report, path, line, f"bad key_id {row[hdr.key_id]!r}")
        return None
    w = google_name(row[hdr.word]) if hdr.word is not None else (word or "")
    try:
        label = _check_word(w, labels) if hdr.word is not None else -1
        strokes = parse_strokes(row[hdr.drawing])
    except BadDrawing as exc:
        _fail(strict, report, path, line, str(exc))
        return None
    if report is not None:
        report.ok()
    country, recognized, time = (row[i] if i is not None else None for i in hdr.metadata)
    return Drawing(w, key_id, strokes, country or "", recognized is None or _parse_bool(recognized),
                   time or "", label)


def read_kaggle_csv(
    path: str | Path, *, labels: LabelMap | None = None, strict: bool = False,
    report: ReadReport | None = None, limit: int | None = None, word: str | None = None,
) -> Iterator[Drawing]:
    """Yield the drawings of a Kaggle ``train_simplified/<word>.csv`` or ``test_simplified.csv``.

    ``word`` fills in the class when the file has no ``word`` column (test file: leave
    it None to get ``""``). With ``labels``, rows whose class is not in the map are bad
    rows. ``limit`` reads only the first ``limit`` rows (good or bad) after the header.
    Used by ``make_dataset``.
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        hdr = _header(reader, path, strict, report)
        if hdr is None:
            return
        last_line = reader.line_num
        rows = 0
        while limit is None or rows < limit:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                _fail(strict, report, path, last_line + 1, f"truncated or malformed CSV ({exc})")
                break
            line = last_line + 1
            last_line = reader.line_num
            rows += 1
            if not row:
                continue
            d = parse_csv_row(row, hdr, path, line, labels=labels, strict=strict, report=report, word=word)
            if d is not None:
                yield d


def write_kaggle_csv(path: str | Path, drawings: Iterable[Drawing], *, test: bool = False) -> int:
    """Write drawings as a Kaggle CSV (``test=True``: the test-file columns). Returns rows."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(KAGGLE_TEST_COLUMNS if test else KAGGLE_COLUMNS)
        for d in drawings:
            js = strokes_to_json(d.strokes)
            if test:
                w.writerow([d.key_id, d.countrycode, js])
            else:
                w.writerow([d.countrycode, js, d.key_id, str(bool(d.recognized)), d.timestamp, d.word])
            n += 1
    return n


# --- Google ndjson (simplified and raw)
def parse_ndjson_line(
    line: bytes | str, path: str | Path, line_no: int, *, raw: bool | None = None,
    normalise: bool = True, labels: LabelMap | None = None, strict: bool = False,
    report: ReadReport | None = None, last: bool = False,
) -> Drawing | None:
    """One Google ``.ndjson`` line -> :class:`Drawing`, or None when blank or bad.

    ``last=True`` with no newline at the end marks a line that may have been cut off.
    Shared by :func:`read_ndjson` and the tf.data pipeline.
    """
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except ValueError as exc:
        ends = line.endswith(b"\n" if isinstance(line, bytes) else "\n")
        why = "truncated line (no newline at end of file)" if last and not ends else "malformed JSON"
        _fail(strict, report, path, line_no, f"{why}: {getattr(exc, 'msg', exc)}")
        return None
    if not isinstance(obj, dict) or "drawing" not in obj:
        _fail(strict, report, path, line_no, "not a drawing object (no 'drawing' field)")
        return None
    try:
        key_id = _parse_key(obj.get("key_id", ""))
    except ValueError:
        _fail(strict, report, path, line_no, f"bad key_id {obj.get('key_id')!r}")
        return None
    w = google_name(str(obj.get("word", "")))
    try:
        label = _check_word(w, labels)
        strokes = parse_strokes(obj["drawing"], raw=raw)
        if strokes[0].shape[1] == 3 and normalise:
            strokes = normalise_raw(strokes)
    except BadDrawing as exc:
        _fail(strict, report, path, line_no, str(exc))
        return None
    if report is not None:
        report.ok()
    country, time = str(obj.get("countrycode", "")), str(obj.get("timestamp", ""))
    return Drawing(w, key_id, strokes, country, _parse_bool(obj.get("recognized", True)), time, label)


def read_ndjson(
    path: str | Path, *, raw: bool | None = None, normalise: bool = True, labels: LabelMap | None = None,
    strict: bool = False, report: ReadReport | None = None, limit: int | None = None,
) -> Iterator[Drawing]:
    """Yield the drawings of a Google ``simplified/`` or ``raw/`` ``.ndjson`` file.

    ``raw=None`` detects raw data (three lists a stroke). Raw strokes are normalised into
    the 0-255 frame with times kept (:func:`normalise_raw`) unless ``normalise=False``.
    A last line without its newline that does not parse is reported as truncated.
    ``limit`` reads only the first ``limit`` lines.
    """
    path = Path(path)
    with open(path, "rb") as f:
        for line_no, line in enumerate(f, start=1):
            if limit is not None and line_no > limit:
                break
            d = parse_ndjson_line(line, path, line_no, raw=raw, normalise=normalise, labels=labels,
                                  strict=strict, report=report, last=True)
            if d is not None:
                yield d


def write_ndjson(path: str | Path, drawings: Iterable[Drawing]) -> int:
    """Write drawings as Google ``.ndjson`` lines (times kept when present). Returns rows."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for d in drawings:
            obj = {
                "word": d.word,
                "countrycode": d.countrycode,
                "timestamp": d.timestamp,
                "recognized": bool(d.recognized),
                "key_id": str(d.key_id),
                "drawing": json.loads(strokes_to_json(d.strokes, with_time=d.has_time)),
            }
            f.write(json.dumps(obj) + "\n")
            n += 1
    return n


# --- Google numpy bitmaps
def read_npy_bitmaps(
    path: str | Path, *, strict: bool = True, report: ReadReport | None = None, mmap: bool = False
) -> np.ndarray:
    """Load a Google ``numpy_bitmap/<word>.npy`` file as ``uint8`` ``(N, 28, 28)``.

    Accepts the published ``(N, 784)`` layout and the common ``(N, 1, 784)`` and
    ``(N, 28, 28)`` re-saves. Never allows pickles. A wrong shape or dtype, an object
    array or a truncated file raises :class:`QuickDrawFormatError` (``strict``) or is
    counted in ``report`` and gives an empty array.
    """
    path = Path(path)
    empty = np.zeros((0, NPY_SIDE, NPY_SIDE), np.uint8)
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except ValueError as exc:
        msg = str(exc)
        reason = (
            "object array (pickles are never loaded)"
            if "allow_pickle" in msg
            else f"truncated or unreadable .npy ({msg})"
        )
        _fail(strict, report, path, None, reason)
        return empty
    except (OSError, EOFError) as exc:
        _fail(strict, report, path, None, f"unreadable .npy ({exc})")
        return empty
    if not isinstance(arr, np.ndarray):
        _fail(strict, report, path, None, "not a single array (.npz?)")
        return empty
    if arr.dtype != np.uint8:
        _fail(strict, report, path, None, f"dtype {arr.dtype}, expected uint8")
        return empty
    if arr.shape[1:] not in ((NPY_SIDE * NPY_SIDE,), (1, NPY_SIDE * NPY_SIDE), (NPY_SIDE, NPY_SIDE)):
        _fail(strict, report, path, None, f"shape {arr.shape}, expected (N, 784)")
        return empty
    out = arr.reshape(-1, NPY_SIDE, NPY_SIDE)
    if report is not None:
        report.ok(len(out))
    return out


def npy_key_id(word: str, row: int) -> int:
    """A stable key_id for row ``row`` of a bitmap file (bitmaps carry no key_id): the
    train/validation split of ``.npy`` data."""
    return ((zlib.crc32(google_name(word).encode()) & 0x7FFFFFFF) << 32) | row  # fits in int64


# --- Directory layouts
FORMAT_SUFFIXES = {".csv": "kaggle_csv", ".ndjson": "ndjson", ".npy": "npy"}
NOT_CLASS_FILES = {"test_simplified.csv", "test_raw.csv", "test_solution.csv", "sample_submission.csv",
                   "submission.csv"}


def detect_format(path: str | Path) -> str:
    """``"kaggle_csv"``, ``"ndjson"`` or ``"npy"`` from the file name's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMAT_SUFFIXES:
        raise ValueError(f"{path}: unknown Quick, Draw! file type {suffix!r} (use .csv, .ndjson or .npy)")
    return FORMAT_SUFFIXES[suffix]


def find_class_files(root: str | Path, fmt: str | None = None) -> dict[str, Path]:
    """Map class name (Google spelling) -> per-class file under ``root``.

    Looks in the published sub-directories of ``root`` (``train_simplified``,
    ``simplified``, ``raw``, ``numpy_bitmap``) when there are any, else in ``root``
    itself; Kaggle's test, solution and submission files and dot/underscore files are
    not classes. Raises when two formats are mixed and ``fmt`` is not given.
    """
    root = Path(root)
    if root.is_file():
        return {google_name(root.stem): root}
    dirs = [root / d for d in LAYOUT_DIRS if (root / d).is_dir()] or [root]
    found: dict[str, dict[str, Path]] = {}
    for d in dirs:
        for p in sorted(d.iterdir()):
            if not p.is_file() or p.name.startswith((".", "_")) or p.name in NOT_CLASS_FILES:
                continue
            kind = FORMAT_SUFFIXES.get(p.suffix.lower())
            if kind is None or (fmt is not None and kind != fmt):
                continue
            found.setdefault(kind, {})[google_name(p.stem)] = p
    if not found:
        raise FileNotFoundError(f"no Quick, Draw! class files (.csv, .ndjson, .npy) under {root}")
    if len(found) > 1:
        raise ValueError(f"{root} mixes formats {sorted(found)}; pass fmt= to choose one")
    return next(iter(found.values()))


def iter_file(
    path: str | Path, *, labels: LabelMap | None = None, strict: bool = False,
    report: ReadReport | None = None, limit: int | None = None,
) -> Iterator[Drawing]:
    """Yield the drawings of one ``.csv`` or ``.ndjson`` file (format from its suffix)."""
    kind = detect_format(path)
    if kind == "kaggle_csv":
        yield from read_kaggle_csv(path, labels=labels, strict=strict, report=report, limit=limit)
    elif kind == "ndjson":
        yield from read_ndjson(path, labels=labels, strict=strict, report=report, limit=limit)
    else:
        raise ValueError(f"{path}: .npy bitmaps hold no strokes; use read_npy_bitmaps")
