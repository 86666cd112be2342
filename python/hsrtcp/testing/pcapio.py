"""Moved to :mod:`hsrtcp.pcapio` (issue 37): production code (lab bundles, audit, passive)
reads captures with it, and must not import the test helpers. This name stays for the tests
and scripts, as the same module object (not a copy)."""

import sys

from hsrtcp import pcapio

sys.modules[__name__] = pcapio
