"""``python -m export.variants DIR [--variants NAME...]``: build variants into the export at ``DIR``.

The same code path as ``python -m export --output DIR --variants NAME...`` on a
directory that already holds an export (:func:`verifier_export.variants.run_variants`);
without ``--variants`` it builds all of them.
"""

import sys

from .cli import main

sys.exit(main())
