"""``python -m export.variants`` in a checkout: a shim over :mod:`verifier_export.variants`."""
