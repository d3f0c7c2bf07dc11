"""A member that left a pool, found again as several newcomers whose traces add up to its own.

``--diff`` credits a pool with the baselines of the workloads it did not hold at the base
(newcomers), net of the members that left it. A member renamed beside its trace written
anew is recognised by its samples (:func:`policylint.engine.change_history._same_samples`);
one split into several newcomers, each holding part of every sample, is not: no part holds
its samples. Declared with a per-GPU figure cut in proportion, the parts then read as new
demand (sixth red team, 2026-12-07: ``chat-assistant`` split into ``-eu`` and ``-us`` with
half of every sample each and the per-GPU figure halved, serving 48 -> 70 past every gate).

:func:`split_members` finds such splits: a set of two or more newcomers whose concurrency
samples, each part read at its own phase against the departed member's times, add up to that
trace's samples (:data:`MATCHING` of them, or within :data:`NEAR` of its mean on average, so
that samples edited after the split do not hide it). Each part of a split is at most the
whole at nearly every sample, which picks the candidates (a newcomer whose mean is above the
whole's is none); at most :data:`MAX_CANDIDATES` of them are tried in every combination, and at
most :data:`MAX_COMPARED` pairs are compared in a run.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from policylint.engine.history import Change

    from policylint.model import Model, Workload

#: share of the departed trace's usable samples that the parts' sum must equal (and cover)
MATCHING = 0.9
#: newcomers tried as parts of one departed member, the likeliest first
MAX_CANDIDATES = 10
#: (departed member, newcomer) pairs compared sample by sample in one run: a change that retires hundreds of
#: workloads beside hundreds of new ones is screened for its first pairs (by name), not for hours
MAX_COMPARED = 20_000
#: two sample values are equal within this (traces hold counts; a sum re-rounded stays within it)
_EQUAL = 0.5
#: or the parts' sum is off the whole by at most this share of its mean, on average (samples edited after the
#: split: round 9 moved 12.5% of one half's samples by one)
NEAR = 0.05


def _phase(times: np.ndarray, origin: float, step: float) -> float:
    """How far ``times`` sit from the grid ``origin + k x step``, as one offset in (-step/2, step/2].

    A circular mean, so that jitter around the grid's own times does not average to half a step:
    a part written half a step off the departed trace's times (round 9: +150 s on 300 s) is read
    at its own phase.
    """
    import numpy as np

    if not step > 0:
        return 0.0
    angle = 2 * np.pi * np.mod(times - origin, step) / step
    mean = float(np.arctan2(np.mean(np.sin(angle)), np.mean(np.cos(angle))))
    return mean / (2 * np.pi) * step


def _samples(workload: Workload, limits: Any, path: Path | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The usable (time, value) samples of ``workload``'s concurrency trace as read, sorted by time (None: unread);
    ``path``: another copy of that file, read as the workload cites it (the base revision's)."""
    import dataclasses

    import numpy as np

    from policylint.errors import PolicylintError
    from policylint.measure.kept_reads import read_trace

    ref = workload.measurements.get("concurrency")
    if ref is None or ref.path is None:
        return None
    try:
        series = read_trace(ref if path is None else dataclasses.replace(ref, path=path), limits, None)
    except (PolicylintError, OSError, ValueError):
        return None
    keep = np.asarray(series.valid, dtype=bool) & ~np.isnan(series.values)
    times, values = np.asarray(series.times, dtype=np.float64)[keep], np.asarray(series.values, dtype=np.float64)[keep]
    order = np.argsort(times, kind="stable")
    return times[order], values[order]


