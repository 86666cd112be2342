import sys

from hsrtcp.cli import main

sys.exit(main())
