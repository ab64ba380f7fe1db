"""``python -m optplan.cli``: the ``optplan`` command."""

import sys

from optplan.cli import main

sys.exit(main())
