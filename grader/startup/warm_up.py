"""PyTorch's first uses, paid once in a fork server so that every process forked from it
inherits them: the sandbox's server (grader.sandbox.zygote) and the grading pool's
(grader.startup.warmed)."""


def warm_up() -> None:
    """Run the kinds of operations notebooks use once, here: PyTorch sets up each operator on
    first use (dispatch tables, kernels), and every forked worker inherits that work."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    for dtype in (torch.float32, torch.float64):
        x = torch.randn(2, 3, 4, 4, dtype=dtype, requires_grad=True)
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        att = torch.softmax((x @ x.transpose(-2, -1)).masked_fill(~mask, float("-inf")), -1)
        y = F.layer_norm(att @ x, (4,)) + F.gelu(x).tanh() * x.exp().sqrt().log1p()
        layer = nn.Linear(4, 4).to(dtype)
        emb = nn.Embedding(5, 4).to(dtype)
        (layer(y).sum() + emb(torch.tensor([1, 2])).sum() + x.mean().abs()
         + F.cross_entropy(y.reshape(-1, 4), torch.zeros(24, dtype=torch.long))).backward()
        torch.allclose(x, x), torch.equal(x, x), x.detach().clone().view(-1).numpy()


def warm_up_gradients() -> None:
    """A gradient test's backward pass with the grader's gradients (worker.op_backward, in
    every assignment's gradient tests) imports PyTorch's symbolic shapes (sympy, half a second)
    on its first use: the sandbox server pays it once, not every student's process."""
    import torch

    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    y = torch.softmax(x, -1)
    torch.autograd.backward([y], [torch.ones_like(y)])


def warm_up_seed() -> None:
    """A notebook's `torch.manual_seed(...)`: its first call sets up PyTorch's lazy seeding of
    other devices, and, once PyTorch's compiler is imported, the wrapper that keeps the compiler
    out of it (one to five milliseconds in each student's process otherwise). Seeded with the
    generator's own first seed: back to the random state this server started with."""
    import torch

    torch.manual_seed(torch.initial_seed())


def warm_up_meta() -> None:
    """The meta device (tests check device= handling with it) runs operations written in
    Python, which need PyTorch's symbolic shapes (sympy, imported by the gradients' warm-up) and
    import its compiler (torch._dynamo, half a second) on first use unless compiler.defer() has
    run. Optimizers' steps import the compiler whatever is done: an assignment whose students
    train declares it (`sandbox_preload`, read by grader.pipeline.pools.sandbox_preload_for) and the
    server imports it once; the judge's fork server what the tests need (`judge_preload`)."""
    import torch

    m = torch.ones(3, 3, dtype=torch.bool, device="meta").tril()
    torch.zeros(3, 4, device="meta")[:, 0::2].sin(), m.to(torch.float32) @ m.to(torch.float32)
