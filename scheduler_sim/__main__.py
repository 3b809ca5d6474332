"""``python -m scheduler_sim`` is the ``hpctwin`` command."""

import sys

from .cli import main

sys.exit(main())
