"""quickdraw.formats: the published formats and bad input, on small fixture files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from quickdraw.formats import (
    BadDrawing,
    QuickDrawFormatError,
    ReadReport,
    find_class_files,
    iter_file,
    normalise_raw,
    parse_points,
    parse_points_batch,
    parse_strokes,
    read_kaggle_csv,
    read_ndjson,
    read_npy_bitmaps,
    write_kaggle_csv,
    write_ndjson,
)
from quickdraw.labels import LabelMap

FIX = Path(__file__).parent / "fixtures" / "quickdraw"
KAGGLE = FIX / "kaggle" / "train_simplified"
GOOGLE = FIX / "google"
LABELS = LabelMap(["circle", "smiley face", "square", "triangle"])


BAD_DRAWINGS = {
    "[[[1, 2], [3, 4]]": "malformed JSON",
    "[]": "empty drawing",
    "[[[], []]]": "empty stroke",
    "[[[1, 2], [3]]]": "different lengths",
    "[[[1, 256], [3, 4]]]": "out of range",
    "[[[1, -1], [3, 4]]]": "out of range",
    '[[["a", 2], [3, 4]]]': "non-numeric",
    "[[[NaN, 2], [3, 4]]]": "non-finite",
    "[[[[1], 2], [3, 4]]]": "non-numeric",
    "[[[1, 2], [3, 4]], [[1, 2], [3, 999]]]": "stroke 1: coordinate out of range",
    "[[[1, 2]]]": "not a list of 2",
    '{"a": 1}': "not a list",
    "[[[1 2], [3, 4]]]": "malformed JSON",  # blanks are not commas
    "[[[01, 2], [3, 4]]]": "malformed JSON",  # JSON has no leading zeros
    "[[[1, 2], [3, 4]]]\n[[[1], [2]]]": "malformed JSON",  # two drawings in one text
}


def test_parse_strokes_good_and_bad() -> None:
    s = parse_strokes("[[[0, 10, 255], [5, 6, 7]], [[3], [4]]]")
    assert len(s) == 2 and s[0].shape == (3, 2) and s[0].dtype == np.float32 and s[1].shape == (1, 2)
    assert s[0][2].tolist() == [255.0, 7.0]
    for text, reason in BAD_DRAWINGS.items():
        with pytest.raises(BadDrawing, match=reason):
            parse_strokes(text)


def _real_texts() -> list[str]:
    """JSON texts of the Kaggle fixture (with Kaggle's blanks) and of data/real, packed."""
    from quickdraw import real_test_dir

    rows = list(read_kaggle_csv(KAGGLE / "circle.csv"))
    texts = [json.dumps([[s[:, 0].astype(int).tolist(), s[:, 1].astype(int).tolist()] for s in d.strokes])
             for d in rows]  # fmt: skip
    for path in sorted(real_test_dir().glob("*.ndjson"))[:6]:
        texts += [json.dumps(json.loads(line)["drawing"], separators=(",", ":")) for line in path.open()]
    return texts


def test_parse_points_batch_same_as_one_by_one() -> None:
    texts = _real_texts()
    assert len(texts) > 100 and ", " in texts[0] and ", " not in texts[-1]
    got = parse_points_batch([*texts[:3], texts[3].encode()])
    for (points, ends), text in zip(got, texts[:4], strict=True):
        want_points, want_ends = parse_points(text)
        assert points.dtype == np.float32 and points.flags.c_contiguous
        assert np.array_equal(points, want_points) and ends == want_ends
    assert parse_points_batch([]) == []


@pytest.mark.parametrize("text", list(BAD_DRAWINGS))
def test_parse_points_batch_bad_drawing_same_error(text: str) -> None:
    with pytest.raises(BadDrawing, match=BAD_DRAWINGS[text]):
        parse_points_batch([*_real_texts()[:5], text])


def test_report_crosses_processes() -> None:
    """A report pickles (write_shards' workers send theirs back) and counts on after it."""
    import pickle

    report = ReadReport()
    report.bad("a.csv", 3, "bad key_id")
    copy = pickle.loads(pickle.dumps(report))
    copy.ok(2)
    report.merge(copy)
    assert (report.rows_ok, report.skipped, copy.examples) == (2, 2, [("a.csv", 3, "bad key_id")])


def test_parse_raw_strokes() -> None:
    with pytest.raises(BadDrawing, match="non-finite"):
        parse_strokes([[[1.0, float("inf")], [0.0, 1.0], [0, 1]]], raw=True)
    s = parse_strokes([[[100.5, 300.0], [50.0, 60.0], [0, 12]]], raw=True)
    assert s[0].shape == (2, 3)
    s = parse_strokes([[[100.5, 300.0], [50.0, 60.0], [0, 12]]], raw=None)  # detected
    assert s[0].shape == (2, 3)
    with pytest.raises(BadDrawing, match="different lengths"):
        parse_strokes([[[1.0, 2.0], [1.0, 2.0], [0]]], raw=True)


def test_read_kaggle_csv_counts_bad_rows() -> None:
    report = ReadReport()
    rows = list(read_kaggle_csv(KAGGLE / "triangle.csv", labels=LABELS, report=report))
    assert len(rows) == 4 and all(d.word == "triangle" and d.label == 3 for d in rows)
    assert report.rows_ok == 4 and report.skipped == 7
    reasons = " | ".join(report.by_reason)
    for reason in (
        "malformed JSON",
        "empty drawing",
        "different lengths",
        "out of range",
        "unknown class name 'zebra'",
        "bad key_id",
        "truncated row",
    ):
        assert reason in reasons
    assert set(report.by_file) == {str(KAGGLE / "triangle.csv")}
    lines = sorted(line for _, line, _ in report.examples)
    assert lines == list(range(6, 13))  # header is line 1, four good rows, then the bad ones
    text = report.summary()
    assert "read 4 rows, skipped 7" in text and "triangle.csv:12" in text


def test_read_kaggle_csv_strict_names_file_and_line() -> None:
    with pytest.raises(QuickDrawFormatError) as info:
        list(read_kaggle_csv(KAGGLE / "triangle.csv", labels=LABELS, strict=True))
    err = info.value
    assert err.line == 6 and err.path.endswith("triangle.csv") and "malformed JSON" in err.reason
    assert "triangle.csv:6" in str(err)


def test_unknown_class_only_with_labels() -> None:
    rows = list(read_kaggle_csv(KAGGLE / "triangle.csv"))  # no label map: zebra is a class
    assert {d.word for d in rows} == {"triangle", "zebra"} and all(d.label == -1 for d in rows)


def test_read_kaggle_csv_fields_and_spaces() -> None:
    rows = list(read_kaggle_csv(KAGGLE / "smiley face.csv", labels=LABELS, strict=True))
    assert len(rows) == 5 and rows[0].word == "smiley face" and rows[0].label == 1
    d = rows[0]
    assert (
        isinstance(d.key_id, int) and d.key_id > 10**15 and d.countrycode and d.timestamp.startswith("2017-")
    )
    assert isinstance(d.recognized, bool)
    assert len(list(read_kaggle_csv(KAGGLE / "circle.csv", limit=2))) == 2


def test_read_kaggle_test_file() -> None:
    rows = list(read_kaggle_csv(FIX / "kaggle" / "test_simplified.csv", labels=LABELS, strict=True))
    assert len(rows) == 8 and all(d.word == "" and d.label == -1 for d in rows)


def test_kaggle_csv_edge_cases(tmp_path) -> None:
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    (tmp_path / "quote.csv").write_text('countrycode,drawing,key_id\nUS,"[[[1, 2], [3, 4]]]",5\nUS,"[[[1')
    for name, reason in (("empty.csv", "empty file"), ("other.csv", "not a Quick, Draw! CSV")):
        with pytest.raises(QuickDrawFormatError, match=reason):
            list(read_kaggle_csv(tmp_path / name, strict=True))
    report = ReadReport()
    rows = list(read_kaggle_csv(tmp_path / "quote.csv", report=report))
    assert len(rows) == 1 and report.skipped == 1 and report.examples[0][1] == 3


def test_read_ndjson_simplified() -> None:
    report = ReadReport()
    rows = list(read_ndjson(GOOGLE / "simplified" / "triangle.ndjson", labels=LABELS, report=report))
    assert len(rows) == 4 and report.skipped == 3
    assert any("truncated line" in r for r in report.by_reason)
    assert any("empty stroke" in r for r in report.by_reason)
    with pytest.raises(QuickDrawFormatError, match=r"triangle.ndjson:5: empty stroke"):
        list(read_ndjson(GOOGLE / "simplified" / "triangle.ndjson", strict=True))
    kag = list(read_kaggle_csv(KAGGLE / "circle.csv"))
    goo = list(read_ndjson(GOOGLE / "simplified" / "circle.ndjson"))
    assert [d.key_id for d in kag] == [d.key_id for d in goo]  # same drawings, two formats
    assert all(
        np.array_equal(a, b)
        for x, y in zip(kag, goo, strict=True)
        for a, b in zip(x.strokes, y.strokes, strict=True)
    )


def test_read_ndjson_raw_normalised_with_times() -> None:
    report = ReadReport()
    raw = list(read_ndjson(GOOGLE / "raw" / "square.ndjson", report=report))
    assert len(raw) == 5 and report.skipped == 1 and "different lengths" in next(iter(report.by_reason))
    simp = {d.key_id: d for d in read_ndjson(GOOGLE / "simplified" / "square.ndjson")}
    for d in raw:
        assert d.has_time
        pts = np.concatenate(d.strokes)
        assert pts[:, :2].min() == pytest.approx(0, abs=1e-3)
        assert pts[:, :2].max() == pytest.approx(255, abs=1e-3)
        assert pts[0, 2] == 0 and np.all(np.diff(pts[:, 2]) > 0)  # times from 0, increasing
        # the normalised raw drawing has the same bounding box as its simplified version
        s = np.concatenate(simp[d.key_id].strokes)
        assert np.abs(pts[:, :2].max(axis=0) - s.max(axis=0)).max() < 30
    kept = list(read_ndjson(GOOGLE / "raw" / "circle.ndjson", normalise=False))
    assert np.concatenate(kept[0].strokes)[:, :2].max() > 255


def test_normalise_raw_keeps_aspect() -> None:
    s = [np.array([[100, 50, 1000], [300, 150, 1010]], np.float32)]  # 200 wide, 100 high
    (n,) = normalise_raw(s)
    assert n[:, 0].tolist() == [0, 255] and n[:, 1].tolist() == [0, 127.5] and n[:, 2].tolist() == [0, 10]


def test_read_npy_bitmaps() -> None:
    a = read_npy_bitmaps(GOOGLE / "numpy_bitmap" / "circle.npy")
    assert a.shape == (6, 28, 28) and a.dtype == np.uint8 and a.max() > 200
    b = read_npy_bitmaps(FIX / "bad_npy" / "reshaped_1x784.npy")
    assert b.shape == (2, 28, 28) and b.max() == 7


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("wrong_shape.npy", "shape"),
        ("wrong_dtype.npy", "dtype float32"),
        ("object.npy", "pickles are never loaded"),
        ("truncated.npy", "truncated"),
    ],
)
def test_bad_npy(name: str, reason: str) -> None:
    with pytest.raises(QuickDrawFormatError, match=reason):
        read_npy_bitmaps(FIX / "bad_npy" / name)
    report = ReadReport()
    out = read_npy_bitmaps(FIX / "bad_npy" / name, strict=False, report=report)
    assert out.shape == (0, 28, 28) and report.skipped == 1 and reason in next(iter(report.by_reason))


