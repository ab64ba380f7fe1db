"""The core: the data model and what every layer needs (problem, placement, objective, plan,
deadline, lifecycle, the kernel gate, validate, bounds, load, clocks). It imports nothing above it
(``pyproject.toml``'s import contracts, checked in CI): no planner family, no registry, no I/O."""
