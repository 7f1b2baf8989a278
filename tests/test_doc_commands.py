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
import os
import shlex
import subprocess
import sys
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
    from bench.bundle_liveness import build_parser as bundle_liveness_parser
    from bench.engine_identity import build_parser as engine_identity_parser
    from bench.pair_worker import build_parser as pair_worker_parser
    from bench.peers import build_parser as peers_parser
    from bench.prme_e2e import build_parser as prme_e2e_parser
    from bench.profile import build_parser as profile_parser
    from bench.ray_node_loss import build_parser as ray_node_loss_parser
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
        "bench.engine_identity": engine_identity_parser,
        "bench.bundle_liveness": bundle_liveness_parser, "bench.ray_node_loss": ray_node_loss_parser,
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


# ---------------------------------------------------------------- every snippet runs, or says what it needs

#: Marks the fenced block right below it as a fragment, with what it needs to run: ``<!-- fragment: needs ... -->``.
FRAGMENT = re.compile(r"<!-- fragment: (.+?) -->\n *$", re.S)
SNIPPET_LANGUAGES = ("python", "bash", "sh", "shell", "console")
#: What a snippet run here must not do (install, reach the network or other machines, serve until stopped).
_NEVER_RUN = re.compile(r"scripts/setup|pip install|\bcurl\b|\bssh\b|\brsync\b|ray start|verifier serve|s3://")
_SNIPPET_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _snippets() -> Iterator[tuple[Path, int, str, str, str | None]]:
    """``(doc, line, language, body, fragment note or None)`` of every fenced Python and shell block."""
    for path in _SNIPPET_DOCS:
        text = path.read_text(encoding="utf-8")
        for block in _BLOCK.finditer(text):
            if block.group(1) not in SNIPPET_LANGUAGES:
                continue
            before = text[: block.start()]
            note = FRAGMENT.search(before[-400:])
            yield path, before.count("\n") + 1, block.group(1), block.group(2), note.group(1) if note else None


def _scratch(tmp_path: Path, smoke_model: Path) -> tuple[Path, dict[str, str]]:
    """A working directory laid out as the checkout the docs speak of, and the environment to run in.

    ``examples/`` and ``.venv`` are the checkout's; ``models/tiny-deberta-v2-smoke-seed0`` is the session's
    tiny random-weights export, which also stands in for the pinned model (``$CLAIM_VERIFIER_MODEL_DIR``):
    no network, and no export in the test."""
    work = tmp_path / "checkout"
    (work / "models").mkdir(parents=True)
    (work / "examples").symlink_to(ROOT / "examples")
    (work / "models" / "tiny-deberta-v2-smoke-seed0").symlink_to(smoke_model)
    if sys.prefix != sys.base_prefix:  # a virtual environment: the docs' .venv/bin/python is this interpreter
        (work / ".venv").symlink_to(sys.prefix)
    else:
        (work / ".venv" / "bin").mkdir(parents=True)
        (work / ".venv" / "bin" / "python").symlink_to(sys.executable)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "CLAIM_VERIFIER_MODEL_DIR": str(work / "models" / "tiny-deberta-v2-smoke-seed0")}
    return work, env


def test_every_snippet_runs_or_says_what_it_needs() -> None:
    """Regression (issue 50): README's "Coming from PRME" raised ``SyntaxError: 'await' outside function``
    and used an undefined ``response``. Every fenced Python and shell block of README.md and docs/ is now
    run by the test below, or marked with ``<!-- fragment: what it needs -->`` on the line above it."""
    run, marked = 0, 0
    for path, line, _, body, note in _snippets():
        where = f"{path.relative_to(ROOT)}:{line}"
        if note is None:
            assert not _NEVER_RUN.search(body), f"{where}: installs or reaches out; mark it <!-- fragment: ... -->"
            run += 1
        else:
            assert len(note.split()) >= 3, f"{where}: say what the fragment needs: {note!r}"
            marked += 1
    assert run >= 8 and marked >= 10, (run, marked)


@pytest.mark.slow
def test_the_snippets_run_as_written(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The unmarked snippets run offline: the Python blocks of each doc in order, in one interpreter (a
    later block may use what an earlier one made, as a reader would), the shell blocks each in ``bash -e``,
    ``>>>`` blocks as doctests, all in a scratch directory laid out as the checkout."""
    import doctest

    work, env = _scratch(tmp_path, tiny_model_dir)
    scripts: dict[Path, list[str]] = {}
    for path, line, language, body, note in _snippets():
        if note is not None:
            continue
        where = f"{path.relative_to(ROOT)}:{line}"
        if language == "python" and body.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(body, {}, where, str(path), line)
            runner = doctest.DocTestRunner()
            runner.run(test, out=lambda text: None)
            assert runner.failures == 0, f"{where}: the doctest fails"
        elif language == "python":
            scripts.setdefault(path, []).append(f"# {where}\n{body}")
        else:
            if language == "console":
                body = "\n".join(text[2:] for text in body.splitlines() if text.startswith("$ "))
            proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    for path, parts in scripts.items():
        proc = subprocess.run([sys.executable, "-c", "\n".join(parts)], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"{path.relative_to(ROOT)}: {proc.stderr[-2000:]}"