def test_find_class_files() -> None:
    k = find_class_files(FIX / "kaggle")
    assert sorted(k) == ["circle", "smiley face", "square", "triangle"]  # not test_simplified
    assert set(find_class_files(GOOGLE / "simplified")) == set(k)
    assert sorted(find_class_files(GOOGLE / "numpy_bitmap")) == ["circle", "square"]
    with pytest.raises(ValueError, match="mixes formats"):
        find_class_files(GOOGLE)
    assert sorted(find_class_files(GOOGLE, fmt="npy")) == ["circle", "square"]
    with pytest.raises(FileNotFoundError):
        find_class_files(FIX / "bad_npy" / "..", fmt="kaggle_csv")


def test_write_read_round_trip(tmp_path) -> None:
    rows = list(iter_file(KAGGLE / "square.csv"))
    write_kaggle_csv(tmp_path / "square.csv", rows)
    write_ndjson(tmp_path / "square.ndjson", rows)
    assert (tmp_path / "square.csv").read_text() == (KAGGLE / "square.csv").read_text()
    back = list(read_ndjson(tmp_path / "square.ndjson", strict=True))
    assert [d.key_id for d in back] == [d.key_id for d in rows]
    raw = list(read_ndjson(GOOGLE / "raw" / "circle.ndjson"))
    write_ndjson(tmp_path / "raw.ndjson", raw)
    again = list(read_ndjson(tmp_path / "raw.ndjson"))
    assert again[0].has_time and np.allclose(again[0].strokes[0], raw[0].strokes[0], atol=1e-2)
