"""Training several seeds side by side (lectures/toolkit/seeds.py) gives each seed the run it
would have had alone."""

import torch
import torch.nn.functional as F
from torch import nn

from lectures.toolkit.seeds import train_seeds


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.norm = nn.LayerNorm(8)
        self.layers = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])
        self.head = nn.Linear(8, 10)

    def forward(self, x):                                     # (B, T) -> (B, T, 10)
        h = self.norm(self.emb(x))
        for layer in self.layers:
            h = h + torch.relu(layer(h))
        return self.head(h)


def batch(g):
    x = torch.randint(0, 10, (16, 5), generator=g)
    return x, (x + 1) % 10                                   # a rule each token can learn


def alone(seed, steps, lr, warmup, record):
    """The plain loop: one model, one optimiser."""
    torch.manual_seed(seed)
    model = Tagger()
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0)
    losses, grads = [], []
    for step in range(steps):
        x, y = batch(g)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        if step < record:
            grads.append([torch.sqrt(sum(p.grad.pow(2).sum() for p in layer.parameters()))
                          for layer in model.layers])
        opt.step()
        sched.step()
        losses.append(loss.item())
    return torch.tensor(losses), torch.tensor(grads), model


def test_each_seed_trains_as_it_would_alone():
    seeds = (3, 7, 11)
    losses, grads, models = train_seeds(Tagger, seeds, batch, steps=40, lr=1e-2, warmup=10,
                                        record=4, groups=["layers.0.", "layers.1."])
    assert losses.shape == (40, 3) and grads.shape == (4, 3, 2) and len(models) == 3
    x = torch.arange(10).view(2, 5)
    for i, seed in enumerate(seeds):
        want_losses, want_grads, want_model = alone(seed, 40, 1e-2, 10, 4)
        torch.testing.assert_close(losses[:, i], want_losses, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(grads[:, i], want_grads, rtol=1e-4, atol=1e-6)
        with torch.no_grad():                                 # the trained weights come back
            torch.testing.assert_close(models[i](x), want_model(x), rtol=1e-4, atol=1e-5)
    assert losses[-5:].mean() < 0.5 * losses[:5].mean()       # it trained
    assert not torch.equal(losses[:, 0], losses[:, 1])         # the seeds differ


def test_the_warm_up_is_applied():
    cold = train_seeds(Tagger, (0,), batch, steps=3, lr=1e-1).losses
    warm = train_seeds(Tagger, (0,), batch, steps=3, lr=1e-1, warmup=1000).losses
    assert cold[0] == warm[0] and not torch.equal(cold[1:], warm[1:])  # same start, tiny steps


def test_a_loss_of_the_models_own_output():
    """A model that returns a tuple is trained on what `loss` makes of it."""

    class Pair(Tagger):
        def forward(self, x):
            return super().forward(x), "extra"

    def first(out, y):
        return F.cross_entropy(out[0].flatten(0, 1), y.flatten())

    paired = train_seeds(Pair, (5,), batch, steps=5, lr=1e-2, loss=first).losses
    plain = train_seeds(Tagger, (5,), batch, steps=5, lr=1e-2).losses
    torch.testing.assert_close(paired, plain)
