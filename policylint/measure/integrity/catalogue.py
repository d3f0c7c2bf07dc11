"""The integrity facts a view offers, by subject kind, each with its description.

The rules' fact catalogue (``FACTS`` in :mod:`policylint.engine.views`) merges
these; the other modules of this package compute them. Every fact is a plain
value (:data:`Fact`), stored and cached with the measured facts as it is.
"""

from __future__ import annotations


#: What an integrity fact may be: a number, a text, a flag, a list of hashes or sentences, or unknown.
Fact = float | int | str | bool | list[int] | list[str] | None


#: Workload facts of this stage: name -> description (merged into the view's fact catalogue).
WORKLOAD_FACTS: dict[str, str] = {
    "series_fingerprint": (
        "identity: SHA-256 of the concurrency series as read (grid times and values of its valid samples):"
        " equal for a byte-identical copy under another name or the same samples in another format"
    ),
    "values_fingerprint": (
        "identity: SHA-256 of the values of the valid samples alone, without their times: equal for a copy"
        " moved to other dates"
    ),
    "shape_fingerprint": (
        "identity: SHA-256 of the sequence of rises, falls and holds between valid samples (the same for a copy"
        " scaled by a factor >= 1 or shifted by a constant); None for series that change fewer than 24 times a"
        " day (too little noise to tell two series apart)"
    ),
    "repeated_days": (
        "identity: UTC days whose every sample repeats an earlier day of the same trace exactly (judged on"
        " days that change value at least 24 times); None when the step does not divide a day"
    ),
    "repeated_day_share": "identity: repeated_days / the days judged, unrounded",
    "first_sample": "time: timestamp of the first valid sample (ISO 8601, UTC)",
    "seconds_after_now": "time: seconds by which the last sample lies after now (0 when none does), unrounded",
    "samples_after_now": "time: number of grid samples dated after now",
    "resolution_step_seconds": (
        "resolution: the step the values really change at - the declared or inferred step times the length"
        " of the blocks of repeated values the series is made of (equal to step_seconds when there are none)"
    ),
    "resolution_block_samples": "resolution: samples per block of repeated values (1 when the series is not blocky)",
    "value_changes": "resolution: number of sample-to-sample value changes between valid samples",
    "roughness": (
        "resolution: std of second differences / std of first differences of the series (about 1.4 to 1.7 for"
        " measured noise, near 0 for a smooth curve); None when the series never changes"
    ),
    "exclusion_count": "shaping: number of declared exclusion ranges",
    "excluded_share": "shaping: share of the valid samples the declared exclusions remove, unrounded",
    "exclusion_recurring": (
        "shaping: the most sub-day exclusion ranges that start at one time of day (15-minute bins)"
    ),
    "exclusion_recurring_at": "shaping: that time of day, HH:MM UTC (None without sub-day ranges)",
    "excluded_top_share": (
        "shaping: share of the highest 5% of samples (before exclusions) that the exclusions remove"
    ),
    "excluded_demand_ratio": (
        "shaping: mean demand of the excluded samples / mean demand of the kept ones (None when either is empty)"
    ),
    "outlier_days_removed": "shaping: days removed automatically as outliers (excludeOutlierDays)",
    "outlier_day_share": "shaping: outlier_days_removed / the days the trace spans, unrounded",
    "resolution_jump_share": (
        "resolution: share of the series' movement (squared steps) on the block boundaries, when the blocks"
        " were found under jitter (the values change at every sample, but the real moves fall on one phase);"
        " None otherwise"
    ),
    "near_repeated_days": (
        "identity: UTC days that repeat an earlier day (at most 35 days before, or exactly at any distance) at"
        " 90% or more of their value changes - a copied day with a few samples edited; judged like"
        " repeated_days"
    ),
    "near_repeated_day_share": "identity: near_repeated_days / the days judged, unrounded",
    "edited_repeated_days": (
        "identity: near_repeated_days that are not exact repeats (near_repeated_days - repeated_days, at least 0):"
        " copied days with samples edited so that the exact test misses them"
    ),
    "edited_repeated_day_share": "identity: edited_repeated_days / the days judged, unrounded",
    "near_copy_of": (
        "identity: the workload of the model whose trace, in another file, shares the most 16-sample runs"
        " with this one (None when none shares any); copies PL111 already reports are left out"
    ),
    "near_copy_similarity": "identity: estimated share of 16-sample runs the two traces have in common, unrounded",
    "near_copy_trace": "identity: that workload's trace file, as written",
    "near_copy_pool": "identity: that workload's pool",
    "vram_seconds_after_now": (
        "time: seconds by which the last sample of the VRAM trace lies after now (0 when none does; None"
        " without a VRAM trace)"
    ),
    "jobs_seconds_after_now": (
        "time: seconds by which the last job end of the job list (durations) lies after now (0 when none"
        " does; None without a job list with start or end times)"
    ),
    "pulled_digest_matches": (
        "time: whether the pulled trace is byte for byte the file its pull wrote (the SHA-256 its provenance"
        " record holds); None without a record or a digest in it"
    ),
    "pulled_range_outside_seconds": (
        "time: seconds by which the trace's samples reach beyond the start or end its pull recorded"
        " (policylint pull's provenance record); 0 inside it, None without a record"
    ),
    "negative_samples": "plausibility: valid samples below zero (a count cannot be negative)",
    "job_gpus_max": (
        "plausibility: most GPUs any job of the measured job list (durations) held; None when the list"
        " records no GPU column (every job then counts as one GPU)"
    ),
    "job_gpus_median": "plausibility: median GPUs per job of the measured job list (None as for job_gpus_max)",
    "fractional_share": "plausibility: share of valid samples that are not whole numbers, unrounded",
}


