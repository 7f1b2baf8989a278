"""``python -m export``: runs :func:`verifier_export.__main__.main` (see ``python -m export --help``)."""

from __future__ import annotations

import sys

from verifier_export.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
