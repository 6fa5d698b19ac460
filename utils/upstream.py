"""Lessons that show an upstream bug, and what they say once the bug is fixed in your version.

A notebook that teaches around a known bug (Keras 3's ``fit`` under ``MultiWorkerMirroredStrategy``,
keras-team/keras#20585) runs the failing code and checks the error. When a newer Keras or
TensorFlow fixes the bug, that check must not fail obscurely: :func:`bug_still_there` says in
one line that the lesson below no longer applies, and returns False. Used by notebooks 02 and 04.
"""

from __future__ import annotations

from importlib import metadata


def bug_still_there(issue: str, error: str | None, signature: str, package: str = "keras") -> bool:
    """True when ``error`` (the message the code raised, or None when it ran) shows the bug of
    ``issue`` (its ``signature`` is in it). None: the bug is fixed in the installed ``package`` —
    prints so, returns False. Any other error is not this bug: raises AssertionError with it."""
    if error is None:
        version = metadata.version(package)
        print(f"{issue} is fixed in your {package} {version}: the code ran, and the lesson below about this "
              "bug no longer applies (the course was written for the pinned version, requirements.txt)")
        return False
    assert signature in error, f"expected {issue} ({signature!r}), got another error: {error}"
    return True
