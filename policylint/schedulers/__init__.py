"""Scheduler manifests (Kueue, Volcano) as pools of the repository model.

Hooks called by the pipeline:

* :func:`attach` - turn scheduler documents into clusters and pools of the model;
* :func:`place` - link a Workload that names a scheduler queue (``spec.queue``);
* :data:`POOL_FACTS` / :func:`pool_facts` - extra facts of scheduler-backed pools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.load import Document
    from policylint.model import Model, Pool, Workload

#: Facts every pool view carries in addition to the policylint ones (None when not a scheduler pool).
POOL_FACTS: dict[str, str] = {}


def attach(documents: list[Document], model: Model) -> list[Finding]:
    """Add clusters and pools for scheduler documents; return findings."""
    return []


def place(workload: Workload, model: Model) -> list[Finding] | None:
    """Link a workload admitted through a scheduler queue; None when it names none."""
    return None


def pool_facts(pool: Pool) -> dict[str, Any]:
    """Scheduler-specific facts of one pool (keys of :data:`POOL_FACTS`)."""
    return {}
