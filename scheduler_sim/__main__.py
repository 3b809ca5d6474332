"""``python -m scheduler_sim`` is the ``hpctwin`` command."""

import sys

from .app.cli import main

sys.exit(main())
