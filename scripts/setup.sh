#!/usr/bin/env bash
# Create .venv and install the project with its export and test extras.
#
# PyTorch is installed first and pinned (torch==2.13.0, a small CPU build):
# a bare `torch` requirement would pull a multi-GB CUDA build. Only the
# exporter and the export tests use it; the runtime never imports it.
#
# Usage: bash scripts/setup.sh [extras]      (default extras: export,test)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-export,test}"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
if [[ ",$extras," == *",export,"* || ",$extras," == *",bench,"* ]]; then
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
# setuptools prints an advisory banner for every editable install (folders named
# like the package may shadow it); it is noise here, so the build runs quiet.
PYTHONWARNINGS=ignore .venv/bin/python -m pip install --quiet -e ".[$extras]"
echo "installed into .venv with extras [$extras]"
