"""The parts of a summed trace: each column alone, then groups of them (red team, 2026-12-06, round 14)."""

from __future__ import annotations

from policylint.calc.prints import ALL_GROUPS_UP_TO, PAIRS_UP_TO, column_groups, group_label


def test_columns_alone_come_first_and_keep_their_index() -> None:
    for count in range(1, PAIRS_UP_TO + 3):
        groups = column_groups(count)
        assert groups[:count] == [(i,) for i in range(count)]


def test_every_group_short_of_the_whole_up_to_the_bound() -> None:
    assert column_groups(2) == [(0,), (1,)]  # the whole sum is the trace's own print
    assert column_groups(3)[3:] == [(0, 1), (0, 2), (1, 2)]
    for count in range(3, ALL_GROUPS_UP_TO + 1):
        groups = column_groups(count)
        assert len(groups) == 2**count - 2  # every non-empty proper subset
        assert len(set(groups)) == len(groups)
        assert tuple(range(count)) not in groups


def test_pairs_only_past_the_bound_and_none_past_the_last() -> None:
    count = ALL_GROUPS_UP_TO + 1
    assert column_groups(count)[count:] == [(a, b) for a in range(count) for b in range(a + 1, count)]
    assert column_groups(PAIRS_UP_TO + 1) == [(i,) for i in range(PAIRS_UP_TO + 1)]


def test_labels_name_the_columns_as_the_spec_does() -> None:
    names = ["own", "left", "right"]
    assert [group_label(names, i) for i in range(6)] == [
        "column own", "column left", "column right",
        "columns own and left", "columns own and right", "columns left and right",
    ]
    assert group_label(["a", "b", "c", "d"], 14 - 1) == "columns b, c and d"
    assert group_label([], 0) == "column #1"
