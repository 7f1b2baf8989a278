"""Every ``python -m ...`` command in the README's and docs' code blocks is one the program accepts.

The commands are taken from the fenced code blocks of README.md, docs/*.md,
examples/README.md and bench/README.md and handed to the program's own
argument parser (``build_parser().parse_args``), so a renamed flag, a
removed subcommand or a wrong value type in a documented command fails here.
Running them is out of reach for most (they need the real model, the hub or
minutes of CPU); ``tests/test_readme_clone.py`` runs the README's offline
path for real. Placeholders are filled: ``<hub id>`` becomes a word, ``$i``
becomes ``0``, and the ``[optional]`` parts of usage lines are left out.
Also checked: doc code blocks run commands with the README's interpreter,
``.venv/bin/python``, never a bare ``python``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path
from typing import Callable, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "README.md",
        ROOT / "bench" / "README.md"]
_BLOCK = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.S | re.M)


def _parsers() -> dict[str, Callable[[], argparse.ArgumentParser]]:
    from bench.__main__ import build_parser as bench_parser
    from bench.backends import build_parser as backends_parser
    from bench.bulk import build_parser as bulk_parser
    from bench.e2e_overhead import build_parser as e2e_overhead_parser
    from bench.e2e_profile import build_parser as e2e_profile_parser
    from bench.pair_worker import build_parser as pair_worker_parser
    from bench.peers import build_parser as peers_parser
    from bench.prme_e2e import build_parser as prme_e2e_parser
    from bench.profile import build_parser as profile_parser
    from bench.rss_curve import build_parser as rss_parser
    from bench.score_cache import build_parser as score_cache_parser
    from bench.strict_cost import build_parser as strict_cost_parser
    from verifier.cli import build_parser as verifier_parser
    from verifier_export.__main__ import build_parser as export_parser
    from verifier_export.variants.cli import build_parser as variants_parser

    return {
        "verifier": verifier_parser, "export": export_parser, "verifier_export": export_parser,
        "export.variants": variants_parser, "verifier_export.variants": variants_parser,
        "bench": bench_parser, "bench.profile": profile_parser, "bench.rss_curve": rss_parser,
        "bench.backends": backends_parser, "bench.bulk": bulk_parser, "bench.e2e_overhead": e2e_overhead_parser,
        "bench.e2e_profile": e2e_profile_parser, "bench.prme_e2e": prme_e2e_parser, "bench.score_cache": score_cache_parser,
        "bench.strict_cost": strict_cost_parser, "bench.peers": peers_parser, "bench.pair_worker": pair_worker_parser,
    }


def _commands() -> Iterator[tuple[str, str, list[str]]]:
    """``(where, module, arguments)`` of every ``python -m MODULE ...`` in a doc code block."""
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in _BLOCK.finditer(text):
            language, body = block.group(1), block.group(2)
            if language in ("json", "python", "jsonl"):
                continue
            line_number = text[: block.start()].count("\n") + 2
            for offset, line in enumerate(body.replace("\\\n", " ").splitlines()):
                line = re.sub(r"^\s*\$ ", "", line)
                line = re.sub(r"<[^>]+>", "PLACEHOLDER", line)
                line = re.sub(r"\$\{?\w+\}?", "0", line)
                if language == "text":
                    line = re.sub(r"\[[^\]]*\](\.\.\.)?", "", line)
                try:
                    tokens = shlex.split(line, comments=True)
                except ValueError:
                    continue
                for start, token in enumerate(tokens):
                    if token.endswith("python") and tokens[start + 1: start + 2] == ["-m"] and len(tokens) > start + 2:
                        rest = tokens[start + 3:]
                        for stop, word in enumerate(rest):
                            if word in ("&&", "||", "|", ";", "&"):
                                rest = rest[:stop]
                                break
                        yield f"{path.relative_to(ROOT)}:{line_number + offset}", tokens[start + 2], rest


COMMANDS = [command for command in _commands() if command[1] != "pytest"]


def test_the_docs_hold_commands_to_check() -> None:
    modules = {module for _, module, _ in COMMANDS}
    assert {"verifier", "export", "bench"} <= modules
    assert sum(module == "verifier" for _, module, _ in COMMANDS) >= 20


@pytest.mark.parametrize(("where", "module", "arguments"), COMMANDS, ids=[where for where, _, _ in COMMANDS])
def test_a_documented_command_parses(where: str, module: str, arguments: list[str]) -> None:
    parsers = _parsers()
    assert module in parsers, f"{where}: python -m {module}: give the module a build_parser() and list it in _parsers"
    parser = parsers[module]()
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(arguments)
    except SystemExit as exc:  # --help exits 0; a usage error exits 2
        assert exc.code == 0, f"{where}: python -m {module} {shlex.join(arguments)}: {said.getvalue().strip()}"


def test_doc_code_blocks_use_the_readmes_interpreter() -> None:
    bare = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in _BLOCK.finditer(text):
            if block.group(1) in ("json", "python", "jsonl"):
                continue
            for line in block.group(2).splitlines():
                if re.search(r"(^\s*|^\s*\$ |&& |\| )python3? -m ", line):
                    bare.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert bare == []
