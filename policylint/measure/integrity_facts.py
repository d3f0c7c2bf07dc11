"""The integrity facts, declared: what the integrity stage tells the rules about a trace and a pool.

:mod:`policylint.measure.integrity` computes them; the engine puts them into each
workload's and pool's fact sheet as a part (:func:`policylint.facts.part`), and
``policylint bands --format json`` prints a trace's workload facts under ``integrity``.
Every fact is None until the stage computes it (a workload without a readable trace
keeps them all None).
"""

from __future__ import annotations

from dataclasses import dataclass

from policylint.facts import Facts, fact


@dataclass(kw_only=True, eq=False)
class IntegrityWorkloadFacts(Facts):
    """Identity, time, resolution, shaping and plausibility of one workload's concurrency trace."""

    series_fingerprint: str | None = fact(
        "identity: SHA-256 of the concurrency series as read (grid times and values of its valid "
        "samples): equal for a byte-identical copy under another name or the same samples in "
        "another format",
        default=None,
    )
    values_fingerprint: str | None = fact(
        "identity: SHA-256 of the values of the valid samples alone, without their times: equal for"
        " a copy moved to other dates",
        default=None,
    )
    samples_fingerprint: str | None = fact(
        "identity: SHA-256 of the samples as the file holds them, before the grid (their times and "
        "values; a job list's or request log's starts and ends): equal for one file, or a byte copy "
        "of it, read at another step; None where the reader combines several series",
        default=None,
    )
    part_fingerprints: list[str] | None = fact(
        "identity: the values_fingerprint of each value column a trace sums (several columns, complete on "
        "their grid; or each series of a long table's key or a Prometheus answer, up to 64, on its own grid), "
        "each as that column alone would read, then of each group of two or more of them short "
        "of the whole (every group up to 5 columns, pairs up to 12: calc/prints.column_groups); None for "
        "one column",
        default=None,
    )
    part_sketches: list[list[int] | None] | None = fact(
        "identity: the run sketch (the smallest hashes of its 16-step runs) of each value column a trace "
        "sums and of each group of them, as for part_fingerprints, each None when the part is too plain for "
        "one; None for one column: a column, or columns added up, that are another workload's trace with a "
        "few samples edited",
        default=None,
    )
    part_shapes: list[str | None] | None = fact(
        "identity: the shape_fingerprint of each value column a trace sums and of each group of them, as for "
        "part_fingerprints, each None when the part changes too seldom for one; None for one column: a column, "
        "or columns added up, that are another member's series scaled or shifted",
        default=None,
    )
    part_labels: list[str] | None = fact(
        "identity: the label of each summed series when a trace sums series rather than columns (a long "
        "table's key values, a Prometheus answer's series, up to 64 of them), in the order of "
        "part_fingerprints; None for columns and for one series",
        default=None,
    )
    shape_fingerprint: str | None = fact(
        "identity: SHA-256 of the sequence of rises, falls and holds between valid samples (the "
        "same for a copy scaled by a factor >= 1 or shifted by a constant); None for series that "
        "change fewer than 24 times a day (too little noise to tell two series apart)",
        default=None,
    )
    repeated_days: int | None = fact(
        "identity: UTC days whose every sample repeats an earlier day of the same trace exactly "
        "(judged on days that change value at least 24 times; a step that does not divide a day is "
        "read at the finest one no coarser that does); None when the trace holds fewer than two whole days",
        default=None,
    )
    repeated_day_share: float | None = fact("identity: repeated_days / the days judged, unrounded", "share", default=None)
    repeated_run_share: float | None = fact(
        "identity: share of the trace's varied 16-step runs (between valid samples, at least 8 steps that change "
        "the value and 5 distinct nonzero steps) whose steps occur again elsewhere in the trace, at any lag, "
        "unrounded: a block pasted over the window repeats every run inside it. Judged on the runs whose hash "
        "falls below the bound at which 1,024 are expected (every run of a trace with at most 2,048), a run and "
        "its repeats together; None when none is judged",
        "share",
        default=None,
    )
    repeated_runs_judged: int | None = fact(
        "identity: the varied runs repeated_run_share is judged on; None when the trace holds fewer than 32 "
        "informative runs",
        default=None,
    )
    first_sample: str | None = fact("time: timestamp of the first valid sample (ISO 8601, UTC)", default=None)
    seconds_after_now: float | None = fact(
        "time: seconds by which the last sample lies after now (0 when none does), unrounded",
        default=None,
    )
    samples_after_now: int | None = fact("time: number of grid samples dated after now", default=None)
    resolution_step_seconds: float | None = fact(
        "resolution: the step the values really change at - the declared or inferred step times the"
        " length of the blocks of repeated values the series is made of (equal to step_seconds when"
        " there are none)",
        "s",
        default=None,
    )
    resolution_block_samples: int | None = fact(
        "resolution: samples per block of repeated values (1 when the series is not blocky)",
        default=None,
    )
    value_changes: int | None = fact("resolution: number of sample-to-sample value changes between valid samples", default=None)
    roughness: float | None = fact(
        "resolution: std of second differences / std of first differences of the series (about 1.4 "
        "to 1.7 for measured noise, near 0 for a smooth curve); None when the series never changes",
        default=None,
    )
    exclusion_count: int | None = fact("shaping: number of declared exclusion ranges", default=None)
    excluded_share: float | None = fact("shaping: share of the valid samples the declared exclusions remove, unrounded", "share", default=None)
    exclusion_recurring: int | None = fact(
        "shaping: the most sub-day exclusion ranges that start at one time of day (15-minute bins)",
        default=None,
    )
    exclusion_recurring_at: str | None = fact("shaping: that time of day, HH:MM UTC (None without sub-day ranges)", default=None)
    excluded_top_share: float | None = fact(
        "shaping: share of the highest 5% of samples (before exclusions) that the exclusions remove",
        "share",
        default=None,
    )
    excluded_demand_ratio: float | None = fact(
        "shaping: mean demand of the excluded samples / mean demand of the kept ones (None when "
        "either is empty)",
        default=None,
    )
    outlier_days_removed: int | None = fact("shaping: days removed automatically as outliers (excludeOutlierDays)", default=None)
    outlier_day_share: float | None = fact("shaping: outlier_days_removed / the days the trace spans, unrounded", "share", default=None)
    resolution_jump_share: float | None = fact(
        "resolution: share of the series' movement (squared steps) on the block boundaries, when "
        "the blocks were found under jitter (the values change at every sample, but the real moves "
        "fall on one phase); None otherwise",
        "share",
        default=None,
    )
    near_repeated_days: int | None = fact(
        "identity: UTC days that repeat an earlier day (at most 400 days before, or exactly at any "
        "distance) at 90% or more of their value changes - a copied day with a few samples edited; "
        "judged like repeated_days",
        default=None,
    )
    near_repeated_day_share: float | None = fact("identity: near_repeated_days / the days judged, unrounded", "share", default=None)
    edited_repeated_days: int | None = fact(
        "identity: near_repeated_days that are not exact repeats (near_repeated_days - "
        "repeated_days, at least 0): copied days with samples edited so that the exact test misses "
        "them",
        default=None,
    )
    edited_repeated_day_share: float | None = fact("identity: edited_repeated_days / the days judged, unrounded", "share", default=None)
    near_copy_of: str | None = fact(
        "identity: the workload of the model whose trace, in another file, shares the most "
        "16-step runs with this one (None when none shares any); copies PL111 already reports are"
        " left out",
        default=None,
    )
    near_copy_similarity: float | None = fact(
        "identity: estimated share of 16-step runs the two traces have in common, unrounded",
        default=None,
    )
    near_copy_trace: str | None = fact("identity: that workload's trace file, as written", default=None)
    near_copy_pool: str | None = fact("identity: that workload's pool", default=None)
    near_copy_part: str | None = fact(
        "identity: the part of this workload's trace that repeats that workload's trace, when it is one"
        " column the trace sums or a group of them (\"column NAME of its concurrency trace\", \"sum of columns A"
        " and B of ...\"); None when it is the whole trace",
        default=None,
    )
    vram_seconds_after_now: float | None = fact(
        "time: seconds by which the last sample of the VRAM trace lies after now (0 when none does;"
        " None without a VRAM trace)",
        default=None,
    )
    jobs_seconds_after_now: float | None = fact(
        "time: seconds by which the last job end of the job list (durations) lies after now (0 when"
        " none does; None without a job list with start or end times)",
        default=None,
    )
    pulled_digest_matches: bool | None = fact(
        "time: whether the pulled trace is byte for byte the file its pull wrote (the SHA-256 its "
        "provenance record holds); None without a record or a digest in it",
        default=None,
    )
    pulled_range_outside_seconds: float | None = fact(
        "time: seconds by which the trace's samples reach beyond the start or end its pull recorded"
        " (policylint pull's provenance record); 0 inside it, None without a record",
        "s",
        default=None,
    )
    negative_samples: int | None = fact("plausibility: valid samples below zero (a count cannot be negative)", default=None)
    job_gpus_max: int | None = fact(
        "plausibility: most GPUs any job of the measured job list (durations) held; None when the "
        "list records no GPU column (every job then counts as one GPU)",
        default=None,
    )
    jobs_fingerprint: str | None = fact(
        "identity: SHA-256 of the job durations list's jobs as read (duration and GPUs of each, in sorted"
        " order); None without a job list, or for one of fewer than 10 jobs or 3 distinct durations",
        default=None,
    )
    job_gpus_median: float | None = fact(
        "plausibility: median GPUs per job of the measured job list (None as for job_gpus_max)",
        default=None,
    )
    job_gpus_p90: int | None = fact(
        "plausibility: GPUs nine jobs in ten of the measured job list held at most (the 90th percentile, "
        "a job's own figure; None as for job_gpus_max)",
        default=None,
    )
    fractional_share: float | None = fact("plausibility: share of valid samples that are not whole numbers, unrounded", "share", default=None)
    open_jobs: int | None = fact(
        "plausibility: rows of a concurrency trace read from a request log or job list with a start and "
        "no end, counted as running until the end of the trace (None for a sampled trace)",
        default=None,
    )
    finished_jobs: int | None = fact("plausibility: rows of that log or list with an end (None for a sampled trace)", default=None)
    open_job_longest_days: float | None = fact(
        "plausibility: the longest of the rows with no end, from its start to the end of the trace, days, "
        "unrounded (None without such rows)",
        "days",
        default=None,
    )
    finished_job_longest_days: float | None = fact(
        "plausibility: the longest duration among the rows with an end, days, unrounded (None without "
        "such rows)",
        "days",
        default=None,
    )
    open_job_ratio: float | None = fact(
        "plausibility: open_job_longest_days / finished_job_longest_days, unrounded (None unless both "
        "are known and the latter is above zero)",
        default=None,
    )
    trace_job_gpus_p90: float | None = fact(
        "plausibility: a concurrency trace read from a GPU-weighted job list (unit: gpus): the most GPUs nine "
        "jobs in ten were weighed at (None for any other trace)",
        default=None,
    )


