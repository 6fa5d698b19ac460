"""quickdraw.download against local files (file:// and a fake opener); no network."""

from __future__ import annotations

import io
import json
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from quickdraw import download
from quickdraw.formats import read_ndjson, read_npy_bitmaps

FIX = Path(__file__).parent / "fixtures" / "quickdraw" / "google"
BASE = FIX.resolve().as_uri()  # file:///.../google -> <base>/<kind>/<name>.<ext>


def test_google_url() -> None:
    assert download.google_url("The_Eiffel_Tower") == (
        "https://storage.googleapis.com/quickdraw_dataset/full/simplified/The%20Eiffel%20Tower.ndjson"
    )
    assert download.google_url("cat", "numpy_bitmap").endswith("/numpy_bitmap/cat.npy")
    with pytest.raises(ValueError):
        download.google_url("cat", "bitmaps")


def test_download_ndjson_with_limit_and_cache(tmp_path) -> None:
    files = download.download_google(
        ["circle", "smiley_face"], tmp_path, limit_per_class=3, base_url=BASE, progress=False
    )
    assert sorted(files) == ["circle", "smiley face"]
    rows = list(read_ndjson(files["smiley face"], strict=True))
    assert len(rows) == 3 and rows[0].word == "smiley face"
    cache = json.loads((tmp_path / "simplified" / ".downloads.json").read_text())
    assert cache["circle"] == {
        "url": f"{BASE}/simplified/circle.ndjson",
        "rows": 3,
        "complete": False,
        "limit": 3,
    }

    calls: list[str] = []

    def opener(url: str):
        calls.append(url)
        return urllib.request.urlopen(url)

    download.download_google(
        ["circle"], tmp_path, limit_per_class=2, base_url=BASE, opener=opener, progress=False
    )
    assert calls == []  # 3 cached rows cover a limit of 2
    download.download_google(
        ["circle"], tmp_path, limit_per_class=None, base_url=BASE, opener=opener, progress=False
    )
    assert len(calls) == 1 and len(list(read_ndjson(files["circle"]))) == 6
    download.download_google(
        ["circle"], tmp_path, limit_per_class=None, base_url=BASE, opener=opener, progress=False
    )
    assert len(calls) == 1  # complete file cached
    assert not list((tmp_path / "simplified").glob(".*.part*"))


def test_download_npy_reads_only_the_rows_wanted(tmp_path) -> None:
    data = (FIX / "numpy_bitmap" / "square.npy").read_bytes()
    read_up_to: list[int] = []

    class Response(io.BytesIO):  # remembers how far the download read before closing
        def close(self) -> None:
            read_up_to.append(self.tell())
            super().close()

    def opener(url: str):
        assert url == "https://example.invalid/full/numpy_bitmap/square.npy"
        return Response(data)

    files = download.download_google(
        ["square"],
        tmp_path,
        kind="numpy_bitmap",
        limit_per_class=2,
        base_url="https://example.invalid/full",
        opener=opener,
        progress=False,
    )
    got = read_npy_bitmaps(files["square"])
    want = read_npy_bitmaps(FIX / "numpy_bitmap" / "square.npy")
    assert np.array_equal(got, want[:2])
    assert read_up_to == [len(data) - 3 * 784]  # five rows served, two read


def test_download_rejects_bad_input(tmp_path) -> None:
    with pytest.raises(ValueError, match="not Quick, Draw! categories"):
        download.download_google(["dinosaur"], tmp_path, base_url=BASE, progress=False)
    bad = io.BytesIO()
    np.save(bad, np.zeros((2, 28, 28), np.float32))

    with pytest.raises(ValueError, match="uint8"):
        download.download_google(
            ["cat"],
            tmp_path,
            kind="numpy_bitmap",
            opener=lambda url: io.BytesIO(bad.getvalue()),
            progress=False,
        )
    short = (FIX / "numpy_bitmap" / "circle.npy").read_bytes()[:300]
    with pytest.raises(ValueError, match="truncated"):
        download.download_google(
            ["cat"], tmp_path, kind="numpy_bitmap", opener=lambda url: io.BytesIO(short), progress=False
        )
    assert not (tmp_path / "numpy_bitmap" / "cat.npy").exists()
    assert not list((tmp_path / "numpy_bitmap").glob(".*"))


def test_cli(capsys) -> None:
    assert download.main(["--list"]) == 0
    assert "The Eiffel Tower" in capsys.readouterr().out
    assert download.main([]) == 0
    assert "kaggle competitions download" in capsys.readouterr().out


def test_public_api_resolves() -> None:
    import quickdraw as qd

    for name in qd.__all__:
        assert getattr(qd, name) is not None, name
    assert qd.download_google is download.download_google
