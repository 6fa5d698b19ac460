"""The homework (issue 48, assignments/): built with otter-grader, graded with its own test files.

Every master in assignments/source/ is built again with `otter assign` into a temporary folder, then
graded in this process with otter's exception-based test files (public and hidden), as `otter run`
grades a submission: the notebook's code cells run one after the other (an error in one does not
stop the others), then every test of the autograder. Checked:

* the master's solutions score 100 % on every code question, hidden tests included;
* the unsolved student version, English and Chinese, runs top to bottom without an exception
  (as a student runs it: every cell, the `grader.check` cells too), and every `grader.check`
  fails with the public test's hint (Chinese in the Chinese version), no traceback; graded with
  the autograder's tests it scores 0 on every code question;
* the Chinese student versions: every Markdown cell, comment, printed text and public test message
  translated; the same code (but the grader line, which reads tests/zh/) and the same tests (but
  the messages);
* deliberately wrong answers (below, at least one per assignment) lose points;
* the committed student versions are what the masters build (none stale), carry no solution and
  no hidden test, and their Colab cell installs the otter-grader of requirements.txt;
* one submission graded end to end by `otter run` with the autograder zip (no Docker).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import build_assignments as ba

pytestmark = pytest.mark.slow  # TensorFlow in-process for assignment 05

MASTERS = ba.masters()
NAMES = [m.stem for m in MASTERS]

# Deliberately wrong answers: (assignment, question) -> code run after the solutions, replacing
# the answer. Each must lose points on that question. (A second answer to the same question has a
# space after its name.)
WRONG = {
    ("01_ring_allreduce", "q1"): "def ring_steps(n):\n    return n - 1  # the scatter-reduce half only",
    ("01_ring_allreduce", "q2"): (
        "def scatter_reduce(chunks):  # one step short\n"
        "    n = len(chunks)\n"
        "    result = [[c.copy() for c in node] for node in chunks]\n"
        "    sent = [0] * n\n"
        "    for s in range(n - 2):\n"
        "        out = [(i, (i - s) % n) for i in range(n)]\n"
        "        data = [result[i][c].copy() for i, c in out]\n"
        "        for (i, c), d in zip(out, data, strict=True):\n"
        "            result[(i + 1) % n][c] = result[(i + 1) % n][c] + d\n"
        "            sent[i] += d.nbytes\n"
        "    return result, sent\n"
    ),
    ("01_ring_allreduce", "q3"): "def ring_bytes_per_node(nbytes, n):\n    return 2 * (n - 1) * nbytes",
    ("02_strategy_apis", "q1"): "STRATEGY_FOR = dict(zip(STRATEGY_FOR, ['MultiWorkerMirroredStrategy',"
    " 'MirroredStrategy', 'ParameterServerStrategy', 'CentralStorageStrategy', 'OneDeviceStrategy']))",
    ("02_strategy_apis", "q2"): "def copies(strategy_name, n_devices):\n    return n_devices",
    ("02_strategy_apis", "q3"): "RENAMED = {**RENAMED, 'experimental.TPUStrategy': 'experimental.TPUStrategy'}",
    ("03_gpu_memory", "q1"): "def gpu_env(visible, growth):  # growth as a Python bool\n"
    "    return {'CUDA_VISIBLE_DEVICES': ','.join(map(str, visible)),"
    " 'TF_FORCE_GPU_ALLOW_GROWTH': str(growth)}",
    ("03_gpu_memory", "q2"): "def virtual_gpus(split, limit_mb):  # one device with all the memory\n"
    "    return [tf.config.LogicalDeviceConfiguration(memory_limit=split * limit_mb)]",
    ("03_gpu_memory", "q3"): "def share_mb(card_mb, parts):  # a fixed 1 GiB reserve\n"
    "    return (card_mb - 1024) // parts // 256 * 256",
    ("04_keras_scaling", "q1"): (
        'tf_config = {"cluster": {"worker": ADDRESSES}, "task": {"type": "worker", "index": 2}}'
    ),
    ("04_keras_scaling", "q2"): "def per_replica_batch(global_batch, n):\n    return global_batch // n",
    ("04_keras_scaling", "q3"): (
        "def warmup_lr(step, base_lr, n, warmup_steps):  # square-root scaling\n"
        "    target = base_lr * n ** 0.5 if step < warmup_steps else base_lr * n\n"
        "    return base_lr + (target - base_lr) * min(step, warmup_steps) / warmup_steps\n"
    ),
    # the classic mistake: averaging over the replica's own batch (N times the true loss)
    ("05_custom_loop", "q1"): "def replica_loss(per_example_loss, global_batch_size):\n"
    "    return tf.reduce_mean(per_example_loss)",
    ("05_custom_loop", "q1 "): "def replica_loss(per_example_loss, global_batch_size):\n"
    "    return tf.nn.compute_average_loss(per_example_loss)  # local size x replicas: 1 here",
    ("05_custom_loop", "q2"): (
        "def dataset_fn(input_context):  # sharded by replica instead of by input pipeline\n"
        "    batch = input_context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    ds = tf.data.Dataset.range(N_EXAMPLES)\n"
        "    ds = ds.shard(input_context.num_replicas_in_sync, input_context.input_pipeline_id)\n"
        "    return ds.batch(batch, drop_remainder=True)\n"
    ),
    ("05_custom_loop", "q3"): "def updates_per_epoch(n_train, global_batch):\n"
    "    return n_train // global_batch",
    ("06_quickdraw", "q1"): "def map_at_3(labels, guesses):  # only the first guess counts\n"
    "    return sum([g[:1] == [lab] for lab, g in zip(labels, guesses, strict=True)]) / len(labels)",
    ("06_quickdraw", "q2"): "def eval_batch(n_examples, n_replicas, max_batch):  # ignores the last batch\n"
    "    return max_batch // n_replicas * n_replicas",
    ("06_quickdraw", "q3"): "def submission_line(key_id, words):  # spaces kept\n"
    "    return f'{key_id},' + ' '.join(words)",
    ("08_performance", "q1"): "def biggest_share(parts):  # a percentage, not a fraction\n"
    "    name = max(parts, key=parts.get)\n"
    "    return name, 100 * parts[name] / sum(parts.values())",
    ("08_performance", "q2"): "def scaled_gradients(grads, scale):  # forgets to unscale\n"
    "    return (np.asarray(grads, np.float32) * scale).astype(np.float16).astype(np.float32)",
    ("08_performance", "q3"): "def accumulation(n_examples, micro, n, k):  # forgets k\n"
    "    return micro * n, n_examples // (micro * n)",
    ("09_troubleshooting", "q1"): "CAUSE_OF = dict(zip(CAUSE_OF, 'ACBD'))",
    ("09_troubleshooting", "q2"): "def config_problems(configs):  # duplicates only\n"
    "    tasks = [(c['task']['type'], c['task']['index']) for c in configs]\n"
    "    return [t for t in set(tasks) if tasks.count(t) > 1]",
    ("09_troubleshooting", "q3"): "def gradient_factor(n):\n    return 1",
    ("10_communication", "q1"): "def ring_time(nbytes, n, rate, latency):  # whole gradient per step\n"
    "    return 2 * (n - 1) * (latency + nbytes / rate)",
    ("10_communication", "q2"): "def fit_link(sizes, seconds):  # the slope is not the rate\n"
    "    slope, intercept = np.polyfit(sizes, seconds, 1)\n"
    "    return intercept, slope",
    ("10_communication", "q3"): "def comm_share(t_compute, nbytes, n, rate, latency):  # a ratio\n"
    "    return ring_time(nbytes, n, rate, latency) / t_compute",
    ("11_slurm", "q1"): "def array_option(n_tasks, at_once):  # indices from 1\n"
    "    return f'--array=1-{n_tasks}%{at_once}'",
    ("11_slurm", "q2"): "def job_port(job_id):  # no modulo\n    return 20000 + job_id",
    ("11_slurm", "q3"): "def slurm_tf_config(hostnames, procid, port):  # sorted names\n"
    "    workers = [f'{h}:{port}' for h in sorted(hostnames)]\n"
    "    return {'cluster': {'worker': workers}, 'task': {'type': 'worker', 'index': procid}}",
    ("12_model_parallelism", "q2"): "def zero1_bytes(n_params, n):  # ZeRO-3: everything sharded\n"
    "    return 16 * -(-n_params // n)",
    ("12_model_parallelism", "q3"): "def gpipe_bubble(p, m):\n    return (p - 1) / m",
    ("12_model_parallelism", "q4"): "def micro_batches_for(p, max_bubble):\n"
    "    return int((p - 1) / max_bubble)  # forgets the m + p - 1",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Every master built by otter assign (without its own test run) into a temporary folder."""
    root = tmp_path_factory.mktemp("assignments")
    out = {}
    for master in MASTERS:
        out[master.stem] = ba.otter_assign(master, root / master.stem, run_tests=False, quiet=True)
    return out


