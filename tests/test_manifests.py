"""Files kubectl applies that a walk for YAML files missed: JSON manifests, and files a kustomization names.

Red team, 2026-12-06: a ClusterQueue written as ``kueue/extra.json`` (round 13) and a strategic-merge
patch named ``training-quota.patch`` in a kustomization (round 14) each deployed +64 GPUs that no rule
judged, and ``check`` passed. Both are read now; other tools' JSON (trace provenance records,
Prometheus exports) stays unread, and a warm run does not read it again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, run_cli
from policylint.model.load.manifests import json_is_foreign

EXTRA_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "extra"},
    "spec": {
        "cohortName": "east",
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]}]}],
    },
}

PATCH = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: training
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 168
"""


@pytest.fixture
def kueue(tmp_path: Path) -> Path:
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    # another tool's JSON beside the traces: never policylint's business
    (repo / "measurements" / "traces" / "chat-assistant.csv.provenance.json").write_text(
        json.dumps({"query": "sum(kueue_admitted_workloads)", "server": "http://prometheus:9090"}))
    return repo


def check(repo: Path, *args: str) -> tuple[int, str]:
    code, out, err = run_cli(["check", *args], cwd=repo)
    assert "Traceback" not in err, err
    return code, out


def test_the_example_with_other_tools_json_still_passes(kueue: Path) -> None:
    code, out = check(kueue)
    assert code == 0, out
    assert out == check(EXAMPLES / "kueue")[1]  # the same files read: the provenance record is not one of ours


@pytest.mark.parametrize("spelling", ["plain", "escaped"])
def test_a_cluster_queue_written_as_json_is_judged(kueue: Path, spelling: str) -> None:
    text = json.dumps(EXTRA_QUEUE, indent=2)
    if spelling == "escaped":  # kubectl decodes \u escapes: a screen of the raw bytes would miss it
        text = text.replace('"kueue.x-k8s.io/', '"\\u006bueue.x-k8s.io/')
        assert "kueue.x-k8s.io" not in text
    (kueue / "kueue" / "extra.json").write_text(text)
    for _ in range(2):  # cold, then from the document pack
        code, out = check(kueue)
        assert code == 1, out
        assert "kueue/extra.json:" in out and "PL110" in out, out


