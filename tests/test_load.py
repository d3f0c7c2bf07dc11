"""Step 1, loading: every bad file becomes a finding at its place, never a crash.

Every test runs twice: with libyaml's parser (when installed) and with the
pure-Python one, which must give the same documents, positions and findings.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import policylint.model.load.compose as compose
from policylint.model.load import LoadLimits, SourceFile, load_file

@pytest.fixture(autouse=True, params=["libyaml", "pure"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "libyaml" and not compose.LIBYAML:
        pytest.skip("libyaml is not installed")
    monkeypatch.setattr(compose, "LIBYAML", request.param == "libyaml")
    return str(request.param)


def load(tmp_path: Path, content: str | bytes, limits: LoadLimits = LoadLimits()) -> SourceFile:
    path = tmp_path / "doc.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return load_file(path, "doc.yaml", limits)


def found(source: SourceFile) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.line, f.column, f.message) for f in source.findings]


def billion_laughs(levels: int = 9, fan_out: int = 10) -> str:
    """The classic alias bomb: each level repeats the previous one ``fan_out`` times."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * fan_out) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


# -- syntax, duplicates, encoding, emptiness -------------------------------------------


def test_syntax_error_is_a_finding_at_its_mark(tmp_path: Path) -> None:
    source = load(tmp_path, "a: 1\nb: [1, 2\nc: 3\n")
    assert found(source) == [("PL001", 3, 2, "YAML syntax error: expected ',' or ']', but got ':'")]
    assert source.documents == []


def test_tab_indentation_is_a_syntax_error(tmp_path: Path) -> None:
    source = load(tmp_path, "a: 1\n\tb: 2\n")
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL001", 2, 1)]


def test_undefined_alias_is_a_syntax_error(tmp_path: Path) -> None:
    source = load(tmp_path, "a: &x 1\nb: *y\n")
    assert found(source) == [("PL001", 2, 4, "YAML syntax error: found undefined alias 'y'")]


def test_duplicate_key_points_at_the_second_key_and_names_the_first_line(tmp_path: Path) -> None:
    source = load(tmp_path, "a: 1\nb:\n  x: 1\n  y: 2\n  x: 3\n")
    assert found(source) == [
        (
            "PL002",
            5,
            3,
            "duplicate key 'x' (first defined on line 3); YAML loaders silently keep the last value",
        )
    ]
    assert source.findings[0].hint == "remove one of the two entries"
    # the document is still available so the other steps can report on it
    assert source.documents[0].data == {"a": 1, "b": {"x": 3, "y": 2}}


def test_a_repeated_key_is_placed_where_its_kept_value_is_written(tmp_path: Path) -> None:
    """YAML keeps the last value of a repeated key; every position of that key and of what it
    holds is the last occurrence's, so a finding on the value points at the value judged."""
    source = load(tmp_path, "a: 1\nb:\n  x: {p: 1, q: 2}\n  y: 2\n  x:\n    p: 5\nc: 3\n")
    [document] = source.documents
    assert document.data == {"a": 1, "b": {"x": {"p": 5}, "y": 2}, "c": 3}
    assert document.positions.locate(("b", "x")) == (5, 3)
    assert document.positions.locate(("b", "x", "p")) == (6, 5)
    assert document.positions.value(("b", "x", "p")) == (6, 8)
    # what only the dropped value held is gone, not left pointing into it
    assert ("b", "x", "q") not in document.positions
    assert document.positions.locate(("b", "y")) == (4, 3)
    assert document.positions.locate(("c",)) == (7, 1)


def test_duplicate_keys_are_reported_per_document(tmp_path: Path) -> None:
    source = load(tmp_path, "a: 1\na: 2\n---\nb: 1\nb: 2\n")
    assert [(f.code, f.line, f.doc_index) for f in source.findings] == [("PL002", 2, 0), ("PL002", 5, 1)]


def test_undecodable_bytes_report_line_column_and_offset(tmp_path: Path) -> None:
    source = load(tmp_path, b"a: 1\nb: caf\xe9\n")
    assert found(source) == [("PL003", 2, 7, "file is not valid UTF-8 (byte 0xe9 at offset 11)")]
    assert source.findings[0].hint == "save the file as UTF-8"


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    source = load(tmp_path, "\ufeffa: 1\n".encode())
    assert source.findings == []
    assert source.documents[0].data == {"a": 1}