def run_cells(notebook: Path, extra: str = "") -> dict:
    """Run a notebook's code cells in a fresh namespace, as the autograder does; then `extra`."""
    env: dict = {"__name__": "__main__"}
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code" or "grader.check(" in cell.source:
            continue
        try:
            exec(compile(cell.source, str(notebook), "exec"), env)
        except Exception:  # an unanswered question may fail its example cell: grading goes on
            pass
    if extra:
        exec(compile(extra, "wrong answer", "exec"), env)
    return env


def grade(tests_dir: Path, env: dict) -> dict[str, tuple[float, float, list]]:
    """question -> (score, points, results of otter's test cases) for every test file."""
    from otter.test_files import ExceptionTestFile

    scores = {}
    for path in sorted(tests_dir.glob("q*.py")):
        test_file = ExceptionTestFile.from_file(str(path))
        test_file.run(env)
        scores[test_file.name] = (test_file.score, test_file.possible, test_file.test_case_results)
    return scores


def code_questions(built_dir: Path) -> list[str]:
    return sorted(p.stem for p in (built_dir / "autograder" / "tests").glob("q*.py"))


def test_there_are_assignments() -> None:
    assert len(MASTERS) >= 11, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_solutions_pass_every_test(built, name, monkeypatch) -> None:
    autograder = built[name] / "autograder"
    monkeypatch.chdir(autograder)
    scores = grade(autograder / "tests", run_cells(autograder / f"{name}.ipynb"))
    hidden = sum(tc.test_case.hidden for _, _, results in scores.values() for tc in results)
    failed = {q: [r.message for r in res if not r.passed] for q, (_, _, res) in scores.items()}
    assert all(score == points for score, points, _ in scores.values()), failed
    assert len(scores) >= 3 and hidden >= len(scores), f"{name}: a hidden test per code question"


# the student notebooks: English, and Chinese where the assignment has a catalog
EDITIONS = [(n, f"{n}{suffix}.ipynb") for n in NAMES for suffix in ("", ".zh")
            if (ba.STUDENT / n / f"{n}{suffix}.ipynb").is_file() or not suffix]
CATALOGS = sorted(ba.ZH_CATALOGS.glob("*.po"))


def run_top_to_bottom(notebook: Path) -> dict:
    """Run every code cell of a student notebook in order, as a student does (an exception fails
    the test); returns what each `grader.check("qN")` cell returned, by question."""
    env: dict = {"__name__": "__main__"}
    checks = {}
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        check = re.fullmatch(r'grader\.check\("(q\d+)"\)', cell.source.strip())
        if check:
            checks[check.group(1)] = eval(compile(cell.source, str(notebook), "eval"), env)
        else:
            exec(compile(cell.source, str(notebook), "exec"), env)
    return checks


CJK = re.compile("[\u4e00-\u9fff]")


@pytest.mark.parametrize(("name", "notebook"), EDITIONS, ids=[e[1] for e in EDITIONS])
def test_unsolved_student_version_fails_with_a_hint(built, name, notebook, monkeypatch,
                                                     tmp_path) -> None:
    student = shutil.copytree(ba.STUDENT / name, tmp_path / name)  # otter writes its log there
    monkeypatch.chdir(student)
    checks = run_top_to_bottom(student / notebook)  # no exception on the way
    assert sorted(checks) == code_questions(built[name]), "a grader.check per code question"
    for question, result in checks.items():
        failed = [r for r in result.test_case_results if not r.passed]
        assert failed, f"{name} {question}: the unsolved version passes grader.check"
        message = failed[0].message
        assert "..." in message and "Traceback" not in message, message  # "replace ... with"
        if notebook.endswith(".zh.ipynb"):
            assert CJK.search(message.splitlines()[-1]), f"{question}: not Chinese: {message}"
    scores = grade(built[name] / "autograder" / "tests", run_cells(student / notebook))
    assert sorted(scores) == code_questions(built[name])
    for question, (score, _, _) in scores.items():
        assert score == 0, f"{name} {question}: the unsolved version scores {score}"


def test_unsolved_chinese_notebook_runs_in_a_kernel(tmp_path) -> None:
    """One unsolved Chinese notebook run by Jupyter's own client (a real kernel, as in
    JupyterLab): no cell raises, and grader.check shows the Chinese hints."""
    nbclient = pytest.importorskip("nbclient")
    name = "01_ring_allreduce"
    student = shutil.copytree(ba.STUDENT / name, tmp_path / name)
    nb = nbformat.read(student / f"{name}.zh.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(student)}}).execute()
    shown = ["".join(o.get("data", {}).get("text/plain", "")) + o.get("text", "")
             for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    hints = [s for s in shown if "把 ... 换成你的代码" in s and "Traceback" not in s]
    assert len(hints) == len(list((student / "tests").glob("q*.py"))), shown


@pytest.mark.parametrize("name", NAMES)
def test_wrong_answers_are_caught(built, name, monkeypatch) -> None:
    autograder = built[name] / "autograder"
    monkeypatch.chdir(autograder)
    wrong = [(q.strip(), code) for (n, q), code in WRONG.items() if n == name]
    assert wrong, f"{name}: no deliberately wrong answer tried"
    for question, code in wrong:
        score, points, results = grade(autograder / "tests",
                                       run_cells(autograder / f"{name}.ipynb", code))[question]
        assert score < points, f"{name} {question}: the wrong answer scored {score}/{points}"
        assert all("Traceback" not in r.message for r in results)


@pytest.mark.parametrize("name", NAMES)
def test_student_version_is_up_to_date(built, name, tmp_path) -> None:
    """assignments/student/ is what `make assignments` makes of the master now."""
    fresh = ba.student_version(built[name], tmp_path / name)
    assert ba.differences(fresh, ba.STUDENT / name) == [], "stale: run `make assignments`"


@pytest.mark.parametrize("name", NAMES)
def test_student_version_hides_solutions_and_installs_the_grader(name) -> None:
    student = ba.STUDENT / name
    text = (student / f"{name}.ipynb").read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "hidden=True" not in "".join(
        p.read_text() for p in (student / "tests").rglob("*.py"))
    pin = re.search(r"^otter-grader==(\S+)$", (ba.ROOT / "requirements.txt").read_text(), re.M)
    assert pin, "otter-grader is not pinned in requirements.txt"
    first_code = next(c for c in json.loads(text)["cells"] if c["cell_type"] == "code")
    source = "".join(first_code["source"])
    assert "google.colab" in source and f"otter-grader=={pin.group(1)}" in source
    assert f"assignments/student/{name}/tests" in source


def test_otter_run_grades_a_submission_end_to_end(built, tmp_path) -> None:
    """The autograder zip, as a lecturer uses it: `otter run` on the solutions notebook."""
    name = "01_ring_allreduce"
    autograder = built[name] / "autograder"
    (zip_path,) = autograder.glob("*.zip")
    submission = tmp_path / f"{name}.ipynb"
    submission.write_bytes((autograder / f"{name}.ipynb").read_bytes())
    subprocess.run([sys.executable, "-m", "otter", "run", "-a", str(zip_path), "-o", str(tmp_path),
                    str(submission)], check=True, capture_output=True, timeout=600)
    results = json.loads((tmp_path / "results.json").read_text())
    graded = {t["name"]: t for t in results["tests"] if "max_score" in t}
    assert sorted(graded) == code_questions(built[name])
    assert all(t["score"] == t["max_score"] for t in graded.values()), graded


def test_chinese_versions_are_complete_and_run_the_same_code() -> None:
    """Each catalog translates every Markdown cell and comment of its student notebook (the
    lecture notebooks' rules: tools/i18n.py), and the Chinese notebook's code is the English code."""
    import polib

    from tools import i18n

    assert len(CATALOGS) == len(MASTERS), "an assignment without a catalog"
    for catalog in CATALOGS:
        name = catalog.stem
        english = i18n.load(ba.STUDENT / name / f"{name}.ipynb")
        chinese = i18n.load(ba.STUDENT / name / f"{name}.zh.ipynb")
        po = polib.pofile(str(catalog), wrapwidth=0)
        assert i18n.problems(english, po, name) == [], "translate them: assignments/i18n/zh_CN"
        assert i18n.slide_name_problems(po) == []
        pairs = list(zip(english["cells"], chinese["cells"], strict=True))
        grader = (ba.grader_line(), ba.grader_line(chinese=True))
        for en, zh in pairs:
            if en["cell_type"] == "code":
                code = i18n.code_signature(i18n.source(en).replace(*grader))[0]
                assert code == i18n.code_signature(i18n.source(zh))[0], f"{name}: code differs"
        changed = [zh for en, zh in pairs if en["cell_type"] == "markdown" and en != zh]
        assert len(changed) >= 5, f"{name}: only {len(changed)} Markdown cells in Chinese"


def _without_messages(code: str) -> tuple[str, list[str]]:
    """A test file's code with every assert message blanked, and the messages (as written)."""
    tree = ast.parse(code)
    messages = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):  # an assert without a message counts as ""
            messages.append(ast.unparse(node.msg) if node.msg is not None else "")
            node.msg = ast.Constant("")
    return ast.dump(tree), messages


@pytest.mark.parametrize("name", NAMES)
def test_chinese_public_tests_are_the_tests_with_chinese_messages(name) -> None:
    """tests/zh/qN.py (what the Chinese notebook's grader.check runs) is tests/qN.py with each
    assert's message from the catalog: the same test code, every message in Chinese."""
    import polib

    from tools import i18n

    tests = ba.STUDENT / name / "tests"
    english = sorted(p.name for p in tests.glob("q*.py"))
    assert english and sorted(p.name for p in (tests / "zh").glob("q*.py")) == english
    usable = i18n.translations(polib.pofile(str(ba.ZH_CATALOGS / f"{name}.po"), wrapwidth=0))
    untranslated = [e.msgid for e in ba.message_entries(tests) if (e.msgctxt, e.msgid) not in usable]
    assert untranslated == [], "translate them in assignments/i18n/zh_CN, then make assignments"
    for test_file in english:
        en_code, en_messages = _without_messages((tests / test_file).read_text(encoding="utf-8"))
        zh_code, zh_messages = _without_messages((tests / "zh" / test_file).read_text(encoding="utf-8"))
        assert zh_code == en_code, f"{name} {test_file}: the Chinese test's code differs"
        assert len(zh_messages) == len(en_messages) >= 1
        assert all(CJK.search(m) for m in zh_messages), f"{name} {test_file}: {zh_messages}"


def test_message_translation_keeps_the_fields() -> None:
    """A message's translation must be one string literal with the English {…} fields (the check
    the lecture notebooks' printed text uses)."""
    from tools.i18n import literal_problem

    assert literal_problem("f'got {got}'", "f'你的结果是 {got}'") is None
    assert "fields" in literal_problem("f'got {got}'", "f'你的结果是 {got!r}'")
    assert "literal" in literal_problem("'job 17'", "作业 17")
    code = "def t(f):\n    assert f(1) == 2, f'got {f(1)}'\n    assert f(2), 'two'\n"
    usable = {("q1#message", "'two'"): "'二'"}
    assert ba.translate_messages(code, usable, "q1") == code.replace("'two'", "'二'")


class _ColabShell:
    """What otter looks for to know it runs on Colab: the shell's class path."""

    def __str__(self) -> str:
        return "<google.colab._shell.Shell object>"


@pytest.mark.parametrize(("name", "notebook"), EDITIONS, ids=[e[1] for e in EDITIONS])
def test_colab_setup_cell_installs_the_grader_and_fetches_the_tests(name, notebook, monkeypatch,
                                                                      tmp_path) -> None:
    """The first code cell's Colab branch, run as on Colab (a stand-in google.colab, an empty
    /content, otter told it runs on Colab) with pip and git recorded instead of run: it installs
    requirements.txt's otter-grader, clones the course, copies this homework's public tests, and
    grader.check then finds them (the Chinese notebook its tests/zh/) and fails with the hint."""
    import types

    import otter.check.utils

    pin = re.search(r"^otter-grader==\S+$", (ba.ROOT / "requirements.txt").read_text(), re.M)
    calls = []

    def run(cmd, check=False, **kwargs):  # pip: recorded; git clone: the committed student folder
        calls.append(cmd)
        if cmd[:2] == ["git", "clone"]:
            shutil.copytree(ba.STUDENT / name, Path(cmd[-1]) / "assignments" / "student" / name)
        return subprocess.CompletedProcess(cmd, 0)

    content = tmp_path / "content"
    content.mkdir()
    monkeypatch.chdir(content)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(otter.check.utils, "get_ipython", _ColabShell)
    cells = [c for c in nbformat.read(ba.STUDENT / name / notebook, as_version=4).cells
             if c.cell_type == "code"]
    env: dict = {"__name__": "__main__"}
    exec(compile(cells[0].source, notebook, "exec"), env)
    assert calls[0] == [sys.executable, "-m", "pip", "install", "-q", pin.group(0)]
    assert calls[1][:3] == ["git", "clone", "--depth=1"]
    assert calls[1][3] == "https://github.com/tf-distributed-course/gpu-distributed-training.git"
    assert len(calls) == 2 and (content / "tests" / "q1.py").is_file()
    assert env["grader"].interpreter is otter.check.utils.IPythonInterpreter.COLAB
    for cell in cells[1:]:
        if not cell.source.startswith("grader.check("):
            exec(compile(cell.source, notebook, "exec"), env)
    result = eval('grader.check("q1")', env)
    message = next(r.message for r in result.test_case_results if not r.passed)
    assert "..." in message and (CJK.search(message) or not notebook.endswith(".zh.ipynb"))
