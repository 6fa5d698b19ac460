#!/usr/bin/env bash
# Build the environment of the faithful Colab rehearsal: Python 3.13 with Colab's package set
# (tools/colab-runtime.txt: TensorFlow 2.20, Keras 3.13.2, protobuf 5.29.6, …), kept in the course
# cache (${XDG_CACHE_HOME:-~/.cache}/gpu-distributed-course/venv-colab) so that a fresh clone
# reuses it. tools/colab_rehearsal.py --faithful copies it for each run, so the copy starts as
# Colab does and the setup cell really replaces TensorFlow there; this one is never changed.
# Prints the environment's path on its last line.
#
# Idempotent: a stamp records the package list it was built from (FORCE=1 rebuilds). Exit codes:
# 0 built or up to date; 3 it cannot be built on this machine (no Python 3.13, no package index:
# `make test` then runs the simpler rehearsal in the course's environment and says so); 1 the
# installation failed (the log says why). Variables: COLAB_PYTHON (default: python3.13 on PATH,
# else pyenv's newest 3.13), COLAB_VENV (default: in the course cache), FORCE=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${COLAB_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-distributed-course/venv-colab}"
[[ "$VENV" == /* ]] || VENV="$ROOT/$VENV"
REQ="$ROOT/tools/colab-runtime.txt"
STAMP="$VENV/.course-colab-stamp"
LOG="$ROOT/.venv-colab-pip.log"  # pip's own log: make test sends this script's output to .venv-colab-setup.log
fail() { echo "setup_colab_env: $2" >&2; exit "$1"; }

is_313() { [[ -n "$1" ]] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 13)' >/dev/null 2>&1; }
PYTHON="${COLAB_PYTHON:-}"
if [[ -z "$PYTHON" ]]; then # python3.13 on PATH (a pyenv shim may be there without working), else pyenv's
    candidates=(python3.13)
    command -v pyenv >/dev/null 2>&1 && mapfile -t -O 1 candidates < <(ls -d "$(pyenv root)"/versions/3.13.*/bin/python3.13 2>/dev/null | sort -rV)
    for candidate in "${candidates[@]}"; do
        if is_313 "$candidate"; then PYTHON=$candidate; break; fi
    done
fi
is_313 "$PYTHON" ||
    fail 3 "no Python 3.13 (Colab's) found: install one or set COLAB_PYTHON; the faithful Colab rehearsal is skipped"

wanted=$(sha256sum "$REQ" | cut -c1-16)
if [[ -z "${FORCE:-}" && -f "$STAMP" && "$(cat "$STAMP")" == "$wanted" ]]; then
    echo "setup_colab_env: up to date (Colab's package set, $(grep -c '==' "$REQ") pins)"
    echo "$VENV"
    exit 0
fi
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
echo "setup_colab_env: building $VENV with $("$PYTHON" --version) and Colab's package set (a few minutes the first time)"
"$PYTHON" -m venv "$VENV" || fail 1 "could not create $VENV with $PYTHON"
if ! "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ" >"$LOG" 2>&1; then
    if grep -qiE "connection|resolve|network is unreachable|max retries|temporary failure|timed out" "$LOG"; then
        fail 3 "cannot reach the package index to build $VENV; the faithful Colab rehearsal is skipped ($LOG)"
    fi
    fail 1 "pip could not install Colab's package set: $(grep -E '^ERROR' "$LOG" | head -n 1) (log: $LOG)"
fi
echo "$wanted" >"$STAMP"
echo "setup_colab_env: ready: $("$VENV/bin/python" -c 'import importlib.metadata as m; print("TensorFlow", m.version("tensorflow"), "· Keras", m.version("keras"), "· protobuf", m.version("protobuf"))')"
echo "$VENV"
