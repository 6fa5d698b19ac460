"""Find asserts in notebooks that cannot fail: they restate a literal or the expression that made the value.

``python tools/check_asserts.py [NB...]`` prints one line per finding (default: every notebook
in ``notebooks/``) and exits 1 if there is any. ``tests/test_notebook_asserts.py`` runs it on
the course and tests the checker on small snippets. Project tooling, not used inside notebooks.

A notebook's code cells are read in order as one program (IPython magics and ``!`` lines
removed). Flagged:

* ``assert True`` (any constant) and comparisons whose sides are all literals, e.g.
  ``assert 0 == min(1, 0)``;
* a comparison (``==``, ``is``, ``<=``, ``>=``, ``np.allclose``, ``np.testing.assert_*``,
  ``pytest.approx``) of an expression with the *same* expression, after substituting the
  names on either side by what they were last assigned: ``x = a * 2`` then ``assert x == a * 2``;
  ``n = 5`` then ``assert n == 5``; ``e = utils.choose(smoke=1, full=10)`` then
  ``assert e == (1 if smoke else 10)``. An assignment is forgotten when the name or a name it
  reads is assigned again, mutated (``v.assign(…)``, ``v[i] = …``) or passed to a call;
* a timing or rate checked only for its sign (``assert seconds > 0``, ``all(r > 0 for r in
  examples_per_second)``): it is positive whether or not the claim about it holds;
* a band of 100× or more (``assert 0.05 < ratio < 20``): wide enough to pass whatever happened;
* a ``try`` whose ``except Exception`` (``BaseException``, bare ``except``) only records that
  *something* was raised — the asserts on what the handler set test only truthiness or
  ``is None`` — or asserts inside the handler without looking at the error; and
  ``pytest.raises(Exception)`` without ``match=``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

BROAD = {"Exception", "BaseException"}
PURE_FUNCS = {
    "min",
    "max",
    "len",
    "abs",
    "int",
    "float",
    "round",
    "sum",
    "str",
    "bool",
    "tuple",
    "list",
    "sorted",
}
EQUALITY_CALLS = {
    "allclose",
    "isclose",
    "array_equal",
    "assert_allclose",
    "assert_array_equal",
    "assert_equal",
    "assert_almost_equal",
    "assert_array_almost_equal",
}
EQUAL_OPS = (ast.Eq, ast.Is, ast.LtE, ast.GtE)
# Calls that do not change their arguments (anything else may: an assignment it reads is forgotten).
READ_ONLY_CALLS = PURE_FUNCS | {
    "print",
    "display",
    "repr",
    "type",
    "isinstance",
    "set",
    "dict",
    "format",
    "id",
}
READ_ONLY_MODULES = {"np", "numpy", "math", "pd"}
# Names of timings and rates: positive whatever happened (a count or a pixel value may be a real check)
MEASURED = re.compile(r"second|seconds|time|_s\b|_ms\b|per_s|rate|throughput|speed|elapsed|duration|latency|bandwidth")


@dataclass(frozen=True)
class Finding:
    """One assert that cannot fail: where it is and why."""

    where: str
    line: int
    reason: str
    source: str

    def __str__(self) -> str:
        return f"{self.where} line {self.line}: {self.reason}: {self.source}"


def strip_magics(source: str) -> str:
    """Cell source without IPython magics and shell lines (blank, or ``pass`` where a block opens; line numbers kept)."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return ""  # a cell magic (%%writefile, %%bash, …): not this kernel's Python
    out: list[str] = []
    for line in lines:
        if line.lstrip().startswith(("%", "!")):
            opens_block = bool(out) and out[-1].rstrip().endswith(":")
            # right after `if ...:` a blank line would leave the block empty: `pass` keeps it valid
            line = line[: len(line) - len(line.lstrip())] + "pass" if opens_block else ""
        out.append(line)
    return "\n".join(out)


def notebook_cells(path: Path) -> list[tuple[int, str]]:
    """(index, source) of the code cells of a notebook, magics stripped."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (i, strip_magics("".join(c["source"]))) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
    ]


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def is_literal(node: ast.AST) -> bool:
    """Constants, and containers, operators and pure builtins (min, len, …) of constants only."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(is_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return is_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return is_literal(node.left) and is_literal(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PURE_FUNCS:
        return all(is_literal(a) for a in node.args) and not node.keywords
    return False


