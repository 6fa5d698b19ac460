"""Every assert in a notebook can fail: none only restates a literal or the expression that made the value.

The checker is ``tools/check_asserts.py``; the first tests below show it on small snippets (so
a checker that finds nothing would fail them), the last runs it on every notebook in
``notebooks/`` (new notebooks are picked up by themselves).
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from tools.check_asserts import check_notebook, check_source, strip_magics
from utils import config

NOTEBOOKS = sorted(config.NOTEBOOKS_DIR.glob("*.ipynb"))

# Findings waiting for a fix in a notebook somebody else is editing, with the fix proposed to
# its owner: (notebook, snippet) -> fix. An entry no longer found gives a warning (remove it).
KNOWN: dict[tuple[str, str], str] = {}


def reasons(snippet: str) -> list[str]:
    """Why the checker flags a snippet (findings allowed with a reason left out)."""
    return [f.reason for f in check_source(textwrap.dedent(snippet)) if not f.allowed]


@pytest.mark.parametrize(
    "snippet",
    [
        "assert True",
        "assert 1",
        "assert 0 == min(1, 0)",
        "assert (2, 3) == (2, 3)",
        "n = 5\nassert n == 5",
        "x = a * 2 + b\nassert x == a * 2 + b",
        "x = a * 2 + b\nassert a * 2 + b == x",
        "x = a * 2\ny = x + 1\nassert y == a * 2 + 1",  # through two assignments
        "x = f(a)\nassert x == pytest.approx(f(a))",
        "x = f(a)\nnp.testing.assert_allclose(x, f(a))",
        "x = f(a)\nassert np.allclose(x, f(a))",
        "x = f(a)\nassert (x == f(a)).all()",
        "x = f(a)\nassert x.size > 0 and x == f(a)",
        "epochs = utils.choose(smoke=1, full=10)\nassert epochs == (1 if smoke else 10)",
        "assert table['loss'] == table['loss']",
        """
        try:
            run()
            raised = False
        except Exception:
            raised = True
        assert raised
        """,
        """
        try:
            run()
            error = None
        except Exception as e:
            error = str(e)
        assert error is not None
        """,
        """
        try:
            run()
        except Exception as e:
            assert True, "raised"
        """,
        """
        with pytest.raises(Exception):
            run()
        """,
        "def check():\n    n = 3\n    assert n == 3",  # inside functions too
        "assert seconds > 0",  # a timing checked only for its sign
        "assert 0 < elapsed_ms",
        "assert len(t) == 2 and all(r > 0 for r in timer.examples_per_second)",
        "assert report.batches_per_s >= 0",
        "assert 0.05 < ratio < 20",  # a 400x band
        "assert 1 <= speedup <= 100",
        # identities: true by construction
        "assert x.min() == x[np.argmin(x)]",
        "worst = per_class.sort_values().index[:4].tolist()\nassert per_class.min() == per_class[worst[0]]",
        "assert top1 <= map3 <= top3",
        "assert ((t['real top-1'] <= t['real MAP@3']) & (t['real MAP@3'] <= t['real top-3'])).all()",
        "assert all(r['top-1'] <= r['top-5'] for r in rows)",
        "p = model.predict(x)\nassert np.allclose(p.sum(axis=1), 1, atol=1e-5)",
        "probs = tf.nn.softmax(logits)\nfit(model)\nassert np.isclose(float(tf.reduce_sum(probs[0])), 1.0)",
        "d = {k: f(k) for k in keys}\nassert len(d) == len(set(d))",
        "files = {p.name[:2]: p.name for p in paths}\nassert len(set(files.values())) == len(files)",
        "strategy = tf.distribute.MirroredStrategy(devices)\nassert strategy.num_replicas_in_sync == len(devices)",
        "strategy = tf.distribute.MirroredStrategy(course.devices)\nassert strategy.num_replicas_in_sync == course.replicas",
        # a program's own source text
        "src = Path('programs/train.py').read_text()\nassert 'strategy.scope()' in src",
        "text = (SCRIPTS / 'w.py').read_text()\nn = sum('hvd.' in l for l in text.splitlines())\nassert n >= 8",
        "listing = show_program('programs/a.py')\nassert len(listing.marked) >= 3",
        "assert re.search(r'hvd\\.init', inspect.getsource(train))",
        "lines = open('worker.py').read().splitlines()\nfound = False\nfor line in lines:\n    if 'hvd.' in line:\n        found = True\nassert found",
        # flags and tables the notebook wrote itself
        "reproduced = True\nassert reproduced",
        "row = {'name': 'x', 'ok': True}\nassert row['ok'] and len(row) == 2",
        "checklist = pd.DataFrame([(1, 2), (3, 4)], columns=['a', 'b'])\nassert len(checklist) == 2",
        "guide = []\nguide.append(dict(a=f(), reproduced=True))\nguide += [dict(a=g(), reproduced=h())]\n"
        "table = pd.DataFrame(guide)\ntable = table.drop_duplicates()\nassert table['reproduced'].all()",
        "rows = [{'ok': True}, {'ok': True}]\nassert all(r['ok'] for r in rows)",
        "assert True  # check-asserts: allow",  # an allow without a reason is no allow
        # values set to literals (or constant arithmetic) just above (issue 46)
        "bytes_per_param = 4 + 4 + 8\nassert bytes_per_param == 16",
        "n = 4\nassert n * 2 > 7",
        "a = 2\nb = a * 3\nassert b == 6 and b > 5",
        "fraction = 1.0\nassert abs(fraction - 1) < 1e-6",
        "b = f(x)\nassert b == 16\nassert 7.5e9 * b / 1e9 == 120",  # restates the assert above
        "b = f(x)\nassert s == [4, 4, 8] and b == 2 + 2 + 12\nassert 7.5e9 * b / 1e9 == 120",
        # identities: a ratio of two identical terms, algebra that holds for any value
        "share = (a + b) / (a + b)\nassert share == 1.0",
        "ratio = measured / measured\nassert abs(ratio - 1) < 1e-6",
        "assert x / n * n == x",
        "frac = 1 / N\nassert frac * N == 1",
        "per_device = (4 + 12 / n) * psi\nassert per_device * n == 4 * psi * n + 12 * psi",
    ],
)
def test_checker_flags_asserts_that_cannot_fail(snippet: str) -> None:
    assert reasons(snippet), f"not flagged:\n{snippet}"


@pytest.mark.parametrize(
    "snippet",
    [
        "assert measured == predicted",
        "n = measure()\nassert n == 5",
        "x = a * 2\na = 3\nassert x == a * 2",  # a changed in between
        "x = f(w)\nw.assign(1.0)\nassert x == f(w)",  # w mutated in between
        "before = ports()\nwith server():\n    pass\nafter = ports()\nassert after == before",  # measured twice
        "x = f(w)\nstep(w)\nassert x == f(w)",  # w passed to a call in between
        "x = f(w)\nw[0] = 1\nassert x == f(w)",
        "x = a * 2\nassert x == a * 3",
        "epochs = utils.choose(smoke=1, full=10)\nassert len(history) == epochs",
        "assert 0 == min(1, n_gpus)",
        "def f():\n    n = 3\nassert n == 3",  # another scope
        "x = f(a)\nassert x != f(a)",
        "x = f(a)\nassert x < f(a)",
        """
        try:
            run()
            error = None
        except Exception as e:
            error = str(e)
        assert error is not None and "placeholder" in error
        """,
        """
        try:
            run()
            raised = False
        except ValueError:
            raised = True
        assert raised
        """,
        """
        with pytest.raises(Exception, match="out of memory"):
            run()
        """,
        "with pytest.raises(ValueError):\n    run()",
        "assert min(ink.values()) > 0",  # not a timing: an empty drawing would fail it
        "assert 0.0 <= images.min() and images.max() <= 1.0",
        "assert seconds > 0.9 * predicted_seconds",  # compared with a prediction
        "assert 0.8 < ratio < 1.25",  # a band that can miss
        "assert all(r < 1.5 * n for r in speedups)",
        "assert scores.min() == scores[expected_index]",  # the index comes from elsewhere
        "assert headline['real top-1'] >= TARGET_REAL_TOP1",  # a target, not another k
        "assert acc['top-3'] > acc['top-1']",  # strictly: fails when they are equal
        "assert acc['top-3'] <= acc['top-1']",  # the wrong way round: a (failing) claim
        "assert np.allclose(weights.sum(), 1)",  # not probabilities
        "assert len(names) == len(set(names))",  # a list: duplicates possible
        "strategy = tf.distribute.MirroredStrategy(devices)\nassert strategy.num_replicas_in_sync == len(others)",
        "out = run_program('programs/train.py')\nassert 'done' in out.stdout",  # what the program printed
        "log = (JOBS / f'doodles-{job_id}.out').read_text()\nassert 'COMPLETED' in log",
        "job = sh('sbatch programs/train.sbatch')\nlog = (JOBS / f'{job}.out').read_text()\nassert 'ok' in log",
        "ok = False\ntry:\n    run()\n    ok = True\nexcept ValueError:\n    pass\nassert ok",
        "if found:\n    flag = True\nelse:\n    flag = measure()\nassert flag",
        "rows = []\nfor x in xs:\n    rows.append({'ok': check(x)})\nassert all(r['ok'] for r in rows)",
        "table = pd.DataFrame(rows)\nassert len(table) == 7",
        "a = b\nb = a\nassert a['k'].all()",  # names made from each other: the checker ends
        "x = a * 2\nassert x == a * 2  # check-asserts: allow – shown for the reader",
        # a loop name reused after a loop over a program's text holds something else
        "src = Path('w.py').read_text()\nfor line in src.splitlines():\n    print(line)\n"
        "for line in log.splitlines():\n    pass\nassert 'done' in line",
        "src = Path('w.py').read_text()\nfor line in src.splitlines():\n    print(line)\nassert all('ok' in line for line in log)",
        # arithmetic that can fail
        "assert x / n == y",
        "r = a / b\nassert r > 0.9",
        "n = measure()\nassert n * 2 == 8",
        "assert result.returncode != 0",  # 0 is a value it can take
        "assert after > before - 100",  # a bound on two measurements, whatever their scale
        "assert abs(a - b) < 1e-6",
        "ratio = a / b\nassert abs(ratio - 1) < 0.05",
        "share = sent / (sent + kept)\nassert share <= 1",  # fails when kept < 0: the counts are checked
        "n = 4\nassert n * 2 == count(x)",
        "assert len(x) * 2 == len(y)",
    ],
)
def test_checker_passes_asserts_that_can_fail(snippet: str) -> None:
    assert not reasons(snippet), f"flagged:\n{snippet}\n{reasons(snippet)}"


def test_magics_are_stripped_and_cell_magics_skipped() -> None:
    assert strip_magics("%timeit f()\n!ls -l\nx = 1") == "\n\nx = 1"
    assert strip_magics("if show:\n    %tensorboard --logdir x") == "if show:\n    pass"  # still parses
    assert strip_magics("%%writefile worker.py\nassert True") == ""
    assert len(check_source(strip_magics("%load_ext autoreload\n  !nvidia-smi\nassert True"))) == 1


def test_findings_say_where(tmp_path: Path) -> None:
    import json

    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["# t"]},
            {"cell_type": "code", "source": ["x = g(1)\n"]},
            {"cell_type": "code", "source": ["print(x)\n", "assert x == g(1)\n"]},
        ]
    }
    path = tmp_path / "99_t.ipynb"
    path.write_text(json.dumps(nb))
    (finding,) = check_notebook(path)
    assert (finding.where, finding.line) == ("99_t.ipynb cell 2", 2)
    assert "assert x == g(1)" in str(finding)


def test_allowed_findings_are_listed_with_their_reason() -> None:
    (finding,) = check_source("n = 5\n# check-asserts: allow – the reader sees the value\nassert n == 5")
    assert finding.allowed == "the reader sees the value" and "[allowed: the reader sees" in str(finding)


def test_a_program_written_by_a_cell_is_its_own_source(tmp_path: Path) -> None:
    import json

    cells = ["%%writefile programs/job.cfg\nsteps = 3\n", "text = (WORK / 'job.cfg').read_text()\nassert 'steps' in text\n"]
    path = tmp_path / "98_t.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": [c]} for c in cells]}))
    (finding,) = check_notebook(path)
    assert "own source" in finding.reason and finding.where == "98_t.ipynb cell 1"


def test_the_report_lists_findings_per_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tools.check_asserts import main

    path = tmp_path / "97_t.ipynb"
    cells = ["flag = True\nassert flag\n", "n = 2\nassert n == 2  # check-asserts: allow – for the reader\n"]
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": [c]} for c in cells]}))
    assert main([str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "97_t.ipynb: 1 flagged, 1 allowed" and "[allowed: for the reader]" in out[2]


def test_every_notebook_is_checked() -> None:
    on_disk = {p.name for p in Path(config.NOTEBOOKS_DIR).iterdir() if p.suffix == ".ipynb"}
    assert {p.name for p in NOTEBOOKS} == on_disk and len(on_disk) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_asserts_can_fail(path: Path) -> None:
    findings = [f for f in check_notebook(path) if not f.allowed]
    known = {key: fix for key, fix in KNOWN.items() if key[0] == path.name}
    new = [
        f
        for f in findings
        if not any(f.where.startswith(nb) and snippet in f.source for nb, snippet in known)
    ]
    assert not new, "asserts that cannot fail:\n" + "\n".join(map(str, new))
    for (_, snippet), fix in known.items():  # fixed meanwhile (perhaps on another branch): say so, don't fail
        if not any(snippet in f.source for f in findings):
            warnings.warn(
                f"{path.name}: KNOWN entry {snippet!r} no longer found ({fix}); remove it", stacklevel=1
            )


def _notebook(tmp_path: Path, cells: list[tuple[str, bool]], name: str = "96_t.ipynb") -> Path:
    import json

    path = tmp_path / name
    path.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": [c], "metadata": {"tags": ["check"]} if check else {}} for c, check in cells
    ]}))
    return path


def test_literals_set_long_before_are_configuration_not_a_finding(tmp_path: Path) -> None:
    near = [("N = 4\n", False), ("print(N)\n", False), ("#@title Check: N\nassert N * 2 == 8\n", True)]
    (finding,) = check_notebook(_notebook(tmp_path, near))  # the check cell counts as its claim's cell
    assert "holds by arithmetic on values set (or asserted) just above (N = 4)" in finding.reason
    assert finding.where == "96_t.ipynb cell 2 (check)"
    far = [("N = 4\n", False), ("print(1)\n", False), ("print(N)\n", False), ("assert N * 2 == 8\n", False)]
    assert check_notebook(_notebook(tmp_path, far)) == []


def test_check_cells_assert_something_under_a_title(tmp_path: Path) -> None:
    cells = [
        ("x = measure()\nprint(f'x = {x}')\n", False),
        ("#@title Check: x is small\nassert x < 1\n", True),
        ("#@title Check: nothing\nprint(x)\n", True),
        ("assert x > -1\n", True),
    ]
    findings = check_notebook(_notebook(tmp_path, cells))
    assert [(f.where, f.reason.split(",")[0]) for f in findings] == [
        ("96_t.ipynb cell 2 (check)", "a check cell that asserts nothing"),
        ("96_t.ipynb cell 3 (check)", "a check cell's first line is its title"),
    ]
