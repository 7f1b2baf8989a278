"""User-facing wording of errors: pydantic validation errors and exceptions on one line.

Shared by the library, the command line and the exporter, so a malformed
field reads the same everywhere (``field evidence.0.memory_id: not a valid
UUID``) and no message carries pydantic's documentation links.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

__all__ = [
    "DISTRIBUTION", "PYDANTIC_WORDS", "describe_validation_error", "strip_pydantic_links", "one_line", "install_hint",
    "export_command", "python_command", "printable",
]

#: The distribution's name (what pip and importlib.metadata call it; not published to PyPI); the import package is ``verifier``.
DISTRIBUTION = "onnx-claim-verifier"

#: pydantic error types worded for users; other types keep pydantic's own message.
PYDANTIC_WORDS: dict[str, str] = {
    "missing": "required field is missing",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "uuid_type": "not a valid UUID",
    "uuid_parsing": "not a valid UUID",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "extra_forbidden": "unknown field",
}
#: The link pydantic appends to its messages ("For further information visit https://errors.pydantic.dev/...").
_PYDANTIC_URL = re.compile(r"\s*For further information visit https?://errors\.pydantic\.dev/\S*")


def strip_pydantic_links(text: str) -> str:
    """``text`` without pydantic's "For further information visit https://errors.pydantic.dev/..." links."""
    return _PYDANTIC_URL.sub("", text)


def describe_validation_error(exc: ValidationError) -> tuple[Optional[str], str, int]:
    """The first error of ``exc`` in user words: ``(field, message, count of all errors)``.

    ``field`` is the dotted location (``evidence.0.memory_id``), ``None`` for
    the whole document; ``message`` uses :data:`PYDANTIC_WORDS` where it can
    (``must be a list``), ``invalid JSON: ...`` for a JSON syntax error, and
    pydantic's own message otherwise, without its link.
    """
    errors = exc.errors(include_url=False)
    first = errors[0]
    kind = str(first.get("type", ""))
    if kind == "json_invalid":
        detail = (first.get("ctx") or {}).get("error")
        message = f"invalid JSON: {detail}" if detail else "invalid JSON"
    else:
        message = PYDANTIC_WORDS.get(kind) or str(first.get("msg", "invalid value"))
    location = ".".join(str(part) for part in first.get("loc", ())) or None
    return location, message, len(errors)


def install_hint(extra: str) -> str:
    """How to install an extra, for messages: in a checkout with the set-up script, else from the checkout
    or a wheel built there (nothing is published to PyPI, so installing the distribution by its name
    finds nothing; issue 34).

    Example:
        >>> install_hint("server")
        "in a checkout: bash scripts/setup.sh export,test,server; elsewhere: pip install '/path/to/checkout[server]' or a wheel built there with python -m build (not on PyPI)"
    """
    return (f"in a checkout: bash scripts/setup.sh export,test,{extra}; elsewhere: pip install "
            f"'/path/to/checkout[{extra}]' or a wheel built there with python -m build (not on PyPI)")


def one_line(exc: BaseException) -> str:
    """``str(exc)`` on one line, without pydantic links (the type name when the text is empty)."""
    return " ".join(strip_pydantic_links(str(exc)).split()) or type(exc).__name__


#: Where ``python -m export --smoke`` writes by default (verifier_export.pipeline.export_smoke, seed 0),
#: relative to the working directory.
SMOKE_DIR = Path("models") / "tiny-deberta-v2-smoke-seed0"


#: The distribution's console scripts (pyproject.toml, ``[project.scripts]``).
VERIFIER_SCRIPT = "onnx-claim-verifier"
EXPORT_SCRIPT = "onnx-claim-verifier-export"


def python_command() -> str:
    """This interpreter as a user would type it here, for messages that give a command to run.

    ``python`` when that is what ``python`` on ``PATH`` runs (an activated virtualenv); else
    the interpreter's path, relative only for a virtualenv right in the working directory
    (``.venv/bin/python`` in a checkout whose virtualenv is not activated: a plain ``python``
    there is another interpreter, without this project's packages), absolute otherwise (issue 50:
    ``newcomer/wheelvenv/bin/python3`` read as a path from elsewhere).
    """
    import shutil
    import sys

    executable = os.path.abspath(sys.executable or "python")
    found = shutil.which("python")
    if found and os.path.abspath(found) == executable:
        return "python"
    try:
        relative = Path(executable).relative_to(Path.cwd())
    except ValueError:
        return executable
    return str(relative) if len(relative.parts) <= 3 else executable


def console_script(name: str) -> Optional[str]:
    """The console script ``name`` as a user would type it, when this process was started by one of the
    distribution's console scripts and ``name`` is installed beside it: bare when ``PATH`` finds that one,
    else its absolute path. ``None`` otherwise (``python -m ...``): messages then name the module.

    Issue 50: after ``onnx-claim-verifier-export`` a message said ``.../python3 -m verifier_export`` while
    ``onnx-claim-verifier verify`` said ``... -m export``; now both name the scripts the user runs.
    """
    import shutil
    import sys

    started = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if started not in (VERIFIER_SCRIPT, EXPORT_SCRIPT):
        return None
    script = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), name)
    if not os.path.isfile(script):
        return None
    found = shutil.which(name)
    return name if found and os.path.abspath(found) == script else script


def verifier_command() -> str:
    """``python -m verifier`` as a user types it here (or the ``onnx-claim-verifier`` script they ran)."""
    return console_script(VERIFIER_SCRIPT) or f"{python_command()} -m verifier"


def variants_command(model_dir: "str | Path") -> str:
    """The command that adds variants to the export at ``model_dir`` (flags to follow)."""
    script = console_script(EXPORT_SCRIPT)
    if script is not None:  # the script has no .variants form: the same command through --output
        return f"{script} --output {model_dir}"
    return f"{export_command()}.variants {model_dir}"


def export_command() -> str:
    """The exporter as a user types it in the working directory, for messages that say how to export.

    ``python -m export`` where that runs this project's shim: a checkout (its
    ``export/`` directory comes first on ``sys.path``), or anywhere the
    distribution is installed (it installs the shim). Else, where another
    ``export`` package would answer (one in the working directory, say),
    ``python -m verifier_export``, which is the same command under its own name.
    ``python`` is :func:`python_command`. Under a console script, the ``onnx-claim-verifier-export``
    script beside it (:func:`console_script`).
    """
    import importlib.util

    script = console_script(EXPORT_SCRIPT)
    if script is not None:
        return script
    python = python_command()
    local = Path("export")
    if local.exists():  # `python -m` puts the working directory first: this one answers
        return f"{python} -m export" if _is_shim(local) else f"{python} -m verifier_export"
    try:
        spec = importlib.util.find_spec("export")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin and _is_shim(Path(spec.origin).parent):
        return f"{python} -m export"
    return f"{python} -m verifier_export"


def _is_shim(folder: Path) -> bool:
    """Whether ``folder`` is this project's ``export/`` shim (its ``__main__`` runs ``verifier_export``)."""
    try:
        return "verifier_export" in (folder / "__main__.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


#: Characters a terminal would act on instead of showing: C0/C1 controls (ESC starts colour, title and
#: cursor sequences) and the bidirectional overrides and isolates that reorder what follows.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` for a terminal: each control character (newline and tab aside) and bidi override as a
    visible escape (``\\x1b``, ``\\u202e``), so input echoed in a message cannot recolour, retitle or
    reorder the terminal. JSON output needs none of this (the encoder escapes controls itself)."""
    return _UNPRINTABLE.sub(lambda match: ascii(match.group())[1:-1], text)
