"""Checks whose verdict rests on what the grader measures or sees, never on what the student's
process reports.

- `expect_memory_measured_linear`: the memory a function needs, measured by the kernel in a
  fresh process (grader.judge.fresh) at increasing sizes, judged against a stated linear
  allowance.
- `expect_hidden_tiles_skipped`: causal tiled attention on inputs whose values are NaN from some
  key on; a tile the mask hides entirely, if computed, spreads the NaN (0 x NaN is NaN) into
  rows that may not see those keys. Only the outputs cross, and the grader judges them.
- `expect_step_reads_cache`: a KV cache's step on keys and values placed in the caches directly
  (no token produced them): its logits must follow them, which a step that recomputes the
  sequence from its tokens cannot do.

Shipped with the student edition like the other checks; the memory check measures only inside
the grader (elsewhere it says so and does nothing).
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from .compare import CheckFailure, expect_close, matches
from .memory import growth_exponent

MiB = 2**20
SIZES = (1024, 2048, 4096)  # lengths measured, in this order, in one fresh process
WIDTH = 16  # q, k and v: (n, WIDTH) float32
BLOCK = 256  # the tiles' size in the measured calls
# What a linear computation may use, counted from before the student's cells run: a fixed part
# (running the cells, receiving the inputs, a few tiles of scores and their temporaries; the
# reference needs about 7 MiB of it) and, per position, 1 KiB (the inputs received and copied,
# the output, float64 copies of q, k and v: the reference needs about 0.8 KiB). At the largest
# length that is 20 MiB, where one (n, n) float32 matrix takes 64 MiB: even with all the memory
# the process held before its cells ran (freed and reused unseen; about 4 MiB) a quadratic
# answer cannot fit.
FIXED_BYTES = 16 * MiB
PER_POSITION_BYTES = 1024


def _secret_generator() -> torch.Generator:
    """Inputs nobody can know before they are made (nothing can be computed for them ahead)."""
    return torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def _attention_rows(q, k, v, rows):
    """Plain attention for some rows, by PyTorch's own function (in float64): never a line of
    the course's solutions, which the student edition of this module must not carry."""
    return _sdpa(q[rows], k, v, is_causal=False)


def allowance(n: int) -> int:
    return FIXED_BYTES + PER_POSITION_BYTES * n


def expect_memory_measured_linear(name: str, what: str, sizes=SIZES, block: int = BLOCK):
    """Fail unless the student's `name(q, k, v, block, block)` needs at most a linear allowance
    of memory at every size (in increasing order), measured from outside in one fresh process
    (fresh.measure_calls); returns {n: bytes}, or None outside the grader (nothing can be
    measured there)."""
    from grader.judge import fresh

    if not fresh.available():
        print(f"(the memory of {what} is measured when the grader runs this test)")
        return None
    g = _secret_generator()
    inputs = [tuple(torch.randn(n, WIDTH, generator=g) for _ in range(3)) for n in sizes]
    try:
        measured = fresh.measure_calls(name, [(q, k, v, block, block) for q, k, v in inputs])
    except Exception as e:  # its own failure, or one of the cells it needs
        raise CheckFailure(f"{what} could not be measured in a fresh process that runs only your "
                           f"cells up to it: {type(e).__name__}: {e}") from None
    for n, (q, k, v), out in zip(sizes, inputs, measured.values, strict=True):
        rows = torch.randperm(n, generator=g)[:32]
        if not (isinstance(out, torch.Tensor) and tuple(out.shape) == (n, WIDTH)
                and matches(out[rows], _attention_rows(q, k, v, rows), 1e-4, 1e-4)):
            raise CheckFailure(f"{what} returned wrong values when measured at n = {n} (q, k, v "
                               f"of shape ({n}, {WIDTH}), blocks of {block})")
    used = dict(zip(sizes, measured.peak_bytes, strict=True))
    table = ", ".join(f"n = {n}: {b / MiB:.1f} MiB" for n, b in used.items())
    p = growth_exponent(list(used), [max(b, 1) for b in used.values()])
    over = [n for n, b in used.items() if b > allowance(n)]
    if over:
        n = over[-1]
        raise CheckFailure(
            f"the memory {what} needs grows like n^{p:.2f} ({table}; measured by the kernel in "
            f"a fresh process, the lengths in turn); at n = {n} it needed {used[n] / MiB:.1f} "
            f"MiB, more than the {allowance(n) / MiB:.1f} MiB allowed ({FIXED_BYTES // MiB} MiB + "
            f"{PER_POSITION_BYTES} bytes per position: linear), where one ({n}, {n}) float32 "
            f"matrix takes {4 * n * n / MiB:.0f} MiB. Keep one (block_q, block_k) tile of scores "
            "at a time, never the whole score matrix.")
    print(f"the memory of {what} grows like n^{p:.2f} ({table})")
    return used


def expect_hidden_tiles_skipped(fn, what: str, length: int = 64, block: int = 8):
    """Fail unless causal `fn(q, k, v, block, block, True)` never computes a tile the mask hides
    entirely: for each block boundary p, values from key p on are NaN, and the rows before p
    (which may not see those keys) must still be right."""
    g = _secret_generator()
    for p in range(block, length, block):
        q, k, v = (torch.randn(length, 8, generator=g) for _ in range(3))
        poisoned = v.clone()
        poisoned[p:] = float("nan")
        out = fn(q, k, poisoned, block, block, True)
        what_rows = f"{what}, rows 0..{p - 1}, with the values of keys {p}.. set to NaN"
        if isinstance(out, torch.Tensor) and out.dim() == 2 and out.size(0) == length and \
                not torch.isfinite(out[:p]).all():
            clean = fn(q, k, v, block, block, True)  # the NaN came from the hidden keys?
            if isinstance(clean, torch.Tensor) and clean.shape == out.shape and \
                    matches(clean[:p], _causal(q[:p], k[:p], v[:p]), None, None):
                raise CheckFailure(
                    f"{what} computed tiles that the causal mask hides entirely: with the "
                    f"values of keys {p}..{length - 1} set to NaN, rows 0..{p - 1} (which may "
                    f"not see those keys) came out NaN (q, k, v of length {length}, blocks of "
                    f"{block}). A hidden tile must never be computed: stop the inner loop at "
                    "the last key of the block of queries.")
            what_rows = f"{what}, rows 0..{p - 1}"
            out = clean
        expect_close(out[:p] if isinstance(out, torch.Tensor) else out,
                     _causal(q[:p], k[:p], v[:p]), what_rows)


def _causal(q, k, v):
    return _sdpa(q, k, v, is_causal=True)


def _sdpa(q, k, v, is_causal: bool):
    out = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=is_causal)
    return out.to(q.dtype)


def expect_step_reads_cache(step, new_cache, reference_step, n_layer: int, shape, token, t: int,
                            what: str):
    """Fail unless `step(token, t, caches)` attends over what the caches hold: each of the
    `n_layer` caches gets keys and values of `shape` (B, H, t, d_head) put in with `append`
    (made up: no token produced them), and the logits must be those of
    `reference_step(token, t, keys, values)` over the same keys and values."""
    g = _secret_generator()
    past = [(torch.randn(*shape, generator=g), torch.randn(*shape, generator=g))
            for _ in range(n_layer)]
    caches = [new_cache() for _ in range(n_layer)]
    for cache, (k, v) in zip(caches, past, strict=True):
        cache.append(k, v)
    expect_close(step(token, t, caches), reference_step(token, t, past),
                 f"{what} at position {t} over keys and values placed in its caches (no token "
                 "produced them): a step must attend over what the caches hold, not recompute "
                 "the sequence")
