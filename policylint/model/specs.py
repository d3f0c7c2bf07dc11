"""The typed specs of policylint's documents: what a validated YAML block holds.

One :class:`~typing.TypedDict` per block the code reads by key, named after the
schema object it types (``schemas/*.schema.json``). The model classes of
:mod:`policylint.model` hold them, so mypy checks every ``spec["..."]`` read and
every key written into a spec the code builds. ``tests/test_specs.py`` holds them
to the schemas: the keys of each type are the properties of the schema objects
it is reached from, and a key the schema requires may be optional here but never
the other way round.

Where one type stands for several sources, its requiredness is what holds for all
of them: a pool read from a Kueue or Volcano manifest may have no ``gpu`` (or a
``gpu`` without ``model``), and the cluster shown around scheduler queues has an
empty spec. Enumerated values are plain ``str``: the schema checks them, the
code compares them. Blocks read only as a whole (``where``, taints) stay
``dict[str, Any]``. No ``from __future__ import annotations`` here: at run time
``Required``/``NotRequired`` must be seen (``__required_keys__``), and every type
is defined before it is used.
"""

from typing import Any, Never, NotRequired, Required, TypedDict

#: The ``{}`` a reader puts in place of an absent block (``spec.get("elastic") or {}``):
#: typed ``ElasticSpec | NoBlock``, its reads are checked against the block's keys.
NoBlock = dict[str, Never]


class MetadataSpec(TypedDict, total=False):
    """``metadata`` of every policylint document."""

    name: Required[str]
    team: str
    owner: str
    description: str
    labels: dict[str, str]


# --------------------------------------------------------------------------- measurements


class PrometheusSourceSpec(TypedDict, total=False):
    """``prometheus``: the range query ``policylint pull`` writes to the measurement's path."""

    query: str
    template: str
    params: dict[str, str | float]
    step: str
    lookback: str


class TraceKeySpec(TypedDict, total=False):
    """``key``: the column that tells series apart (one pod, one instance)."""

    column: Required[str]
    select: str | float
    aggregate: str  # measurement traces only


class _TraceFields(TypedDict, total=False):
    """What the three kinds of measurement reference may say besides ``path``."""

    format: str
    timestampColumn: str
    timestampUnit: str
    durationUnit: str
    timeOrigin: str
    columns: list[str]
    startColumn: str
    endColumn: str
    durationColumn: str
    gpusColumn: str
    prometheus: PrometheusSourceSpec
    match: dict[str, str]
    stepSeconds: float
    where: dict[str, Any]
    skipIncomplete: bool
    key: TraceKeySpec
    unit: str  # required for a VRAM trace
    activeColumn: str
    activeUnit: str


class TraceSpec(_TraceFields, total=False):
    """A measurement file reference: ``$defs`` ``measurement``, ``vramTrace`` or ``activityTrace``.

    One type for the three, since one reader reads them all: the keys are theirs together.
    """

    path: Required[str]


class EvidenceSpec(TypedDict, total=False):
    """``tolerance.evidence`` written as a block (it may also be a plain text)."""

    objectiveSeconds: float
    serviceSeconds: float
    document: str
    url: str
    note: str


class ReferenceSpec(_TraceFields, EvidenceSpec, total=False):
    """What a :class:`~policylint.model.MeasurementRef` holds.

    A :class:`TraceSpec`, or for the role ``evidence`` an :class:`EvidenceSpec`
    (which has no ``path``): readers of either read this one type.
    """

    path: str


# --------------------------------------------------------------------------- Workload


class QueueRefSpec(TypedDict):
    """``spec.queue``: the scheduler queue a workload is admitted through."""

    scheduler: str
    name: str


class ExcludeRangeSpec(TypedDict):
    """One item of ``concurrency.exclude``."""

    start: str
    end: str
    reason: str


class ShareSpec(TypedDict):
    """``concurrency.share``."""

    fraction: float
    reason: str


