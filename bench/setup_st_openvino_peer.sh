#!/usr/bin/env bash
# The peer virtualenv .venv-st-openvino: sentence-transformers' CrossEncoder(backend="openvino")
# (optimum-intel), the peer a user picks on a CPU with AMX or AVX512-BF16 (bench/peers.py).
#
# optimum-intel 2.2 needs optimum 2.3, which this project's exporter (optimum-onnx 0.1.0, optimum 2.1)
# cannot share a venv with, and it names torchvision, whose PyPI build fails to import beside the
# pinned torch==2.13.0: so optimum-intel is installed without its dependencies, which are listed
# here instead, torchvision left out (CrossEncoder never imports it).
#
# Usage: bash bench/setup_st_openvino_peer.sh      (about 2-4 min; pip's cache makes reruns faster)
set -euo pipefail
cd "$(dirname "$0")/.."
export PROGRESS_TAG=st-openvino-peer
source scripts/progress.sh
venv=.venv-st-openvino
step "creating $venv ($(python3 --version))" bash -c "rm -rf '$venv' && python3 -m venv '$venv'"
step "upgrading pip" "$venv/bin/python" -m pip install --progress-bar off --upgrade pip
step "installing torch==2.13.0 (the CPU build, before anything can pull the CUDA one)" \
  "$venv/bin/python" -m pip install --progress-bar off "torch==2.13.0"
step "installing sentence-transformers, optimum 2.3, OpenVINO 2026.4.1 and NNCF" \
  "$venv/bin/python" -m pip install --progress-bar off "torch==2.13.0" "sentence-transformers>=5,<6" \
  "transformers>=4.51,<4.58" "optimum~=2.3.0" "nncf>=3.3" "openvino==2026.4.1" "openvino-tokenizers==2026.4.1.0" numpy
step "installing optimum-intel 2.2.0 without its dependencies (no torchvision)" \
  "$venv/bin/python" -m pip install --progress-bar off --no-deps "optimum-intel==2.2.0"
say "done: $("$venv/bin/python" -c 'import importlib.metadata as m; print(", ".join(f"{d} {m.version(d)}" for d in ("sentence-transformers", "optimum-intel", "openvino", "torch", "transformers")))')"
