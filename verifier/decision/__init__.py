"""The decision layer: everything that turns probabilities into a status, and nothing that runs a model.

Rooms (docs/architecture.md):

- :mod:`~verifier.decision.guards` — the reference speech-act, negation and value guards, segmentation;
- :mod:`~verifier.decision.strict`, :mod:`~verifier.decision.strict_text`, :mod:`~verifier.decision.strict_scope`,
  :mod:`~verifier.decision.strict_values`, :mod:`~verifier.decision.strict_reach`, :mod:`~verifier.decision.strict_reports` — the opt-in strict policy;
- :mod:`~verifier.decision.procedure` — the staged procedure, a generator of premises to score;
- :mod:`~verifier.decision.driver` — how those premises reach a scorer (one claim or many, sync or async);
- :mod:`~verifier.decision.audit` — canonical JSON, the five digests, the sealed result;
- :mod:`~verifier.decision.check` — a stored result's digests recomputed from its own fields;
- :mod:`~verifier.decision.bundle`, :mod:`~verifier.decision.packed` — packed context bundles (PRME's
  ``MemoryBundle`` included) and their citation rules.

It sees a model only through the scorer protocol (:mod:`verifier.scoring`),
imports the contract (:mod:`verifier.types`, :mod:`verifier.validation`), and
never imports :mod:`verifier.engine`, onnxruntime or tokenizers. This package
imports nothing itself.
"""
