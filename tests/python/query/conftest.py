"""The query tests read the same analyzed fixtures as the figure tests (tests/python/plot/conftest.py)."""

from ..plot.conftest import drops, multi, pair  # noqa: F401 - pytest fixtures, shared