#: Pool facts of this stage (plausibility of the pool's declarations).
POOL_FACTS: dict[str, str] = {
    "gpu_model": "plausibility: the pool's declared GPU model (gpu.model, or the flavor's nvidia.com/gpu.product label)",
    "gpu_model_memory_gib": (
        "plausibility: the memory the GPU model is sold with, GiB - the size written in its name (80GB), else"
        " policylint's table of common models; None for a model the table does not know"
    ),
    "gpu_memory_contradiction": (
        "plausibility: the declared gpu.memoryGiB divided by the nearest size the model is sold with,"
        " unrounded (1 when they agree; None when either is unknown)"
    ),
    "largest_gang_gpus": (
        "plausibility: most GPUs one replica or job of the pool's measured workloads holds (gpusPerReplica);"
        " None when none is measured"
    ),
    "largest_gang_workload": "plausibility: the workload that declares it",
    "admissible_gpus": (
        "plausibility: the most GPUs the pool can ever give one job - reserved + elastic GPUs plus the GPUs"
        " proposals ask for it"
    ),
    "queue_contradictions": (
        "plausibility: where the scheduler queue behind the pool contradicts itself (Kueue lendingLimit above"
        " nominalQuota, a borrowingLimit the cohort cannot lend; Volcano capability below deserved or"
        " guarantee, deserved below guarantee, children guaranteed more than their parent's capability), as"
        " sentences; [] when none"
    ),
    "queue_contradiction_count": "plausibility: number of queue_contradictions",
    "queue_contradiction_summary": "plausibility: queue_contradictions as one text, separated by semicolons",
}


#: Cluster facts of this stage.
CLUSTER_FACTS: dict[str, str] = {
    "loosened_options": (
        "integrity of the gate: every rule option set looser than its documented default, every rule whose"
        " severity was lowered and every rule the repository's configuration ignores, as sentences (None when"
        " the run's configuration is unknown)"
    ),
    "loosened_count": "integrity of the gate: number of loosened_options",
    "loosened_summary": "integrity of the gate: loosened_options as one text, separated by semicolons",
}
