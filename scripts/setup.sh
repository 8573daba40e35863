#!/usr/bin/env bash
# Create ./.venv (if missing) and install semanscope_nb with the given extras.
# usage: bash scripts/setup.sh "st,viz"
# torch is pinned to 2.13.0 (the CPU build) inside the 'st' extra: resolving it in
# the same pip call keeps pip from pulling a CUDA torch (several GB).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-st}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[${extras}]"
# the kernel every notebook names (its kernelspec), so JupyterLab and papermill run them with this venv
if .venv/bin/python -c "import ipykernel" 2>/dev/null; then
  .venv/bin/python -m ipykernel install --user --name semanscope_nb --display-name "Python (semanscope_nb)" >/dev/null
fi
