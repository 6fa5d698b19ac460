#!/usr/bin/env bash
# `make test`: every unit test and every notebook (smoke settings), in the least wall time.
#
# The main tests use about one of the machine's cores on average (TensorFlow start-up, worker
# processes waiting for each other); compiling Horovod for notebook 07 uses all of them. So the
# Horovod environment is built in the background, at low priority, while the main tests run,
# and notebook 07 (and the one unit test that needs that environment) run in that background job
# as soon as it is ready, beside the other two streams: run after the main stream's notebooks,
# they added 2.6 min at the end of make test, when the second stream had already ended.
#
# The unit tests marked `beside` (training runs: ~3 min), notebooks 08 and 09
# (~5 min of fresh processes and deliberate waits; no speed comparison upset by load), the GPU
# rehearsals and the Colab rehearsal run as a second stream beside them, in a copy of the working
# tree (its own build/, data/, images/ and programs/; PYTHONPATH makes its notebooks and workers
# import the copy): one after the other they would add ~30 min on 2 cores. Notebook 10 stays in
# the main stream: it compares speed-ups over fast and slow links, which the unit tests' load
# beside it upset (a fresh clone here failed that way). The Chinese 00 and 02 run in the main
# stream in the English ones' place (same code); the English ones in the GPU rehearsals.
#
# The background jobs are stopped if this script fails or is interrupted; their output is in
# .test-horovod.log and .test-second-stream.log and is printed when they end.
#
#   tools/run_tests.sh [all]     everything, as above (make test)
#   tools/run_tests.sh unit      ruff, then the unit tests (make test-unit)
#   tools/run_tests.sh notebooks notebooks 00-06, 08-12, the Chinese 00, 02, 09 and 12, the Colab
#                                rehearsal (make test-notebooks)
#   tools/run_tests.sh rehearsals the GPU rehearsals only (make test-rehearsals)
#   tools/run_tests.sh second     the second stream of `all`: the `beside` unit tests, notebooks 08
#                                 and 09, GPU rehearsals, Colab rehearsal (COURSE_SOURCE_TREE: the
#                                 git checkout to clone)
#   tools/run_tests.sh horovod   build the Horovod environment (at low priority), then notebook 07
#                                (make test-horovod; under `all`, in the background)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-.venv/bin/python}"
STAGE="${1:-all}"
export COURSE_SMOKE=1
NBVAL=(--nbval-lax --nbval-cell-timeout=900)
mapfile -t MAIN_NBS < <(ls notebooks/[0-9][0-9]_*.ipynb | grep -v '^notebooks/07_')
mapfile -t HVD_NBS < <(ls notebooks/07_*.ipynb 2>/dev/null || true)
# in the second stream under `all` (the two streams take about as long: see CHANGELOG.md's times)
SECOND_NB_PATTERN='^notebooks/(08|09)_'
# The Chinese edition (notebooks/zh/, tools/i18n.py): 00, 02, 09 and 12 executed. Their code is the
# English code token for token but for the printed text (tests/test_i18n.py), so under `all` they
# take the English ones' place in their stream; the English 00, 02 and 12 run in the GPU rehearsals
# (every other notebook's Chinese code is covered by the identity check alone)
mapfile -t ZH_NBS < <(ls notebooks/zh/{00,02,09,12}_*.ipynb 2>/dev/null || true)
chinese_in_place() { # the notebooks given, each Chinese one in place of its English one
    for nb in "$@"; do
        zh="notebooks/zh/${nb#notebooks/}"
        if printf '%s\n' "${ZH_NBS[@]}" | grep -qxF "$zh"; then echo "$zh"; else echo "$nb"; fi
    done
}
mapfile -t SECOND_NBS < <(chinese_in_place $(printf '%s\n' "${MAIN_NBS[@]}" | grep -E "$SECOND_NB_PATTERN"))
mapfile -t FIRST_NBS < <(chinese_in_place $(printf '%s\n' "${MAIN_NBS[@]}" | grep -vE "$SECOND_NB_PATTERN"))
HOROVOD_LOG="$ROOT/.test-horovod.log"
SLURM_LOG="$ROOT/.slurm-setup.log"
COLAB_LOG="$ROOT/.venv-colab-setup.log"
# The GPU rehearsal (infra/rehearsal.py): the notebooks with a GPU path run once more believing
# they have Colab's T4, and an odd number of GPUs (one per worker where there are enough); only
# what the hardware must provide is substituted, and each notebook says so. Notebooks 00 and 04
# have their T4 rehearsal in the faithful Colab rehearsal (Colab's package set and GPU runtime);
# where that cannot run, here. Notebook 06 has no GPU branch of its own: its setup, its
# MirroredStrategy on logical GPUs and its workers sharing the GPU (infra.devices.configure_worker)
# are those of notebook 05, rehearsed here.
ONE_GPU="1x15360@7.5:Tesla T4"
THREE_GPUS="3x24576@8.6:RTX A5000"
mapfile -t ONE_GPU_NBS < <(ls notebooks/{02,03,05,08,12}_*.ipynb 2>/dev/null)
mapfile -t COLAB_T4_NBS < <(ls notebooks/{00,04}_*.ipynb 2>/dev/null)
mapfile -t THREE_GPU_NBS < <(ls notebooks/{00,02,04,12}_*.ipynb 2>/dev/null)

