"""Memory the engine hands back: ``release_free_heap`` returns freed C-heap pages to the OS."""

from __future__ import annotations

import ctypes
import platform

import pytest

from verifier.engine.session import release_free_heap

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



def _captured_options(model_dir, **kwargs):  # type: ignore[no-untyped-def]
    from verifier.engine.scorer import OnnxScorer
    from verifier.engine.session import create_session

    seen = []

    def factory(model, options, **factory_kwargs):  # type: ignore[no-untyped-def]
        seen.append(options)
        return create_session(model, options, **factory_kwargs)

    OnnxScorer(model_dir, session_factory=factory, **kwargs).load()
    (options,) = seen
    return options


def test_engine_sets_the_arena_and_memory_pattern_on_purpose(tiny_model_dir) -> None:  # type: ignore[no-untyped-def]
    default = _captured_options(tiny_model_dir)
    assert (default.enable_cpu_mem_arena, default.enable_mem_pattern) == (True, False)
    chosen = _captured_options(tiny_model_dir, enable_cpu_mem_arena=False, enable_mem_pattern=True)
    assert (chosen.enable_cpu_mem_arena, chosen.enable_mem_pattern) == (False, True)


def test_runtime_options_carry_the_memory_settings_to_the_engine(tiny_model_dir) -> None:  # type: ignore[no-untyped-def]
    from verifier.engine.scorer import OnnxScorer
    from verifier.options import RuntimeOptions

    options = RuntimeOptions(model_dir=tiny_model_dir, enable_mem_pattern=True, enable_cpu_mem_arena=False)
    scorer = OnnxScorer.from_options(options, "any/model", "main")
    settings = scorer.session_settings
    assert (settings.enable_cpu_mem_arena, settings.enable_mem_pattern) == (False, True)
