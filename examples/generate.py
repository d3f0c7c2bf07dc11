"""Generate the measurement files of the example capacity repositories.

Run from anywhere:  python examples/generate.py

Everything is synthetic but shaped like real production telemetry:

* inference traces: in-flight requests every 300 s with a daytime peak, a night trough, a
  weekend dip, slow drift, Poisson noise, a few 5-minute spikes (narrower than any cold
  start, so they are noise) and one or two multi-hour bursts that are real demand;
* batch and training traces: running jobs every 300 s, obtained by sweeping the job list
  that is written beside them, so trace and job list always agree.

Each series has its own random generator seeded from a fixed seed plus the workload name,
so the output is byte-identical on every run and adding a workload does not change the
others.  Output goes to ``good/measurements`` and ``bad/measurements`` next to this file.
"""

from __future__ import annotations

import json
import zlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

SEED = 20261130
STEP = 300  # seconds between samples
DAYS = 92
END = int(datetime(2026, 11, 30, 23, 55, tzinfo=timezone.utc).timestamp())
START = END - (DAYS * 86400 - STEP)  # 2026-08-31T00:00:00Z, 92 whole days
HERE = Path(__file__).resolve().parent


def rng_for(name: str) -> np.random.Generator:
    """A generator that depends only on SEED and the series name."""
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def epoch(text: str) -> int:
    """Unix seconds of an ISO date-time written in UTC."""
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp())


def grid(start: int = START, end: int = END) -> np.ndarray:
    return np.arange(start, end + 1, STEP, dtype=np.int64)


def smooth_noise(rng: np.random.Generator, t: np.ndarray, hours: float, sd: float) -> np.ndarray:
    """Slowly varying multiplicative drift: random knots every `hours`, linearly interpolated."""
    knots = np.arange(t[0], t[-1] + hours * 3600 + 1, hours * 3600)
    return 1.0 + np.interp(t, knots, rng.normal(0.0, sd, knots.size))


