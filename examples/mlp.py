"""A small network for ``optplan extract examples/mlp.py:make`` (``--training``: one training step).

``make()`` returns ``(model, example_inputs, loss)``; inference ignores the loss.
"""

import torch


def make():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    return model, (x,), lambda out: torch.nn.functional.cross_entropy(out, y)