@dataclass(kw_only=True, eq=False)
class IntegrityPoolFacts(Facts):
    """Plausibility of one pool: its GPU model, the gangs it must admit, the queue behind it."""

    gpu_model: str | None = fact(
        "plausibility: the pool's declared GPU model (gpu.model, or the flavor's "
        "nvidia.com/gpu.product label)",
        default=None,
    )
    gpu_model_memory_gib: float | None = fact(
        "plausibility: the memory the GPU model is sold with, GiB - the size written in its name "
        "(80GB), else policylint's table of common models; None for a model the table does not know",
        "GiB",
        default=None,
    )
    gpu_memory_contradiction: float | None = fact(
        "plausibility: the declared gpu.memoryGiB divided by the nearest size the model is sold "
        "with, unrounded (1 when they agree; None when either is unknown)",
        default=None,
    )
    largest_gang_gpus: int | None = fact(
        "plausibility: most GPUs one replica or job of the pool's measured workloads holds "
        "(gpusPerReplica); None when none is measured",
        "GPUs",
        default=None,
    )
    largest_gang_workload: str | None = fact("plausibility: the workload that declares it", default=None)
    admissible_gpus: int | None = fact(
        "plausibility: the most GPUs the pool can ever give one job - reserved + elastic GPUs plus "
        "the GPUs proposals ask for it",
        "GPUs",
        default=None,
    )
    queue_contradictions: list[str] | None = fact(
        "plausibility: where the scheduler queue behind the pool contradicts itself (Kueue "
        "lendingLimit above nominalQuota, a borrowingLimit the cohort cannot lend; Volcano "
        "capability below deserved or guarantee, deserved below guarantee, children guaranteed more"
        " than their parent's capability), as sentences; [] when none",
        default=None,
    )
    queue_contradiction_count: int | None = fact("plausibility: number of queue_contradictions", default=None)
    queue_contradiction_summary: str | None = fact("plausibility: queue_contradictions as one text, separated by semicolons", default=None)
