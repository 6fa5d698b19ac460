#!/usr/bin/env bash
# Build the Horovod environment of notebook 07 (`make horovod`) and register its kernel.
#
#   .venv-horovod/   Python 3.11, TensorFlow 2.12 (CPU), Horovod 0.28.1 built from its source
#                    distribution with TensorFlow + Gloo (no MPI, no PyTorch, no MXNet), pinned
#                    in requirements-horovod.txt, with tools/horovod-0.28.1-gloo-stall.patch
#                    applied (a one-line fix without which a Gloo build never prints its stall
#                    warning; notebook 07 section 6)
#   kernel           "horovod" ("Python (horovod)"), registered in the main .venv so that its
#                    JupyterLab and nbval find it
#
# The sdist (sha256 checked against SDIST_SHA256 below) and the wheel built from it are kept in
# a course cache, ${XDG_CACHE_HOME:-~/.cache}/gpu-distributed-course/ (HOROVOD_CACHE_DIR), the
# wheel under a key made of the patch, the build flags, the TensorFlow pin and Python's
# version: a fresh environment with the same key installs that wheel in seconds instead of
# compiling for 8-20 minutes.
#
# Idempotent: a stamp file records what was installed; with the same requirements, patch and
# build flags, a second run only checks the kernel and exits (FORCE=1 reinstalls; it still
# uses a cached wheel, delete the cache to recompile). On failure it prints one line saying
# why and exits non-zero: 3 when the environment cannot be built on this machine (no Python
# 3.11, no C++ compiler, no package index: `make test` then skips notebook 07 with that
# line), 1 when the installation or the build failed (the log says more).
#
# Variables: HOROVOD_PYTHON (default python3.11), HOROVOD_VENV (default .venv-horovod),
# HOROVOD_KERNEL_PREFIX (default .venv: the main environment), HOROVOD_REQUIREMENTS (default
# requirements-horovod.txt, e.g. a copy with the GPU build of TensorFlow), HOROVOD_PATCH
# (default tools/horovod-0.28.1-gloo-stall.patch; HOROVOD_PATCH=none builds the stock
# source), HOROVOD_CACHE_DIR, FORCE=1 to reinstall. GPU/NCCL builds: see docs/horovod.md.
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
PATCH="${HOROVOD_PATCH:-tools/horovod-0.28.1-gloo-stall.patch}"
CACHE="${HOROVOD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-distributed-course}"
# sha256 of horovod-0.28.1.tar.gz as published on PyPI (the only sdist this script builds)
SDIST_SHA256=92a43f5a94c43907a56805bad15f19700c62ffc83b7ca483f9e104e229f67ef0

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

if [[ "$PATCH" == none ]]; then
    PATCH_SHA=none
else
    [[ -f "$PATCH" ]] || fail 1 "patch $PATCH not found (HOROVOD_PATCH=none builds the stock Horovod)"
    PATCH_SHA="$(sha256sum <"$PATCH" | cut -d' ' -f1)"
fi
# The stamp: requirements, build flags and patch (a changed patch rebuilds).
WANT="$( { cat "$REQ"; echo "$BUILD_FLAGS"; echo "patch $PATCH_SHA"; } | sha256sum | cut -d' ' -f1)"

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

# The wheel's key: what the compiled code depends on (the marker file in the environment
# records the key of the installed Horovod, so an unpatched or stale build is replaced).
KEY="$( { echo "$SDIST_SHA256 patch $PATCH_SHA"; echo "$BUILD_FLAGS"; echo "$TF_PIN python $PY_VERSION $(uname -m)"; } \
    | sha256sum | cut -c1-16)"
