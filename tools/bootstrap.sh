#!/usr/bin/env bash
# Create .venv with a Python that TensorFlow 2.21 supports (3.10–3.13; 3.11 preferred) and
# install requirements.txt into it (make venv / lab / test). Says which Python it took, and
# fails with one line saying why when no such Python or the package index is missing.
set -uo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
REQ=${REQ:-requirements.txt}
PYTHON=${PYTHON:-}
SUPPORTED="3.10 3.11 3.12 3.13"   # the Pythons TensorFlow 2.21 ships wheels for

fail() { echo "error: $*" >&2; exit 1; }
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
supported() { [[ " $SUPPORTED " == *" $1 "* ]]; }

if [ -x "$VENV/bin/python" ]; then
    PYTHON="$VENV/bin/python"  # an existing environment keeps its Python
elif [ -z "$PYTHON" ]; then
    for candidate in python3.11 python3.12 python3.13 python3.10 python3 python; do
        if command -v "$candidate" >/dev/null 2>&1 && supported "$(version_of "$candidate")"; then
            PYTHON=$candidate; break
        fi
    done
    [ -n "$PYTHON" ] || fail "no Python 3.10–3.13 found (tried python3.11, python3.12, python3.13, python3.10, python3, python); install one or run 'make PYTHON=/path/to/python3.X ...'"
fi
version=$(version_of "$PYTHON")
supported "$version" ||
    fail "$PYTHON is not Python 3.10–3.13 ($("$PYTHON" --version 2>&1)); TensorFlow 2.21 has wheels for 3.10, 3.11, 3.12 and 3.13"
[ -x "$VENV/bin/python" ] || echo "Using $PYTHON (Python $version) for $VENV"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV" 2>/tmp/venv-error.$$ ||
        fail "could not create $VENV with $PYTHON: $(tail -n 1 /tmp/venv-error.$$) (on Debian/Ubuntu: apt install python$version-venv)"
    rm -f /tmp/venv-error.$$
fi

# the course's packages are part of the key: an editable install maps only the packages it saw
stamp="$VENV/.installed-$({ cat "$REQ" pyproject.toml; ls -d */__init__.py; } | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "Installing $REQ and the course into $VENV (first time: a few minutes; TensorFlow is ~600 MB) ..."
    log="$VENV/pip-install.log"
    pip=("$VENV/bin/python" -m pip install --disable-pip-version-check --retries 2 --timeout 60)
    # the course itself, editable: `import utils` (and infra, quickdraw) works anywhere in the environment
    if ! { "${pip[@]}" -r "$REQ" && "${pip[@]}" --no-deps -e .; } >"$log" 2>&1; then
        if grep -qiE "connection|resolve|network is unreachable|max retries|temporary failure|timed out" "$log"; then
            fail "cannot reach the Python package index to install $REQ (no network?); details in $log"
        fi
        fail "pip could not install $REQ: $(grep -E '^ERROR' "$log" | head -n 1) (full log: $log)"
    fi
    rm -f "$VENV"/.installed-*
    site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    rm -f "$site/tf_distributed_course.pth"  # how earlier versions of the course put itself on sys.path
    touch "$stamp"
fi

# The notebooks declare the kernel `python3`; point it at this environment.
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 \
    --display-name "Python 3 (ipykernel)" >/dev/null 2>&1 ||
    fail "could not register the Jupyter kernel python3 for $VENV"
