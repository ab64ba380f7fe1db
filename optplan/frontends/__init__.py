"""Front ends: turn real programs into Problems and hand plans back to compilers.

``torch_export`` extracts buffers and lifetimes from a ``torch.export`` program;
``executorch`` plugs optplan into ExecuTorch's MemoryPlanningPass. Both import torch lazily,
so the core package never needs it.
"""
