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
  ``pytest.raises(Exception)`` without ``match=``;
* an identity, true by construction: ``min(x) == x[argmin(x)]``, ``top-1 ≤ MAP@3 ≤ top-3``
  (any top-j ≤ top-k, MAP@j ≤ MAP@k, top-1 ≤ MAP@k, MAP@j ≤ top-k for j ≤ k), a softmax or
  ``predict`` output summing to 1, ``len(d) == len(set(d))`` over a dict's keys (or a set, a
  range), ``strategy.num_replicas_in_sync == len(devices)`` for a strategy built from ``devices``;
* a search over a program's own source text: ``in``, ``re.*``, ``.count`` … over what
  ``show_program``, ``inspect.getsource`` or ``.read_text()`` of a ``.py`` file (or a file a
  ``%%writefile`` cell wrote) returned, or anything computed from it;
* a flag or table the notebook wrote itself: a name (or ``row["key"]`` of a dict literal) last
  assigned a constant, asserted; ``len(table) == 7`` of a table written as a literal.

* a value the notebook set to a literal (or constant arithmetic of literals) in the same or the
  previous code cell, asserted: ``bytes_per_param = 4 + 4 + 8`` then ``assert bytes_per_param == 16``
  (all operands literal once the names are replaced by what they were assigned);
* arithmetic on a value an assert just above pinned to a number: ``assert x == 16`` then
  ``assert 7.5e9 * x / 1e9 == 120`` restates it;
* an identity of arithmetic: a comparison that holds for *any* values of the names left in it,
  once the names known are replaced by what they were assigned — a ratio of two identical terms
  (``share = (a + b) / (a + b)``, ``assert share == 1.0``), ``x / n * n == x``. Tried on random
  values (numbers, operators and ``abs``/``min``/``max``/``round`` only; anything else ends it);
* a **check cell** (a code cell tagged ``check``: the folded asserts behind a claim, see
  tools/nbclean.py) that asserts nothing, or whose first line is not ``#@title …``. A check
  cell is read as part of the visible cell before it (which computes and prints the claim): "the
  same or the previous cell" above counts them as one.

Assignments inside ``if``/``for``/``while``/``try`` are forgotten after the block (they may not
have run). An assert the checker flags wrongly is allowed by a comment on its line (or the
comment line right above it) ``# check-asserts: allow – <why it can fail>``; the reason is
required, and the report lists allowed findings apart, per notebook.
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
# `# check-asserts: allow – why it can fail` on an assert's line (or the comment line above it)
ALLOW = re.compile(r"#\s*check-asserts:\s*allow\b[\s–—:-]*(.*)")
# top-k accuracy and MAP@k: top-1 ≤ MAP@k ≤ top-k whatever the model predicts
TOP_K = re.compile(r"(?<![a-z])(top|map)\s*[-_@ ]?\s*(\d+)", re.IGNORECASE)
PROBABILITIES = re.compile(r"softmax|predict|prob", re.IGNORECASE)
SUM_CALLS = {"sum", "reduce_sum", "nansum", "fsum"}
EXTREMES = {"min", "max", "amin", "amax", "nanmin", "nanmax"}
ARG_EXTREMES = re.compile(r"arg(min|max|sort)|sort_values|idx(min|max)|nsmallest|nlargest")
# Calls that return a program's source text: a `.py` file read, the listing of a program
SOURCE_READS = {"read_text", "read", "read_bytes", "readlines"}
SOURCE_CALLS = {"show_program", "getsource", "getsourcelines"}
UNIQUE_BY_TYPE = {"keys", "dict", "set", "range", "Counter", "fromkeys", "frozenset"}
CHECK_TAG = "check"  # tools/nbclean.py: a code cell holding the folded asserts of a claim
TITLE = re.compile(r"^\s*#\s*@title\s+\S")
# What an identity may be made of: numbers, names (any value), arithmetic and these functions
ARITHMETIC_FUNCS = {"abs": abs, "min": min, "max": max, "round": round, "float": float, "int": float}
SAMPLES = 24  # random values tried: an expression equal on all of them is taken for an identity