@pytest.mark.parametrize("content", ["", "  \n\n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    source = load(tmp_path, content)
    assert found(source) == [("PL004", 1, 1, "file is empty")]


def test_file_with_only_comments_holds_no_document(tmp_path: Path) -> None:
    source = load(tmp_path, "# nothing here\n")
    assert found(source) == [("PL004", 1, 1, "file contains no YAML document")]


def test_empty_document_between_others(tmp_path: Path) -> None:
    source = load(tmp_path, "a: 1\n---\n---\nb: 2\n")
    assert found(source) == [("PL004", 3, 1, "document is empty")]
    assert [d.data for d in source.documents] == [{"a": 1}, {"b": 2}]
    assert [d.index for d in source.documents] == [0, 2]


def test_policylint_documents_inside_a_kubernetes_list_are_pl006(tmp_path: Path) -> None:
    """A `kind: List` whose items are policylint documents is read by nobody: its workloads would vanish unreported."""
    source = load(tmp_path, "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: policylint/v1\n    kind: Workload\n")
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL006", 4, 5)]
    assert "inside a List's items" in source.findings[0].message
    other = load(tmp_path, "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n")
    assert other.findings == []


def test_non_mapping_document_is_loaded_but_not_policylint(tmp_path: Path) -> None:
    source = load(tmp_path, "- apiVersion: policylint/v1\n- kind: Workload\n")
    # a list of our documents is read by nobody: it is reported at its first policylint item
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL006", 1, 3)]
    assert "list of documents" in source.findings[0].message
    (doc,) = source.documents
    assert isinstance(doc.data, list)
    assert doc.kind is None and doc.name is None and doc.api_version is None
    assert not doc.is_policylint


def test_a_list_without_policylint_items_is_unrelated_yaml(tmp_path: Path) -> None:
    source = load(tmp_path, "- apiVersion: v1\n  kind: ConfigMap\n- name: x\n")
    assert source.findings == []


# -- safety limits ----------------------------------------------------------------------


def test_billion_laughs_is_refused_quickly(tmp_path: Path) -> None:
    bomb = billion_laughs()
    assert len(bomb) < 1200  # about 1 KB that would expand to 10**9 strings
    start = time.perf_counter()
    source = load(tmp_path, bomb)
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, f"alias bomb took {elapsed:.2f} s to refuse"
    assert [(f.code, f.message) for f in source.findings] == [
        ("PL005", "document expands to more than 100000 nodes (alias expansion); refused")
    ]
    assert source.documents == []


def test_node_limit_is_configurable(tmp_path: Path) -> None:
    source = load(tmp_path, billion_laughs(levels=2), LoadLimits(max_nodes=50))
    assert [(f.code, f.message) for f in source.findings] == [
        ("PL005", "document expands to more than 50 nodes (alias expansion); refused")
    ]


def test_harmless_aliases_are_expanded(tmp_path: Path) -> None:
    source = load(tmp_path, "gpu: &g {model: H100, memoryGiB: 80}\nother: *g\n")
    assert source.findings == []
    assert source.documents[0].data["other"] == {"model": "H100", "memoryGiB": 80}


@pytest.mark.parametrize("content", ["a: &a [*a]\n", "a: &a {b: *a}\n"])
def test_recursive_alias_is_refused(tmp_path: Path, content: str) -> None:
    source = load(tmp_path, content)
    assert found(source) == [("PL005", 1, 4, "recursive alias: a node contains itself")]


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    source = load(tmp_path, "a: " + "[" * 150 + "]" * 150 + "\n")
    assert found(source) == [("PL005", 1, 104, "document nests deeper than 100 levels; refused")]


def test_very_deep_nesting_is_refused_without_exhausting_the_stack(tmp_path: Path) -> None:
    # PyYAML composes recursively; this used to escape as RecursionError.
    source = load(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert found(source) == [("PL005", 1, 104, "document nests deeper than 100 levels; refused")]


def test_nesting_through_aliases_is_bounded_too(tmp_path: Path) -> None:
    # each anchor is composed shallow, but expanding the chain nests 6 levels deep
    chain = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 6))
    source = load(tmp_path, chain, LoadLimits(max_depth=4))
    assert [(f.code, f.message) for f in source.findings] == [
        ("PL005", "document nests deeper than 4 levels; refused")
    ]


def test_nesting_at_the_limit_is_accepted(tmp_path: Path) -> None:
    source = load(tmp_path, "a: " + "[" * 99 + "]" * 99 + "\n")
    assert source.findings == []


def test_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    source = load(tmp_path, "a: " + "x" * 100 + "\n", LoadLimits(max_file_bytes=64))
    assert found(source) == [("PL005", 1, 1, "file is 104 bytes, more than the 64-byte limit; refused")]
    assert source.text == ""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    source = load_file(path, "pipe.yaml")
    assert found(source) == [("PL005", 1, 1, "not a regular file (pipe, device or socket); refused")]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_device_is_refused_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "zero.yaml"
    path.symlink_to("/dev/zero")
    source = load_file(path, "zero.yaml")
    assert [f.code for f in source.findings] == ["PL005"]


def test_python_tags_are_refused(tmp_path: Path) -> None:
    source = load(tmp_path, "a: !!python/object/new:os.system echo hi\n")
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL005", 1, 4)]
    assert "could not determine a constructor" in source.findings[0].message


def test_complex_mapping_key_is_refused(tmp_path: Path) -> None:
    source = load(tmp_path, "? [1, 2]\n: 3\n")
    assert found(source) == [("PL005", 1, 3, "mapping keys must be plain scalars")]


# -- values -----------------------------------------------------------------------------


def test_timestamps_stay_strings(tmp_path: Path) -> None:
    source = load(tmp_path, "date: 2026-11-20\nat: 2026-11-20T03:04:05Z\nquoted: '2026-11-20'\n")
    assert source.documents[0].data == {"date": "2026-11-20", "at": "2026-11-20T03:04:05Z", "quoted": "2026-11-20"}


def test_scalars_keep_their_yaml_types(tmp_path: Path) -> None:
    source = load(tmp_path, "i: 3\nf: 2.5\nb: true\nn: null\ns: '3'\n")
    assert source.documents[0].data == {"i": 3, "f": 2.5, "b": True, "n": None, "s": "3"}


def test_merge_key_supplies_defaults_and_explicit_keys_win(tmp_path: Path) -> None:
    text = "base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n"
    source = load(tmp_path, text)
    assert source.findings == []
    assert source.documents[0].data["c"] == {"x": 1, "y": 3}


def test_merge_key_with_a_list_earlier_entries_win(tmp_path: Path) -> None:
    text = "one: &one {x: 1}\ntwo: &two {x: 2, z: 3}\nc:\n  <<: [*one, *two]\n"
    source = load(tmp_path, text)
    assert source.documents[0].data["c"] == {"x": 1, "z": 3}


def test_merge_key_of_a_scalar_is_refused(tmp_path: Path) -> None:
    source = load(tmp_path, "c:\n  <<: 5\n")
    assert found(source) == [("PL005", 2, 7, "merge key '<<' needs a mapping or a list of mappings")]


# -- position index ---------------------------------------------------------------------

INDEXED = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod
spec:
  pools:
    - name: serving
      reservedGpus: 48
      gpu: {model: H100, memoryGiB: 80}
"""


def test_locate_returns_the_key_of_a_nested_entry(tmp_path: Path) -> None:
    doc = load(tmp_path, INDEXED).documents[0]
    assert doc.locate(("metadata", "name")) == (4, 3)
    assert doc.locate(("spec", "pools")) == (6, 3)
    assert doc.locate(("spec", "pools", 0, "reservedGpus")) == (8, 7)
    assert doc.locate(("spec", "pools", 0, "gpu", "memoryGiB")) == (9, 26)


def test_locate_a_list_item_is_where_the_item_starts(tmp_path: Path) -> None:
    doc = load(tmp_path, INDEXED).documents[0]
    assert doc.locate(("spec", "pools", 0)) == (7, 7)


def test_locate_a_missing_path_falls_back_to_the_nearest_ancestor(tmp_path: Path) -> None:
    doc = load(tmp_path, INDEXED).documents[0]
    assert doc.locate(("spec", "pools", 0, "elastic", "maxGpus")) == (7, 7)
    assert doc.locate(("spec", "pools", 3)) == (6, 3)
    assert doc.locate(("nowhere",)) == (1, 1)
    assert doc.locate(()) == (1, 1)


def test_value_position_is_kept_beside_the_key(tmp_path: Path) -> None:
    doc = load(tmp_path, INDEXED).documents[0]
    assert doc.positions.value(("spec", "pools", 0, "reservedGpus")) == (8, 21)
    assert doc.positions.value(("spec", "pools", 0, "missing")) is None
    assert ("metadata", "name") in doc.positions
    # the index lives beside the data: nothing was written into it
    assert doc.data["metadata"] == {"name": "prod"}


def test_positions_of_a_later_document_are_absolute_in_the_file(tmp_path: Path) -> None:
    source = load(tmp_path, "a: 1\n---\nmetadata:\n  name: second\n")
    second = source.documents[1]
    assert second.index == 1
    assert second.locate(("metadata", "name")) == (4, 3)


def test_finding_from_a_document_carries_its_place(tmp_path: Path) -> None:
    doc = load(tmp_path, INDEXED).documents[0]
    f = doc.finding("PL010", "message", ("spec", "pools", 0, "reservedGpus"), hint="do this")
    assert (f.file, f.line, f.column, f.doc_path, f.hint) == ("doc.yaml", 8, 7, "spec/pools/0/reservedGpus", "do this")


# -- spans: start and end offsets, scalar style, alias provenance --------------------------

SPANNED = """\
defaults: &d
  gpu: {model: "H100", memoryGiB: 80}
pools:
  - name: 'serving'
    reservedGpus: 48
    note: |
      kept
    gpu: *d
  - <<: *d
    name: batch
"""


def test_every_value_has_its_exact_span(tmp_path: Path) -> None:
    source = load(tmp_path, SPANNED)
    doc = source.documents[0]
    text = source.text

    def written(*path: str | int) -> str:
        span = doc.positions.span(path)
        assert span is not None
        return text[span.start : span.end]

    assert written("pools", 0, "reservedGpus") == "48"
    assert written("pools", 0, "name") == "'serving'"
    assert written("defaults", "gpu", "model") == '"H100"'
    assert written("defaults", "gpu") == '{model: "H100", memoryGiB: 80}'
    assert written("pools", 0, "note") == "|\n      kept\n"
    span = doc.positions.span(("pools", 0, "reservedGpus"))
    assert span is not None
    assert (span.line, span.column, span.end_line, span.end_column) == (5, 19, 5, 21)
    assert doc.positions.span(("pools", 0, "missing")) is None


def test_spans_keep_the_scalar_style(tmp_path: Path) -> None:
    doc = load(tmp_path, SPANNED).documents[0]
    styles = {
        path: span.style
        for path, span in doc.positions.spans().items()
        if path in {("pools", 0, "name"), ("pools", 0, "reservedGpus"), ("pools", 0, "note"), ("defaults", "gpu", "model"), ("pools",)}
    }
    assert styles == {
        ("pools", 0, "name"): "single",
        ("pools", 0, "reservedGpus"): "plain",
        ("pools", 0, "note"): "literal",
        ("defaults", "gpu", "model"): "double",
        ("pools",): None,
    }
    assert load(tmp_path, "a: >\n  folded\n").documents[0].positions.span(("a",)).style == "folded"  # type: ignore[union-attr]


def test_spans_say_what_was_reached_through_an_alias_or_a_merge_key(tmp_path: Path) -> None:
    source = load(tmp_path, SPANNED)
    positions = source.documents[0].positions
    own, aliased = positions.span(("defaults", "gpu", "model")), positions.span(("pools", 0, "gpu", "gpu", "model"))
    merged = positions.span(("pools", 1, "gpu", "memoryGiB"))
    assert own is not None and aliased is not None and merged is not None
    assert (own.via, aliased.via, merged.via) == (None, "alias", "merge")
    # an alias or merged value is written once, at its anchor: the same characters
    # an alias or merged value is written once, at its anchor: its span is those characters
    assert (aliased.start, aliased.end) == (own.start, own.end)
    anchor = positions.span(("defaults", "gpu", "memoryGiB"))
    assert anchor is not None and (merged.start, merged.end) == (anchor.start, anchor.end)
    assert positions.span(("pools", 1, "name")).via is None  # type: ignore[union-attr]


def test_spans_are_offsets_in_characters_past_non_ascii_text(tmp_path: Path) -> None:
    source = load(tmp_path, "note: \"é€😀\"\nreservedGpus: 8\n")
    span = source.documents[0].positions.span(("reservedGpus",))
    assert span is not None and source.text[span.start : span.end] == "8" and (span.start, span.end) == (26, 27)


def test_document_paths_are_escaped_like_json_pointers(tmp_path: Path) -> None:
    from policylint.model.load import parse_pointer, pointer

    assert pointer(("spec", "capability", "nvidia.com/gpu")) == "spec/capability/nvidia.com~1gpu"
    assert pointer(("a~b", 0)) == "a~0b/0"
    assert pointer(("spec", "pools", 0, "reservedGpus")) == "spec/pools/0/reservedGpus"  # unchanged: old baselines match
    assert parse_pointer("spec/capability/nvidia.com~1gpu") == ("spec", "capability", "nvidia.com/gpu")
    assert parse_pointer("a~0b/~01") == ("a~b", "~1")
    assert parse_pointer("") == ()
    doc = load(tmp_path, "spec:\n  capability:\n    nvidia.com/gpu: 8\n").documents[0]
    f = doc.finding("PL010", "m", ("spec", "capability", "nvidia.com/gpu"))
    assert (f.line, f.column, f.doc_path) == (3, 5, "spec/capability/nvidia.com~1gpu")


def test_both_parsers_build_the_same_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not compose.LIBYAML and not compose._CParser:
        pytest.skip("libyaml is not installed")
    text = SPANNED + "---\nkind: x\nquoted: \"a\\\"b\"\nflow: [1, {b: 2}, ]\n"
    indexes = []
    for libyaml in (True, False):
        monkeypatch.setattr(compose, "LIBYAML", libyaml)
        indexes.append([d.positions.spans() for d in load(tmp_path, text).documents])
    assert indexes[0] == indexes[1] and len(indexes[0]) == 2


def test_real_paths_equal_os_realpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RealPaths resolves folders once and files by one lstat: the answers are os.path.realpath's."""
    import os

    from policylint.model.load import RealPaths

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.yaml").write_text("x: 1\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "link.yaml").symlink_to(tmp_path / "real" / "a.yaml")
    (tmp_path / "real" / "loop").symlink_to(tmp_path / "real" / "loop")
    (tmp_path / "real" / "plain.txt").write_text("")
    monkeypatch.chdir(tmp_path)
    cases = [
        "real/a.yaml", "linked/a.yaml", "real/link.yaml", "linked/link.yaml", "real/missing.yaml",
        "real/../linked/a.yaml", "linked/..", "linked/.", "real/", "", "a.yaml", "real/plain.txt/below",
        "real/loop", str(tmp_path / "linked" / "a.yaml"), "/",
    ]
    real = RealPaths()
    for case in cases * 2:  # the second round answers from what the first remembered
        assert real(case) == os.path.realpath(case), case
    with pytest.raises(ValueError):
        RealPaths()("real/a\x00.yaml")


