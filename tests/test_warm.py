"""The document cache: a warm run reuses parsed, schema-valid YAML files and reports exactly what a cold run does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, assert_narrowed_is_full_narrowed, copy_minirepo, run_cli, run_fresh

from policylint.model.load import document_cache
from policylint.model import load

WHEN = ["--now", "2026-12-01"]


def document_entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"documents-v{document_cache.DOCUMENT_FORMAT}/*/*.json"))


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every repository file the YAML parser and the schema check see (the configuration file is read apart)."""
    seen: list[str] = []
    parse = load.parse_text

    def counting_parse(source: load.SourceFile, limits: load.LoadLimits = load.LoadLimits()) -> None:
        if source.path.name != ".policylint.yaml":
            seen.append(source.display)
        parse(source, limits)

    # load_file parses through the name in its own module; other steps (history, edits) import
    # it from policylint.model.load when they run: count both
    monkeypatch.setattr(load.files, "parse_text", counting_parse)
    monkeypatch.setattr(load, "parse_text", counting_parse)
    # the linter imports the validator when it runs: count through the validator's module
    from policylint.model import validate as validate_module

    original = validate_module.validate_document

    def counting_validate(doc: load.Document) -> list[object]:
        seen.append(f"validate:{doc.file}")
        return original(doc)  # type: ignore[return-value]

    monkeypatch.setattr(validate_module, "validate_document", counting_validate)
    return seen


@pytest.mark.parametrize("example", ["good", "bad", "kueue", "kueue-bad"])
def test_warm_output_equals_no_cache_output(example: str, cache_dir: Path) -> None:
    target = str(EXAMPLES / example)
    fresh = run_cli(["check", target, "--format", "json", "--no-cache", *WHEN])
    cold = run_cli(["check", target, "--format", "json", *WHEN])
    warm = run_cli(["check", target, "--format", "json", *WHEN])
    assert fresh == cold == warm
    assert fresh[2] == ""


