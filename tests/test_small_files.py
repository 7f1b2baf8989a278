"""Key, API key and pointer files are read bounded and never block (verifier/small_files.py).

Regression: ``--sign-key /dev/zero``, ``--public-key /dev/zero`` and ``serve --api-key-file /dev/zero``
read until the process was killed (24 GB), and a FIFO as the public key or the model pointer
blocked forever. Each read below runs in a thread that must finish within seconds.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from verifier.options import pointer_path, recorded_model_dir
from verifier.small_files import SMALL_FILE_LIMIT, SmallFileError, read_small_file


def _finishes(call: Callable[[], Any], seconds: float = 10.0) -> Any:
    """``call()``'s result or exception, failing the test if it has not returned within ``seconds``."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("value", call()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still reading after {seconds} s: a FIFO or device was waited on"
    return outcome[0]


def _capped(code: str) -> str:
    """Run ``code`` in a fresh interpreter whose memory is capped at 2 GiB (a read of /dev/zero that
    regressed fails there with MemoryError instead of exhausting the machine); its stderr + stdout."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, preexec_fn=cap)
    return done.stdout + done.stderr


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "key.fifo"
    os.mkfifo(path)
    return path


def test_a_regular_file_is_read_whole_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"x" * SMALL_FILE_LIMIT)
    assert read_small_file(path, "key") == b"x" * SMALL_FILE_LIMIT
    path.write_bytes(b"x" * (SMALL_FILE_LIMIT + 1))
    with pytest.raises(SmallFileError, match=f"key {path}: is over {SMALL_FILE_LIMIT} bytes"):
        read_small_file(path, "key")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_what_is_not_a_regular_file_is_refused_without_reading_or_waiting(tmp_path: Path, kind: str) -> None:
    path = _fifo(tmp_path) if kind == "fifo" else tmp_path
    status, value = _finishes(lambda: read_small_file(path, "signing key"))
    assert status == "error" and isinstance(value, SmallFileError) and isinstance(value, ValueError)
    assert str(value).startswith(f"signing key {path}: is not a regular file")


def test_a_missing_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(SmallFileError, match="does not exist"):
        read_small_file(tmp_path / "absent", "public key")


def test_dev_zero_as_a_key_api_key_or_pointer_is_refused_without_reading_it(tmp_path: Path) -> None:
    pointer_dir = tmp_path / "data"
    out = _capped(
        "import os, pathlib\n"
        f"os.environ['CLAIM_VERIFIER_DATA_DIR'] = {str(pointer_dir)!r}\n"
        "from verifier.small_files import read_small_file\n"
        "from verifier.options import pointer_path, recorded_model_dir\n"
        "try:\n    read_small_file('/dev/zero', 'signing key')\nexcept ValueError as exc:\n    print('refused:', exc)\n"
        "pointer = pointer_path('org/model', '0' * 40)\npointer.parent.mkdir(parents=True)\n"
        "pointer.symlink_to('/dev/zero')\nprint('pointer:', recorded_model_dir('org/model', '0' * 40))\n"
    )
    assert "refused: signing key /dev/zero: is not a regular file (a FIFO, device or socket)" in out, out
    assert "pointer: None" in out, out


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_keys_for_signing_and_checking_refuse_devices_and_fifos(tmp_path: Path, target: str) -> None:
    pytest.importorskip("cryptography")
    if target == "/dev/zero":
        out = _capped(
            "from verifier.decision.signing import load_private_key, load_public_key\n"
            "for load in (load_private_key, load_public_key):\n"
            "    try:\n        load('/dev/zero')\n    except ValueError as exc:\n        print('refused:', exc)\n"
        )
        assert out.count("/dev/zero: is not a regular file") == 2, out
        return
    from verifier.decision.signing import load_private_key, load_public_key

    path = _fifo(tmp_path)
    for load in (load_private_key, load_public_key):
        status, value = _finishes(lambda: load(path))
        assert status == "error" and isinstance(value, ValueError) and "is not a regular file" in str(value)


def test_the_api_key_file_refuses_devices_and_fifos(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="needs the server extra: bash scripts/setup.sh export,test,server")
    out = _capped(
        "from verifier.serve.auth import read_api_key\n"
        "try:\n    read_api_key('/dev/zero')\nexcept ValueError as exc:\n    print('refused:', exc)\n"
    )
    assert "refused: API key file /dev/zero: is not a regular file" in out, out
    from verifier.serve.auth import read_api_key

    status, value = _finishes(lambda: read_api_key(_fifo(tmp_path)))
    assert status == "error" and isinstance(value, ValueError) and "is not a regular file" in str(value)


def test_a_model_pointer_replaced_by_a_fifo_is_no_pointer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAIM_VERIFIER_DATA_DIR", str(tmp_path / "data"))
    pointer = pointer_path("org/model", "0" * 40)
    pointer.parent.mkdir(parents=True)
    os.mkfifo(pointer)
    assert _finishes(lambda: recorded_model_dir("org/model", "0" * 40)) == ("value", None)