def test_display_paths_are_the_same_through_real_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.model.load import RealPaths, display_path

    (tmp_path / "repo" / "w").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    real = RealPaths()
    for case in [Path("w/a.yaml"), Path("."), tmp_path / "link" / "w" / "a.yaml", tmp_path / "elsewhere.yaml", Path("../x.yaml")]:
        assert display_path(case, real=real) == display_path(case), case


KUEUE_QUEUE = """\
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata:
      name: batch
    spec: {}
"""


@pytest.mark.parametrize(("text", "place", "words"), [
    ("apiVersion: v1\nkind: List\nitems:\n" + KUEUE_QUEUE, (4, 5), "this List holds the scheduler object ClusterQueue 'batch'"),
    ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueueList\nitems:\n" + KUEUE_QUEUE, (4, 5),
     "this ClusterQueueList holds the scheduler object ClusterQueue 'batch'"),
    ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [queues.yaml]\npatches:\n"
     "  - target: {kind: ClusterQueue, name: batch}\n    patch: |-\n      - op: replace\n"
     "        path: /spec/resourceGroups/0/flavors/0/resources/0/nominalQuota\n        value: 80\n",
     (5, 5), "this Kustomization patches the ClusterQueue 'batch'"),
    ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatchesStrategicMerge:\n"
     "  - |-\n    apiVersion: kueue.x-k8s.io/v1beta2\n    kind: ClusterQueue\n    metadata: {name: batch}\n",
     (4, 5), "this Kustomization patches a scheduler object"),
])
def test_scheduler_objects_where_they_are_not_read_are_pl026(
    tmp_path: Path, text: str, place: tuple[int, int], words: str
) -> None:
    """Red team, 2026-12-06, round 13: a List of ClusterQueues and a kustomization patch each raised a quota
    the cluster applies (16 -> 80 GPUs) while policylint judged the committed figure."""
    path = tmp_path / "overrides.yaml"
    path.write_text(text)
    found = [f for f in load_file(path, "overrides.yaml", LoadLimits()).findings if f.code == "PL026"]
    assert [(f.line, f.column) for f in found] == [place]
    assert words in found[0].message


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: x}\n",
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatches:\n"
    "  - target: {kind: Deployment, name: api}\n    patch: '[{op: replace, path: /spec/replicas, value: 3}]'\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: batch}\nspec: {}\n",
])
def test_lists_and_patches_of_other_objects_are_not_pl026(tmp_path: Path, text: str) -> None:
    path = tmp_path / "other.yaml"
    path.write_text(text)
    assert [f for f in load_file(path, "other.yaml", LoadLimits()).findings if f.code == "PL026"] == []


