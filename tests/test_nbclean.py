"""The notebook cleaner strips outputs and metadata and keeps tags and the kernel name."""

from __future__ import annotations

from tools.nbclean import clean_notebook


def test_clean_notebook() -> None:
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": "1",
                "outputs": [{"output_type": "stream"}],
                "execution_count": 3,
                "metadata": {"tags": ["old-names"], "scrolled": True},
            },
            {"cell_type": "markdown", "source": "# x", "metadata": {"collapsed": True}},
        ],
        "metadata": {"kernelspec": {"name": "horovod"}, "widgets": {}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    clean = clean_notebook(nb)
    code, markdown = clean["cells"]
    assert code["outputs"] == [] and code["execution_count"] is None
    assert code["metadata"] == {"tags": ["old-names"]}
    assert markdown["metadata"] == {}
    assert clean["metadata"]["kernelspec"]["display_name"] == "Python (horovod)"
    assert set(clean["metadata"]) == {"kernelspec", "language_info"}
    assert nb["cells"][0]["outputs"], "the input must not be modified"


def test_cells_of_nbformat_4_5_get_stable_unique_ids() -> None:
    import nbformat

    same = {"cell_type": "markdown", "source": "# same", "metadata": {}}
    nb = {
        "cells": [dict(same), dict(same), {"cell_type": "markdown", "source": "y", "metadata": {}, "id": "keep-me"}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    clean = clean_notebook(nb)
    ids = [cell["id"] for cell in clean["cells"]]
    assert ids[2] == "keep-me" and len(set(ids)) == 3, ids
    assert [cell["id"] for cell in clean_notebook(nb)["cells"]] == ids  # the same ids every time
    nbformat.validate(nbformat.from_dict(clean))  # valid 4.5 without the missing-id repair
    older = clean_notebook({**nb, "nbformat_minor": 4, "cells": [dict(same)]})
    assert "id" not in older["cells"][0]  # 4.4 has no cell ids


def test_check_cells_are_folded_and_skipped_other_cells_never() -> None:
    from tools.nbclean import is_check

    check = {
        "cell_type": "code",
        "source": "#@title Check: the same weights\nassert diff < 1e-6\n",
        "metadata": {"tags": ["check"], "collapsed": True, "slideshow": {"slide_type": "fragment"}},
        "outputs": [],
        "execution_count": 7,
    }
    folded_by_hand = {  # JupyterLab's "collapse input" on a cell that is not a check: not kept
        "cell_type": "code",
        "source": "x = 1\n",
        "metadata": {"jupyter": {"source_hidden": True}, "cellView": "form"},
        "outputs": [],
    }
    tagged_markdown = {"cell_type": "markdown", "source": "Check: words", "metadata": {"tags": ["check"]}}
    nb = {"cells": [check, folded_by_hand, tagged_markdown], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    clean = clean_notebook(nb)
    assert [is_check(c) for c in clean["cells"]] == [True, False, False]  # a code cell, tagged
    assert clean["cells"][0]["metadata"] == {
        "tags": ["check"],
        "jupyter": {"source_hidden": True},  # JupyterLab opens it folded
        "cellView": "form",  # Colab shows the #@title line only
        "slideshow": {"slide_type": "skip"},  # slides leave it out
    }
    assert clean["cells"][0]["execution_count"] is None
    assert clean["cells"][1]["metadata"] == {} and clean["cells"][2]["metadata"] == {"tags": ["check"]}
    assert clean_notebook(clean) == clean  # idempotent: `nbclean --check` passes on its own output
    untagged = clean_notebook({**nb, "cells": [{**clean["cells"][0], "metadata": {**clean["cells"][0]["metadata"],
                                                                                  "tags": []}}]})
    assert untagged["cells"][0]["metadata"] == {"slideshow": {"slide_type": "skip"}}  # no longer folded


def test_check_file_reports_a_check_cell_that_lost_its_folding(tmp_path) -> None:
    import json

    from tools.nbclean import dumps, main

    cell = {"cell_type": "code", "source": "#@title Check: x\nassert x\n", "metadata": {"tags": ["check"]},
            "outputs": [], "execution_count": None}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    path = tmp_path / "nb.ipynb"
    path.write_text(dumps(nb))
    assert main(["--check", str(path)]) == 1  # not folded yet
    assert main([str(path)]) == 0 and main(["--check", str(path)]) == 0
    assert json.loads(path.read_text())["cells"][0]["metadata"]["cellView"] == "form"
