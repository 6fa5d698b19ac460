"""The imports run one way (issue 47): no circles between modules, and ``utils`` — what a
student reads — depends on nothing else in the repository. And no function is longer than a
reader can hold: at most 60 lines in ``utils``, ``infra`` and ``quickdraw``.

The imports are read from the source (``ast``), not run: every ``import`` counts, also one
inside a function (a lazy import still ties two modules together).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("utils", "infra", "quickdraw", "scripts", "tools")
UPWARD = ("infra", "quickdraw", "scripts", "tools")  # what utils must not import


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` file under the packages."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported_names(node: ast.AST, package: list[str], modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # from . import x, from ..a import b
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module → the repository's modules it imports (anywhere in its source)."""
    modules = _modules(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported_names(node, package, modules):
                while target and target not in modules:  # a name in a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([v, *group]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from ``utils`` into the rest of the repository."""
    return sorted(
        (m, t)
        for m, targets in graph.items()
        if m.split(".")[0] == "utils"
        for t in targets
        if t.split(".")[0] in UPWARD
    )


def test_no_import_circles() -> None:
    graph = import_graph()
    assert {"utils.devices", "infra.process", "quickdraw.pipeline"} <= set(graph)  # the files were read
    assert circles(graph) == []


def test_utils_imports_nothing_else_of_the_repository() -> None:
    assert upward(import_graph()) == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """A lazy import that closes a loop, and one from utils into infra, are both found."""
    (tmp_path / "utils").mkdir()
    (tmp_path / "infra").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "a.py").write_text("def f():\n    from infra.b import g\n")
    (tmp_path / "infra" / "__init__.py").write_text("")
    (tmp_path / "infra" / "b.py").write_text("from ..utils import a\n\ndef g():\n    pass\n")
    graph = import_graph(tmp_path, ("utils", "infra"))
    assert graph["utils.a"] == {"infra.b"} and graph["infra.b"] == {"utils.a"}
    assert circles(graph) == [["infra.b", "utils.a"]]
    assert upward(graph) == [("utils.a", "infra.b")]


MAX_FUNCTION_LINES = 60
SHORT_PACKAGES = ("utils", "infra", "quickdraw")


def long_functions(root: Path = ROOT, packages: tuple[str, ...] = SHORT_PACKAGES) -> list[str]:
    """``module:line name (N lines)`` for every function or method over the limit, counted as a
    reader counts it: from its first decorator or ``def`` to its last line, docstring included."""
    found = []
    for name, path in _modules(root, packages).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_over_60_lines() -> None:
    assert long_functions() == []


def test_the_length_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "utils").mkdir()
    def body(n: int) -> str:
        return "".join(f"    x{i} = {i}\n" for i in range(n))

    # f: a decorator, its def and 59 lines (61); g: its def and 59 lines (60, the limit)
    (tmp_path / "utils" / "a.py").write_text(f"@staticmethod\ndef f():\n{body(59)}\ndef g():\n{body(59)}")
    assert long_functions(tmp_path, ("utils",)) == ["utils.a:2 f (61 lines)"]