def test_a_kustomization_known_by_its_file_name_and_its_replacements_are_pl026(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 14: a kustomization.yaml with no apiVersion or kind (kustomize reads it by its
    name) patched a quota, and `replacements` wrote a generated ConfigMap's literal into one (+64 GPUs each)."""
    folder = tmp_path / "kueue"
    folder.mkdir()
    bare = folder / "kustomization.yaml"
    bare.write_text("resources: [queues.yaml]\npatches:\n  - target: {kind: ClusterQueue, name: training}\n"
                    "    patch: '[{op: replace, path: /spec/x, value: 1}]'\n")
    found = [f for f in load_file(bare, "kueue/kustomization.yaml", LoadLimits()).findings if f.code == "PL026"]
    assert [(f.line, f.column) for f in found] == [(3, 5)]
    assert "this kustomization patches the ClusterQueue 'training'" in found[0].message
    other = tmp_path / "values.yaml"  # the same keys under another name are not kustomize's
    other.write_text(bare.read_text())
    assert [f for f in load_file(other, "values.yaml", LoadLimits()).findings if f.code == "PL026"] == []
    replaced = folder / "replaced.yaml"
    replaced.write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nreplacements:\n"
        "  - source: {kind: ConfigMap, name: quotas, fieldPath: data.training}\n"
        "    targets:\n      - select: {kind: ClusterQueue, name: training}\n"
        "        fieldPaths: [spec.resourceGroups.0.flavors.0.resources.0.nominalQuota]\n")
    found = [f for f in load_file(replaced, "kueue/replaced.yaml", LoadLimits()).findings if f.code == "PL026"]
    assert [(f.line, f.column) for f in found] == [(4, 5)]
    assert "writes a replacement into the ClusterQueue 'training'" in found[0].message