def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled (the test's files were written a moment ago): the pack may remember them."""
    import policylint.model.load.document_pack_cache as packs

    monkeypatch.setattr(packs, "RACY_SECONDS", -3600.0)


def test_a_json_file_screened_once_is_read_again_when_it_changes(kueue: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pack remembers a foreign JSON file by its stat identity: an edit that makes it a manifest is seen."""
    extra = kueue / "kueue" / "extra.json"
    extra.write_text(json.dumps({"note": "not a manifest"}))
    settle(monkeypatch)
    assert check(kueue)[0] == 0
    assert check(kueue)[0] == 0
    extra.write_text(json.dumps(EXTRA_QUEUE))
    code, out = check(kueue)
    assert code == 1 and "kueue/extra.json:" in out, out
    code, out = check(kueue, "--changed-files", "kueue/extra.json")
    assert code == 1 and "kueue/extra.json:" in out, out


def test_a_patch_file_a_kustomization_names_is_read_whatever_its_name(kueue: Path) -> None:
    (kueue / "kueue" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flavors.yaml\n"
        "- cohort.yaml\n- cluster-queues.yaml\n- local-queues.yaml\npatches:\n- path: training-quota.patch\n")
    (kueue / "kueue" / "training-quota.patch").write_text(PATCH)
    code, out = check(kueue)
    assert code == 1, out
    assert "kueue/training-quota.patch:4:3: error PL021" in out, out
    # the hook's run when only the kustomization is staged (the patch file was committed before, unread)
    code, out = check(kueue, "--changed-files", "kueue/kustomization.yaml")
    assert code == 1 and "kueue/training-quota.patch:4:3: error PL021" in out, out


def test_files_a_kustomization_names_that_are_not_manifests_or_lie_outside_stay_unread(kueue: Path) -> None:
    outside = kueue.parent / "outside.patch"
    outside.write_text(PATCH)
    (kueue / "kueue" / "deployment.patch").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    (kueue / "kueue" / "kustomization.yaml").write_text(
        "resources:\n- cluster-queues.yaml\n- ../../outside.patch\n- ../kueue\n"
        "patches:\n- path: deployment.patch\n- patch: |-\n    kind: Deployment\n")
    code, out = check(kueue)
    assert code == 0, out
    assert out == check(EXAMPLES / "kueue")[1]


@pytest.mark.parametrize(("value", "foreign"), [
    ({"query": "up", "server": "http://p"}, True),
    ({"status": "success", "data": {"resultType": "matrix", "result": []}}, True),
    (EXTRA_QUEUE, False),
    ({"apiVersion": "v1", "kind": "List", "items": [EXTRA_QUEUE]}, False),
    ([EXTRA_QUEUE], False),
    ({"apiVersion": "policylint/v1", "kind": "Workload"}, False),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, True),
    ({"$schema": "x", "properties": {"apiVersion": {"const": "policylint/v1"}}}, True),
    (3, True),
])
def test_the_json_screen(tmp_path: Path, value: object, foreign: bool) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(value))
    assert json_is_foreign(path, 1 << 20) is foreign


@pytest.mark.parametrize("text", [
    '{"apiVersion": "v1", "apiVersion": "kueue.x-k8s.io/v1beta2"}',  # a repeated key: read as YAML (PL002)
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n",  # YAML in a .json file: kubectl reads it so
    '{"apiVersion": "kueue.x-k8s.io/v1beta2",',  # broken: its syntax error is reported
    "[" * 100_000,  # too deep for json: read as YAML, whose depth limit reports it
])
def test_json_that_does_not_decode_plainly_is_read_as_yaml(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    assert json_is_foreign(path, 1 << 20) is False


def test_an_oversized_json_file_is_read_only_when_it_names_a_scheduler(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"values": list(range(1000))}))
    assert json_is_foreign(path, 100) is True
    path.write_text(json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta2", "values": list(range(1000))}))
    assert json_is_foreign(path, 100) is False  # read, and refused as too large (PL005)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert json_is_foreign(fifo, 100) is True


def test_a_warm_run_does_not_read_a_foreign_json_file_again(kueue: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import policylint.model.load.manifests as manifests

    record = kueue / "measurements" / "traces" / "chat-assistant.csv.provenance.json"
    settle(monkeypatch)
    screened: list[str] = []
    original = manifests.json_is_foreign

    def counting(path: Path | str, max_bytes: int) -> bool:
        screened.append(os.path.basename(path))
        return original(path, max_bytes)

    monkeypatch.setattr(manifests, "json_is_foreign", counting)
    first = check(kueue)
    assert screened == ["chat-assistant.csv.provenance.json"]
    assert check(kueue) == first
    assert screened == ["chat-assistant.csv.provenance.json"]  # the pack knew it by its identity
    record.write_text(json.dumps({"query": "changed"}))
    assert check(kueue) == first
    assert screened == ["chat-assistant.csv.provenance.json"] * 2  # moved identity: screened again


def test_the_json_screen_never_raises(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    path = tmp_path / "x.json"
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    values = st.recursive(scalars, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.one_of(st.binary(max_size=300), values.map(lambda v: json.dumps(v).encode())))
    def screen(data: bytes) -> None:
        path.write_bytes(data)
        assert json_is_foreign(path, 256) in (True, False)

    screen()


RAISED = PATCH  # the training queue raised to 168 GPUs, as YAML


def _raised_json(indent: str | None = "  ", escaped: bool = False) -> str:
    import yaml

    text = json.dumps(yaml.safe_load(RAISED), indent=indent)
    return text.replace('"kueue.x-k8s.io', '"\\u006bueue.x-k8s.io') if escaped else text


@pytest.mark.parametrize(("name", "content", "reported"), [
    # a harmless document first, then the queue with a tag PyYAML cannot construct
    ("training-tuning.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
     + RAISED.replace("name: training", "name: !queue training"), "training-tuning.yaml"),
    # the same with the API group spelt with an escape: no text names it, the folder does
    ("training-tuning.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
     + RAISED.replace("name: training", "name: !queue training").replace(
         "apiVersion: kueue.x-k8s.io/v1beta2", 'apiVersion: "\\x6bueue.x-k8s.io/v1beta2"'), "training-tuning.yaml"),
    # a JSON stream: a ConfigMap, then the queue (kubectl applies both)
    ("training-quota.json", json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
     + "\n" + _raised_json(None, escaped=True), "training-quota.json"),
    # UTF-16 with a byte-order mark
    ("training-quota.json", "\ufeff" + _raised_json(), "training-quota.json"),
    # tab-indented JSON with an escaped API group: PyYAML refuses the tabs, the text names no API
    ("training-quota.json", _raised_json("\t", escaped=True), "training-quota.json"),
    # a byte that is not UTF-8, and the escape
    ("training-quota.json", _raised_json(escaped=True).replace('"name": "training"', '"name": "training", "x": "\xe9"'),
     "training-quota.json"),
])
def test_a_manifest_that_does_not_load_whole_beside_the_queues_is_reported(kueue: Path, name: str, content: str,
                                                                          reported: str) -> None:
    """Red team, 2026-12-06, round 15: each of these deployed the training queue at 168 GPUs (+64) and passed."""
    path = kueue / "kueue" / name
    if "\ufeff" in content:
        path.write_bytes(content.encode("utf-16"))
    elif "\xe9" in content:
        path.write_bytes(content.encode("latin-1"))
    else:
        path.write_text(content, encoding="utf-8")
    code, out = check(kueue)
    assert code == 1, out
    assert f"{reported}:" in out, out


_CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"


@pytest.mark.parametrize(("name", "content"), [
    # a ConfigMap, then the queue with a tag PyYAML cannot construct and its API group spelt with an escape
    ("training-tuning.yaml", _CONFIG_MAP + RAISED.replace("name: training", "name: !queue training").replace(
        "apiVersion: kueue.x-k8s.io/v1beta2", 'apiVersion: "\\x6bueue.x-k8s.io/v1beta2"')),
    # the same, the group split by an escaped line break of a double-quoted scalar
    ("training-tuning.yaml", _CONFIG_MAP + RAISED.replace("name: training", "name: !queue training").replace(
        "apiVersion: kueue.x-k8s.io/v1beta2", 'apiVersion: "kueue.x-\\\n   k8s.io\\/v1beta2"')),
    # a JSON stream, the group spelt with \u escapes: neither JSON nor YAML reads it whole
    ("training-quota.json", json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
     + "\n" + _raised_json(None, escaped=True)),
])
def test_an_escaped_manifest_that_does_not_load_whole_alone_in_a_folder_is_reported(
    kueue: Path, name: str, content: str
) -> None:
    """Red team, 2026-12-06, round 15 (left open): beside nothing, with no API group in its raw text, it was skipped."""
    folder = kueue / "deploy" / "tuning"
    folder.mkdir(parents=True)
    (folder / name).write_text(content, encoding="utf-8")
    code, out = check(kueue)
    assert code == 1, out
    assert f"deploy/tuning/{name}:" in out, out


def test_another_tools_template_with_escapes_alone_in_a_folder_stays_unread(kueue: Path) -> None:
    """Escapes that spell no API group leave a file that does not parse to its own tool."""
    folder = kueue / "charts" / "web" / "templates"
    folder.mkdir(parents=True)
    (folder / "configmap.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\ndata:\n  banner: "caf\\xe9 \\u2615"\n  {{- toYaml .Values.extra | nindent 2 }}\n')
    code, out = check(kueue)
    assert code == 0, out
    assert "configmap.yaml" not in out, out


def test_honest_json_indented_with_tabs_is_read(kueue: Path) -> None:
    import yaml

    queues = list(yaml.safe_load_all((kueue / "kueue" / "cluster-queues.yaml").read_text()))
    (kueue / "kueue" / "cluster-queues.yaml").unlink()
    (kueue / "kueue" / "cluster-queues.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": queues}, indent="\t"))
    code, out = check(kueue)
    assert code == 1 and "PL026" in out and "PL001" not in out, out  # read: its List is PL026, not a syntax error


def test_a_typed_list_whose_items_carry_no_kind_is_pl026(kueue: Path) -> None:
    import yaml

    item = yaml.safe_load(RAISED)
    del item["apiVersion"], item["kind"]
    (kueue / "kueue" / "more.json").write_text(json.dumps(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueueList", "items": [item]}))
    code, out = check(kueue)
    assert code == 1 and "kueue/more.json:" in out and "PL026" in out and "ClusterQueue 'training'" in out, out


def test_a_kustomization_without_a_suffix_and_a_component_the_walk_skips_are_read(kueue: Path) -> None:
    (kueue / "kueue" / "Kustomization").write_text(
        "resources: [cluster-queues.yaml]\npatches:\n- target: {kind: ClusterQueue, name: training}\n"
        "  patch: '[{op: replace, path: /spec/x, value: 1}]'\n")
    code, out = check(kueue)
    assert code == 1 and "kueue/Kustomization:3:3: error PL026" in out, out
    (kueue / "kueue" / "Kustomization").write_text("resources: [cluster-queues.yaml]\ncomponents: [node_modules/tuning]\n")
    component = kueue / "kueue" / "node_modules" / "tuning"
    component.mkdir(parents=True)
    (component / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: quota.yaml\n")
    (component / "quota.yaml").write_text(RAISED)
    code, out = check(kueue)
    assert code == 1 and "kueue/node_modules/tuning/quota.yaml:4:3: error PL021" in out, out