def inference_series(
    name: str,
    t: np.ndarray,
    level: float,
    peak_hour: float,
    night: float,
    weekend: float,
    growth: float,
    spikes: int,
    bursts: list[tuple[str, float, float]],
    incidents: list[tuple[str, float, float]] = (),
) -> np.ndarray:
    """In-flight requests of an interactive service.

    level: in-flight at the weekday daytime peak at the start of the window;
    night: trough as a fraction of the peak; weekend: weekend factor;
    growth: relative traffic growth across the window;
    bursts / incidents: (start ISO, hours, factor) multiplicative episodes.
    """
    rng = rng_for(name)
    hour = (t % 86400) / 3600.0
    dow = ((t // 86400) + 3) % 7  # 0 = Monday (1970-01-01 was a Thursday)
    shape = (0.5 + 0.5 * np.cos(2 * np.pi * (hour - peak_hour) / 24.0)) ** 1.6
    diurnal = night + (1.0 - night) * shape
    weekly = np.where(dow >= 5, weekend, 1.0)
    trend = 1.0 + growth * (t - t[0]) / (t[-1] - t[0])
    mean = level * diurnal * weekly * trend * smooth_noise(rng, t, 6.0, 0.03)
    for start, hours, factor in list(bursts) + list(incidents):
        s0 = epoch(start)
        inside = (t >= s0) & (t < s0 + hours * 3600)
        mean = np.where(inside, mean * factor, mean)
    # short spikes: one sample (5 minutes) each, narrower than the cold start
    idx = rng.choice(t.size, size=spikes, replace=False)
    mean[idx] *= rng.uniform(1.8, 2.6, size=spikes)
    return rng.poisson(mean).astype(np.int64)


def job_list(
    name: str,
    first_start: int,
    last_start: int,
    per_day: float,
    median_s: float,
    sigma: float,
    gpus: int,
    nightly_hour: float | None = None,
    nightly_jobs: float = 0.0,
    nightly_spread_s: float = 1800.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times of jobs: a Poisson stream plus an optional nightly batch."""
    rng = rng_for(name + "/jobs")
    days = (last_start - first_start) / 86400.0
    n = rng.poisson(per_day * days)
    starts = [np.sort(rng.uniform(first_start, last_start, n))]
    if nightly_hour is not None:
        day0 = first_start - first_start % 86400
        nights = np.arange(day0, last_start, 86400) + nightly_hour * 3600
        counts = rng.poisson(nightly_jobs, nights.size)
        offsets = rng.uniform(0, nightly_spread_s, counts.sum())
        starts.append(np.repeat(nights, counts) + offsets)
    start = np.sort(np.concatenate(starts)).round().astype(np.int64)
    duration = np.exp(rng.normal(np.log(median_s), sigma, start.size)).round().astype(np.int64)
    duration = np.maximum(duration, 60)
    return start, start + duration


def running(t: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Running-job count at each grid instant: a sweep over sorted starts and ends."""
    return np.searchsorted(np.sort(start), t, "right") - np.searchsorted(np.sort(end), t, "right")


def write_csv(path: Path, header: str, columns: list[np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = np.column_stack(columns)
    with path.open("w", newline="\n") as fh:
        fh.write(header + "\n")
        np.savetxt(fh, data, fmt="%d", delimiter=",")


def write_jobs(path: Path, prefix: str, start: np.ndarray, end: np.ndarray, gpus: int,
               durations_only: bool = False) -> None:
    """Completed jobs only (a job still running at the end of the window has no end yet)."""
    done = end <= END
    start, end = start[done], end[done]
    ids = np.array([f"{prefix}-{i:05d}" for i in range(1, start.size + 1)])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="\n") as fh:
        if durations_only:
            fh.write("job_id,duration_seconds,gpus\n")
            rows = (f"{i},{e - s},{gpus}\n" for i, s, e in zip(ids, start, end))
        else:
            fh.write("job_id,start,end,gpus\n")
            rows = (f"{i},{s},{e},{gpus}\n" for i, s, e in zip(ids, start, end))
        fh.writelines(rows)


def write_prometheus(path: Path, t: np.ndarray, values: np.ndarray, metric: dict[str, str]) -> None:
    """A Prometheus range-query response (/api/v1/query_range), values as strings."""
    doc = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": metric,
                        "values": [[int(a), str(int(b))] for a, b in zip(t, values)]}],
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def main() -> None:
    t = grid()
    good = HERE / "good" / "measurements"
    bad = HERE / "bad" / "measurements"

    # ---- inference -------------------------------------------------------------------
    chat = inference_series(
        "chat-assistant", t, level=300, peak_hour=14.5, night=0.22, weekend=0.72, growth=0.12,
        spikes=6,
        bursts=[("2026-09-17T13:00:00", 3.0, 1.35), ("2026-11-10T15:00:00", 2.5, 1.30)],
        # retry storm during a gateway incident: in-flight doubled while requests hung
        incidents=[("2026-10-14T09:00:00", 6.0, 2.1)],
    )
    code = inference_series(
        "code-completion", t, level=190, peak_hour=15.0, night=0.10, weekend=0.30, growth=0.05,
        spikes=8, bursts=[("2026-10-27T16:00:00", 2.0, 1.30)],
        # a load-test replay was pointed at production by mistake
        incidents=[("2026-09-22T10:00:00", 2.0, 2.5)],
    )
    embed = inference_series(
        "embeddings-search", t, level=560, peak_hour=13.0, night=0.45, weekend=0.80,
        growth=0.04, spikes=5, bursts=[("2026-10-05T08:00:00", 4.0, 1.25)],
    )
    rerank = inference_series(
        "reranker", t, level=150, peak_hour=13.0, night=0.40, weekend=0.78, growth=0.04,
        spikes=5, bursts=[("2026-10-05T08:00:00", 4.0, 1.25)],
    )
    write_csv(good / "traces" / "chat-assistant.csv", "timestamp,in_flight", [t, chat])
    write_csv(good / "traces" / "code-completion.csv", "timestamp,in_flight", [t, code])
    write_prometheus(good / "traces" / "embeddings-search.json", t, embed,
                     {"__name__": "vllm:num_requests_running", "model_name": "bge-m3-embed"})
    write_csv(good / "traces" / "reranker.csv", "timestamp,in_flight", [t, rerank])

    # ---- batch -----------------------------------------------------------------------
    history = START - 7 * 86400  # jobs that were already running when the window opened
    ev_s, ev_e = job_list("nightly-eval", history, END - 3600, per_day=3, median_s=5400,
                          sigma=0.45, gpus=2, nightly_hour=0.0, nightly_jobs=20,
                          nightly_spread_s=4 * 3600)
    sc_s, sc_e = job_list("offline-scoring", history, END - 3600, per_day=4, median_s=3600,
                          sigma=0.5, gpus=1, nightly_hour=21.0, nightly_jobs=36,
                          nightly_spread_s=4 * 3600)
    write_csv(good / "traces" / "nightly-eval.csv", "timestamp,running_jobs",
              [t, running(t, ev_s, ev_e)])
    write_csv(good / "traces" / "offline-scoring.csv", "timestamp,running_jobs",
              [t, running(t, sc_s, sc_e)])
    write_jobs(good / "jobs" / "nightly-eval.csv", "eval", ev_s[ev_s >= START], ev_e[ev_s >= START], 2)
    write_jobs(good / "jobs" / "offline-scoring.csv", "score", sc_s[sc_s >= START],
               sc_e[sc_s >= START], 1, durations_only=True)

    # ---- training --------------------------------------------------------------------
    history = START - 40 * 86400
    pt_s, pt_e = job_list("pre-training", history, END - 86400, per_day=0.6, median_s=4.5 * 86400,
                          sigma=0.45, gpus=64)
    ft_s, ft_e = job_list("fine-tuning", history, END - 3600, per_day=28, median_s=6 * 3600,
                          sigma=0.6, gpus=8)
    write_csv(good / "traces" / "pre-training.csv", "timestamp,running_jobs",
              [t, running(t, pt_s, pt_e)])
    write_csv(good / "traces" / "fine-tuning.csv", "timestamp,running_jobs",
              [t, running(t, ft_s, ft_e)])
    write_jobs(good / "jobs" / "pre-training.csv", "pt", pt_s[pt_e > START], pt_e[pt_e > START], 64)
    write_jobs(good / "jobs" / "fine-tuning.csv", "ft", ft_s[ft_e > START], ft_e[ft_e > START], 8)

    # ---- the deliberately bad repository ----------------------------------------------
    # Same demand as the good repository where possible, so the two are easy to compare.
    write_csv(bad / "traces" / "chat-assistant.csv", "timestamp,in_flight", [t, chat])
    recent = t >= END - 30 * 86400 + STEP  # only the last 30 days were ever collected
    write_csv(bad / "traces" / "embeddings-search.csv", "timestamp,in_flight",
              [t[recent], embed[recent]])
    # Training jobs with a heavy tail: most runs are short experiments, a few run for weeks.
    tail_s, tail_e = job_list("bad/pre-training", START - 30 * 86400, END - 3600, per_day=5,
                              median_s=3 * 3600, sigma=1.6, gpus=8)
    write_jobs(bad / "jobs" / "pre-training.csv", "pt", tail_s[tail_e > START],
               tail_e[tail_e > START], 8)
    write_jobs(bad / "jobs" / "nightly-eval.csv", "eval", ev_s[ev_s >= START], ev_e[ev_s >= START], 2)
    # Ten measured days padded with 82 days of zeros to look like a 92-day window; it ends
    # the day before the bad repository's review date, so only the padding is wrong.
    shift = 41 * 86400
    scoring = running(t, sc_s, sc_e)
    padded = np.where(t > END - 10 * 86400, scoring, 0)
    write_csv(bad / "traces" / "catalogue-embed-padded.csv", "timestamp,running_jobs", [t + shift, padded])


if __name__ == "__main__":
    main()