def test_a_scheduler_manifest_that_does_not_parse_is_reported(tmp_path: Path) -> None:
    """A Helm template of a ClusterQueue does not parse as YAML: it is reported, not skipped as another tool's file."""
    from policylint.model.load.files import looks_relevant

    template = tmp_path / "burst.yaml"
    template.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: burst}\n"
                        "spec:\n  quota: {{ .Values.quota }}\n")
    source = load_file(template, "burst.yaml", LoadLimits())
    assert source.findings and not source.documents
    assert looks_relevant(source)
    unrelated = tmp_path / "other.yaml"
    unrelated.write_text("spec:\n  replicas: {{ .Values.replicas }}\n")
    assert not looks_relevant(load_file(unrelated, "other.yaml", LoadLimits()))


@pytest.mark.parametrize(("body", "at", "said"), [
    ("transformers: [quota-transformer.yaml]\n", (1, 1), "runs transformers"),
    ("configurations: [kustomizeconfig.yaml]\nreplicas: [{name: training, count: 168}]\n", (1, 1),
     "changes which fields its transformers write"),
    ("generators: [gen.yaml]\n", (1, 1), "runs generators"),
    ("replacements:\n- path: quota-replacement.yaml\n", (2, 3), "reads replacements from a file"),
    ("components:\n- https://github.com/org/quotas//tuning?ref=main\n", (2, 3), "deploys remote components"),
    ("resources:\n- github.com/org/quotas/base\n", (2, 3), "deploys remote resources"),
    ("patches:\n- path: tuning.yaml\n  target: {annotationSelector: team=research}\n", (2, 3),
     "patches objects of any kind it selects by name or label"),
    ("patches:\n- path: tuning.yaml\n  target: {kind: Cluster.*, name: training}\n", (2, 3),
     "patches objects of kind 'Cluster.*' (a ClusterQueue among them) 'training'"),
    # round 8 (2026-12-07): kustomize reads its fields in any case, turns a ConfigMap into a ClusterQueue when
    # a patch may change kinds, and inflates Helm charts
    ("Patches:\n- path: tuning.yaml\n  Target: {Kind: ClusterQueue, Name: training}\n", (2, 3),
     "patches the ClusterQueue 'training'"),
    ("patches:\n- path: become-queue.json\n  target: {kind: ConfigMap, name: notes}\n"
     "  options: {allowKindChange: true}\n", (2, 3), "lets a patch change what an object is (allowKindChange)"),
    ("helmCharts:\n- name: quotas\n  repo: https://charts.example.com\n", (1, 1), "inflates Helm charts"),
    ("HelmGlobals: {chartHome: charts}\n", (1, 1), "sets how Helm charts are inflated"),
    # round 9: Go folds case by Unicode's rules, so a long s is an s to kustomize
    ("patche\u017f:\n- path: t.yaml\n  target: {kind: ClusterQueue}\n", (2, 3), "patches the ClusterQueue"),
    ("apiVersion: kustomize.config.k8s.io/v1beta1\nKind: Kustomization\npatches:\n- path: t.yaml\n"
     "  target: {kind: ClusterQueue}\n", (4, 3), "patches the ClusterQueue"),
])
def test_a_kustomization_that_may_change_scheduler_objects_unseen_is_pl026(tmp_path: Path, body: str,
                                                                         at: tuple[int, int], said: str) -> None:
    """Red team, 2026-12-06, round 15: each of these raised a ClusterQueue's quota by 64 GPUs past PL026."""
    path = tmp_path / "kustomization.yaml"
    path.write_text("resources: [queues.yaml]\n" + body if not body.startswith("resources") else body)
    found = [f for f in load_file(path, "kustomization.yaml", LoadLimits()).findings if f.code == "PL026"]
    assert len(found) == 1, found
    assert said in found[0].message
    assert (found[0].line - (0 if body.startswith("resources") else 1), found[0].column) == at


