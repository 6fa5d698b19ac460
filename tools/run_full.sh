#!/usr/bin/env bash
# `make run`: execute every notebook with full settings into build/ (executed .ipynb + HTML).
# `make run-zh` (tools/run_full.sh zh): the Chinese edition, notebooks/zh/ into build/zh/, for
# a site and slides whose outputs are Chinese too (tools/build_site.py).
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
SOURCE=notebooks OUT=build
if [[ "${1:-}" == zh ]]; then SOURCE=notebooks/zh OUT=build/zh; fi
mkdir -p "$OUT"

mapfile -t NOTEBOOKS < <(ls "$SOURCE"/[0-9][0-9]_*.ipynb)
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
        --output-dir "$OUT" "$nb"
    echo "run_full: $nb executed with full settings in $((SECONDS - start)) s"
    executed+=("$OUT/$(basename "$nb")")
done
"$PY" -m jupyter nbconvert --to html --output-dir "$OUT" "${executed[@]}"
