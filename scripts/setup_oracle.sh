#!/usr/bin/env bash
# Build .venv-prme: the reference implementation, PRME 0.15.0, as a test oracle.
#
# The differential tests (tests/test_prme_differential.py, tests/test_prme_real_engine.py)
# run PRME's own ClaimVerifier in this separate environment, because PRME's
# dependencies (huggingface_hub 1.x through fastembed, DuckDB, tantivy, USearch,
# LLM clients) clash with the exporter's pins (optimum-onnx needs
# huggingface_hub<1). Nothing of PRME is needed at run time, and `import verifier`
# never imports it.
#
# The project itself is installed here too (editable, no extras), so a real PRME
# MemoryBundle can be handed to this project's verifier in the same process.
# bpe-openai ships tiktoken's cl100k_base vocabulary, which PRME's packer needs
# and tiktoken would otherwise download (the tests point tiktoken at it).
#
# Usage: bash scripts/setup_oracle.sh        (about 2-3 minutes on 2 cores with a warm pip cache)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "[setup_oracle $((SECONDS - started))s] $*" >&2; }
step "creating .venv-prme"
rm -rf .venv-prme
python3 -m venv .venv-prme
.venv-prme/bin/python -m pip install --quiet --upgrade pip
step "installing prme==0.15.0 and bpe-openai==0.1.4 (PRME pulls DuckDB, tantivy, USearch, fastembed, LLM clients)"
.venv-prme/bin/python -m pip install --quiet --progress-bar off "prme==0.15.0" "bpe-openai==0.1.4"
step "installing this project (editable) beside it"
PYTHONWARNINGS=ignore .venv-prme/bin/python -m pip install --quiet -e .
step "done: .venv-prme/bin/python has prme $(.venv-prme/bin/python -c 'import importlib.metadata as m; print(m.version("prme"))')"