# nbval stops each kernel with SIGKILL, so TensorFlow cannot remove its autograph files at exit
# (and a killed worker its own): every temporary file of the run goes in one folder, removed at the end
RUN_TMP=$(mktemp -d "${TMPDIR:-/tmp}/course-test-run.XXXXXX")
chmod 755 "$RUN_TMP"  # munged (notebook 11's Slurm) refuses a socket below a folder closed to others
export TMPDIR="$RUN_TMP"
horovod_pid=""
second_pid=""
SECOND_TREE=""
stop_build() {
    local pid
    for pid in "$horovod_pid" "$second_pid"; do
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            echo "run_tests: stopping a background job" >&2
            # its group: once the child has run setsid (a Ctrl-C right after the start can come
            # before that, and the group does not exist yet: then wait a moment and try again)
            local tries=0
            until kill -TERM -- "-$pid" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null || ((++tries > 100)); do
                sleep 0.05
            done
            ((tries <= 100)) || kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    [[ -z "$SECOND_TREE" ]] || rm -rf "$SECOND_TREE"
    rm -rf "$RUN_TMP"
}
trap stop_build EXIT
trap 'exit 130' INT TERM

run_lint() { # ruff over the whole tree, once per run (pytest does not run it)
    "$PY" -m ruff check .
}
run_unit() { # run_unit [MARKERS]: the unit tests (all but those needing the Horovod environment)
    "$PY" -m pytest tests -m "${1:-not horovod_env}" --durations=25
}
slurm_result() { # slurm_result RC: after tools/setup_slurm.sh (Slurm for notebook 11) ended with RC
    cat "$SLURM_LOG"
    if (($1 == 3)); then
        echo "run_tests: Slurm cannot be installed here (reason above): notebook 11 shows its scripts only"
    elif (($1 != 0)); then
        exit "$1"
    fi
}
REPORTS="${COURSE_TEST_REPORTS:-$ROOT/build/test-reports}"  # JUnit reports of the notebooks' cells
run_notebooks() { # run_notebooks NOTEBOOK...
    # --durations: the slowest cells, to see where make test's time goes; the JUnit report gives
    # every cell's time to tools/lesson_lines.py (core vs slot, printed at the end of `all`)
    mkdir -p "$REPORTS"
    "$PY" -m pytest "${NBVAL[@]}" --nbval-current-env --junitxml="$REPORTS/nbval-$(basename "$1" .ipynb).xml" \
        --durations=15 "$@"
}
slot_times() { # the measured seconds of each notebook's core beside its lecture slot
    echo "run_tests: lesson lines, and each notebook's core and whole run (smoke settings) beside its slot"
    "$PY" tools/lesson_lines.py --times "$REPORTS"/nbval-*.xml || true
}
run_colab() { # run_colab RC: the Colab rehearsal after setup_colab_env.sh ended with RC
    # As on Colab: stand-in google.colab, /content-like working directory, the course cloned
    # from this tree (tools/colab_rehearsal.py). Faithful: Colab's Python 3.13 and package set,
    # TensorFlow really replaced, notebook 00, then 00 and 04 on its rehearsed T4; else notebooks 00
    # and 02 in this venv, then 00 and 04 under the T4 rehearsal.
    if (($1 == 0)); then
        "$PY" tools/colab_rehearsal.py --source "${COURSE_SOURCE_TREE:-$ROOT}" --faithful "$(tail -n 1 "$COLAB_LOG")"
    elif (($1 == 3)); then
        echo "run_tests: the faithful Colab rehearsal cannot run here (reason above); the simple one instead"
        local failed=0
        "$PY" tools/colab_rehearsal.py --source "${COURSE_SOURCE_TREE:-$ROOT}" || failed=1
        echo "run_tests: GPU rehearsal, $ONE_GPU, of what the faithful Colab rehearsal rehearses on its T4"
        rehearse "$ONE_GPU" "${COLAB_T4_NBS[@]}" || failed=1
        return "$failed"
    else
        exit "$1"
    fi
}
rehearse() { # rehearse SPEC NOTEBOOK...: the notebooks under the GPU rehearsal SPEC (none: nothing)
    local spec=$1
    shift
    (($#)) || return 0
    mkdir -p "$REPORTS"  # each cell's time, as for the plain runs (not counted in the slot times)
    COURSE_REHEARSE_GPUS="$spec" "$PY" -m pytest "${NBVAL[@]}" --junitxml="$REPORTS/rehearsal-${spec%%@*}.xml" \
        --durations=10 --nbval-current-env "$@"
}
run_rehearsals() { # both rehearsals, also when the first fails; fails if either did
    local failed=0
    echo "run_tests: GPU rehearsal, $ONE_GPU"
    rehearse "$ONE_GPU" "${ONE_GPU_NBS[@]}" || failed=1
    echo "run_tests: GPU rehearsal, $THREE_GPUS"
    rehearse "$THREE_GPUS" "${THREE_GPU_NBS[@]}" || failed=1
    return "$failed"
}
run_horovod() { # run_horovod RC: the tests of notebook 07 after setup_horovod.sh ended with RC
    if (($1 == 3)); then
        echo "notebook 07 not run: the Horovod environment cannot be built on this machine (reason above)"
    elif (($1 != 0)); then
        exit "$1"
    else
        "$PY" -m pytest tests -m horovod_env
        mkdir -p "$REPORTS"
        "$PY" -m pytest "${NBVAL[@]}" --junitxml="$REPORTS/nbval-07_horovod.xml" --nbval-kernel-name horovod "${HVD_NBS[@]}"
    fi
}

rc=0
case "$STAGE" in
    unit)
        run_lint
        run_unit
        ;;
    notebooks)
        if [[ -f tools/setup_slurm.sh ]]; then
            rc=0
            bash tools/setup_slurm.sh >"$SLURM_LOG" 2>&1 || rc=$?
            slurm_result "$rc"
        fi
        rm -rf "$REPORTS"
        run_notebooks "${MAIN_NBS[@]}" "${ZH_NBS[@]}"
        slot_times
        rc=0
        bash tools/setup_colab_env.sh >"$COLAB_LOG" 2>&1 || rc=$?
        cat "$COLAB_LOG"
        run_colab "$rc"
        ;;
    rehearsals) # here also 00 and 04, whose T4 rehearsal is otherwise in the faithful Colab rehearsal
        ONE_GPU_NBS=("${COLAB_T4_NBS[@]}" "${ONE_GPU_NBS[@]}")
        run_rehearsals
        ;;
    horovod) # one step after another (make test-horovod; the background job of `all`)
        if ((${#HVD_NBS[@]})); then
            nice -n 10 bash tools/setup_horovod.sh || rc=$?
            run_horovod "$rc"
        fi
        ;;
    second) # notebooks 08 and 09, the GPU rehearsals and the Colab rehearsal (started by `all` in a copy of the tree)
        # every part runs even when one before it failed, so that one run reports them all
        rc=0 failed=0
        # Colab's environment is built (the first time: a download of TensorFlow) while the tests run
        nice -n 10 bash tools/setup_colab_env.sh >"$COLAB_LOG" 2>&1 &
        colab_setup_pid=$!
        run_unit "beside and not horovod_env" || failed=1  # the long ones, taken off the main stream
        if ((${#SECOND_NBS[@]})); then run_notebooks "${SECOND_NBS[@]}" || failed=1; fi
        run_rehearsals || failed=1
        wait "$colab_setup_pid" || rc=$?
        cat "$COLAB_LOG"
        (run_colab "$rc") || failed=1
        exit "$failed"
        ;;
    all)
        SECOND_TREE=$(mktemp -d "${TMPDIR:-/tmp}/course-second-stream.XXXXXX")
        SECOND_LOG="$ROOT/.test-second-stream.log"
        # copied before the Horovod build starts writing its log into the tree
        if git rev-parse --git-dir >/dev/null 2>&1; then # the tracked files, as they are now
            git ls-files -z | xargs -0 cp --parents -t "$SECOND_TREE" 2>/dev/null || true
        else
            tar -C "$ROOT" --exclude=./.venv --exclude=./.venv-horovod -cf - . | tar -C "$SECOND_TREE" -xf -
        fi
        rm -rf "$REPORTS"
        if ((${#HVD_NBS[@]})); then
            echo "run_tests: building the Horovod environment in the background, then notebook 07 in it (log: $HOROVOD_LOG)"
            # setsid: its own process group, so that stop_build reaches the compiler too
            setsid bash tools/run_tests.sh horovod >"$HOROVOD_LOG" 2>&1 &
            horovod_pid=$!
        fi
        echo "run_tests: notebooks 08, 09, GPU and Colab rehearsals in a second stream, in $SECOND_TREE (log: $SECOND_LOG)"
        # setsid: its own process group, so that stop_build stops the whole stream
        PYTHONPATH="$SECOND_TREE${PYTHONPATH:+:$PYTHONPATH}" PY="$(realpath -s "$PY")" COURSE_SOURCE_TREE="$ROOT" \
            COURSE_TEST_REPORTS="$REPORTS" \
            setsid bash -c 'cd "$1" && exec bash tools/run_tests.sh second' _ "$SECOND_TREE" >"$SECOND_LOG" 2>&1 &
        second_pid=$!
        slurm_pid=""
        if [[ -f tools/setup_slurm.sh ]]; then # apt-get install of Slurm for notebook 11, if missing (root)
            # not stopped by stop_build when the run fails: killing apt-get/dpkg midway can leave the
            # package database half-configured; it ends by itself within a minute or two
            bash tools/setup_slurm.sh >"$SLURM_LOG" 2>&1 &
            slurm_pid=$!
        fi
        run_lint
        run_unit "not horovod_env and not beside"  # the tests marked `beside` run in the second stream
        if [[ -n "$slurm_pid" ]]; then
            rc=0
            wait "$slurm_pid" || rc=$?
            slurm_result "$rc"
            rc=0
        fi
        run_notebooks "${FIRST_NBS[@]}"
        horovod_rc=0
        if [[ -n "$horovod_pid" ]]; then
            echo "run_tests: waiting for the Horovod job (its build, then notebook 07)"
            wait "$horovod_pid" || horovod_rc=$?
            horovod_pid=""
            cat "$HOROVOD_LOG"
        fi
        echo "run_tests: waiting for the second stream (notebooks 08, 09, GPU and Colab rehearsals)"
        second_rc=0
        wait "$second_pid" || second_rc=$?
        second_pid=""
        cat "$SECOND_LOG"
        slot_times
        ((horovod_rc == 0)) || exit "$horovod_rc"
        exit "$second_rc"
        ;;
    *)
        echo "usage: tools/run_tests.sh [all|unit|notebooks|rehearsals|second|horovod]" >&2
        exit 2
        ;;
esac