class ConcurrencySpec(TypedDict, total=False):
    """``spec.concurrency``."""

    trace: TraceSpec
    declared: float
    exclude: list[ExcludeRangeSpec]
    share: ShareSpec
    excludeOutlierDays: float


class PerGpuConcurrencySpec(TypedDict):
    """``spec.perGpuConcurrency``."""

    value: float
    measuredIn: str
    source: NotRequired[str]


class ToleranceSpec(TypedDict, total=False):
    """``spec.tolerance``."""

    maxQueueSeconds: float
    evidence: EvidenceSpec | str
    label: str


class VramSpec(TypedDict, total=False):
    """``spec.vram``."""

    residentGiB: float
    residencySeconds: float
    activeComputeSeconds: float
    trace: TraceSpec
    activity: TraceSpec


class DurationsSpec(TypedDict, total=False):
    """``spec.durations``."""

    jobs: TraceSpec
    p50Seconds: float
    p90Seconds: float
    p99Seconds: float


class BandsSpec(TypedDict, total=False):
    """``spec.bands``: the bands a team believes in."""

    baseline: float
    daily: float
    peak: float


#: ``spec`` of a Workload (functional form: ``class`` is a keyword).
WorkloadSpec = TypedDict(
    "WorkloadSpec",
    {
        "class": Required[str],
        "cluster": str,
        "pool": str,
        "queue": QueueRefSpec,
        "gpusPerReplica": Required[int],
        "concurrency": ConcurrencySpec,
        "perGpuConcurrency": PerGpuConcurrencySpec,
        "coldStartSeconds": float,
        "tolerance": ToleranceSpec,
        "vram": VramSpec,
        "durations": DurationsSpec,
        "bands": BandsSpec,
    },
    total=False,
)


# --------------------------------------------------------------------------- Cluster and pools


class GpuSpec(TypedDict, total=False):
    """A pool's ``gpu``; a scheduler pool knows either only from node labels, if at all."""

    model: str
    memoryGiB: float


class ElasticSpec(TypedDict):
    """A pool's ``elastic`` capacity."""

    maxGpus: int
    kind: str
    coldStartSeconds: NotRequired[float]


class PoolQueueSpec(TypedDict, total=False):
    """A pool's ``queue`` limits."""

    maxDepth: int
    maxWaitSeconds: float


class SchedulingSpec(TypedDict, total=False):
    """A pool's ``scheduling`` features."""

    gang: bool
    preemption: bool


class NodesSpec(TypedDict, total=False):
    """A pool's ``nodes``: what export writes into the scheduler manifests."""

    resourceFlavor: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    tolerations: list[dict[str, Any]]


class PoolSpec(TypedDict, total=False):
    """A pool (``cluster.schema.json`` ``$defs/pool``), whatever its source.

    Kueue and Volcano readers build the same shape; theirs may lack ``gpu`` and
    serve no class until a workload is placed in them.
    """

    name: Required[str]
    gpu: GpuSpec
    reservedGpus: Required[int]
    elastic: ElasticSpec
    serves: Required[list[str]]
    overflow: str
    queue: PoolQueueSpec
    scheduling: SchedulingSpec
    bufferGpus: int
    sharing: str
    nodes: NodesSpec
    namespaces: list[str]


class ClusterSpec(TypedDict, total=False):
    """``spec`` of a Cluster; empty for the cluster shown around scheduler queues."""

    region: str
    pools: list[PoolSpec]


# --------------------------------------------------------------------------- Proposal


class RequestSpec(TypedDict, total=False):
    """One item of a Proposal's ``requests``."""

    pool: Required[str]
    gpus: Required[int]
    gpuModel: str
    unitCost: float


class ProposalSpec(TypedDict, total=False):
    """``spec`` of a Proposal."""

    cluster: Required[str]
    date: Required[str]
    requests: Required[list[RequestSpec]]
    workloads: list[str]
    justification: str
