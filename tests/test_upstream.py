"""utils.upstream.bug_still_there: a lesson about an upstream bug degrades clearly once it is fixed."""

from __future__ import annotations

import pytest

from utils.upstream import bug_still_there


def test_the_bug_as_documented() -> None:
    assert bug_still_there("keras-team/keras#20585", "ValueError: … unsupported type PerReplica", "PerReplica")


def test_a_fixed_bug_says_so_instead_of_failing(capsys) -> None:
    assert bug_still_there("keras-team/keras#20585", None, "PerReplica") is False  # faked: the code ran
    said = capsys.readouterr().out
    assert said.startswith("keras-team/keras#20585 is fixed in your keras 3.") and "no longer applies" in said


def test_another_error_is_not_taken_for_the_bug() -> None:
    with pytest.raises(AssertionError, match="got another error: OSError: disk full"):
        bug_still_there("keras-team/keras#20585", "OSError: disk full", "PerReplica")
