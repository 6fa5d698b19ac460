"""Smoke mode is read from one variable in one place; badge URLs are consistent."""

from __future__ import annotations

import pytest

from infra.process import run_python
from utils import config


def test_choose_follows_smoke() -> None:
    assert config.choose(smoke="s", full="f") == ("s" if config.SMOKE else "f")


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("0", False), ("", False), ("true", True)])
def test_smoke_variable(value: str, expected: bool) -> None:
    result = run_python(
        "import utils; print(utils.SMOKE, utils.choose(smoke=1, full=10))",
        env={"COURSE_SMOKE": value},
        timeout=60,
    )
    assert result.ok, result.tail()
    assert result.stdout.split() == [str(expected), "1" if expected else "10"]


def test_bad_smoke_value_is_a_clear_error() -> None:
    result = run_python("import utils", env={"COURSE_SMOKE": "maybe"}, timeout=60)
    assert not result.ok
    assert "COURSE_SMOKE='maybe'" in result.stderr


def test_importing_utils_does_not_import_tensorflow() -> None:
    result = run_python("import sys, utils, utils.timing, utils.devices; print('tensorflow' in sys.modules)")
    assert result.ok, result.tail()
    assert result.stdout.strip() == "False"