def _on(times: np.ndarray, values: np.ndarray, at: np.ndarray, within: float) -> tuple[np.ndarray, np.ndarray]:
    """``values`` at the sample nearest each time of ``at`` (``times`` not empty), where one lies ``within`` seconds.

    The nearest sample, not an equal time: a part whose clock was set a second off is still a part
    (red team, round 8: one half's times moved by one second passed). 0 where none is near.
    """
    import numpy as np

    right = np.minimum(np.searchsorted(times, at), times.size - 1)
    left = np.maximum(right - 1, 0)
    nearest = np.where(np.abs(times[left] - at) <= np.abs(times[right] - at), left, right)
    held = np.abs(times[nearest] - at) <= within
    return np.where(held, values[nearest], 0.0), held


class _Budget:
    """The (whole, part) pairs still to compare in a run (:data:`MAX_COMPARED`)."""

    def __init__(self) -> None:
        self.left = MAX_COMPARED


def _split_of(
    whole: tuple[np.ndarray, np.ndarray], candidates: Sequence[tuple[str, tuple[np.ndarray, np.ndarray] | None]],
    budget: _Budget, required: str | None = None,
) -> tuple[str, ...] | None:
    """The parts (names, sorted) among ``candidates`` (name, samples) whose samples add up to ``whole``'s, or None.

    Each part is read at its own phase at its sample nearest each of the whole's times, within half
    the whole's step; a set of two or more parts matches when its sum equals :data:`MATCHING` of the
    whole's samples or is off by at most :data:`NEAR` of its mean on average. With ``required``,
    only sets holding that part count, and only when it does not match the whole alone (the rest
    holds a part of the demand): what is left of a member whose demand was carved out.
    """
    import numpy as np

    at, target = whole
    gaps = np.diff(at)
    spacing = float(np.median(gaps[gaps > 0])) if np.any(gaps > 0) else 0.0
    within = spacing / 2 * 0.999
    ceiling = 1.1 * float(np.mean(target)) + _EQUAL

    def matches(values: np.ndarray) -> bool:
        off = np.abs(values - target)
        return bool(np.mean(off <= _EQUAL) >= MATCHING or np.mean(off) <= NEAR * float(np.mean(target)))

    parts: list[tuple[float, str, np.ndarray]] = []
    for name, mine in candidates:
        if mine is None or mine[0].size == 0 or float(np.mean(mine[1])) > ceiling:
            continue  # a part holds less than the whole on average
        if budget.left <= 0:
            break
        budget.left -= 1
        values, held = _on(mine[0] - _phase(mine[0], at[0], spacing), mine[1], at, within)
        if held.mean() < MATCHING:
            continue  # a part has a sample wherever the whole has one
        if np.mean(values <= target + _EQUAL) < MATCHING or not np.any(values > _EQUAL):
            continue  # a part of a split is at most the whole, and holds some of it
        if name == required and matches(values):
            return None  # the member holds its whole trace still: nothing was carved out of it
        parts.append((float(np.sum(values)), name, values))
    parts.sort(key=lambda p: (-p[0], p[1]))
    parts = parts[:MAX_CANDIDATES]
    if required is not None and required not in {p[1] for p in parts}:
        return None
    for size in range(2, len(parts) + 1):
        for group in itertools.combinations(parts, size):
            if required is not None and required not in {p[1] for p in group}:
                continue
            if matches(np.sum([p[2] for p in group], axis=0)):
                return tuple(sorted(p[1] for p in group))
    return None


def split_members(
    departed: Sequence[Workload], newcomers: Mapping[str, Workload], limits: Any
) -> list[tuple[Workload, tuple[str, ...]]]:
    """Each member of ``departed`` (the base's workloads) found again as a split of ``newcomers`` (today's, by name).

    A newcomer is a part of at most one split; a departed member whose trace or whose
    candidates' traces cannot be read is not found. The answer is sorted by the departed
    member's name, each split's parts by name.
    """
    if len(newcomers) < 2 or not departed:
        return []
    read: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    budget = _Budget()
    found: list[tuple[Workload, tuple[str, ...]]] = []
    taken: set[str] = set()
    for x in sorted(departed, key=lambda w: w.name):
        whole = _samples(x, limits)
        if whole is None or whole[0].size == 0:
            continue
        names = [n for n in sorted(newcomers) if n not in taken]
        for name in names:
            if name not in read:
                read[name] = _samples(newcomers[name], limits)
        best = _split_of(whole, [(n, read[n]) for n in names], budget)
        if best is not None:
            found.append((x, best))
            taken.update(best)
    return found


