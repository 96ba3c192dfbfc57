#!/bin/sh
# pyenv.sh [VENV_DIR]: make a Python virtual environment with pytrec_eval for tools/eval.py.
#
# VENV_DIR defaults to build/pyenv under the source tree. Idempotent: an existing venv that can
# already import pytrec_eval is left alone, so tests may call this every time. Quiet: tool output
# goes to VENV_DIR.log and is shown only on failure. The last line on stdout is the venv's python.
#
# pytrec-eval-terrier is a maintained fork of pytrec_eval (the trec_eval C code behind a Python
# API) that ships binary wheels, so no compiler is needed. On Debian, `python3 -m venv` needs the
# python3-venv package (ensurepip); as root the script installs it with apt-get.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-"$here/../build/pyenv"}
python=${PYTHON:-python3}

die() {
    echo "pyenv.sh: $*" >&2
    exit 1
}

command -v "$python" >/dev/null 2>&1 || die "$python not found"
mkdir -p "$(dirname "$venv")"
venv=$(cd "$(dirname "$venv")" && pwd)/$(basename "$venv")
log=$venv.log

# Parallel test runs may call this at once: serialise on a lock beside the venv.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9
fi

# Runs a command with its output in the log; on failure shows the log and stops.
quiet() {
    if ! "$@" >>"$log" 2>&1; then
        cat "$log" >&2
        die "failed: $*"
    fi
}

if "$venv/bin/python" -c 'import pytrec_eval' >/dev/null 2>&1; then
    echo "$venv/bin/python"
    exit 0
fi
: >"$log"

if [ ! -x "$venv/bin/python" ]; then
    # Debian's python3 lacks ensurepip without python3-venv; venv would fail half-way.
    if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            export DEBIAN_FRONTEND=noninteractive
            if ! apt-get install -y -q python3-venv >>"$log" 2>&1; then
                quiet apt-get update -q
                quiet apt-get install -y -q python3-venv
            fi
        else
            die "$python has no venv/ensurepip support: install python3-venv (apt-get install python3-venv) as root"
        fi
    fi
    rm -rf "$venv" # a half-made venv from an interrupted run
    quiet "$python" -m venv "$venv"
fi

# The one package from PyPI: where PyPI cannot be reached, say so and stop (the caller fails with
# this message, never with an empty interpreter path).
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --timeout 30 pytrec-eval-terrier >>"$log" 2>&1; then
    tail -5 "$log" >&2
    die "could not install pytrec-eval-terrier from PyPI into $venv (is https://pypi.org reachable? the evaluation needs it once, then works offline)"
fi
"$venv/bin/python" -c 'import pytrec_eval' >/dev/null 2>&1 || die "pytrec_eval does not import in $venv"
echo "$venv/bin/python"
