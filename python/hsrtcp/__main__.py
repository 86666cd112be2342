import sys

from hsrtcp.cli import entry

sys.exit(entry())
