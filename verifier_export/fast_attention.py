"""An exact, cheaper DeBERTa-v2/v3 relative-attention bias for export (``span_sliced_attention``).

The Hugging Face implementation (``DisentangledSelfAttention.disentangled_attention_bias``,
transformers 4.57) computes, in every layer and for every sequence, the
content->position (c2p) and position->content (p2c) scores against **all**
2k = 512 relative-position embeddings, after ``repeat``-ing the projected
embeddings once per batch row and head, and then gathers the L x L scores it
needs. A sequence of L tokens only ever uses relative buckets in
[-(L-1), L-1] (and never beyond +-(k-1)), so for the short pairs this engine
scores (30-60 tokens) most of that work -- and most of the memory traffic of
the ``Tile`` and ``GatherElements`` nodes -- is wasted: the profile of the
exported DeBERTa-v3-base at 32 x 48 tokens shows c2p/p2c matmuls, Tile and
GatherElements at ~25 % of float32 and ~40 % of int8 run time.

:func:`span_sliced_attention` is a context manager that, while active,
replaces that method with one that

* projects the 2k embeddings with the layer's own ``query_proj``/``key_proj``
  exactly as before (an input-independent value: onnxruntime folds it into a
  constant),
* uses only the table rows a length-L batch can reach, ``k + bucket(d)``
  for the distances |d| < L (the same rows transformers gathers from, so the
  same numbers; its clamp to [0, 2k - 1] never binds there),
* multiplies with broadcasting (batch x heads x L x d_h by heads x d_h x 2L)
  instead of tiling the table per batch row,
* and picks the L x L scores without a gather: the table's rows are put in
  the order of the distances d = L-1, ..., -(L-1) a length-L batch uses
  (row ``k + bucket(d)``, a gather of 2L rows of a constant), so the score of
  query i and key j sits in column L-1-i+j of row i, and one slice of the
  flattened (L x 2L) scores followed by a reshape lines them up (the
  "relative shift" of Transformer-XL, Dai et al. 2019, section 3.3). This
  replaces the ``Expand`` of a (batch x heads x L x L) int64 index and the
  ``GatherElements`` over it, which onnxruntime's profile
  (``python -m bench.profile``, docs/performance.md) showed at 13 % of
  float32 and 25 % of int8 kernel time at 192 tokens; the scale is divided
  into the constant table instead of the scores.

The arithmetic of every score is unchanged (dot products of the same vectors);
only float summation order may differ, far below the export's 1e-4 parity
gate, which still decides. The traced helper is TorchScript (like
transformers' own ``build_rpos``), so the ONNX graph keeps L dynamic.

Usage (export side)::

    with span_sliced_attention():
        export_onnx(torch_model, path)      # the parity gate then checks it as usual

Only models whose attention is ``DisentangledSelfAttention`` with relative
attention and ``share_att_key`` are affected (DeBERTa-v3); anything else runs
the original method.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

__all__ = ["span_sliced_attention", "patched_bias", "constant_scale", "additive_mask_forward", "ADDITIVE_MASK_VERSIONS"]


def _script_core() -> Any:
    from typing import Optional

    import torch

    @torch.jit.script
    def skew(scores: torch.Tensor, length: int) -> torch.Tensor:
        # scores: (B, H, L, 2L) against distances d = L-1-n (n = 0..2L-1, the last column unused);
        # returns (B, H, L, L) with out[..., i, j] = scores[..., i, L-1-i+j], the column of d = i - j:
        # flat index i*2L + (L-1-i+j) = (L-1) + i*(2L-1) + j, so one slice and two reshapes.
        flat = scores.reshape(scores.size(0), scores.size(1), 2 * length * length)
        flat = flat[:, :, length - 1 : length - 1 + length * (2 * length - 1)]
        return flat.reshape(scores.size(0), scores.size(1), length, 2 * length - 1)[:, :, :, :length]

    @torch.jit.script
    def span_bias(
        query_layer: torch.Tensor,
        key_layer: torch.Tensor,
        relative_pos: torch.Tensor,
        pos_key: torch.Tensor,
        pos_query: torch.Tensor,
        att_span: int,
        num_heads: int,
        scale: torch.Tensor,
        c2p: bool,
        p2c: bool,
    ) -> torch.Tensor:
        # query_layer/key_layer: (B*H, L, dh), same L; relative_pos: (1, 1, L, L) bucketed distances
        # bucket(i - j); pos_key/pos_query: (2k, H*dh) projected relative embeddings (input independent).
        length = query_layer.size(-2)
        span = min(length, att_span)
        low = att_span - span  # the table rows transformers can reach for this length ...
        high = att_span + span - 1  # ... (its clamp of r + k to [0, 2k - 1] never binds inside them)
        rows = query_layer.size(0)
        head_dim = query_layer.size(-1)
        batch = rows // num_heads
        rel = relative_pos[0, 0]
        # bucket(d) for d = L-1, ..., 0 (column 0) and d = -1, ..., -(L-1) (row 0), plus one unused
        # entry so that the skew is a reshape: 2L distances, descending.
        buckets = torch.cat([rel[:, 0].flip(0), rel[0, 1:], rel[0, :1]])
        # The tables are divided by the scale before the rows are picked (the same quotient per element, so
        # the same numbers): with the scale a constant (constant_scale) the division folds into the constant.
        score: Optional[torch.Tensor] = None
        if c2p:
            # c2p[i, j] = q_i . K_r[k + bucket(i - j)] / scale
            index = torch.clamp(buckets + att_span, low, high)
            table = (pos_key / scale.to(dtype=pos_key.dtype)).index_select(0, index).view(2 * length, num_heads, head_dim)
            scores = torch.matmul(query_layer.view(batch, num_heads, length, head_dim), table.permute(1, 2, 0).unsqueeze(0))
            score = skew(scores, length)
        if p2c:
            # p2c[i, j] = k_j . Q_r[k - bucket(j - i)] / scale: skew over (j, i), then transpose
            index = torch.clamp(att_span - buckets, low, high)
            table = (pos_query / scale.to(dtype=pos_query.dtype)).index_select(0, index).view(2 * length, num_heads, head_dim)
            scores = torch.matmul(key_layer.view(batch, num_heads, length, head_dim), table.permute(1, 2, 0).unsqueeze(0))
            part = skew(scores, length).transpose(-1, -2)
            score = part if score is None else score + part
        if score is None:  # neither c2p nor p2c: no bias (the first term is added to nothing, not to zeros)
            return torch.zeros([rows, length, length], dtype=query_layer.dtype, device=query_layer.device)
        return score.view(rows, length, length)

    return span_bias


_CORE: Any = None


def patched_bias(
    self: Any, query_layer: Any, key_layer: Any, relative_pos: Any, rel_embeddings: Any, scale_factor: int
) -> Any:
    """Drop-in replacement of ``DisentangledSelfAttention.disentangled_attention_bias`` (see module doc)."""
    global _CORE
    import torch
    from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

    if not self.share_att_key or query_layer.size(-2) != key_layer.size(-2):
        return _ORIGINAL(self, query_layer, key_layer, relative_pos, rel_embeddings, scale_factor)
    if _CORE is None:
        _CORE = _script_core()
    if relative_pos is None:
        relative_pos = deberta.build_relative_position(
            query_layer, key_layer, bucket_size=self.position_buckets, max_position=self.max_relative_positions
        )
    if relative_pos.dim() == 2:
        relative_pos = relative_pos.unsqueeze(0).unsqueeze(0)
    elif relative_pos.dim() == 3:
        relative_pos = relative_pos.unsqueeze(1)
    elif relative_pos.dim() != 4:
        raise ValueError(f"Relative position ids must be of dim 2 or 3 or 4. {relative_pos.dim()}")
    att_span = self.pos_ebd_size
    relative_pos = relative_pos.to(device=query_layer.device, dtype=torch.long)
    table = rel_embeddings[0 : att_span * 2, :]
    pos_key = self.key_proj(table)
    pos_query = self.query_proj(table)
    scale = deberta.scaled_size_sqrt(query_layer, scale_factor)
    return _CORE(
        query_layer,
        key_layer,
        relative_pos,
        pos_key,
        pos_query,
        att_span,
        self.num_attention_heads,
        scale,
        "c2p" in self.pos_att_type,
        "p2c" in self.pos_att_type,
    )


_ORIGINAL: Any = None


#: transformers versions whose ``DisentangledSelfAttention.forward`` :func:`additive_mask_forward` copies
#: (4.57.x, the exporter's pin); under any other version the stock ``forward`` runs.
ADDITIVE_MASK_VERSIONS = ("4.57.",)


def additive_mask_forward(
    self: Any,
    hidden_states: Any,
    attention_mask: Any,
    output_attentions: bool = False,
    query_states: Any = None,
    relative_pos: Any = None,
    rel_embeddings: Any = None,
) -> Any:
    """transformers 4.57's ``DisentangledSelfAttention.forward``, with the attention mask added as a bias.

    transformers masks the scores with ``masked_fill(~mask, finfo.min)``,
    which exports as a ``Where`` over the (batch x heads x L x L) scores, and
    onnxruntime's ``Where`` with a broadcast condition ran 3.6x (48 tokens)
    to 5.9x (192 tokens) slower than a broadcast ``Add`` of the same shapes
    (docs/performance.md). Here the scores get ``(~mask) * finfo.min`` added
    instead. That is the same float32 result wherever |score| < 2**103
    (half the spacing of float32 numbers near ``finfo.min``): an allowed
    position gets ``+ 0``, a masked one rounds to exactly ``finfo.min``, so
    the softmax sees the same values (a fully masked padding row included).
    Everything else is the original code.
    """
    import torch
    from torch import nn
    from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

    if query_states is None:
        query_states = hidden_states
    query_layer = self.transpose_for_scores(self.query_proj(query_states), self.num_attention_heads)
    key_layer = self.transpose_for_scores(self.key_proj(hidden_states), self.num_attention_heads)
    value_layer = self.transpose_for_scores(self.value_proj(hidden_states), self.num_attention_heads)

    rel_att = None
    scale_factor = 1
    if "c2p" in self.pos_att_type:
        scale_factor += 1
    if "p2c" in self.pos_att_type:
        scale_factor += 1
    scale = deberta.scaled_size_sqrt(query_layer, scale_factor)
    attention_scores = torch.bmm(query_layer, key_layer.transpose(-1, -2) / scale.to(dtype=query_layer.dtype))
    if self.relative_attention:
        rel_embeddings = self.pos_dropout(rel_embeddings)
        rel_att = self.disentangled_attention_bias(query_layer, key_layer, relative_pos, rel_embeddings, scale_factor)

    if rel_att is not None:
        attention_scores = attention_scores + rel_att
    attention_scores = attention_scores.view(
        -1, self.num_attention_heads, attention_scores.size(-2), attention_scores.size(-1)
    )

    attention_mask = attention_mask.bool()
    masked = (~attention_mask).to(dtype=attention_scores.dtype) * torch.finfo(query_layer.dtype).min
    attention_scores = attention_scores + masked
    attention_probs = nn.functional.softmax(attention_scores, dim=-1)

    attention_probs = self.dropout(attention_probs)
    context_layer = torch.bmm(attention_probs.view(-1, attention_probs.size(-2), attention_probs.size(-1)), value_layer)
    context_layer = (
        context_layer.view(-1, self.num_attention_heads, context_layer.size(-2), context_layer.size(-1))
        .permute(0, 2, 1, 3)
        .contiguous()
    )
    new_context_layer_shape = context_layer.size()[:-2] + (-1,)
    context_layer = context_layer.view(new_context_layer_shape)
    if not output_attentions:
        return (context_layer, None)
    return (context_layer, attention_probs)


def constant_scale(query_layer: Any, scale_factor: int) -> Any:
    """Drop-in for transformers' ``scaled_size_sqrt`` whose value is a constant of the exported graph.

    transformers computes ``sqrt(head_size * scale_factor)`` from the traced
    shape of ``query_layer``, so the ONNX graph recomputes it at run time
    (Shape, Slice, Squeeze, Cast, Mul, Sqrt) and divides the transposed keys
    by a tensor onnxruntime cannot treat as a constant: the ``Transpose`` and
    ``Div`` before the score ``MatMul`` then run as their own kernels (4.3 %
    and 0.7 % of int8 kernel time at 40 tokens, ``python -m bench.profile``).
    The head size is fixed by the model's configuration, so the same float32
    value (``torch.sqrt`` of the same float32 product) is computed here, at
    trace time, and becomes a constant; onnxruntime then folds the division
    and the transpose into one ``FusedMatMul``.
    """
    import torch

    return torch.sqrt(torch.tensor(float(int(query_layer.size(-1)) * scale_factor), dtype=torch.float))


@contextlib.contextmanager
def span_sliced_attention() -> Iterator[None]:
    """While active, DeBERTa-v2/v3 attention uses :func:`patched_bias`, :func:`constant_scale` and, under
    transformers 4.57, :func:`additive_mask_forward` (all restored on exit).

    Raises:
        ImportError: transformers is not installed (the ``export`` extra).
    """
    global _ORIGINAL
    from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

    import transformers

    cls = deberta.DisentangledSelfAttention
    original = cls.disentangled_attention_bias
    original_forward = cls.forward
    original_scale = deberta.scaled_size_sqrt
    _ORIGINAL = original
    cls.disentangled_attention_bias = patched_bias  # type: ignore[method-assign]
    if transformers.__version__.startswith(ADDITIVE_MASK_VERSIONS):
        cls.forward = additive_mask_forward  # type: ignore[method-assign]
    deberta.scaled_size_sqrt = constant_scale
    try:
        yield
    finally:
        cls.disentangled_attention_bias = original  # type: ignore[method-assign]
        cls.forward = original_forward  # type: ignore[method-assign]
        deberta.scaled_size_sqrt = original_scale
