"""``python -m hsrtcp.examples [phone|server|truth]``: the path of a bundled example file
(default: both captures, one a line)."""

import sys

from hsrtcp.errors import ExitCode
from hsrtcp.examples import PHONE, SERVER, TRUTH

_FILES = {"phone": PHONE, "server": SERVER, "truth": TRUTH}

if __name__ == "__main__":
    names = sys.argv[1:] or ["phone", "server"]
    unknown = [n for n in names if n not in _FILES]
    if unknown:
        print(f"usage: python -m hsrtcp.examples [{'|'.join(_FILES)}]...", file=sys.stderr)
        sys.exit(ExitCode.USAGE)
    print("\n".join(str(_FILES[n]) for n in names))
