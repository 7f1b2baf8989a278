#!/usr/bin/env bash
# The installed package works like the checkout (issue 34): build the wheel and sdist with
# `python -m build`, install the wheel in a clean venv (torch==2.13.0 pinned first: the smoke
# export needs it, and a bare torch requirement pulls a multi-GB CUDA build), then, from a
# directory outside the checkout, run what a user runs:
#
#   python -m export --smoke        python -m verifier verify ...        python -m verifier check ...
#
# and install the sdist over it (built from source: every file the package needs is in it).
# pip's cache is reused. Usage: bash scripts/wheel_smoke.sh   (needs .venv with the test extra: `build`)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PROGRESS_TAG=${PROGRESS_TAG:-wheel}
source scripts/progress.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/wheel-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT

step "python -m build (wheel and sdist)" .venv/bin/python -m build --outdir "$work/dist" .
wheel=$(ls "$work"/dist/*.whl)
sdist=$(ls "$work"/dist/*.tar.gz)
say "built $(basename "$wheel") and $(basename "$sdist")"
step "creating a clean venv" python3 -m venv "$work/venv"
py="$work/venv/bin/python"
step "installing torch==2.13.0 into it (pinned, first)" "$py" -m pip install --progress-bar off "torch==2.13.0"
step "installing the wheel with the export extra" "$py" -m pip install --progress-bar off "$wheel[export]"

mkdir "$work/user"
cp examples/claims.jsonl "$work/user/claims.jsonl"
cd "$work/user"  # outside the checkout: nothing of it is on sys.path
export CLAIM_VERIFIER_DATA_DIR="$work/data" HF_HUB_OFFLINE=1
where=$("$py" -c 'import verifier, verifier_export, export; print(verifier.__file__, export.__file__)')
case "$where" in
  "$root"/*|*" $root"/*) echo "the clean venv imported the checkout: $where" >&2; exit 1;;
esac
step "python -m export --smoke (installed)" "$py" -m export --smoke --output models/smoke
"$py" -m verifier verify claims.jsonl --model-dir models/smoke -q >results.jsonl
rows=$(wc -l <results.jsonl)
[[ "$rows" -eq "$(grep -c . claims.jsonl)" ]] || { echo "verify wrote $rows rows" >&2; exit 1; }
"$py" -c 'import json, sys; [json.loads(line) for line in open("results.jsonl")]'  # valid JSON Lines
"$py" -m verifier check results.jsonl >/dev/null
# the console script (verifier.__main__:console_main, which ends the process itself) gives the same rows
"$work/venv/bin/onnx-claim-verifier" verify claims.jsonl --model-dir models/smoke -q >script.jsonl
cmp -s results.jsonl script.jsonl || { echo "onnx-claim-verifier verify wrote other rows than python -m verifier" >&2; exit 1; }
say "installed wheel: export --smoke, verify ($rows rows of valid JSON Lines, the same through the onnx-claim-verifier script) and check work outside the checkout"

step "installing the sdist over it (built from source)" "$py" -m pip install --progress-bar off --no-deps --force-reinstall "$sdist"
"$py" -m export --help >/dev/null
"$py" -m verifier verify claims.jsonl --model-dir models/smoke -q | "$py" -m verifier check - >/dev/null
say "installed sdist: export and verify | check work outside the checkout"