class _Substitute(ast.NodeTransformer):
    def __init__(self, known: dict[str, ast.expr], depth: int) -> None:
        self.known, self.depth = known, depth

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.known and self.depth > 0:
            return _Substitute(self.known, self.depth - 1).visit(_copy(self.known[node.id]))
        return node


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def _canonical(node: ast.expr, known: dict[str, ast.expr]) -> str:
    """A dump of the expression with known names substituted and `choose` written as an `if`."""
    node = _Substitute(known, 3).visit(_copy(node))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "approx":
        node = node.args[0] if node.args else node
    if isinstance(node, ast.Call) and _call_name(node) == "choose":
        kw = {k.arg: k.value for k in node.keywords}
        if {"smoke", "full"} <= set(kw):
            return "choose:" + ast.dump(kw["smoke"]) + "|" + ast.dump(kw["full"])
    if isinstance(node, ast.IfExp):
        return "choose:" + ast.dump(node.body) + "|" + ast.dump(node.orelse)
    return ast.dump(node)


def _number(node: ast.expr) -> float | None:
    """The value of a numeric literal (``-1``, ``2e-3``), else None."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _is_truthiness_test(test: ast.expr, names: set[str]) -> bool:
    """True if ``test`` only asks whether one of ``names`` is set (truthy, not None)."""
    if isinstance(test, ast.Name):
        return test.id in names
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_truthiness_test(test.operand, names)
    if isinstance(test, ast.BoolOp):
        return all(_is_truthiness_test(v, names) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(right, ast.Constant) and right.value in (None, True, False):
            return _is_truthiness_test(left, names)
    return False


def _broad(handler: ast.ExceptHandler) -> bool:
    t = handler.type
    if t is None:
        return True
    types = t.elts if isinstance(t, ast.Tuple) else [t]
    return any(isinstance(x, ast.Name) and x.id in BROAD for x in types)


class Checker:
    """Walks a notebook's code as one program and collects :class:`Finding`s."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.known: dict[str, ast.expr] = {}
        self.findings: list[Finding] = []
        self.cell = ""

    # -- bookkeeping of what names were assigned ------------------------------------------
    def _forget(self, names: set[str]) -> None:
        for name in list(self.known):
            if name in names or _names(self.known[name]) & names:
                del self.known[name]

    def _mutated(self, stmt: ast.stmt) -> set[str]:
        """Names a statement may change besides plain assignment: method calls, call args, items."""
        out: set[str] = set()
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and not self._read_only(node):
                if isinstance(node.func, ast.Attribute):
                    out |= _names(node.func.value)
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    out |= _names(arg)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                out |= _names(node.value)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                out |= set(node.names)
        return out

    def _impure_calls(self, node: ast.AST) -> bool:
        """True if ``node`` calls anything not known to be read-only (it may read or change state)."""
        return any(isinstance(n, ast.Call) and not self._read_only(n) for n in ast.walk(node))

    @staticmethod
    def _read_only(call: ast.Call) -> bool:
        f = call.func
        if isinstance(f, ast.Name):
            return f.id in READ_ONLY_CALLS
        while isinstance(f, ast.Attribute):
            f = f.value
        return isinstance(f, ast.Name) and f.id in READ_ONLY_MODULES and _call_name(call) != "copyto"

    def _flag(self, node: ast.AST, reason: str) -> None:
        src = ast.get_source_segment(self.cell, node) or ast.unparse(node)
        self.findings.append(Finding(self.where, node.lineno, reason, " ".join(src.split())[:160]))

    # -- the rules ------------------------------------------------------------------------
    def _pairs(self, test: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
        """Pairs of expressions a test claims equal (or ≤/≥, which hold when equal)."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for value in test.values:
                yield from self._pairs(value)
        elif isinstance(test, ast.Compare):
            operands = [test.left, *test.comparators]
            for op, a, b in zip(test.ops, operands, operands[1:], strict=False):
                if isinstance(op, EQUAL_OPS):
                    yield a, b
        elif isinstance(test, ast.Call) and _call_name(test) in EQUALITY_CALLS and len(test.args) >= 2:
            yield test.args[0], test.args[1]
        elif isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "all":
            yield from self._pairs(test.func.value)  # (a == b).all()

    def check_test(self, node: ast.AST, test: ast.expr) -> None:
        if isinstance(test, ast.Constant):
            if test.value:
                self._flag(node, "asserts a constant")
            return
        if isinstance(test, ast.Compare) and all(is_literal(x) for x in [test.left, *test.comparators]):
            self._flag(node, "compares literals only")
            return
        if self._weak_bounds(node, test):
            return
        for a, b in self._pairs(test):
            if (self._names_known(a) or self._names_known(b)) and _canonical(a, self.known) == _canonical(
                b, self.known
            ):
                self._flag(node, f"`{ast.unparse(a)}` and `{ast.unparse(b)}` are the same expression")
                return
            if ast.dump(a) == ast.dump(b) and not isinstance(a, ast.Constant):
                self._flag(node, "compares an expression with itself")
                return

    def _weak_bounds(self, node: ast.AST, test: ast.expr, over: str = "") -> bool:
        """Flag sign-only checks and 100× bands in ``test`` (also inside ``and`` and ``all(…)``;
        ``over``: what an ``all(…)`` iterates, which names the values)."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._weak_bounds(node, v, over) for v in test.values)
        if isinstance(test, ast.Call) and _call_name(test) in ("all", "any") and test.args:
            inner = test.args[0]
            if not isinstance(inner, ast.GeneratorExp):
                return False
            return self._weak_bounds(node, inner.elt, " ".join(ast.unparse(g.iter) for g in inner.generators))
        if not isinstance(test, ast.Compare):
            return False
        operands = [test.left, *test.comparators]
        literals = [_number(x) for x in operands]
        if len(operands) == 3 and all(isinstance(op, (ast.Lt, ast.LtE)) for op in test.ops):
            lo, hi = literals[0], literals[2]
            if lo is not None and hi is not None and lo > 0 and hi / lo >= 100:
                self._flag(node, f"a band of {hi / lo:g}× passes whatever happened")
                return True
        if len(operands) == 2 and 0 in literals and None in literals:
            zero_right = literals[1] == 0
            op, value = test.ops[0], operands[0 if zero_right else 1]
            timed = MEASURED.search(ast.unparse(value) + " " + over)
            if timed and isinstance(op, (ast.Gt, ast.GtE) if zero_right else (ast.Lt, ast.LtE)):
                self._flag(node, "checks only the sign of a value")
                return True
        return False

    def _names_known(self, node: ast.expr) -> bool:
        return bool(_names(node) & set(self.known)) or is_literal(node)

    def check_try(self, stmt: ast.Try, following: list[ast.stmt]) -> None:
        for handler in stmt.handlers:
            if not _broad(handler):
                continue
            for node in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
                if isinstance(node, ast.Assert) and not (handler.name and handler.name in _names(node.test)):
                    self._flag(node, "asserts in an `except Exception` without looking at the error")
            set_here = {
                n.id
                for s in handler.body
                for n in ast.walk(s)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            tests = [
                s
                for s in following
                for s in ast.walk(s)
                if isinstance(s, ast.Assert) and _names(s.test) & set_here
            ]
            if tests and all(_is_truthiness_test(t.test, set_here) for t in tests):
                for t in tests:
                    self._flag(t, "only checks that *some* exception was raised (`except Exception`)")

    def check_raises(self, stmt: ast.With) -> None:
        for item in stmt.items:
            call = item.context_expr
            if (
                isinstance(call, ast.Call)
                and _call_name(call) == "raises"
                and call.args
                and isinstance(call.args[0], ast.Name)
                and call.args[0].id in BROAD
                and not any(k.arg == "match" for k in call.keywords)
            ):
                self._flag(stmt, "`raises(Exception)` without `match=` passes on any error")

    # -- the walk -------------------------------------------------------------------------
    def run_block(self, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            self.run_stmt(stmt, body[i + 1 :])

    def run_stmt(self, stmt: ast.stmt, following: list[ast.stmt]) -> None:
        if isinstance(stmt, ast.Assert):
            self.check_test(stmt, stmt.test)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if _call_name(call).startswith("assert_") and len(call.args) >= 2:
                self.check_test(stmt, call)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            saved = self.known
            self.known = {}
            self.run_block(stmt.body)
            self.known = saved
            self._forget({stmt.name})
            return
        if isinstance(stmt, ast.Try):
            self.check_try(stmt, following)
        if isinstance(stmt, ast.With):
            self.check_raises(stmt)
        self._forget(self._mutated(stmt))
        if isinstance(stmt, ast.With) or self._impure_calls(stmt):
            # the world may have changed: a value read by a call earlier (a measurement, e.g. the
            # ports listening before a server started) is not the same as the same call now
            for name in [n for n, expr in self.known.items() if self._impure_calls(expr)]:
                del self.known[name]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name not in _names(stmt.value):
                self.known[name] = stmt.value
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                self.run_block(block)
        for handler in getattr(stmt, "handlers", []):
            self.run_block(handler.body)

    def run_cell(self, index: int, source: str) -> None:
        where = self.where
        self.cell = source
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            raise SyntaxError(f"{where} cell {index}: {error}") from error
        self.where = f"{where} cell {index}"
        self.run_block(tree.body)
        self.where = where


def check_source(source: str, where: str = "<snippet>") -> list[Finding]:
    """Findings in one piece of Python (a cell, or a snippet in a test)."""
    checker = Checker(where)
    checker.run_cell(0, source)
    return checker.findings


def check_notebook(path: Path) -> list[Finding]:
    """Findings in a notebook's code cells, read in order as one program."""
    checker = Checker(path.name)
    for index, source in notebook_cells(path):
        checker.run_cell(index, source)
    return checker.findings


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(list(argv) if argv is not None else None)
    paths = args.notebooks or sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    findings = [f for path in paths for f in check_notebook(path)]
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
