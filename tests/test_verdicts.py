"""Kept verdicts (policylint/engine/verdicts.py): a neighbour's findings taken from the cache only when nothing they are made from moved.

Every warm narrowed run is compared byte for byte with the same run under
``--no-cache``; the counters show that kept verdicts were taken (or not).
"""

from __future__ import annotations

from pathlib import Path

from test_pooled_incremental import _write_workload
from test_repo_index import _run, _same_as_no_cache, folder, repo  # noqa: F401 - fixtures

from policylint.engine import verdicts


def _hits(root: Path, *files: str) -> tuple[str, int, int]:
    before = dict(verdicts.STATS)
    out = _same_as_no_cache(root, *files)
    return out, verdicts.STATS["hits"] - before["hits"], verdicts.STATS["kept"] - before["kept"]


def _on(report: str, file: str, code: str) -> bool:
    import json

    return any(f["file"] == file and f["code"] == code for f in json.loads(report)["findings"])


def _entry(folder: Path) -> Path:  # noqa: F811 - the fixture's name
    (found,) = folder.glob("verdicts-v*/*/*.json")
    return found


def test_a_neighbours_verdict_follows_the_pools_facts(repo: Path, folder: Path) -> None:  # noqa: F811
    before = dict(verdicts.STATS)
    assert _run(repo, ".")[0] in (0, 1)
    # a whole run keeps every workload's verdicts of the rules a neighbour is judged by
    assert verdicts.STATS["kept"] - before["kept"] >= 9 and verdicts.STATS["hits"] == before["hits"]
    _entry(folder)
    first, hits, kept = _hits(repo, "workloads/w-2.yaml")
    assert hits >= 7 and kept == 0  # the neighbours of w-2 in pool shared, as the whole run judged them
    again, hits, kept = _hits(repo, "workloads/w-2.yaml")
    assert again == first and hits >= 7 and kept == 0
    # w-2 now cites w-4's trace: w-4 (a neighbour, its own files unchanged; the second by name
    # of the two) is double counted - the pool's facts moved, w-4's kept verdict must not be used
    _write_workload(repo, 2, trace="w-4.csv")
    moved, hits, kept = _hits(repo, "workloads/w-2.yaml")
    # (w-4 was a near copy of w-0 - PL972 - and is now a double count of w-2 - PL111)
    assert _on(moved, "workloads/w-4.yaml", "PL111") and not _on(first, "workloads/w-4.yaml", "PL111")
    assert _on(first, "workloads/w-4.yaml", "PL972") and not _on(moved, "workloads/w-4.yaml", "PL972")
    assert kept >= 1  # w-4 judged again, and kept with its new facts
    # the same again: now taken from the entry, the same double count
    same, hits, kept = _hits(repo, "workloads/w-2.yaml")
    assert same == moved and hits >= 7
    # and back
    _write_workload(repo, 2)
    back, hits, kept = _hits(repo, "workloads/w-2.yaml")
    assert back == first


def test_a_changed_rule_or_configuration_is_not_served_kept_verdicts(repo: Path, folder: Path) -> None:  # noqa: F811
    _write_workload(repo, 2, trace="w-4.csv")  # a double count to report on a neighbour
    assert _run(repo, ".")[0] in (0, 1)
    plain, hits, _ = _hits(repo, "workloads/w-2.yaml")
    assert hits >= 7 and _on(plain, "workloads/w-4.yaml", "PL111")
    # the configuration changes the rule's severity: the neighbour's finding changes with it
    (repo / ".policylint.yaml").write_text("rules:\n  PL111: {severity: warning}\n")
    warned, hits, _ = _hits(repo, "workloads/w-2.yaml")
    assert warned != plain and '"severity": "warning"' in warned
    assert hits == 0
    # a rule folder with a rule reading a neighbour fact, its message then edited
    rules = repo / "policy"
    rules.mkdir()
    rule = (
        "rules:\n"
        "  - code: ACME901\n    name: twice-counted\n    severity: warning\n    section: bands\n"
        "    subject: workload\n    summary: A workload repeats another's measurement.\n"
        "    message: \"{subject} repeats {double_counted_with} (MARK)\"\n    hint: \"cite its own\"\n"
        "    needs: [measurement_double_counted]\n    at: measurement_double_counted\n"
        "    require:\n      measurement_double_counted: {allowed: [false]}\n"
        "    docs:\n      what: Flags a repeated measurement.\n      why: A pool counts it twice.\n"
        "      example: \"measurements: same\"\n      use_instead: \"measurements: own\"\n"
        "      references: [\"ACME capacity handbook\"]\n"
    )
    (rules / "team.yaml").write_text(rule.replace("MARK", "one"))
    (repo / ".policylint.yaml").write_text("rule-dirs: [policy]\n")
    ran = _run(repo, "--changed-files", "workloads/w-2.yaml")
    assert ran == _run(repo, "--changed-files", "workloads/w-2.yaml", "--no-cache")
    assert "(one)" in ran[1], ran
    (rules / "team.yaml").write_text(rule.replace("MARK", "two"))
    edited, hits, _ = _hits(repo, "workloads/w-2.yaml")
    assert "(two)" in edited and "(one)" not in edited and hits == 0


