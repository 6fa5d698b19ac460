"""quickdraw.labels: Google/Kaggle spellings, ordering, save/load round trips."""

from __future__ import annotations

import json

import pytest

from quickdraw.labels import LabelMap, UnknownClassError, google_categories, google_name, kaggle_name


def test_spellings() -> None:
    assert google_name("The_Eiffel_Tower") == "The Eiffel Tower"
    assert google_name("  smiley   face ") == "smiley face"
    assert kaggle_name("The Eiffel Tower") == "The_Eiffel_Tower"
    assert kaggle_name(google_name("The_Great_Wall_of_China")) == "The_Great_Wall_of_China"


def test_google_categories() -> None:
    cats = google_categories()
    assert len(cats) == 345 == len(set(cats))
    assert "The Eiffel Tower" in cats and "zigzag" in cats and "smiley face" in cats


def test_lookup_both_spellings_and_case() -> None:
    labels = LabelMap(["cat", "The Eiffel Tower", "smiley face"])
    assert labels.index("The_Eiffel_Tower") == labels.index("The Eiffel Tower") == 1
    assert labels.index("smiley_face") == 2
    assert labels.index("the eiffel tower") == 1  # unambiguous case-folding
    assert "CAT" in labels and "dog" not in labels
    with pytest.raises(UnknownClassError, match="dog"):
        labels.index("dog")
    assert labels.get("dog") is None


def test_order_is_explicit() -> None:
    a, b = LabelMap(["b", "a"]), LabelMap(["a", "b"])
    assert a != b and a[0] == "b" and list(a) == ["b", "a"] and len(a) == 2
    assert a == LabelMap(["b", "a"]) and hash(a) == hash(LabelMap(["b", "a"])) and a.names == ("b", "a")


def test_invalid_maps() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        LabelMap(["cat", "cat"])
    with pytest.raises(ValueError, match="duplicate"):
        LabelMap(["smiley face", "smiley_face"])  # one class in two spellings
    with pytest.raises(ValueError):
        LabelMap([])


def test_save_load_round_trip(tmp_path) -> None:
    labels = LabelMap(["zigzag", "The Mona Lisa", "circle"])
    written = labels.save(tmp_path / "model")  # a directory: labels.json inside
    assert written.name == "labels.json"
    assert LabelMap.load(tmp_path / "model") == labels
    assert LabelMap.load(written) == labels
    (tmp_path / "bad.json").write_text(json.dumps({"names": ["a"]}))
    with pytest.raises(ValueError, match="not a label map"):
        LabelMap.load(tmp_path / "bad.json")
    file = labels.save(tmp_path / "x.json")
    assert file == tmp_path / "x.json" and LabelMap.load(file) == labels


def test_labels_from_directory(tmp_path) -> None:
    from quickdraw import resolve_labels

    d = tmp_path / "train_simplified"
    d.mkdir()
    for name in ("zebra", "The Eiffel Tower", "cat"):
        (d / f"{name}.csv").write_text("countrycode,drawing,key_id,recognized,timestamp,word\n")
    (tmp_path / "test_simplified.csv").write_text("key_id,countrycode,drawing\n")
    labels = resolve_labels(tmp_path)
    assert list(labels) == sorted(["zebra", "The Eiffel Tower", "cat"])
    LabelMap(["only"]).save(tmp_path)
    assert list(resolve_labels(tmp_path)) == ["only"]  # labels.json wins


def test_labels_module_imports_no_other_quickdraw_module() -> None:
    import ast

    from quickdraw import labels as module

    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m.startswith("utils")}, imported  # no formats <-> labels circle
