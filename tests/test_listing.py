"""utils.listing.show_program: a program whole, its distributed lines marked (notebooks 04, 05, 07, 10)."""

from __future__ import annotations

import pytest

from utils.listing import show_program


def test_whole_program_with_the_distributed_lines_marked(tmp_path) -> None:
    program = tmp_path / "worker.py"
    program.write_text('"""Uses TF_CONFIG."""\nimport json, os\nconfig = json.loads(os.environ["TF_CONFIG"])\n'
                       "strategy = tf.distribute.MultiWorkerMirroredStrategy()\nprint('done')\n")
    listing = show_program(program)
    assert listing.highlighted == (3, 4)  # not the docstring
    text = repr(listing).splitlines()
    assert len(text) == 1 + 5  # a title, then every line of the file
    assert [line[0] for line in text[1:]] == [" ", " ", "▶", "▶", " "]
    page = listing._repr_html_()
    assert "MultiWorkerMirroredStrategy" in page and page.count("<span") > 4  # coloured


def test_paths_relative_to_the_course_root_and_missing_files() -> None:
    listing = show_program("scripts/workers/mw_keras_worker.py")  # from notebooks/ as from the root
    assert listing.title().startswith("scripts/workers/mw_keras_worker.py") and listing.highlighted
    with pytest.raises(FileNotFoundError, match="no such program"):
        show_program("scripts/workers/no_such_worker.py")
