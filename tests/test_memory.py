"""Memory the engine hands back: ``release_free_heap`` returns freed C-heap pages to the OS."""

from __future__ import annotations

import ctypes
import platform

import pytest

from verifier.session import release_free_heap

psutil = pytest.importorskip("psutil")

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_release_free_heap_returns_freed_pages_to_the_os() -> None:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    block, count = 4096, 40_000  # 160 MiB in small blocks (below the mmap threshold: they live in the heap)
    blocks = [libc.malloc(block) for _ in range(count)]
    assert all(blocks)
    for address in blocks:
        ctypes.memset(address, 1, block)  # touch every page so it is resident
    keeper = libc.malloc(block)  # allocated last: the heap top cannot shrink on its own
    try:
        for address in blocks:
            libc.free(address)
        before = _rss()
        assert release_free_heap() is True
        after = _rss()
        # glibc kept the freed 160 MiB resident; the trim gives back most of it.
        assert before - after > 100 * 2**20, (before, after)
    finally:
        libc.free(keeper)

