"""A recorded file read once into private memory and hashed there: what an imported compiled model runs.

OpenVINO imports a compiled model from memory and keeps pointing into it
(:func:`verifier.engine.ov_session.import_compiled`). Reading the file into a
private buffer and hashing the file separately costs two reads of it, and the
two compete for the cores and the memory bus. :func:`read_hashed` reads the
file once into anonymous memory and hashes that memory in a second thread;
the caller starts the import as soon as the read ends, and checks the digest (:meth:`HashedBuffer.check`)
before anything built from the buffer is used. The digest is of the very
bytes that run, so a write to the file during or after the read cannot change
a running model (docs/security.md). Measured in docs/performance.md ("Cold start
of the bf16 variant").
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import threading
from typing import Callable, Iterator, Optional

import numpy as np

from ..types import ClaimVerificationError

__all__ = ["MAX_READ_BYTES", "HashedBuffer", "read_hashed", "checked_buffer"]

#: The most one read call asks for (Linux reads at most 0x7ffff000 bytes a call).
MAX_READ_BYTES = 1 << 30


class HashedBuffer:
    """A file's bytes in a private, writable uint8 array, with their sha256 computed beside the read.

    Attributes:
        array: the bytes, uint8, shape (size,), C-contiguous; anonymous memory, never a file mapping.
        where: how to name the file in messages.
    """

    def __init__(self, array: np.ndarray, where: str, expected_sha256: str, hashing: threading.Thread, digest: "hashlib._Hash") -> None:
        self.array = array
        self.where = where
        self._expected = expected_sha256
        self._hashing = hashing
        self._digest = digest
        self._checked: Optional[bool] = None

    def check(self) -> None:
        """Wait for the hash of every byte and compare it with the recorded one.

        Raises:
            ClaimVerificationError: the sha256 of the bytes read is not the recorded one.
        """
        self._hashing.join()
        if self._checked is None:
            self._checked = self._digest.hexdigest() == self._expected
        if not self._checked:
            raise ClaimVerificationError(f"{self.where}: sha256 {self._digest.hexdigest()} != manifest {self._expected}")


def read_hashed(fd: int, size: int, sha256: str, *, where: str) -> HashedBuffer:
    """Read ``size`` bytes of open descriptor ``fd`` into private memory, then hash them in a second thread.

    The read is one system call (holding no GIL) and the hash one ``hashlib``
    call over the whole buffer (holding no GIL), started before this function
    returns: work the caller does next in Python (parsing the tokenizer holds the
    GIL throughout) cannot stall either, as it stalled a loop over chunks
    (docs/performance.md, "Cold start of the bf16 variant").

    Args:
        fd: a descriptor open for reading (positional reads: its offset is not used).
        size: the recorded size in bytes (the file must still have them all).
        sha256: the recorded hex digest, checked by :meth:`HashedBuffer.check`.
        where: how to name the file in messages.

    Returns:
        A :class:`HashedBuffer` whose read is complete and whose hash may still be running.

    Raises:
        ClaimVerificationError: the file ended before ``size`` bytes, or could not be read.
    """
    region = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    view = memoryview(region)[:size]
    done = 0
    try:
        while done < size:  # one call unless the kernel returns a short read
            read = os.preadv(fd, [view[done : min(size, done + MAX_READ_BYTES)]], done)
            if not read:
                raise ClaimVerificationError(f"{where}: file shrank while it was read ({done} of {size} bytes)")
            done += read
    except OSError as exc:
        raise ClaimVerificationError(f"cannot read {where}: {exc.strerror or exc}") from exc
    digest = hashlib.sha256()
    started = threading.Event()

    def hash_buffer() -> None:
        started.set()  # the GIL is released inside the update, a few bytecodes later
        digest.update(view)

    hashing = threading.Thread(target=hash_buffer, name="claim-verifier-hash", daemon=True)
    hashing.start()
    started.wait()
    array = np.frombuffer(region, dtype=np.uint8, count=size)
    return HashedBuffer(array, where, sha256, hashing, digest)


@contextlib.contextmanager
def checked_buffer(open_fd: Callable[[], int], size: int, sha256: str, *, where: str) -> Iterator[np.ndarray]:
    """:func:`read_hashed` of the descriptor ``open_fd()`` returns (closed after the read); the block
    gets the array, and the digest is checked when the block ends, before anything built in it is
    used (also when the block raises: a buffer that does not match is then the reason).

    Raises:
        ClaimVerificationError: as :func:`read_hashed` and :meth:`HashedBuffer.check`.
    """
    fd = open_fd()
    try:
        hashed = read_hashed(fd, size, sha256, where=where)
    finally:
        os.close(fd)
    try:
        yield hashed.array
    except BaseException:
        hashed.check()
        raise
    hashed.check()