@dataclass(frozen=True)
class Finding:
    """One assert that cannot fail: where it is and why."""

    where: str
    line: int
    reason: str
    source: str
    allowed: str = ""  # the reason given in a `# check-asserts: allow – …` comment

    def __str__(self) -> str:
        text = f"{self.where} line {self.line}: {self.reason}: {self.source}"
        return text + (f"  [allowed: {self.allowed}]" if self.allowed else "")


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
    """(index, source) of the code cells of a notebook, magics kept (``run_cell`` strips them)."""
    return [(i, source) for i, source, _ in code_cells(path)]


def code_cells(path: Path) -> list[tuple[int, str, bool]]:
    """(index, source, is a check cell) of the code cells of a notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (i, "".join(c["source"]), CHECK_TAG in (c.get("metadata") or {}).get("tags", []))
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code"
    ]


def _stored(node: ast.AST) -> set[str]:
    """Names a statement (or block) assigns anywhere inside it."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _top_k(node: ast.expr) -> tuple[str, str, int] | None:
    """(the expression with its k blanked, "top" or "map", k) for one top-k / MAP@k value, else None."""
    text = ast.unparse(node)
    found = list(TOP_K.finditer(text))
    if len(found) != 1:
        return None
    m = found[0]
    return text[: m.start()] + "K" + text[m.end() :], m.group(1).lower(), int(m.group(2))


def _always_at_most(a: ast.expr, b: ast.expr) -> bool:
    """True if ``a ≤ b`` holds for any predictions: top-j ≤ top-k, MAP@j ≤ MAP@k, MAP@j ≤ top-k
    (j ≤ k) and top-1 ≤ MAP@k — the same expression but for the kind and k."""
    ka, kb = _top_k(a), _top_k(b)
    if ka is None or kb is None or ka[0] != kb[0]:
        return False
    if ka[1] == "top" and kb[1] == "map":
        return ka[2] == 1
    return ka[2] <= kb[2]


def _extreme_of(node: ast.expr) -> ast.expr | None:
    """``x`` of ``min(x)``, ``np.max(x)`` or ``x.min()``, else None."""
    if not isinstance(node, ast.Call) or _call_name(node) not in EXTREMES:
        return None
    f = node.func
    if isinstance(f, ast.Name) or (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in READ_ONLY_MODULES):
        return node.args[0] if len(node.args) == 1 else None
    return f.value if isinstance(f, ast.Attribute) and not node.args else None


def _unwrap(node: ast.expr) -> ast.expr:
    """``x`` of ``float(x)``, ``int(x)``, ``x.numpy()``, ``x.item()``: the same value."""
    while isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("float", "int") and len(node.args) == 1:
            node = node.args[0]
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("numpy", "item") and not node.args:
            node = node.func.value
        else:
            break
    return node


def _len_of(node: ast.expr) -> ast.expr | None:
    """``x`` of ``len(x)``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return node.args[0]
    return None


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


def _constant_number(node: ast.expr) -> bool:
    """True if ``node`` is a number or arithmetic of numbers (``2 + 2 + 12``)."""
    try:
        return isinstance(_arith(node, {}), float)
    except (_NotArithmetic, KeyError, ZeroDivisionError, OverflowError, ValueError, TypeError):
        return False


class _NotArithmetic(Exception):
    """The expression holds something other than numbers, names and arithmetic."""


def _free(node: ast.expr) -> dict[str, ast.expr]:
    """The values an expression reads (names, attributes, subscripts), keyed by their text."""
    out: dict[str, ast.expr] = {}

    def visit(n: ast.AST) -> None:
        if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)):
            out[ast.unparse(n)] = n
        elif isinstance(n, ast.Call):
            for a in n.args:
                visit(a)
        else:
            for child in ast.iter_child_nodes(n):
                visit(child)

    visit(node)
    return out


def _arith(node: ast.AST, values: dict[str, float]) -> object:
    """The value of an arithmetic expression, names read from ``values``; raises
    :class:`_NotArithmetic` for anything else (a call of another function, a string …)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        return values[ast.unparse(node)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _arith(node.operand, values)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
        left, right = _arith(node.left, values), _arith(node.right, values)
        ops = {ast.Add: float.__add__, ast.Sub: float.__sub__, ast.Mult: float.__mul__,
               ast.Div: float.__truediv__, ast.Pow: float.__pow__}
        if isinstance(node.op, ast.Pow) and not (isinstance(right, float) and right == int(right)):
            raise _NotArithmetic
        return ops[type(node.op)](left, right)  # ZeroDivisionError, OverflowError: the caller stops
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ARITHMETIC_FUNCS:
        if node.keywords or not node.args:
            raise _NotArithmetic
        return ARITHMETIC_FUNCS[node.func.id](*[_arith(a, values) for a in node.args])
    if isinstance(node, ast.Compare):
        operands = [_arith(x, values) for x in [node.left, *node.comparators]]
        compare = {ast.Eq: lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)),
                   ast.NotEq: lambda a, b: abs(a - b) > 1e-9 * max(1.0, abs(a), abs(b)),
                   ast.Lt: float.__lt__, ast.LtE: float.__le__, ast.Gt: float.__gt__, ast.GtE: float.__ge__}
        if not all(type(op) in compare for op in node.ops):
            raise _NotArithmetic
        return all(compare[type(op)](a, b) for op, a, b in zip(node.ops, operands, operands[1:], strict=False))
    raise _NotArithmetic


