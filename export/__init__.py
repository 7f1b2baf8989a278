"""Export a three-label NLI cross-encoder to a self-describing ONNX model directory.

Usage::

    python -m export --model cross-encoder/nli-deberta-v3-base \\
        --revision 6c749ce3425cd33b46d187e45b92bbf96ee12ec7
    python -m export --model path/to/local/hf-dir --output models/my-model
    python -m export --smoke        # seeded tiny random model, plumbing checks only

torch, transformers and optimum-onnx (the ``export`` extra) are imported inside
functions; importing this package is cheap.
"""