@pytest.mark.parametrize("body", [
    "patches:\n- path: web.yaml\n  target: {kind: Deployment, name: web}\n",
    "patches:\n- path: web.yaml\n  target: {kind: Deploy.*}\n",
    "resources: [queues.yaml, ../base, web/]\nimages: [{name: web, newTag: v2}]\n",
    "replacements:\n- source: {kind: ConfigMap, name: c}\n  targets: [{select: {kind: Deployment}}]\n",
    "Patches:\n- path: web.yaml\n  TARGET: {kind: Deployment, name: web}\n  options: {allowKindChange: false}\n",
])
def test_a_kustomization_that_leaves_scheduler_objects_alone_is_not_pl026(tmp_path: Path, body: str) -> None:
    """Also in kustomize's other spellings, and with a name change allowed for no patch."""
    path = tmp_path / "kustomization.yaml"
    path.write_text(body)
    assert [f for f in load_file(path, "kustomization.yaml", LoadLimits()).findings if f.code == "PL026"] == []


def test_a_merge_key_that_sets_a_key_again_is_reported_where_loaders_disagree(tmp_path: Path) -> None:
    """Red team, 2026-12-07: ``nominalQuota: 104`` then ``<<: {nominalQuota: 168}`` was judged at 104, applied at 168.

    YAML keeps the value set first; Kubernetes' decoder applies a mapping's entries in order
    (``kubectl label --local -o json`` of these ConfigMaps gives x = 2, 1, 3 and 1, and 3 for e).
    """
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\n"
    source = load(tmp_path, head + (
        "a:\n  <<: {x: '1'}\n  <<: {x: '2'}\n"      # two merge keys: kubectl keeps the second
        "b:\n  <<: [{x: '1'}, {x: '2'}]\n"          # one list: the first wins in both
        "c:\n  <<: {x: '1'}\n  x: '3'\n"            # written after the merge: wins in both
        "d:\n  x: '3'\n  <<: {x: '1'}\n"            # written before the merge: kubectl keeps the merged one
        "e:\n  x: '3'\n  <<: {x: '3', y: '4'}\n"    # the same value merged again: read alike
    ))
    [document] = source.documents
    assert {k: document.data[k] for k in "abcde"} == {
        "a": {"x": "1"}, "b": {"x": "1"}, "c": {"x": "3"}, "d": {"x": "3"}, "e": {"x": "3", "y": "4"}}
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL002", 6, 3), ("PL002", 14, 3)]
    assert "supplies 'x' with another value where an earlier merge key supplies it" in source.findings[0].message
    assert "where line 13 sets it" in source.findings[1].message


