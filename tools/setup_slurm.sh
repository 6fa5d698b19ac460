#!/usr/bin/env bash
# Install Slurm and munge for notebook 11's local cluster (`make slurm`; `make test` on CI).
#
#   packages   slurm-wlm (slurmctld, slurmd, srun, sbatch, sacct, ...) and munge, from the
#              distribution with apt-get (Debian 12 / Ubuntu 22.04+: Slurm 22.05 or newer)
#   check      with CHECK=1 (what `make slurm` sets): start a 2-node cluster of infra/slurm.py,
#              run `srun -N 2 hostname`, remove it (python -m infra.slurm --check 2)
#
# The packages' own services are not started, and their /etc/slurm, /etc/munge are never used:
# the course's cluster has private files under a temporary folder (infra/slurm.py).
#
# Idempotent: with everything installed it only checks. On failure it prints one line saying
# why and exits non-zero: 3 when Slurm cannot be installed on this machine (not Linux, not root,
# no apt-get, package index unreachable: notebook 11 then shows its scripts without running
# them), 1 when the installation or the check failed.
#
# Variables: PYTHON (default .venv/bin/python), CHECK=1 to start a cluster after installing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-.venv/bin/python}"
PACKAGES=(slurm-wlm munge)
COMMANDS=(munged munge slurmctld slurmd slurmstepd srun sbatch sinfo squeue scontrol sacct)

fail() { # fail CODE MESSAGE: one line on stderr, then exit
    echo "setup_slurm: $2" >&2
    exit "$1"
}

missing() { # the commands not found (daemons live in /usr/sbin, not always on PATH)
    local c
    for c in "${COMMANDS[@]}"; do
        command -v "$c" >/dev/null 2>&1 || [[ -x "/usr/sbin/$c" ]] || echo "$c"
    done
}

[[ "$(uname -s)" == Linux ]] || fail 3 "Slurm's daemons need Linux; this is $(uname -s) (notebook 11 shows its scripts only)"
if [[ -n "$(missing)" ]]; then
    [[ "$(id -u)" == 0 ]] || fail 3 "Slurm is not installed and installing needs root: sudo apt-get install ${PACKAGES[*]}"
    command -v apt-get >/dev/null 2>&1 || fail 3 "Slurm is not installed and there is no apt-get here: install ${PACKAGES[*]} with your package manager"
    LOG="$(mktemp "${TMPDIR:-/tmp}/course-setup-slurm.XXXXXX.log")"
    start=$(date +%s)
    echo "setup_slurm: installing ${PACKAGES[*]} with apt-get (log: $LOG)"
    # Where an init system runs, apt enables the packages' own services (munge.service; slurmctld
    # and slurmd fail without /etc/slurm/slurm.conf), as any install would: the course neither
    # uses nor stops them. In containers without init (CI) nothing starts.
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "${PACKAGES[@]}" >>"$LOG" 2>&1; then
        apt-get update >>"$LOG" 2>&1 || fail 3 "apt-get update failed (package index unreachable?): $(grep -E '^(E|W):' "$LOG" | tail -1)"
        apt-get install -y --no-install-recommends "${PACKAGES[@]}" >>"$LOG" 2>&1 \
            || fail 1 "apt-get install ${PACKAGES[*]} failed: $(grep -E '^E:' "$LOG" | tail -1) (full log: $LOG)"
    fi
    [[ -z "$(missing)" ]] || fail 1 "installed ${PACKAGES[*]} but still missing: $(missing | tr '\n' ' ')(log: $LOG)"
    echo "setup_slurm: installed in $(($(date +%s) - start)) s: $(/usr/sbin/slurmd -V 2>/dev/null || echo slurm), $(munged -V 2>/dev/null | head -1 || echo munge)"
else
    echo "setup_slurm: $(/usr/sbin/slurmd -V 2>/dev/null || slurmd -V) and munge are installed"
fi

if [[ "${CHECK:-0}" == 1 ]]; then
    [[ -x "$PYTHON" ]] || fail 1 "$PYTHON not found (make venv first)"
    PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m infra.slurm --check 2 \
        || fail $? "the local cluster did not run srun -N 2 hostname (see above)"
fi