def converts_to_more(departed: Workload, parts: Sequence[Workload]) -> bool:
    """Whether a part of a split turns the same in-flight count into more GPUs than the departed member did.

    A split that keeps the per-GPU figure and the replica width asks for nothing its samples do
    not: its parts stay newcomers, whose baselines back growth beyond the departed member's, so
    new demand measured with the split still backs a raise (false-positive hunt, 2026-12-07: a
    regional split with November newly measured was held to the base's baseline). A part with
    a lower per-GPU figure or wider replicas (GPUs = ceil(in flight / per-GPU figure) x GPUs per
    replica) is the departed member at a new conversion: measured on the pool it ran in.
    """
    from policylint.measure.conversion import gpu_conversion

    def factor(w: Workload) -> float | None:
        per_gpu, per_replica = gpu_conversion(w, "concurrency")
        return per_replica / per_gpu if per_gpu else None

    was = factor(departed)
    if was is None:
        return True  # nothing to compare with: the samples decide
    return any((now := factor(p)) is None or now > was * (1 + 1e-9) for p in parts)


def carved_out(change: Change, model: Model, measured: Mapping[str, Any], limits: Any) -> dict[str, Workload]:
    """Newcomers that hold demand carved out of a member that stayed (today's name -> that member, today's workload).

    A member that keeps part of every sample of its trace while a new workload holds the rest is split
    as a member that left is (round 8, 2026-12-07: ``chat-assistant`` kept a random half, the other
    half became ``chat-assistant-west`` in a new cluster's pool at 5 in flight per GPU where chat runs
    14, and 53 GPUs reserved and proposed became 72 past every gate). A member is a workload the base
    placed (``measured``: :func:`policylint.engine.history.measured_on`) whose concurrency trace changed;
    a newcomer one it did not place, whose trace is new or changed and which turns an in-flight count
    into more GPUs than the member (:func:`converts_to_more`). The member's trace as the base held it
    is the whole; its trace today must be one of the parts (:func:`_split_of`), holding less than the
    whole. A split that keeps the conversion is not looked for: its newcomers stay newcomers.
    """
    import os
    import tempfile
    from pathlib import Path

    from policylint.engine.history import _base_copy
    from policylint.readers.limits import DEFAULT_LIMITS
    from policylint.writer import write_file

    commit, top = change.commit, change.top
    if commit is None or top is None:
        return {}
    changed = {os.path.realpath(p) for p in change.files}

    def trace(w: Workload) -> str | None:
        ref = w.measurements.get("concurrency")
        return os.path.realpath(ref.path) if ref is not None and ref.path is not None else None

    workloads = sorted(model.workloads.values(), key=lambda w: w.name)
    fresh = [w for w in workloads if w.name not in measured and trace(w) in changed]
    stayed = [w for w in workloads if w.name in measured and trace(w) in changed]
    if not fresh or not stayed:
        return {}
    cap = (limits or DEFAULT_LIMITS).max_file_bytes
    read: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    budget = _Budget()
    out: dict[str, Workload] = {}
    with tempfile.TemporaryDirectory(prefix="policylint-base-") as scratch:
        for member in stayed:
            tried = [w for w in fresh if w.name not in out and converts_to_more(member, [w])]
            if not tried:
                continue
            real = trace(member) or ""
            old = _base_copy(commit, top, change.renamed.get(real, real), cap, Path(scratch), write_file)
            whole = _samples(member, limits, old) if old is not None else None
            if whole is None or whole[0].size == 0:
                continue
            for w in [member, *tried]:
                if w.name not in read:
                    read[w.name] = _samples(w, limits)
            parts = _split_of(whole, [(w.name, read[w.name]) for w in [member, *tried]], budget, member.name)
            if parts is None and read[member.name] is not None:
                # each newcomer moved back by the lag at which it best fills what the member gave up (round
                # 16: the carved half delayed by an hour no longer added up sample by sample); the screen decides
                parts = _split_of(whole, [(member.name, read[member.name]), *(
                    (w.name, _lagged(whole, read[member.name], read[w.name])) for w in tried)], budget, member.name)
            out.update(dict.fromkeys((n for n in parts or () if n != member.name), member))
    return out


