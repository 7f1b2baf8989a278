#!/usr/bin/env bash
# Create .venv and install the project (editable) with the given extras.
#
# PyTorch is installed first and pinned (torch==2.13.0, a small CPU build):
# a bare `torch` requirement would pull a multi-GB CUDA build. Only the
# exporter and the export tests use it; the runtime never imports it.
#
# Usage: bash scripts/setup.sh [extras]      (default extras: export,test)
#        bash scripts/setup.sh export,test,server,ray,plot,bench,openvino,sign   (everything the full test suite uses)
#
# Every step prints a line as it starts, a "still ..." line every 15 s with the package pip is on,
# and its time when it ends (scripts/progress.sh, on stderr); pip's own output is shown only when a
# step fails. Re-running it over an existing .venv keeps it and installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/progress.sh
extras="${1:-export,test}"
if [[ -x .venv/bin/python ]]; then
  say "keeping the existing .venv ($(.venv/bin/python --version)); delete it to start afresh"
else
  step "creating .venv ($(python3 --version))" python3 -m venv .venv
fi
step "upgrading pip" .venv/bin/python -m pip install --progress-bar off --upgrade pip
if [[ ",$extras," == *",export,"* || ",$extras," == *",bench,"* ]]; then
  torch_now=$(.venv/bin/python -c 'from importlib import metadata
try: print(metadata.version("torch"))
except metadata.PackageNotFoundError: pass' 2>/dev/null || true)
  if [[ "$torch_now" == "2.13.0"* ]]; then
    say "keeping torch $torch_now already in .venv"
  else
    step "installing torch==2.13.0 (the CPU build, before anything can pull the CUDA one)" \
      .venv/bin/python -m pip install --progress-bar off "torch==2.13.0"
  fi
fi
# setuptools prints an advisory banner for every editable install (folders named like the package may
# shadow it); PYTHONWARNINGS=ignore keeps it out of the log shown on failure.
step "installing this project (editable) with extras [$extras]" \
  env PYTHONWARNINGS=ignore .venv/bin/python -m pip install --progress-bar off -e ".[$extras]"
# (Other environments, e.g. the PRME oracle's .venv-prme, have their own scripts: scripts/setup_oracle.sh.)
say "installed into .venv with extras [$extras]"