def always_true(test: ast.expr) -> bool | None:
    """True if an arithmetic comparison holds for every value of the names in it (tried on
    :data:`SAMPLES` random values each, of both signs), False if not, None if it is not arithmetic."""
    import random

    if not isinstance(test, ast.Compare):
        return None
    names = sorted(_free(test))
    rng = random.Random(0)
    tried = 0
    for sample in range(SAMPLES if names else 1):
        # 0, ±1 and small integers first (where `x != 0`, `n % 2` fail), then any real numbers
        values = {
            n: float(rng.choice((0, 1, -1, 2, 3))) if sample < 8 else rng.choice((-1, 1)) * 10 ** rng.uniform(-3, 6)
            for n in names
        }
        try:
            if not _arith(test, values):
                return False
            tried += 1
        except _NotArithmetic:
            return None
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            continue  # not defined there (x / 0): other values decide
    return True if tried >= (SAMPLES // 2 if names else 1) else None


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
        self.sources: set[str] = set()  # names holding a program's source text (or computed from it)
        self.over_source = False  # inside a loop or branch over a program's source text
        self.written: set[str] = set()  # files `%%writefile` cells wrote
        self.strategies: dict[str, ast.Call] = {}  # name -> the call that built a tf.distribute strategy
        # name -> what it was last assigned, kept across calls: how a value was *made* (an argsort,
        # a softmax) stays true after the world changes, unlike its value
        self.made: dict[str, ast.expr] = {}
        # list name -> for each key of the dict rows appended to it: (rows with a literal there, rows)
        self.records: dict[str, dict[str, tuple[int, int]]] = {}
        self.cells = 0  # code cells run so far
        self.known_in: dict[str, int] = {}  # name -> the code cell (count) that assigned it

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
        lines = self.cell.splitlines()
        first, last = node.lineno - 1, getattr(node, "end_lineno", node.lineno) or node.lineno
        if first > 0 and lines[first - 1].lstrip().startswith("#"):
            first -= 1  # the comment line right above the assert
        allow = next((m for line in lines[first:last] if (m := ALLOW.search(line))), None)
        allowed = allow.group(1).strip() if allow else ""
        if allow and not allowed:
            reason += " (its `check-asserts: allow` gives no reason)"
        self.findings.append(Finding(self.where, node.lineno, reason, " ".join(src.split())[:160], allowed))

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
        if self._tainted(test):
            self._flag(node, "searches a program's own source text: it says what the notebook wrote")
            return
        if self._arithmetic(node, test):
            return
        if not self._identity(node, test):
            self._self_set(node, test)

    def _arithmetic(self, node: ast.AST, test: ast.expr) -> bool:
        """Flag a comparison true by arithmetic: of literals set a cell or two above, or an identity."""
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        for part in parts:
            if not isinstance(part, ast.Compare) or not _names(part):
                continue  # literals only: "compares literals only" says it
            used = _names(part) & set(self.known)
            expanded = _Substitute(self.known, 3).visit(_copy(part))
            if always_true(expanded) is not True:
                continue
            if not _free(expanded):
                recent = all(self.cells - self.known_in.get(n, -9) <= 1 for n in used)
                if recent:  # a configuration constant set long before and asserted is a different matter
                    values = ", ".join(f"{n} = {ast.unparse(self.known[n])}" for n in sorted(used))
                    text = ast.get_source_segment(self.cell, part) or ast.unparse(part)
                    self._flag(node, f"`{text}` holds by arithmetic on values set (or asserted) just above ({values})")
                    return True
                continue
            text = ast.get_source_segment(self.cell, part) or ast.unparse(part)
            self._flag(node, f"`{text}` holds for any values (an identity, e.g. a ratio of two identical terms)"
                       + (f" once {', '.join(sorted(used))} are replaced by what they were assigned" if used else ""))
            return True
        return False

    # -- identities: true by construction -------------------------------------------------
    def _expand(self, node: ast.expr) -> ast.expr:
        """``node`` with names replaced by how they were made (three levels deep)."""
        return _Substitute(self.made, 3).visit(_copy(node))

    def _identity(self, node: ast.AST, test: ast.expr) -> bool:
        """Flag a test that holds by mathematics or by how its values were built."""
        for a, b in self._ordered(test):
            if _always_at_most(a, b) or _always_at_most(self._expand(a), self._expand(b)):
                self._flag(node, f"`{ast.unparse(a)} <= {ast.unparse(b)}` holds for any predictions (top-1 ≤ MAP@k ≤ top-k)")
                return True
        for a, b in self._pairs(test):
            for x, y in ((a, b), (b, a)):
                why = self._equal_by_construction(x, y)
                if why:
                    self._flag(node, why)
                    return True
        return False

    def _ordered(self, test: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
        """Pairs (a, b) a test claims ``a ≤ b``: chains, ``and``, ``&``, ``.all()`` and ``all(…)``."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for value in test.values:
                yield from self._ordered(value)
        elif isinstance(test, ast.BinOp) and isinstance(test.op, ast.BitAnd):  # (a <= b) & (b <= c)
            yield from self._ordered(test.left)
            yield from self._ordered(test.right)
        elif isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "all":
            yield from self._ordered(test.func.value)  # (...).all()
        elif isinstance(test, ast.Call) and _call_name(test) == "all" and test.args:
            if isinstance(test.args[0], ast.GeneratorExp):
                yield from self._ordered(test.args[0].elt)
        elif isinstance(test, ast.Compare):
            operands = [test.left, *test.comparators]
            for op, a, b in zip(test.ops, operands, operands[1:], strict=False):
                if isinstance(op, ast.LtE):  # a strict `<` can fail when the two are equal
                    yield a, b
                elif isinstance(op, ast.GtE):
                    yield b, a

    def _equal_by_construction(self, x: ast.expr, y: ast.expr) -> str:
        """Why ``x == y`` always holds, or ""."""
        x, y = _unwrap(x), _unwrap(y)
        base = _extreme_of(x)
        if base is not None and isinstance(y, ast.Subscript) and ast.dump(y.value) == ast.dump(base):
            if ARG_EXTREMES.search(ast.unparse(self._expand(y.slice))):
                return "`min(x) == x[argmin(x)]`: the extreme is where argmin/argsort says it is, by definition"
        if isinstance(x, ast.Call) and _call_name(x) in SUM_CALLS and _number(y) == 1:
            if PROBABILITIES.search(ast.unparse(self._expand(x))):
                return "probabilities (a softmax, `predict`) sum to 1 by construction"
        seq, other = _len_of(x), _len_of(y)
        if seq is not None and isinstance(other, ast.Call) and _call_name(other) == "set" and other.args:
            made = self._expand(seq)
            kind = _call_name(made) if isinstance(made, ast.Call) else ""
            same = ast.dump(other.args[0]) == ast.dump(seq)
            inner = other.args[0]
            if isinstance(inner, ast.Call) and _call_name(inner) == "values" and isinstance(inner.func, ast.Attribute):
                made, same = self._expand(inner.func.value), ast.dump(inner.func.value) == ast.dump(seq)
                if same and isinstance(made, ast.DictComp) and ast.unparse(made.value) in ast.unparse(made.key):
                    return "distinct values of a dict keyed by a function of them: unique by construction"
            if same and (isinstance(made, (ast.Dict, ast.DictComp, ast.Set, ast.SetComp)) or kind in UNIQUE_BY_TYPE):
                return "`len(x) == len(set(x))` over a dict's keys, a set or a range: unique by type"
        if isinstance(x, ast.Attribute) and x.attr == "num_replicas_in_sync" and isinstance(x.value, ast.Name):
            made_by = self.strategies.get(x.value.id)
            devices = _len_of(y)
            if made_by is not None:
                args = [*made_by.args, *(k.value for k in made_by.keywords if k.arg == "devices")]
                if devices is not None and any(ast.dump(arg) == ast.dump(devices) for arg in args):
                    return "a strategy built from `devices` has `len(devices)` replicas by construction"
                plan = [a.value for a in args if isinstance(a, ast.Attribute) and a.attr == "devices"]
                if isinstance(y, ast.Attribute) and y.attr == "replicas" and any(ast.dump(y.value) == ast.dump(v) for v in plan):
                    return "a strategy built from `plan.devices` has `plan.replicas` replicas by construction"
        return ""

    # -- a program's own source text --------------------------------------------------------
    def _reads_source(self, node: ast.AST) -> bool:
        """True if ``node`` reads a program's text: a `.py` file, a file a cell wrote, a listing."""
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            name = _call_name(call)
            if name in SOURCE_CALLS:
                return True
            if name in SOURCE_READS and isinstance(call.func, ast.Attribute):
                receiver = " ".join(self._path_parts(call.func.value, 3))
                if re.search(r"\.py\b", receiver) or any(Path(w).name in receiver for w in self.written):
                    return True
        return False

    def _path_parts(self, node: ast.AST, depth: int) -> Iterator[str]:
        """The strings a path expression is made of (``Path("a") / f"{n}.py"``, through names),
        not the arguments of other calls (a command that *ran* a program is not its text)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):
            for value in node.values:
                yield from self._path_parts(value, depth)
        elif isinstance(node, ast.BinOp):
            yield from self._path_parts(node.left, depth)
            yield from self._path_parts(node.right, depth)
        elif isinstance(node, ast.Call) and _call_name(node) in ("Path", "PurePath", "open", "joinpath"):
            for arg in node.args[:1] if _call_name(node) == "open" else node.args:
                yield from self._path_parts(arg, depth)
        elif isinstance(node, ast.Name) and node.id in self.made and depth > 0:
            yield from self._path_parts(self.made[node.id], depth - 1)

    def _tainted(self, node: ast.AST) -> bool:
        """True if ``node`` reads a program's text or a name holding it (a comprehension's own
        loop names excepted: they hold what its iterable holds, which is checked itself)."""
        bound = {n for c in ast.walk(node) if isinstance(c, ast.comprehension) for n in _names(c.target)}
        return bool((_names(node) - bound) & self.sources) or self._reads_source(node)

    def _track_sources(self, stmt: ast.stmt) -> None:
        """Names assigned from a program's text (or in a loop/branch over it) hold that text too."""
        if isinstance(stmt, (ast.For, ast.AsyncFor)):  # for line in source.splitlines()
            targets = _names(stmt.target)
            self.sources = self.sources | targets if self._tainted(stmt.iter) else self.sources - targets
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if self.over_source or self._tainted(stmt.value):
                self.sources |= {n for t in targets for n in _stored(t) | _names(t)}
            elif isinstance(stmt, ast.Assign):
                self.sources -= {t.id for t in targets if isinstance(t, ast.Name)}
        value = getattr(stmt, "value", None)
        for name in _stored(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else ():
            chained = isinstance(value, ast.Call) and ast.unparse(value).startswith(name + ".")
            if not chained:  # `table = table.drop_duplicates(...)`: still made as before
                self.made.pop(name, None)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name not in _names(stmt.value):
                self.made[name] = stmt.value
            if isinstance(stmt.value, ast.Call) and _call_name(stmt.value).endswith("Strategy"):
                self.strategies[name] = stmt.value
            else:
                self.strategies.pop(name, None)

    # -- flags and tables the notebook wrote ------------------------------------------------
    def _constant_of(self, node: ast.expr) -> ast.expr | None:
        """The literal a name or ``name["key"]`` of a dict literal was last assigned, else None."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node = node.operand
        if isinstance(node, ast.Name):
            value = self.known.get(node.id)
            return value if value is not None and is_literal(value) else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            table = self.known.get(node.value.id)
            if isinstance(table, ast.Dict):
                for key, value in zip(table.keys, table.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == node.slice.value and is_literal(value):
                        return value
        return None

    def _track_records(self, stmt: ast.stmt) -> None:
        """Rows (dicts) appended to a list, or a list of dict rows: which columns hold literals only."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
            rows = value.elts if isinstance(value, (ast.List, ast.Tuple)) else None
            self.records.pop(name, None)
            if rows is not None:
                self.records[name] = {}
                for row in rows:
                    self._add_record(name, row)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in self.records:
            rows = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
            for row in rows:  # rows += [dict(...), ...]
                self._add_record(stmt.target.id, row)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _call_name(stmt.value) == "append":
            f = stmt.value.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.records:
                self._add_record(f.value.id, stmt.value.args[0] if stmt.value.args else f)

    def _add_record(self, name: str, row: ast.expr) -> None:
        """Count, per key of a dict row appended to ``name``, whether its value is a literal."""
        if name not in self.records:
            return  # a row we could not read came before
        if isinstance(row, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(row.keys, row.values, strict=True) if isinstance(k, ast.Constant)]
        elif isinstance(row, ast.Call) and _call_name(row) == "dict" and not row.args:
            pairs = [(k.arg, k.value) for k in row.keywords if k.arg]
        else:
            self.records.pop(name, None)  # a row we cannot read: nothing known about the columns
            return
        for key, value in pairs:
            literal, rows = self.records[name].get(key, (0, 0))
            self.records[name][key] = (literal + is_literal(value), rows + 1)

    def _rows_of(self, table: ast.expr) -> str:
        """The list of dict rows a table was made from (``pd.DataFrame(rows, …)``, then
        ``table.drop_duplicates(…)``, …), or ""."""
        for _ in range(5):  # a few steps back: names may refer to each other in a cycle
            if not isinstance(table, ast.Name) or table.id not in self.made:
                break
            if table.id in self.records:
                return table.id
            made = self.made[table.id]
            if isinstance(made, ast.Call) and _call_name(made) == "DataFrame" and made.args:
                table = made.args[0]
            elif isinstance(made, ast.Call) and isinstance(made.func, ast.Attribute):
                table = made.func.value  # a method of the table returns the table, changed
            else:
                table = made
        return table.id if isinstance(table, ast.Name) and table.id in self.records else ""

    def _literal_column(self, node: ast.expr) -> tuple[int, int]:
        """(rows set to a literal, rows) of the column ``table["key"].all()`` or ``all(r["key"] for r
        in rows)`` tests, (0, 0) if unknown: a literal row passes whatever the notebook observed."""
        if isinstance(node, ast.Call) and _call_name(node) in ("all", "any"):
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Subscript):
                column = node.func.value
                rows = self._rows_of(column.value)
                key = column.slice.value if isinstance(column.slice, ast.Constant) else None
                return self.records[rows].get(key, (0, 0)) if rows else (0, 0)
            if node.args and isinstance(node.args[0], ast.GeneratorExp):
                gen = node.args[0]
                loop, elt = gen.generators[0], gen.elt
                if isinstance(loop.iter, ast.Name) and isinstance(elt, ast.Subscript) and isinstance(elt.slice, ast.Constant):
                    return self.records.get(loop.iter.id, {}).get(elt.slice.value, (0, 0))
        return (0, 0)

    def _self_set(self, node: ast.AST, test: ast.expr) -> bool:
        """Flag ``assert flag`` after ``flag = True`` and ``len(table) == 7`` of a literal table."""
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        for part in parts:
            literal, rows = self._literal_column(part)
            if literal:
                self._flag(node, f"`{ast.unparse(part)}`: the notebook wrote a literal in {literal} of its {rows} rows")
                return True
            if self._constant_of(part) is not None:
                self._flag(node, f"asserts `{ast.unparse(part)}`, a value the notebook itself set to a literal")
                return True
            if isinstance(part, ast.Compare) and len(part.ops) == 1:
                for x, y in ((part.left, part.comparators[0]), (part.comparators[0], part.left)):
                    seq = _len_of(x)
                    made = self.made.get(seq.id) if isinstance(seq, ast.Name) else None
                    if isinstance(made, ast.Call) and _call_name(made) in ("DataFrame", "dict", "Series") and made.args:
                        made = made.args[0]
                    if isinstance(made, (ast.List, ast.Tuple, ast.Dict, ast.Set)) and _number(y) is not None:
                        self._flag(node, f"`len({ast.unparse(seq)})` of a table written as a literal: its length is the code's")
                        return True
        return False

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

    def _asserted_value(self, test: ast.expr) -> None:
        """After ``assert x == 16`` passed, ``x`` is 16: a later assert that only restates it by
        arithmetic (``assert 7.5e9 * x / 1e9 == 120``) cannot fail."""
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        for part in parts:
            if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.Eq):
                for name, value in ((part.left, part.comparators[0]), (part.comparators[0], part.left)):
                    if isinstance(name, ast.Name) and not _names(value) and _constant_number(value):
                        self.known[name.id] = value
                        self.known_in[name.id] = self.cells

    def run_stmt(self, stmt: ast.stmt, following: list[ast.stmt]) -> None:
        if isinstance(stmt, ast.Assert):
            self.check_test(stmt, stmt.test)
            self._asserted_value(stmt.test)
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
        self._track_sources(stmt)
        self._track_records(stmt)
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
                self.known_in[name] = self.cells
        over_source = self.over_source
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.If, ast.While)):
            # a branch or loop decided by a program's text: what it sets says what the text holds
            self.over_source = over_source or self._tainted(getattr(stmt, "iter", None) or stmt.test)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                self.run_block(block)
        self.over_source = over_source
        for handler in getattr(stmt, "handlers", []):
            self.run_block(handler.body)
        if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try)):
            self._forget(_stored(stmt))  # assigned in a branch, a loop or a try: it may not have run

    def run_cell(self, index: int, source: str, check: bool = False) -> None:
        """Read one code cell; a check cell (``check``) counts as part of the cell before it."""
        if check:
            self.cells -= 1
        first = source.lstrip().split("\n", 1)[0].split()
        if first[:1] == ["%%writefile"] and len(first) > 1:
            self.written.add(first[-1])  # the program's own text: what the cell shows
        source = strip_magics(source)
        where = self.where
        self.cell = source
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            raise SyntaxError(f"{where} cell {index}: {error}") from error
        self.where = f"{where} cell {index}" + (" (check)" if check else "")
        self.run_block(tree.body)
        self.where = where
        self.cells += 1


