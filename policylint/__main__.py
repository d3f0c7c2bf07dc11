"""Allow ``python -m policylint``."""

from __future__ import annotations

import sys

from policylint.cli import main

sys.exit(main())
