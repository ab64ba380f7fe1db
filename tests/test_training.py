"""Training-step extraction (optplan.extract_training) on public torch APIs, checked against a
hand-read graph and against torch's CPU memory profiler on the same step.
CI installs torch (the ``executorch`` extra); importorskip only spares local runs without it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn

import optplan
from optplan.cli import main
from optplan.core.bounds import lower_bounds
from optplan.formats import read_problem
from optplan.frontends.training import profiler_peak


class MLP(nn.Module):
    def __init__(self, width=1024):
        super().__init__()
        self.l1, self.l2 = nn.Linear(256, width), nn.Linear(width, 10)

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.l2(self.l1(x).relu()), y)


def _data(batch=64):
    g = torch.Generator().manual_seed(0)
    return torch.randn(batch, 256, generator=g), torch.randint(0, 10, (batch,), generator=g)


def test_saved_activation_lives_until_its_backward_use_and_gradients_until_the_step():
    torch.manual_seed(0)
    p = optplan.extract_training(MLP(), _data())
    sizes = {b.id: b for b in p.buffers}
    relu = sizes["relu"]
    (x,) = [b for b in p.buffers if b.id in p.metadata["inputs"] and b.size == 64 * 256 * 4]
    assert relu.size == 64 * 1024 * 4
    # the relu output is read again by the backward of the relu (threshold_backward), after the loss
    loss = next(b for b in p.buffers if b.id in p.metadata["outputs"])
    assert relu.end > loss.start
    # the first layer's weight gradient (the only 1 MiB buffer) is born in backward, after the
    # loss, and dies at the optimizer step, before the end; x lives until that gradient is made
    (wgrad,) = [b for b in p.buffers if b.size == 1024 * 256 * 4]
    assert loss.start < wgrad.start < wgrad.end < p.metadata["steps"]
    assert x.end == wgrad.start + 1
    assert p.metadata["unplanned_bytes"] == sum(t.numel() * 4 for t in MLP().parameters())


def test_sgd_step_matches_the_profiler_and_adam_state_outlives_the_step():
    torch.manual_seed(0)
    model, data = MLP(), _data()
    p = optplan.extract_training(model, data)
    inputs = sum(b.size for b in p.buffers if b.id in p.metadata["inputs"])
    measured = profiler_peak(model, data)
    # the profiler sees what the step allocates (the inputs exist before it); the rest is a few
    # scalars (step counters, wrapped Python numbers) the profiler counts and the graph does not
    extracted = lower_bounds(p).lower["mem"] - inputs
    assert 0 <= measured["peak"] - extracted <= 16 * 1024, (measured, extracted)
    adam = optplan.extract_training(model, data, optimizer=lambda ps: torch.optim.Adam(ps))
    moments = [b for b in adam.buffers if b.id in adam.metadata["outputs"] and b.size >= 40]
    assert sum(b.size for b in moments) == 2 * p.metadata["unplanned_bytes"]  # exp_avg and exp_avg_sq
    assert all(b.end == adam.metadata["steps"] for b in moments)
    # eager keeps every gradient until the step ends (grads tuple, p.grad); the graph frees each
    # at its last use, so the profiler sees at least the extraction's peak
    assert profiler_peak(model, data, optimizer=lambda ps: torch.optim.Adam(ps))["peak"] >= \
        lower_bounds(adam).lower["mem"] - inputs


def test_cli_extracts_a_training_step_from_a_factory(tmp_path, capsys):
    src = tmp_path / "net.py"
    src.write_text("import torch\n"
                   "def make():\n"
                   "    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))\n"
                   "    return model, (torch.randn(4, 8),), lambda out: out.square().mean()\n")
    out = tmp_path / "p.json"
    assert main(["extract", f"{src}:make", "--training", "-o", str(out)]) == 0
    p = read_problem(out)
    assert p.metadata["model"] == "net" and p.metadata["frontend"].startswith("torch training step")
    assert main(["extract", f"{src}:make", "-o", str(tmp_path / "inf.json")]) == 0  # inference via torch.export
    assert len(read_problem(tmp_path / "inf.json").buffers) < len(p.buffers)
    capsys.readouterr()
    assert main(["extract", f"{src}:nothing", "--training", "-o", str(tmp_path / "q.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "'nothing'" in err and len(err.splitlines()) == 1 and not (tmp_path / "q.json").exists()


class Frozen(nn.Module):
    """A model with a branch the loss never reaches (an auxiliary head left out of this step)."""

    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(32, 32), nn.Linear(32, 32)

    def forward(self, x):
        return self.used(x).relu().sum()


@pytest.mark.parametrize("graph", [False, True])
def test_a_parameter_the_loss_never_reaches_has_no_gradient_and_no_update(graph):
    """The step records (it raised 'appears to not have been used in the graph'), and only the
    used layer's weight and bias get gradients: the optimizer skips the rest, as torch's loop does."""
    torch.manual_seed(0)
    out = optplan.extract_training(Frozen(), (torch.randn(8, 32),), graph=graph)
    if graph:
        sizes = [t.size for t in out.tensors]
    else:
        sizes = [b.size for b in out.buffers]
    assert sizes.count(32 * 32 * 4) == 1  # one weight gradient (the used layer's), not two