@pytest.mark.parametrize("field", ["apiVersion", "kind"])
def test_a_merge_key_that_makes_a_document_a_scheduler_object_for_kubectl_is_pl026(tmp_path: Path, field: str) -> None:
    """Round 9: ``apiVersion: null`` then ``<<: {apiVersion: kueue.x-k8s.io/v1beta2}`` is another tool's document to
    YAML, skipped, and a ClusterQueue to kubectl."""
    written = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"}
    lines = [f"{k}: null\n<<: {{{k}: {v}}}\n" if k == field else f"{k}: {v}\n" for k, v in written.items()]
    source = load(tmp_path, "".join(lines) + "metadata: {name: training}\nspec: {cohortName: east}\n")
    line = 2 if field == "apiVersion" else 3
    assert [(f.code, f.line) for f in source.findings] == [("PL026", line)], source.findings  # one finding
    assert "a merge key makes this document a ClusterQueue (kueue.x-k8s.io/v1beta2) for kubectl" in " ".join(
        f.message for f in source.findings)


def test_a_merge_key_in_what_kubectl_never_applies_is_read_as_yaml_reads_it(tmp_path: Path) -> None:
    """A policylint document, the configuration: read by policylint alone, so the order of a merge is no finding."""
    ours = load(tmp_path, "apiVersion: policylint/v1\nkind: Workload\nmetadata: {name: w}\nspec:\n"
                          "  x: 3\n  <<: {x: 1}\n")
    assert ours.findings == [] and ours.documents[0].data["spec"] == {"x": 3}
    settings = load(tmp_path, "rules:\n  PL102: {headroom: 0.25, <<: {headroom: 0.5}}\n")
    assert settings.findings == []


def test_a_line_kubectl_splits_at_and_yaml_does_not_is_reported(tmp_path: Path) -> None:
    """Red team, 2026-12-07: a ClusterQueue behind a ``---#:`` key of a ConfigMap was one document here, two for kubectl."""
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  a: b\n"
            "---#: # the quota as applied\n  {\"apiVersion\": \"kueue.x-k8s.io/v1beta2\", \"kind\": \"ClusterQueue\"}\n")
    source = load(tmp_path, text)
    assert len(source.documents) == 1  # as YAML reads it
    assert [(f.code, f.line, f.column) for f in source.findings] == [("PL026", 6, 1)]
    assert "kubectl starts a new document at this line" in source.findings[0].message
    # a no-break or ideographic space after the dashes: Go trims it, YAML does not (round 8)
    for space in ("\u00a0", "\u3000"):
        spaced = load(tmp_path, text.replace("---#:", f"---{space}#:"))
        assert [(f.code, f.line) for f in spaced.findings] == [("PL026", 6)], space
    # a separator both read alike, and the same characters inside a line, are no finding
    assert load(tmp_path, "a: 1\n--- # next\nb: 2\n").findings == []
    assert load(tmp_path, "a: '---#'\nb: |\n  ---# indented\n").findings == []
