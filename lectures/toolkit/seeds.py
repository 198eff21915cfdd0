"""Train one small model from several seeds at once, so a comparison can report a spread.

A claim that one method trains better than another needs several seeds. Tiny models spend most
of their time in the fixed cost of each operation, not in arithmetic, so training five copies one
after another costs about five times one; `train_seeds` stacks the copies' weights
(`torch.func.stack_module_state`) and runs them as one batched computation (`torch.func.vmap`),
which costs about twice one. Adam works entry by entry, so one Adam over the stacked weights
takes exactly the steps that separate Adams would: each copy trains as it would alone (the
tests compare the two), on batches drawn from its own seeded generator.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap


class Runs(NamedTuple):
    losses: torch.Tensor                 # (steps, n_seeds)
    grad_norms: torch.Tensor             # (record, n_seeds, n_groups)
    models: list[torch.nn.Module]        # one per seed, holding its trained weights


def token_cross_entropy(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy of scores (..., C) against class ids (...)."""
    return F.cross_entropy(scores.flatten(0, -2), y.flatten())


def train_seeds(make_model: Callable[[], torch.nn.Module], seeds: Sequence[int],
                batch: Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]], *,
                steps: int, lr: float, warmup: int = 0, record: int = 0,
                groups: Sequence[str] = (),
                loss: Callable[[object, torch.Tensor], torch.Tensor] = token_cross_entropy,
                ) -> Runs:
    """Adam on one copy of `make_model()` per seed, each built after `torch.manual_seed(seed)`
    and fed `batch(generator)` = (x, y) from `torch.Generator().manual_seed(seed)` every step,
    minimising `loss(model(x), y)` (by default the cross-entropy of scores (..., C) against
    class ids (...)). With a warm-up the rate climbs linearly to `lr` over the first `warmup`
    steps.

    Returns the losses, the norm of the gradient of each group of parameters (the names that
    start with each prefix in `groups`) for the first `record` steps, and the trained models.
    """
    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        models.append(make_model())
    params, buffers = stack_module_state(models)          # every weight gets a leading seed axis
    shell = copy.deepcopy(models[0]).to("meta")           # the code to run, without weights

    def loss_of(p, b, x, y):
        return loss(functional_call(shell, (p, b), (x,)), y)   # one seed's copy

    opt = torch.optim.Adam(params.values(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0)
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    members = [[name for name in params if name.startswith(prefix)] for prefix in groups]
    losses, grads = [], []
    for step in range(steps):
        x, y = (torch.stack(parts) for parts in zip(*(batch(g) for g in generators),
                                                            strict=True))
        step_loss = vmap(loss_of)(params, buffers, x, y)   # (n_seeds,)
        opt.zero_grad()
        step_loss.sum().backward()                         # each copy gets its own gradient
        if step < record:
            grads.append(torch.stack([
                torch.sqrt(sum(params[n].grad.pow(2).flatten(1).sum(1) for n in names))
                for names in members], dim=-1))            # (n_seeds, n_groups)
        opt.step()
        sched.step()
        losses.append(step_loss.detach())
    with torch.no_grad():
        for i, model in enumerate(models):
            model.load_state_dict({name: w[i] for name, w in (params | buffers).items()})
    empty = torch.empty(0, len(seeds), len(groups))
    return Runs(torch.stack(losses), torch.stack(grads) if grads else empty, models)
