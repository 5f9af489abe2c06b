"""``python -m pkm_control.cli``: the pkm command."""

import sys

from . import main

if __name__ == "__main__":       # not on import (the fuzz campaigns import every module of the package)
    sys.exit(main())
