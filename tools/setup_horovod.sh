#!/usr/bin/env bash
# Build the Horovod environment of notebook 07 (`make horovod`) and register its kernel.
#
#   .venv-horovod/   Python 3.11, TensorFlow 2.12 (CPU), Horovod 0.28.1 built from source with
#                    TensorFlow + Gloo (no MPI, no PyTorch, no MXNet), pinned in
#                    requirements-horovod.txt
#   kernel           "horovod" ("Python (horovod)"), registered in the main .venv so that its
#                    JupyterLab and nbval find it
#
# Idempotent: a stamp file records what was installed; with the same requirements and the same
# build flags, a second run only checks the kernel and exits (FORCE=1 reinstalls).
# On failure it prints one line saying why and exits non-zero: 3 when the environment cannot
# be built on this machine (no Python 3.11, no C++ compiler, no package index: `make test`
# then skips notebook 07 with that line), 1 when the installation or the build failed (the
# log says more).
#
# Variables: HOROVOD_PYTHON (default python3.11), HOROVOD_VENV (default .venv-horovod),
# HOROVOD_KERNEL_PREFIX (default .venv: the main environment), HOROVOD_REQUIREMENTS (default
# requirements-horovod.txt, e.g. a copy with the GPU build of TensorFlow), FORCE=1 to reinstall.
# GPU/NCCL builds: see docs/horovod.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${HOROVOD_PYTHON:-python3.11}"
VENV="${HOROVOD_VENV:-.venv-horovod}"
[[ "$VENV" == /* ]] || VENV="$ROOT/$VENV"
KERNEL_PREFIX="${HOROVOD_KERNEL_PREFIX:-.venv}"
REQ="${HOROVOD_REQUIREMENTS:-requirements-horovod.txt}"
STAMP="$VENV/.course-horovod-stamp"
LOG="$VENV/build.log"

fail() { # fail CODE MESSAGE: one line on stderr, then exit
    echo "setup_horovod: $2" >&2
    exit "$1"
}

# The CPU build of Horovod: TensorFlow ops, Gloo controller. GPU users override these
# (HOROVOD_GPU_OPERATIONS=NCCL …) in their environment before running this script.
export HOROVOD_WITH_TENSORFLOW="${HOROVOD_WITH_TENSORFLOW:-1}"
export HOROVOD_WITH_GLOO="${HOROVOD_WITH_GLOO:-1}"
if [[ -z "${HOROVOD_WITH_MPI:-}" ]]; then # an MPI build (HOROVOD_WITH_MPI=1) must not also say WITHOUT
    export HOROVOD_WITHOUT_MPI="${HOROVOD_WITHOUT_MPI:-1}"
fi
export HOROVOD_WITHOUT_PYTORCH="${HOROVOD_WITHOUT_PYTORCH:-1}"
export HOROVOD_WITHOUT_MXNET="${HOROVOD_WITHOUT_MXNET:-1}"
BUILD_FLAGS="$(env | grep -E '^HOROVOD_(WITH|WITHOUT|GPU|NCCL|CUDA|CPU|MPI|BUILD)' | sort | tr '\n' ' ')"

[[ -f "$REQ" ]] || fail 1 "$REQ not found in $ROOT"
command -v "$PYTHON" >/dev/null 2>&1 \
    || fail 3 "Python 3.11 is needed for the Horovod environment ('$PYTHON' not found; set HOROVOD_PYTHON)"
PY_VERSION="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
[[ "$PY_VERSION" == "3.11" ]] \
    || fail 3 "Python 3.11 is needed for the Horovod environment ('$PYTHON' is Python ${PY_VERSION:-unknown})"

WANT="$( { cat "$REQ"; echo "$BUILD_FLAGS"; } | sha256sum | cut -d' ' -f1)"

register_kernel() {
    local prefix_args=(--prefix "$KERNEL_PREFIX")
    if [[ ! -x "$KERNEL_PREFIX/bin/python" ]]; then
        echo "setup_horovod: main environment $KERNEL_PREFIX not found; registering the kernel for this user" >&2
        prefix_args=(--user)
    fi
    "$VENV/bin/python" -m ipykernel install "${prefix_args[@]}" \
        --name horovod --display-name "Python (horovod)" >>"$LOG" 2>&1 \
        || fail 1 "registering the Jupyter kernel failed: $(tail -1 "$LOG") (full log: $LOG)"
}

kernel_ok() {
    [[ -f "$KERNEL_PREFIX/share/jupyter/kernels/horovod/kernel.json" ]] \
        && grep -q "\"$VENV/bin/python\"" "$KERNEL_PREFIX/share/jupyter/kernels/horovod/kernel.json"
}

if [[ "${FORCE:-0}" != "1" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] \
    && "$VENV/bin/python" -c "import horovod.tensorflow" >/dev/null 2>&1; then
    kernel_ok || register_kernel
    echo "setup_horovod: $VENV is up to date (Horovod $("$VENV/bin/python" -c 'import horovod; print(horovod.__version__)'), kernel 'horovod')"
    exit 0
fi

command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 \
    || fail 3 "Horovod is built from source and needs a C++ compiler (apt-get install g++), none found"

start=$(date +%s)
if [[ -x "$VENV/bin/python" ]] && ! "$VENV/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
    echo "setup_horovod: $VENV is not a Python 3.11 environment; recreating it"
    rm -rf "$VENV"
fi
if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV" || fail 1 "could not create $VENV with $PYTHON (is python3.11-venv installed?)"
fi
rm -f "$STAMP"
: >"$LOG"
export PATH="$VENV/bin:$PATH" # the pinned cmake from requirements-horovod.txt
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

HOROVOD_PIN="$(grep -E '^horovod==' "$REQ")" || fail 1 "$REQ has no 'horovod==' line"
TF_PIN="$(grep -E '^tensorflow(-cpu)?==' "$REQ" | head -1)" || fail 1 "$REQ has no 'tensorflow==' or 'tensorflow-cpu==' line"
echo "setup_horovod: installing $TF_PIN and the build tools into $VENV (log: $LOG)"
{ "${PIP[@]}" install --upgrade pip setuptools wheel \
    && "${PIP[@]}" install -r <(grep -vE '^horovod==' "$REQ"); } >>"$LOG" 2>&1 \
    || { if grep -qiE 'No matching distribution|Could not find a version|connection|Network is unreachable|Temporary failure in name resolution' "$LOG"; then
             fail 3 "cannot install $REQ here (package index unreachable?): $(grep -E 'ERROR' "$LOG" | tail -1)"
         fi
         fail 1 "installing $REQ failed: $(grep -E 'ERROR|error:' "$LOG" | tail -1) (full log: $LOG)"; }

# Horovod compiles against the TensorFlow installed above, hence --no-build-isolation.
horovod_ok() { # Horovod is installed and its compiled TensorFlow ops load with this TensorFlow
    "$VENV/bin/python" -c "import horovod.tensorflow, sys; sys.exit(horovod.__version__ != '${HOROVOD_PIN#horovod==}')" >>"$LOG" 2>&1
}
install_horovod() {
    "${PIP[@]}" install --no-build-isolation -c "$REQ" "$@" "$HOROVOD_PIN" >>"$LOG" 2>&1 \
        || fail 1 "building $HOROVOD_PIN failed: $(grep -E 'ERROR|error:|Error' "$LOG" | grep -v '^ *$' | tail -1) (full log: $LOG)"
}
if horovod_ok; then
    echo "setup_horovod: $HOROVOD_PIN is already built in $VENV"
else
    echo "setup_horovod: building $HOROVOD_PIN from source with ${BUILD_FLAGS% } (about 8 minutes on 2 quiet cores, 20 on busy ones; seconds when pip's wheel cache has it)"
    install_horovod
    if ! horovod_ok; then # e.g. a wheel pip cached for another TensorFlow version
        echo "setup_horovod: the installed Horovod does not load with $TF_PIN; rebuilding it without pip's cache"
        install_horovod --no-cache-dir --force-reinstall --no-deps
        horovod_ok || fail 1 "Horovod was built but 'import horovod.tensorflow' fails with $TF_PIN (see $LOG)"
    fi
fi

"${PIP[@]}" check >>"$LOG" 2>&1 || echo "setup_horovod: warning: pip check reports conflicting versions (see $LOG)" >&2

# The project root on sys.path (import utils from anywhere), as in the main environment.
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$ROOT" >"$SITE/course_root.pth"

"$VENV/bin/python" -c "import horovod.tensorflow as hvd, tensorflow as tf; hvd.init(); assert hvd.size() == 1" \
    >>"$LOG" 2>&1 || fail 1 "Horovod was installed but 'import horovod.tensorflow' failed (see $LOG)"
"$VENV/bin/horovodrun" --check-build >>"$LOG" 2>&1 || fail 1 "horovodrun --check-build failed (see $LOG)"
register_kernel
echo "$WANT" >"$STAMP"
echo "setup_horovod: done in $(($(date +%s) - start)) s: $VENV with $HOROVOD_PIN + $TF_PIN, kernel 'horovod' (\"Python (horovod)\")"