def test_a_damaged_or_planted_entry(repo: Path, folder: Path) -> None:  # noqa: F811
    _write_workload(repo, 2, trace="w-4.csv")
    assert _run(repo, ".")[0] in (0, 1)
    honest, _, _ = _hits(repo, "workloads/w-2.yaml")
    entry = _entry(folder)
    data = entry.read_bytes()
    # a finding's message changed without its seal: the entry is refused, nothing taken from it
    entry.write_bytes(data.replace(b"counts that demand twice", b"counts that demand thrice", 1))
    damaged, hits, kept = _hits(repo, "workloads/w-2.yaml")
    assert damaged == honest and hits == 0 and kept >= 7  # judged afresh, and kept again
    # truncated
    entry.write_bytes(entry.read_bytes()[:100])
    cut, hits, _ = _hits(repo, "workloads/w-2.yaml")
    assert cut == honest and hits == 0


def test_copies_of_one_place_table_share_its_exact_form(tmp_path: Path) -> None:
    """A copy holding the very same place tuples takes the form already made; any other dict is made afresh, exactly."""
    from types import SimpleNamespace

    from policylint.cache.exact import quick_bytes

    table = {"tolerance_seconds": ("spec", "tolerance"), "pool": ("spec", "pool"), "daily": ("spec", "concurrency")}
    kept = verdicts.Verdicts(tmp_path, tmp_path)

    def form(paths: dict[str, tuple[str, ...]]) -> bytes | None:
        return kept._places_text(SimpleNamespace(paths=paths), None)  # type: ignore[arg-type]

    views = [dict(table) for _ in range(3)]  # as the index's stand-ins hold them: a copy each
    assert {form(v) for v in views} == {quick_bytes(table)}
    assert len(kept._place_forms) == 1
    # equal tuples that are other objects, another order, another place: each made from its own dict
    apart = {k: tuple(list(v)) for k, v in table.items()}
    moved = dict(reversed(list(table.items())))
    other = {**table, "pool": ("spec", "queue")}
    for paths in (apart, moved, other):
        assert form(paths) == quick_bytes(paths)
    assert form(moved) != form(views[0]) and form(other) != form(views[0])


def test_a_place_added_to_a_shared_table_copies_it_once_and_never_changes_it(tmp_path: Path) -> None:
    """Views from the index share a place table: a step's added place gives each a copy (one per table and
    fact, shared in turn), the table itself stays as read, and the places' forms follow each view's table."""
    from types import SimpleNamespace

    from policylint.cache.exact import quick_bytes
    from policylint.engine.view import View

    table = {"tolerance_seconds": ("spec", "tolerance"), "pool": ("spec", "pool")}
    frozen = dict(table)
    views = [View("workload", f"workload w-{i}", SimpleNamespace(), ("metadata", "name"), {}, table)  # type: ignore[arg-type]
             for i in range(3)]
    own = View("workload", "workload own", SimpleNamespace(), ("metadata", "name"), {}, dict(table))  # type: ignore[arg-type]
    copies: dict[tuple[int, str], tuple[object, object]] = {}
    where = ("spec", "concurrency", "trace", "path")
    for view in [*views, own]:
        view.add_place("measurement_double_counted", where, copies)
    assert table == frozen
    assert all(v.paths is views[0].paths for v in views) and own.paths is not views[0].paths
    assert views[0].paths == own.paths == {**frozen, "measurement_double_counted": where}
    held = own.paths
    own.add_place("pool", ("spec", "other"), copies)  # a place already known stays, uncopied
    assert own.paths is held and own.paths["pool"] == ("spec", "pool")
    # the verdicts' form of some places, kept by the table's identity, is each table's own
    kept = verdicts.Verdicts(tmp_path, tmp_path)
    at = ["pool", "measurement_double_counted"]
    before = kept._places_text(SimpleNamespace(paths=table), at)  # type: ignore[arg-type]
    after = kept._places_text(SimpleNamespace(paths=views[1].paths), at)  # type: ignore[arg-type]
    assert before == quick_bytes([table["pool"], None]) and after == quick_bytes([table["pool"], where])
    assert kept._places_text(SimpleNamespace(paths=views[2].paths), at) == after
