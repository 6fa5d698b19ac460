#!/usr/bin/env bash
# `make run`: execute every notebook with full settings into build/ (executed .ipynb + HTML).
#
# One nbconvert call per notebook: nbconvert remembers the kernel of the first notebook it
# executes, so a single call would run notebook 07 in the python3 kernel instead of its own
# "horovod" kernel. Notebook 07 runs if the Horovod environment can be built here
# (tools/setup_horovod.sh); otherwise it is left out with the one-line reason.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-.venv/bin/python}"
export COURSE_SMOKE=0
mkdir -p build

mapfile -t NOTEBOOKS < <(ls notebooks/[0-9][0-9]_*.ipynb)
executed=()
for nb in "${NOTEBOOKS[@]}"; do
    if [[ "$(basename "$nb")" == 07_* ]]; then
        rc=0
        bash tools/setup_horovod.sh || rc=$?
        if ((rc == 3)); then
            echo "run_full: $nb not run: the Horovod environment cannot be built on this machine (reason above)"
            continue
        elif ((rc != 0)); then
            exit "$rc"
        fi
    fi
    start=$SECONDS
    "$PY" -m jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=7200 \
        --output-dir build "$nb"
    echo "run_full: $nb executed with full settings in $((SECONDS - start)) s"
    executed+=("build/$(basename "$nb")")
done
"$PY" -m jupyter nbconvert --to html --output-dir build "${executed[@]}"