def check_source(source: str, where: str = "<snippet>") -> list[Finding]:
    """Findings in one piece of Python (a cell, or a snippet in a test)."""
    checker = Checker(where)
    checker.run_cell(0, source)
    return checker.findings


def check_cell_findings(where: str, index: int, source: str) -> list[Finding]:
    """What is wrong with a check cell's shape: no asserts, no ``#@title`` first line."""
    found = []
    first = source.lstrip("\n").split("\n", 1)[0]
    code = strip_magics(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return found  # run_cell reports it
    guards = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Assert)
        or (isinstance(n, ast.Call) and (_call_name(n).startswith("assert") or _call_name(n) == "raises"))
    ]
    here = f"{where} cell {index} (check)"
    if not guards:
        found.append(Finding(here, 1, "a check cell that asserts nothing", first[:160]))
    if not TITLE.match(first):
        found.append(Finding(here, 1, "a check cell's first line is its title, `#@title Check: <the claim>`", first[:160]))
    return found


def check_notebook(path: Path) -> list[Finding]:
    """Findings in a notebook's code cells, read in order as one program."""
    checker = Checker(path.name)
    shape: list[Finding] = []
    for index, source, check in code_cells(path):
        checker.run_cell(index, source, check)
        if check:
            shape += check_cell_findings(path.name, index, source)
    return checker.findings + shape


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(list(argv) if argv is not None else None)
    paths = args.notebooks or sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    failing = 0
    for path in paths:  # the report: per notebook, what is flagged, then what is allowed and why
        findings = check_notebook(path)
        flagged = [f for f in findings if not f.allowed]
        failing += len(flagged)
        print(f"{path.name}: {len(flagged)} flagged, {len(findings) - len(flagged)} allowed")
        for finding in sorted(findings, key=lambda f: bool(f.allowed)):
            print("  " + str(finding))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