def test_a_warm_run_neither_parses_nor_validates_unchanged_files(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    first = run_cli(["check", str(repo), "--format", "json", *WHEN])
    assert first[0] == 0, first
    assert document_entries(cache_dir)
    seen = count_parses(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == first
    assert seen == []


def test_a_warm_run_does_not_import_the_yaml_parser(tmp_path: Path) -> None:
    """PyYAML is imported by the first file parsed: a run whose files (configuration included) all come from the cache never loads it."""
    repo = copy_minirepo(tmp_path / "repo")
    assert (repo / ".policylint.yaml").is_file()
    check = ["check", str(repo), "--format", "json", *WHEN]
    runs = [run_fresh(check, tmp_path, tmp_path / "cache") for _ in range(2)]
    assert ["yaml" in modules for _, modules in runs] == [True, False]
    assert runs[0][0] == runs[1][0] and json.loads(runs[1][0])["summary"]["documents"] > 0
    # an edited file is parsed: the parser comes back, and so does the finding it leads to
    workload = sorted((repo / "workloads").glob("*.yaml"))[0]
    workload.write_text(workload.read_text().replace("spec:\n", "spec:\n  unknownField: 1\n", 1))
    out, modules = run_fresh(check, tmp_path, tmp_path / "cache")
    assert "yaml" in modules and "PL010" in out


def test_a_configuration_parse_never_passes_for_a_repository_document(tmp_path: Path, cache_dir: Path) -> None:
    """The configuration's parse is kept under keys of its own: its bytes, found again as a workload, are schema-checked."""
    repo = copy_minirepo(tmp_path / "repo")
    workload = sorted((repo / "workloads").glob("*.yaml"))[0]
    broken = workload.read_text().replace("spec:\n", "spec:\n  unknownField: 1\n", 1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".policylint.yaml").write_text(broken)  # parsed cleanly, then refused as settings
    code, _, err = run_cli(["check", str(elsewhere), "--config", str(elsewhere / ".policylint.yaml"), *WHEN])
    assert code == 2 and ".policylint.yaml" in err
    workload.write_text(broken)
    code, out, _ = run_cli(["check", str(repo), "--format", "json", *WHEN])
    assert code == 1 and "PL010" in out and "unknownField" in out


def test_a_damaged_or_planted_settings_entry_reads_as_a_miss(tmp_path: Path, cache_dir: Path) -> None:
    """The configuration's kept parse is sealed like every entry: bytes flipped in it, or another entry's bytes
    planted under its name, give the output of --no-cache, settings applied."""
    repo = copy_minirepo(tmp_path / "repo")
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nfail-on: warning\nignore: [PL105]\n')
    check = ["check", str(repo), "--format", "json"]
    fresh = run_cli([*check, "--no-cache"])
    assert run_cli(check) == fresh
    entries = document_entries(cache_dir)
    assert len(entries) >= 2
    planted = entries[0].read_bytes()
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0x01
        entry.write_bytes(bytes(data))
    assert run_cli(check) == fresh
    for entry in document_entries(cache_dir):
        entry.write_bytes(planted)  # a sealed entry of another file, under each name
    assert run_cli(check) == fresh


def test_a_changed_file_is_parsed_again_and_its_new_finding_reported(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    assert run_cli(["check", str(repo), *WHEN])[0] == 0
    workload = sorted((repo / "workloads").glob("*.yaml"))[0]
    text = workload.read_text()
    workload.write_text(text.replace("spec:\n", "spec:\n  unknownField: 1\n", 1))
    seen = count_parses(monkeypatch)
    code, out, _ = run_cli(["check", str(repo), "--format", "json", *WHEN])
    assert code == 1 and "PL010" in out
    assert [s for s in seen if not s.startswith("validate:")] == [load.display_path(workload)]
    # the broken file is not stored: the next run parses and reports it again
    seen.clear()
    assert run_cli(["check", str(repo), "--format", "json", *WHEN])[1] == out
    assert load.display_path(workload) in seen


@pytest.mark.parametrize("fingerprint", ["schemas_fingerprint", "code_fingerprint"])
def test_a_schema_or_package_change_misses(
    fingerprint: str, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    first = run_cli(["check", str(repo), "--format", "json", *WHEN])
    monkeypatch.setattr(document_cache, fingerprint, lambda: "another version")
    seen = count_parses(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == first
    assert any(s.startswith("validate:") for s in seen) and any(not s.startswith("validate:") for s in seen)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong key", "damaged index"])
def test_a_damaged_entry_is_ignored_and_rewritten(
    damage: str, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    first = run_cli(["check", str(repo), "--format", "json", *WHEN])
    for entry in document_entries(cache_dir):
        data = entry.read_bytes()
        if damage == "garbage":
            entry.write_bytes(b"\x00\xff not json")
        elif damage == "truncated":
            entry.write_bytes(data[: len(data) // 2])
        elif damage == "wrong key":
            entry.write_bytes(data.replace(entry.stem.encode(), b"0" * 64, 1))
        else:  # the stored position index altered (its CRC no longer matches)
            payload = json.loads(data)
            text = payload["documents"][0]["positions"]
            payload["documents"][0]["positions"] = ("B" if text[0] != "B" else "C") + text[1:]
            entry.write_bytes(json.dumps(payload).encode())
    seen = count_parses(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == first
    assert any(not s.startswith("validate:") for s in seen)
    seen.clear()
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == first
    assert seen == []  # rewritten by the run that ignored them


def test_load_limits_are_part_of_the_key() -> None:
    raw = b"apiVersion: policylint/v1\n"
    assert document_cache.document_key(raw, load.LoadLimits()) != document_cache.document_key(raw, load.LoadLimits(max_depth=3))
    assert document_cache.document_key(raw, load.LoadLimits()) != document_cache.document_key(raw + b"\n", load.LoadLimits())


def test_data_json_cannot_keep_is_not_stored(tmp_path: Path) -> None:
    source = load.SourceFile(path=tmp_path / "x.yaml", display="x.yaml", text="1: a\n")
    load.parse_text(source)
    assert source.documents
    document_cache.store_source(tmp_path, "k" * 64, source)
    assert not list(tmp_path.rglob("*.json"))  # an integer key would come back as a string


def test_no_cache_writes_no_document_entry(tmp_path: Path, cache_dir: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    run_cli(["check", str(repo), "--no-cache", *WHEN])
    assert not cache_dir.exists()


# -- narrowed runs judge only what they report, and report the same --------------------------


def _files(example: str) -> list[str]:
    """Every YAML file of an example, and one measurement file (a changed trace narrows by its workloads)."""
    root = EXAMPLES / example
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml") if p.name != ".policylint.yaml")
    traces = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.csv"))
    return files + traces[:1]


CASES = [(example, file) for example in ("bad", "kueue", "kueue-bad", "good") for file in _files(example)]


def _judge_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn both narrowings of the evaluation off: the run judges every view, then drops findings."""
    from policylint.engine import linter
    from policylint import session

    from policylint.engine import scope

    monkeypatch.setattr(session.Session, "_reported", lambda self, changed, previous=None: None)
    monkeypatch.setattr(linter.Scope, "select", lambda self, views: list(views))
    monkeypatch.setattr(scope, "needed", lambda model, judged: None)  # measure and view everything


@pytest.fixture(scope="module")
def narrowing_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for every narrowing case: what is compared is narrowed against full, not cold against warm."""
    return tmp_path_factory.mktemp("narrowing-cache")


@pytest.mark.parametrize(("example", "file"), CASES, ids=[f"{e}:{f}" for e, f in CASES])
def test_a_narrowed_run_reports_what_the_full_run_keeps(
    example: str, file: str, narrowing_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(narrowing_cache))
    root = EXAMPLES / example
    runs: dict[str, list[tuple[int, str, str]]] = {}
    for mode in ("narrowed", "full"):
        with monkeypatch.context() as patch:
            if mode == "full":
                _judge_everything(patch)
            runs[mode] = [run_cli(["check", "--changed-files", file, "--format", "json", *WHEN], cwd=root)]
            if file.endswith(".yaml"):  # a PATH scope needs documents; a trace is only a change
                runs[mode].append(run_cli(["check", file, "--format", "json", *WHEN], cwd=root))
    for narrowed, full in zip(runs["narrowed"], runs["full"]):
        assert_narrowed_is_full_narrowed(narrowed, full, root, WHEN)
    for code, _, err in runs["narrowed"]:
        assert code in (0, 1) and err == ""


def test_narrowing_skips_the_rules_of_unreported_views(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.engine import evaluate

    judged: list[str] = []
    original = evaluate.evaluate_rule_on

    def counting(rule, view, params):  # type: ignore[no-untyped-def]
        judged.append(view.doc.file)
        return original(rule, view, params)

    monkeypatch.setattr(evaluate, "evaluate_rule_on", counting)
    run_cli(["check", "proposals", *WHEN], cwd=EXAMPLES / "bad")
    assert judged and all(f.startswith("proposals/") for f in judged)


def _measured_workloads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from policylint.measure import parallel

    seen: list[str] = []
    original = parallel.measure_workload

    def counting(workload, now, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(workload.name)
        return original(workload, now, **kwargs)

    monkeypatch.setattr(parallel, "measure_workload", counting)
    return seen


_ALL_GOOD = ("chat-assistant", "code-completion", "embeddings-search", "reranker", "nightly-eval", "offline-scoring",
             "pre-training", "fine-tuning")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # a changed trace: its workload's pool (pooled demand), nothing of the other cluster
        (["--changed-files", "measurements/jobs/pre-training.csv"], {"pre-training", "fine-tuning"}),
        # a PATH scope: the pools of that file's workloads (training, and batch for nightly-eval)
        (["workloads/research.yaml"], {"pre-training", "fine-tuning", "nightly-eval", "offline-scoring"}),
        # a changed cluster: all its pools
        (
            ["--changed-files", "clusters/prod-east.yaml"],
            {"chat-assistant", "code-completion", "embeddings-search", "reranker", "nightly-eval", "offline-scoring"},
        ),
    ],
)
def test_a_narrowed_run_measures_only_what_its_judged_views_read(
    command: list[str], expected: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pools a narrowed run measures and pools are those its judged views read.

    Near copies (PL972) are looked for across the whole repository
    (:mod:`policylint.engine.copy_reach`): without a cache the other workloads' traces are
    read for their copy prints alone (from the repository index when the cache has it),
    never measured, pooled or judged unless one of them is a partner.
    """
    from policylint.measure import kept_reads

    seen = _measured_workloads(monkeypatch)
    printed: list[str] = []
    original = kept_reads.read_prints

    def recording(ref, limits, folder):  # type: ignore[no-untyped-def]
        printed.append(ref.display)
        return original(ref, limits, folder)

    monkeypatch.setattr(kept_reads, "read_prints", recording)
    code, out, err = run_cli(["check", *command, "--no-cache", "--jobs", "1", "--format", "json", *WHEN], cwd=EXAMPLES / "good")
    assert (code, err) == (0, "")
    assert set(seen) == expected  # no partner: that part only is measured
    others = set(_ALL_GOOD) - expected
    assert len(printed) == len(others) and all("/" in p for p in printed)  # the rest: read for their prints, once each
    seen.clear()
    _judge_everything(monkeypatch)
    assert run_cli(["check", *command, "--no-cache", "--jobs", "1", "--format", "json", *WHEN], cwd=EXAMPLES / "good") == (
        code,
        out,
        err,
    )
    assert len(seen) == 8  # the whole repository when nothing narrows


def test_the_html_report_views_every_pool_whatever_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _measured_workloads(monkeypatch)
    page = tmp_path / "review.html"
    code, _, _ = run_cli(["report", "--html", str(page), "--no-cache", "--jobs", "1", "workloads/research.yaml", *WHEN], cwd=EXAMPLES / "good")
    assert code == 0
    assert len(seen) == 8
    assert "prod-east/serving" in page.read_text(encoding="utf-8")


def test_with_a_baseline_a_narrowed_run_reports_the_same(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry whose finding was never computed would look stale: a baseline turns the narrowing off."""
    import shutil

    repo = Path(shutil.copytree(EXAMPLES / "bad", tmp_path / "repo"))
    assert run_cli(["baseline", *WHEN], cwd=repo)[0] == 0
    command = ["check", "--changed-files", "workloads", "--baseline", ".policylint-baseline.json", "--format", "json", *WHEN]
    narrowed = run_cli(command, cwd=repo)
    _judge_everything(monkeypatch)
    assert run_cli(command, cwd=repo) == narrowed
    report = json.loads(narrowed[1])
    assert narrowed[2] == "" and report["baselined"] and not report["stale_baseline"]


def test_a_warm_run_decodes_the_positions_of_only_the_documents_it_reports_on(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = EXAMPLES / "bad"
    command = ["check", "--changed-files", "proposals/2027-q1-everything.yaml", "--format", "json", *WHEN]
    cold = run_cli(command, cwd=root)
    decoded: list[str] = []
    original = document_cache._fill_positions

    def counting(text: str, index: object) -> None:
        decoded.append(text)
        original(text, index)

    monkeypatch.setattr(document_cache, "_fill_positions", counting)
    assert run_cli(command, cwd=root) == cold
    entries = [json.loads(p.read_bytes()) for p in document_entries(cache_dir)]
    stored = sum(len(e["documents"]) for e in entries)
    assert 0 < len(decoded) < stored


def test_a_crafted_position_index_is_not_expanded_past_its_bound() -> None:
    """An index that would expand thousands of times over (not one policylint wrote) is left undecoded."""
    import base64
    import zlib

    bomb = base64.b64encode(zlib.compress(b" " * 50_000_000, 9)).decode("ascii")  # 50 MB from ~50 KB
    index = load.PositionIndex.deferred(lambda target: document_cache._fill_positions(bomb, target))
    assert index.locate(("spec", "pools", 0)) == (1, 1)  # nothing decoded: positions fall back to the top
    honest = base64.b64encode(zlib.compress(b'{"keys":[[["spec"],[3,1]]],"values":[],"spans":[]}', 1)).decode("ascii")
    index = load.PositionIndex.deferred(lambda target: document_cache._fill_positions(honest, target))
    assert index.locate(("spec", "pools", 0)) == (3, 1)
