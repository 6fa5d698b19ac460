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