WHEELS="$CACHE/wheels/$KEY"
MARKER="$VENV/.course-horovod-build"
horovod_ok() { # Horovod is installed and its compiled TensorFlow ops load with this TensorFlow
    "$VENV/bin/python" -c "import horovod.tensorflow, sys; sys.exit(horovod.__version__ != '${HOROVOD_PIN#horovod==}')" >>"$LOG" 2>&1
}
install_wheel() { # install_wheel WHEEL: replace any Horovod in $VENV by this wheel
    "${PIP[@]}" uninstall -y horovod >>"$LOG" 2>&1 || true
    "${PIP[@]}" install -c "$REQ" "$1" >>"$LOG" 2>&1 \
        || fail 1 "installing $1 failed: $(grep -E 'ERROR' "$LOG" | tail -1) (full log: $LOG)"
}
build_wheel() { # compile the patched sdist into $WHEELS
    local sdist="$CACHE/sdist/${HOROVOD_PIN/==/-}.tar.gz"
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/course-horovod.XXXXXX")" # global: the traps remove it
    trap 'rm -rf "$tmp"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    mkdir -p "$CACHE/sdist"
    if [[ ! -f "$sdist" ]] || ! echo "$SDIST_SHA256  $sdist" | sha256sum -c --status; then
        "${PIP[@]}" download --no-deps --no-binary :all: -d "$tmp/dl" "$HOROVOD_PIN" >>"$LOG" 2>&1 \
            || { if grep -qiE 'No matching distribution|Could not find a version|connection|Network is unreachable|Temporary failure in name resolution' "$LOG"; then
                     fail 3 "cannot download the $HOROVOD_PIN source here (package index unreachable?): $(grep -E 'ERROR' "$LOG" | tail -1)"
                 fi
                 fail 1 "downloading the $HOROVOD_PIN source failed: $(grep -E 'ERROR' "$LOG" | tail -1) (full log: $LOG)"; }
        echo "$SDIST_SHA256  $(echo "$tmp"/dl/*.tar.gz)" | sha256sum -c --status \
            || fail 1 "the downloaded $HOROVOD_PIN source has sha256 $(sha256sum "$tmp"/dl/*.tar.gz | cut -c1-16)..., not the pinned $SDIST_SHA256"
        mv "$tmp"/dl/*.tar.gz "$sdist"
    fi
    tar -xzf "$sdist" -C "$tmp" || fail 1 "could not extract $sdist"
    local src=("$tmp"/horovod-*/)
    if [[ "$PATCH" != none ]]; then
        patch -p1 --forward --batch -d "${src[0]}" <"$PATCH" >>"$LOG" 2>&1 \
            || fail 1 "$PATCH does not apply to $HOROVOD_PIN (see $LOG)"
    fi
    "${PIP[@]}" wheel --no-build-isolation --no-deps -w "$tmp/wheel" "${src[0]}" >>"$LOG" 2>&1 \
        || fail 1 "building $HOROVOD_PIN failed: $(grep -E 'ERROR|error:|Error' "$LOG" | grep -v '^ *$' | tail -1) (full log: $LOG)"
    mkdir -p "$WHEELS.tmp.$$"
    cp "$tmp"/wheel/horovod-*.whl "$WHEELS.tmp.$$/"
    rm -rf "$WHEELS" && mv "$WHEELS.tmp.$$" "$WHEELS" # whole or not at all
    rm -rf "$tmp"
}
if horovod_ok && [[ "$(cat "$MARKER" 2>/dev/null)" == "$KEY" ]]; then
    echo "setup_horovod: $HOROVOD_PIN ($KEY) is already installed in $VENV"
else
    rm -f "$MARKER"
    WHEEL="$(ls "$WHEELS"/horovod-*.whl 2>/dev/null | head -1 || true)"
    if [[ -n "$WHEEL" ]]; then
        echo "setup_horovod: installing $HOROVOD_PIN from the course's wheel cache ($WHEEL)"
        install_wheel "$WHEEL"
        if ! horovod_ok; then
            echo "setup_horovod: the cached wheel does not load with $TF_PIN; removing it and compiling again"
            rm -rf "$WHEELS"
            WHEEL=""
        fi
    fi
    if [[ -z "$WHEEL" ]]; then
        [[ "$PATCH" == none ]] || command -v patch >/dev/null 2>&1 \
            || fail 3 "applying $PATCH needs 'patch' (apt-get install patch), not found"
        # Horovod compiles against the TensorFlow installed above, hence --no-build-isolation.
        echo "setup_horovod: building $HOROVOD_PIN from source with ${PATCH/#none/no patch} and ${BUILD_FLAGS% } (about 8 minutes on 2 quiet cores, 20 on busy ones; once: the wheel is kept in $WHEELS)"
        build_wheel
        install_wheel "$(ls "$WHEELS"/horovod-*.whl | head -1)"
        horovod_ok || fail 1 "Horovod was built but 'import horovod.tensorflow' fails with $TF_PIN (see $LOG)"
    fi
    echo "$KEY" >"$MARKER"
fi

"${PIP[@]}" check >>"$LOG" 2>&1 || echo "setup_horovod: warning: pip check reports conflicting versions (see $LOG)" >&2

# The course's packages (utils, infra, quickdraw), installed editable as in the main environment.
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -f "$SITE/course_root.pth"
"${PIP[@]}" install --no-deps -e "$ROOT" >>"$LOG" 2>&1 || fail 1 "could not install the course into $VENV (see $LOG)"

"$VENV/bin/python" -c "import horovod.tensorflow as hvd, tensorflow as tf; hvd.init(); assert hvd.size() == 1" \
    >>"$LOG" 2>&1 || fail 1 "Horovod was installed but 'import horovod.tensorflow' failed (see $LOG)"
"$VENV/bin/horovodrun" --check-build >>"$LOG" 2>&1 || fail 1 "horovodrun --check-build failed (see $LOG)"
register_kernel
echo "$WANT" >"$STAMP"
echo "setup_horovod: done in $(($(date +%s) - start)) s: $VENV with $HOROVOD_PIN + $TF_PIN, kernel 'horovod' (\"Python (horovod)\")"
