"""policylint: lint GPU demand declarations, cluster specs and procurement proposals.

The package is organised as a pipeline, one module per step::

    load -> validate -> resolve -> measure -> evaluate -> filter -> report

Heavy dependencies (numpy, rich, jsonschema, cerberus, git) are imported lazily
inside the steps that need them so that ``policylint --help`` starts fast.
"""

from __future__ import annotations

__version__ = "0.2.0"

API_VERSION = "policylint/v1"
