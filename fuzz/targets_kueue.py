"""Fuzz targets for the scheduler mappings: Kueue cohort trees and Volcano queue hierarchies drawn at random.

* ``kueue`` - a copy of ``examples/kueue`` (with the ``examples/good`` measurements it
  cites) whose Kueue manifests are replaced by generated ones: Cohorts nested by
  ``parentName`` (cycles, missing parents and self-parents included), ClusterQueues in
  those cohorts (``cohortName``, or v1beta1's ``cohort``), flavors holding one or two GPU
  resources with or without ``borrowingLimit``/``lendingLimit``, and quotas written as
  numbers, quantity strings, negatives, huge values or junk. The Kueue reader's
  arithmetic over the cohort tree (:class:`policylint.model.schedulers.kueue._Lenders`)
  runs on every input.

* ``volcano`` - Volcano Queues in a copy of ``examples/good``: parents drawn among the
  queues (cycles, missing parents, ``root``), ``capability``/``deserved``/``guarantee``
  with one or two GPU resource names and the same quotas, and a Job whose tasks set
  ``minAvailable`` or not. The hierarchy checks of PL976 and PL903 run on every input.

* ``kueue-json`` - the same manifests written as a JSON file (a List, an array, one object,
  escaped or cut short) or under a name a kustomization gives, beside a kustomization naming
  files inside the repository, outside it, remote or missing: the JSON screen and the
  kustomization's files (:mod:`policylint.model.load.manifests`) run on every input.

The contract: exit 0, 1 or 2, never an internal error, and a JSON report; and every
pool's reserved and elastic GPUs that the report shows are whole numbers of at least
zero (a finding's message is where they appear).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from targets import EXAMPLES, ContractViolation, Target, _cli, _expect_clean_exit, _workdir

ARGS = ["check", "--format", "json", "--now", "2026-12-01", "--no-cache", "kueue"]
COHORTS = ("east", "west", "org", "top")
QUEUES = ("serving", "training", "batch", "spare")  # examples/kueue's LocalQueues name the first three
FLAVORS = ("h100", "h200", "a100")
QUOTAS = st.one_of(
    st.integers(0, 300), st.integers(-5, -1), st.just(10**30), st.sampled_from(['"16"', '"2000m"', '"1k"', "1.5", "x", "null", "[]"])
)
_STATE: dict[str, Path] = {}


def _repo() -> Path:
    """A copy of examples/kueue beside the examples/good measurements it cites, once per process."""
    if "repo" not in _STATE:
        root = _workdir() / "kueue-ex"
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        shutil.copytree(EXAMPLES / "kueue", root / "kueue")
        shutil.copytree(EXAMPLES / "good", root / "good")
        _STATE["repo"] = root
    return _STATE["repo"]


def _seeds() -> list[Any]:
    return [None]


def _resources(draw: st.DrawFn) -> str:
    lines = []
    for name in draw(st.lists(st.sampled_from(["nvidia.com/gpu", "amd.com/gpu", "cpu"]), min_size=1, max_size=2, unique=True)):
        lines.append(f'      - name: "{name}"\n        nominalQuota: {draw(QUOTAS)}')
        for key in ("borrowingLimit", "lendingLimit"):
            if draw(st.booleans()):
                lines.append(f"        {key}: {draw(QUOTAS)}")
    return "\n".join(lines)


def _groups(draw: st.DrawFn) -> str:
    flavors = draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=2, unique=True))
    body = "".join(f"    - name: {f}\n      resources:\n{_resources(draw)}\n" for f in flavors)
    return f'  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu", "amd.com/gpu", "cpu"]\n    flavors:\n{body}'


@st.composite
def _manifests(draw: st.DrawFn) -> str:
    docs = []
    for name in draw(st.lists(st.sampled_from(COHORTS), max_size=4, unique=True)):
        parent = draw(st.one_of(st.none(), st.sampled_from((*COHORTS, "missing"))))
        up = f"\n  parentName: {parent}" if parent else ""
        groups = _groups(draw) if draw(st.booleans()) else ""
        docs.append(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: {name}\nspec:{up}\n{groups}")
    for name in draw(st.lists(st.sampled_from(QUEUES), min_size=1, max_size=4, unique=True)):
        version = draw(st.sampled_from(("v1beta1", "v1beta2")))
        field = "cohort" if version == "v1beta1" else "cohortName"
        cohort = draw(st.one_of(st.none(), st.sampled_from(COHORTS)))
        member = f"  {field}: {cohort}\n" if cohort else ""
        docs.append(f"apiVersion: kueue.x-k8s.io/{version}\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
                    f"{member}  namespaceSelector: {{}}\n{_groups(draw)}")
    return "---\n".join(docs)


def _strategy(seeds: list[Any]) -> st.SearchStrategy[str]:
    return _manifests()


def run_kueue(text: str) -> None:
    root = _repo()
    (root / "kueue" / "kueue" / "cluster-queues.yaml").write_text(text, encoding="utf-8")
    (root / "kueue" / "kueue" / "cohort.yaml").write_text("", encoding="utf-8")
    code, out, err = _cli(ARGS, cwd=root)
    _expect_clean_exit(code, out, err, (0, 1, 2), json_out=True)
    if code == 2:
        return
    import json

    for finding in json.loads(out)["findings"]:
        for figure in re.findall(r"\((?:reserved|guaranteed) (-?\d+) \+ elastic (-?\d+)\)", finding["message"]):
            if any(int(n) < 0 for n in figure):
                raise ContractViolation(f"a negative GPU count in {finding['code']}: {finding['message'][:300]}")


VQUEUES = ("org", "product", "serving", "batch", "spare")


def _volcano_resources(draw: st.DrawFn) -> str:
    names = draw(st.lists(st.sampled_from(["nvidia.com/gpu", "amd.com/gpu", "cpu"]), min_size=1, max_size=2, unique=True))
    return "{" + ", ".join(f"{n}: {draw(QUOTAS)}" for n in names) + "}"


@st.composite
def _volcano(draw: st.DrawFn) -> str:
    docs = []
    for name in draw(st.lists(st.sampled_from(VQUEUES), min_size=1, max_size=5, unique=True)):
        spec = []
        parent = draw(st.one_of(st.none(), st.sampled_from((*VQUEUES, "root", "ghost"))))
        if parent:
            spec.append(f"parent: {parent}")
        for key in ("capability", "deserved"):
            if draw(st.booleans()):
                spec.append(f"{key}: {_volcano_resources(draw)}")
        if draw(st.booleans()):
            spec.append(f"guarantee: {{resource: {_volcano_resources(draw)}}}")
        docs.append(f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{{', '.join(spec)}}}\n")
    tasks = []
    for i in range(draw(st.integers(1, 3))):
        line = f"  - name: t{i}\n    replicas: {draw(QUOTAS)}\n"
        if draw(st.booleans()):
            line += f"    minAvailable: {draw(QUOTAS)}\n"
        line += f"    template: {{spec: {{containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: {draw(QUOTAS)}}}}}}}]}}}}\n"
        tasks.append(line)
    job_min = f"  minAvailable: {draw(QUOTAS)}\n" if draw(st.booleans()) else ""
    docs.append("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, namespace: n}\nspec:\n"
                f"  queue: {draw(st.sampled_from(VQUEUES))}\n{job_min}  tasks:\n{''.join(tasks)}")
    return "---\n".join(docs)


def _volcano_repo() -> Path:
    if "volcano" not in _STATE:
        root = _workdir() / "volcano-ex"
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(EXAMPLES / "good", root)
        (root / "volcano").mkdir()
        _STATE["volcano"] = root
    return _STATE["volcano"]


def run_volcano(text: str) -> None:
    root = _volcano_repo()
    (root / "volcano" / "queues.yaml").write_text(text, encoding="utf-8")
    code, out, err = _cli(["check", "--format", "json", "--now", "2026-12-01", "--no-cache", "."], cwd=root)
    _expect_clean_exit(code, out, err, (0, 1, 2), json_out=True)


@st.composite
def _json_manifests(draw: st.DrawFn) -> tuple[str, str, str]:
    """Generated Kueue manifests as a JSON file (a List, an array or one object, some bytes cut or escaped),
    and a kustomization naming files under any name, inside the repository or not."""
    import json

    import yaml

    text = draw(_manifests())
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        docs = []
    shape = draw(st.sampled_from(("list", "array", "one", "raw")))
    value: Any = {"apiVersion": "v1", "kind": "List", "items": docs} if shape == "list" else docs if shape == "array" \
        else (docs[0] if docs else {}) if shape == "one" else None
    body = text if value is None else json.dumps(value, default=str)
    if draw(st.booleans()):
        body = body.replace('"kueue.x-k8s.io', '"\\u006bueue.x-k8s.io')
    cut = draw(st.integers(0, 3))
    if cut == 0 and body:
        body = body[: draw(st.integers(0, len(body)))]
    names = draw(st.lists(st.sampled_from(("extra.json", "quota.patch", "../outside.patch", "cluster-queues.yaml",
                                           "https://x.test/base", "missing.patch", "", ".", "..")), max_size=4))
    kustomization = "resources:\n" + "".join(f"- {json.dumps(n)}\n" for n in names) + \
        "patches:\n" + "".join(f"- path: {json.dumps(n)}\n" for n in names)
    return body, kustomization, draw(st.sampled_from(("extra.json", "quota.patch")))


def run_kueue_json(drawn: tuple[str, str, str]) -> None:
    body, kustomization, name = drawn
    root = _repo()
    folder = root / "kueue" / "kueue"
    for old in ("extra.json", "quota.patch"):
        (folder / old).unlink(missing_ok=True)
    (folder / name).write_text(body, encoding="utf-8")
    (folder / "kustomization.yaml").write_text(kustomization, encoding="utf-8")
    try:
        code, out, err = _cli(ARGS, cwd=root)
    finally:
        (folder / "kustomization.yaml").unlink(missing_ok=True)
        (folder / name).unlink(missing_ok=True)
    _expect_clean_exit(code, out, err, (0, 1, 2), json_out=True)


TARGETS: dict[str, Target] = {
    "kueue": Target("kueue", _seeds, _strategy, run_kueue),
    "kueue-json": Target("kueue-json", _seeds, lambda seeds: _json_manifests(), run_kueue_json),
    "volcano": Target("volcano", _seeds, lambda seeds: _volcano(), run_volcano),
}
