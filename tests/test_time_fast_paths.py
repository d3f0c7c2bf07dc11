"""The fast timestamp paths read exactly what the slow path reads (issue 26).

The slow path is :func:`policylint.readers.timestamps.parse_iso` (numpy, every
ISO form the readers accept). The fast paths - ``datetime.fromisoformat`` for
one string (exclusions, time origins) and Arrow's parser for columns, whole or
row by row - must give the same float64 bits for every string both read, and
leave every other string to the slow path, so errors and their rows are the
slow path's own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policylint.readers.kept import digest_and_keep, take
from policylint.readers.timestamps import iso_to_seconds, parse_exclusion, parse_iso, parse_time, timestamps_to_seconds
from policylint.traces import read_series

DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


def _two(n: int) -> str:
    return f"{n:02d}"


@st.composite
def iso_text(draw: st.DrawFn) -> str:
    """An ISO-8601 time in any form the readers accept, now and then a malformed one."""
    year = draw(st.integers(1970, 2199))
    month = draw(st.integers(1, 12))
    day = draw(st.integers(1, 31))  # 30 February and 31 April are bad rows
    text = f"{year:04d}-{_two(month)}-{_two(day)}"
    if draw(st.booleans()):
        text += draw(st.sampled_from(["T", " ", "t"]))
        text += _two(draw(st.integers(0, 24)))  # hour 24 is a bad row
        text += ":" + _two(draw(st.integers(0, 60)))
        if draw(st.booleans()):
            text += ":" + _two(draw(st.integers(0, 60)))  # 60: a leap second
            if draw(st.booleans()):
                text += "." + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=1, max_size=12)))
        hours = _two(draw(st.integers(0, 23)))
        minutes = draw(st.sampled_from(["00", "30", "45", "59"]))
        text += draw(
            st.sampled_from(
                ["", "Z", "z", f"+{hours}:{minutes}", f"-{hours}:{minutes}", f"+{hours}{minutes}", f"-{hours}", "+24:00"]
            )
        )
    text = draw(st.sampled_from(["", " ", "\t"])) + text + draw(st.sampled_from(["", " "]))
    if draw(st.integers(0, 30)) == 0:
        text = draw(st.sampled_from(["x", "", "2020-13-01", "garbage", text[:-2]]))
    return text


def _slow_one(text: str) -> float | str:
    """parse_time's answer when only the slow path existed: the seconds, or the error message."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return float(parse_iso(np.array([text]))[0])
    except ValueError as exc:
        return f"ValueError: {exc}"


def _fast_one(text: str) -> float | str:
    try:
        return parse_time(text)
    except ValueError as exc:
        return f"ValueError: {exc}"


def _same(a: float | str, b: float | str) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    return a == b


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(iso_text())
@example("2026-09-01")
@example("2026-09-01T10:00:00.5+05:30")
@example("2038-01-19T05:14:07.999999+02:00")  # an offset across 2**31 seconds
@example("2004-01-10T13:37:04.000001-00:30")  # and across 2**30
@example("2020-02-30T00:00")
def test_parse_time_fast_path_is_the_slow_path(text: str) -> None:
    assert _same(_fast_one(text), _slow_one(text)), text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="0123456789-T:.Z+ z", max_size=40))
def test_parse_time_fast_path_on_any_text(text: str) -> None:
    assert _same(_fast_one(text), _slow_one(text)), text


def test_exclusion_end_of_day_and_errors_unchanged() -> None:
    ex = parse_exclusion("2026-05-01/2026-05-03")
    assert (ex.start, ex.end) == (parse_time("2026-05-01"), parse_time("2026-05-03") + 86_400.0)
    with pytest.raises(ValueError, match="ends before it starts"):
        parse_exclusion("2026-05-03T10:00Z/2026-05-03T09:00Z")
    with pytest.raises(ValueError):
        parse_exclusion("2026-05-03/2026-02-30")


def _column_answer(texts: list[str], fn: object) -> np.ndarray | str:
    try:
        return np.asarray(fn(texts))  # type: ignore[operator]
    except ValueError:
        return "ValueError"


def _fast_column(texts: list[str]) -> np.ndarray:
    return iso_to_seconds(pa.array(texts, type=pa.string()))


