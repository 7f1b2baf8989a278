"""verifier.engine.verified_buffer: a file read once into private memory, hashed there.

What runs (an imported OpenVINO compiled model points into this memory) must be
the bytes whose sha256 the manifest records: the digest is compared with
``hashlib`` over the file, computed here independently; a file changed after the
read must not change the buffer; a short file is refused, naming it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from verifier.engine.verified_buffer import read_hashed
from verifier.types import ClaimVerificationError


def _file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "model.bin"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("size", [0, 1, 4097, 3 * (1 << 20) + 5])
def test_the_buffer_holds_the_files_bytes_and_passes_its_recorded_digest(tmp_path: Path, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size=size, dtype=np.uint8).tobytes()
    path = _file(tmp_path, data)
    fd = os.open(path, os.O_RDONLY)
    try:
        hashed = read_hashed(fd, size, hashlib.sha256(data).hexdigest(), where="model.bin")
    finally:
        os.close(fd)
    hashed.check()
    assert hashed.array.dtype == np.uint8 and hashed.array.shape == (size,)
    assert hashed.array.tobytes() == data
    assert hashed.array.flags.writeable  # private memory OpenVINO may import in place


def test_other_bytes_than_recorded_are_refused_naming_both_digests(tmp_path: Path) -> None:
    data = b"weights " * 100_000
    recorded = hashlib.sha256(data).hexdigest()
    edited = data[:-1] + b"!"
    path = _file(tmp_path, edited)
    fd = os.open(path, os.O_RDONLY)
    try:
        hashed = read_hashed(fd, len(edited), recorded, where="dir: model.bin")
    finally:
        os.close(fd)
    with pytest.raises(ClaimVerificationError, match=f"dir: model.bin: sha256 {hashlib.sha256(edited).hexdigest()} != manifest {recorded}"):
        hashed.check()
    with pytest.raises(ClaimVerificationError):  # and every later check too
        hashed.check()


def test_a_file_shorter_than_recorded_is_refused(tmp_path: Path) -> None:
    data = b"x" * 1000
    path = _file(tmp_path, data)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(ClaimVerificationError, match=r"model.bin: file shrank while it was read \(1000 of 2000 bytes\)"):
            read_hashed(fd, 2000, hashlib.sha256(data).hexdigest(), where="model.bin")
    finally:
        os.close(fd)
    assert not [t for t in threading.enumerate() if t.name == "claim-verifier-hash"]  # no hashing thread left behind


def test_a_write_to_the_file_after_the_read_leaves_the_buffer_and_its_digest_alone(tmp_path: Path) -> None:
    data = os.urandom(1 << 20)
    path = _file(tmp_path, data)
    fd = os.open(path, os.O_RDONLY)
    try:
        hashed = read_hashed(fd, len(data), hashlib.sha256(data).hexdigest(), where="model.bin")
    finally:
        os.close(fd)
    with open(path, "r+b") as handle:  # in place, same inode
        handle.write(b"\0" * 4096)
    hashed.check()
    assert hashed.array.tobytes() == data
