"""The engine: everything that loads and runs a model, and nothing that decides.

(premise, hypothesis) pairs in, (entailment, contradiction, neutral)
probabilities out. Rooms (docs/architecture.md):

- :mod:`~verifier.engine.manifest` — the ``manifest.json`` schema and file-name rules;
- :mod:`~verifier.engine.golden` — ``golden.json``, the one softmax, the one re-check;
- :mod:`~verifier.engine.model_directory` — opening and verifying a model directory;
- :mod:`~verifier.engine.identity` — which directory a verifier uses, which identity results name;
- :mod:`~verifier.engine.session` — onnxruntime session options, providers, graph I/O;
- :mod:`~verifier.engine.tokenization` — the runtime tokenizer's one configuration;
- :mod:`~verifier.engine.batching` — token-budgeted, length-sorted padded batches;
- :mod:`~verifier.engine.loaded` — one loaded directory (files → session, tokenizer);
- :mod:`~verifier.engine.handle`, :mod:`~verifier.engine.args`, :mod:`~verifier.engine.scorer`
  — :class:`~verifier.engine.scorer.OnnxScorer`, the default scorer;
- :mod:`~verifier.engine.coalesce` — concurrent callers' pairs in shared passes;
- :mod:`~verifier.engine.score_store` — the opt-in persistent score store (no pair run twice).

The engine imports the contract (:mod:`verifier.types`, :mod:`verifier.options`)
and never :mod:`verifier.decision`; onnxruntime and tokenizers load only when a
model is first needed. This package imports nothing itself.
"""