#: the longest delay looked for between carved-out demand and what its member gave up
MAX_LAG_SECONDS = 86_400.0


def _lagged(
    whole: tuple[np.ndarray, np.ndarray], kept: tuple[np.ndarray, np.ndarray] | None,
    part: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``part`` with its times moved by the whole step count, within a day, at which its samples best match
    what ``kept`` (the member today) no longer holds of ``whole`` (the member at the base): a cross-correlation
    on the whole's grid. ``part`` as it is when it has no samples or no lag matches better than none."""
    import numpy as np

    if part is None or kept is None or part[0].size < 2 or kept[0].size == 0:
        return part
    at, target = whole
    gaps = np.diff(at)
    if not np.any(gaps > 0):
        return part
    step = float(np.median(gaps[gaps > 0]))
    mine, _ = _on(kept[0] - _phase(kept[0], at[0], step), kept[1], at, step / 2 * 0.999)
    given = target - mine  # what the member gave up, on the whole's times
    reach = int(MAX_LAG_SECONDS // step)
    first = int(np.floor((min(float(at[0]), float(part[0][0])) - float(at[0])) / step)) - 1
    size = int(np.ceil((max(float(at[-1]), float(part[0][-1])) - float(at[0])) / step)) - first + 2
    if size <= 0 or size > 4 * at.size + 2 * reach:
        return part
    a = np.zeros(size)
    b = np.zeros(size)
    a[np.clip(np.rint((at - at[0]) / step).astype(np.int64) - first, 0, size - 1)] = given - given.mean()
    slots = np.clip(np.rint((part[0] - at[0]) / step).astype(np.int64) - first, 0, size - 1)
    b[slots] = part[1] - float(np.mean(part[1]))
    n = 1 << int(np.ceil(np.log2(2 * size)))
    corr = np.fft.irfft(np.fft.rfft(a, n) * np.conj(np.fft.rfft(b, n)), n)
    lags = np.concatenate((np.arange(0, reach + 1), np.arange(-reach, 0)))
    scores = corr[lags % n]
    best = int(lags[int(np.argmax(scores))])
    if best == 0 or not scores.max() > corr[0]:
        return part
    return part[0] + best * step, part[1]


def carved_note(model: Model, carved: Mapping[str, Workload]) -> dict[str, str]:
    """PL950's words for :func:`carved_out`'s answer, by the pools of the member and of the newcomer (today's names)."""
    from policylint.measure.conversion import gpu_conversion

    def conversion(w: Workload) -> str:
        per_gpu, per_replica = gpu_conversion(w, "concurrency")
        words = f"{per_gpu:g} in flight per GPU" if per_gpu else "no per-GPU figure"
        return words + (f" and {per_replica} GPUs per replica" if per_replica != 1 else "")

    out: dict[str, list[str]] = {}
    for name, member in sorted(carved.items()):
        w = model.workloads[name]
        text = (f"{name} holds demand carved out of {member.name}: its samples and {member.name}'s today add up to"
                f" {member.name}'s at the base revision, and it turns them into GPUs at {conversion(w)} where"
                f" {member.name} runs {conversion(member)}, so it is measured as {member.name}'s")
        for pool in {p.qualified for p in (w.pool, member.pool) if p is not None}:
            out.setdefault(pool, []).append(text)
    return {q: "; ".join(texts) for q, texts in out.items()}
