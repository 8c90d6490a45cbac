"""`python -m heterps_core` is the `heterps` console script."""

import sys

from heterps_core.cli import main

sys.exit(main())