def _slow_column(texts: list[str]) -> np.ndarray:
    return parse_iso(np.array(texts, dtype=np.str_))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(iso_text(), min_size=1, max_size=300))
def test_column_fast_path_is_the_slow_path(texts: list[str]) -> None:
    fast, slow = _column_answer(texts, _fast_column), _column_answer(texts, _slow_column)
    if isinstance(slow, str) or isinstance(fast, str):
        # The whole-column Arrow cast may read a column the slow path refuses (it always
        # did: that is the existing fast path); a row-by-row read never does.
        assert isinstance(slow, str), texts
        return
    assert fast.tobytes() == slow.tobytes(), texts


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(iso_text(), min_size=2, max_size=200), st.data())
def test_mixed_column_rows_read_by_arrow_equal_the_slow_path(texts: list[str], data: st.DataObject) -> None:
    # a naive and a zoned time side by side: never one whole-column cast
    texts = ["2026-09-01T00:00:00", "2026-09-01T00:00:00Z", *texts]
    fast, slow = _column_answer(texts, _fast_column), _column_answer(texts, _slow_column)
    assert isinstance(fast, str) == isinstance(slow, str), texts
    if not isinstance(fast, str):
        assert isinstance(slow, np.ndarray) and fast.tobytes() == slow.tobytes(), texts


def test_large_mixed_column_with_odd_rows() -> None:
    times = 1_788_134_400 + 60 * np.arange(20_000)
    naive = np.datetime_as_string(times.astype("datetime64[s]"), unit="s")
    zoned = np.datetime_as_string((times * 1000).astype("datetime64[ms]"), unit="ms", timezone="UTC")
    texts = np.where(np.arange(times.size) % 3 == 0, naive, zoned).astype(object)
    texts[17] = " " + texts[17]
    texts[5_000] = texts[5_000].replace("Z", "z")
    texts[12_346] = texts[12_346][:-1] + "+00:00"
    fast = _fast_column(list(texts))
    assert fast.tobytes() == _slow_column(list(texts)).tobytes()
    assert fast.tobytes() == times.astype(np.float64).tobytes()
    texts[9_999] = "2026-02-30T00:00:00"
    with pytest.raises(ValueError):
        _fast_column(list(texts))


def _real_traces() -> list[Path]:
    found = sorted(DATA.glob("*.csv"))
    if SHARED.is_dir():
        found += sorted(SHARED.glob("*.csv"))
    return found


@pytest.mark.parametrize("path", _real_traces(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_traces_fast_paths_equal_the_slow_path(path: Path) -> None:
    name = path.read_text(encoding="utf-8").split("\n", 1)[0].split(",")[0]
    cells = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={name: pa.string()}))
    column = cells.column(name).combine_chunks()
    slow = _slow_column(column.to_pylist())
    assert iso_to_seconds(column).tobytes() == slow.tobytes()
    assert iso_to_seconds(pa.chunked_array([column]).combine_chunks()).tobytes() == slow.tobytes()
    # the typed read (Arrow parsing the CSV's times itself) gives the same seconds
    typed = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(column_types={name: pa.timestamp("ns")}))
    assert timestamps_to_seconds(typed.column(name)).tobytes() == slow.tobytes()
    # and the first cells one by one, through parse_time
    for cell in column.to_pylist()[:200]:
        assert _same(_fast_one(cell), _slow_one(cell)), cell


def test_kept_bytes_are_read_once_and_only_while_unchanged(tmp_path: Path) -> None:
    import hashlib
    import os

    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,in_flight\n" + "".join(f"{1_788_134_400 + 300 * i},{i % 7}\n" for i in range(500)))
    expected = read_series(trace)
    assert digest_and_keep(trace) == hashlib.sha256(trace.read_bytes()).hexdigest()
    assert take(trace) == trace.read_bytes()
    assert take(trace) is None  # forgotten once taken
    digest_and_keep(trace)
    got = read_series(trace)  # parsed from the kept bytes
    assert got.values.tobytes() == expected.values.tobytes() and got.times.tobytes() == expected.times.tobytes()
    assert take(trace) is None
    digest_and_keep(trace)
    trace.write_text(trace.read_text().replace(",3\n", ",4\n"))
    os.utime(trace, ns=(1, 1))
    assert take(trace) is None  # changed since it was hashed: read again
