#!/usr/bin/env bash
# Build .venv-prme-bench: PRME 0.15.0's ClaimVerifier with its real model path, as an end-to-end peer
# for `python -m bench.prme_e2e` (bench/README.md, "PRME end to end").
#
# Why a third virtualenv: PRME's verification extra is sentence-transformers' CrossEncoder on PyTorch.
# .venv-prme (scripts/setup_oracle.sh) is the differential tests' oracle and has no torch (its
# huggingface_hub 1.x also rules out the exporter's transformers<4.58 pin), and .venv has the exporter's
# pins but no PRME. Adding torch and sentence-transformers to .venv-prme would change the oracle that
# other tests run in, so the peer gets its own environment; nothing else uses it.
#
# Order matters: torch==2.13.0 first (a bare `torch` requirement resolves to a multi-GB CUDA build;
# pinned, the CPU build the rest of bench uses), then "prme[verification]==0.15.0", which resolves
# sentence-transformers (and through it transformers and huggingface_hub 1.x) on top of that torch.
# The project itself is not installed: the peer worker (bench/prme_peer.py) reads its claims from a
# JSON file and imports only PRME, so its import time and memory are PRME's own.
#
# Usage: bash bench/setup_prme_peer.sh      (rebuilds .venv-prme-bench; git-ignored; ~3-6 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
export PROGRESS_TAG=prme-peer
source scripts/progress.sh
venv=.venv-prme-bench
step "creating $venv ($(python3 --version))" bash -c "rm -rf '$venv' && python3 -m venv '$venv'"
step "upgrading pip" "$venv/bin/python" -m pip install --progress-bar off --upgrade pip
step "installing torch==2.13.0 (the CPU build, before anything can pull the CUDA one)" \
  "$venv/bin/python" -m pip install --progress-bar off "torch==2.13.0"
step "installing prme[verification]==0.15.0 (sentence-transformers CrossEncoder on that torch)" \
  "$venv/bin/python" -m pip install --progress-bar off "torch==2.13.0" "prme[verification]==0.15.0" psutil
say "done: $("$venv/bin/python" -c 'import importlib.metadata as m; print(", ".join(f"{d} {m.version(d)}" for d in ("prme", "torch", "sentence-transformers", "transformers", "huggingface-hub", "tokenizers")))')"
