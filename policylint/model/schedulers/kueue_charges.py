"""What Kueue may charge GPU pods against besides the GPU quota policylint reads (PL905).

Kueue's Configuration can rewrite a pod's requests before admission
(``resources.transformations``, KEP-2937: ``nvidia.com/gpu`` replaced by
``acme.com/accelerator: 1``) or drop them (``resources.excludeResourcePrefixes``).
Then the ``nvidia.com/gpu`` quota policylint judges admits nothing, and a quota
under a name policylint does not count governs the GPUs (red team round 22,
2026-12-07). Two signs are reported:

* a ClusterQueue or Cohort resource group covering a counted GPU resource and
  another extended resource that is neither a standard Kubernetes resource nor
  allow-listed (PL905's ``allow`` option, applied by the engine: :func:`unlisted`);
* a Kueue Configuration (its own document, or the ``controller_manager_config.yaml``
  of a ConfigMap) transforming or excluding a counted GPU resource.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policylint.finding import Finding
from policylint.model.load import Document, DocPath
from policylint.model.schedulers.common import mapping, sequence
from policylint.model.schedulers.quantity import looks_like_gpu

#: the API group of Kueue's manager Configuration, and the ConfigMap key that holds one
CONFIG_API = "config.kueue.x-k8s.io/"
CONFIG_KEY = "controller_manager_config.yaml"

#: resources every node has (no device plugin): a quota of them beside GPUs is ordinary
_STANDARD = frozenset({"cpu", "memory", "pods", "ephemeral-storage", "storage"})
_STANDARD_PREFIXES = ("hugepages-", "requests.", "limits.", "kubernetes.io/", "attachable-volumes-")

#: allowed beside GPUs whatever PL905's ``allow`` adds: network devices often quota'd beside GPUs (RDMA, EFA, SR-IOV, host devices)
DEFAULT_ALLOW = "rdma/ vpc.amazonaws.com/efa nvidia.com/hostdev openshift.io/ intel.com/sriov"


def is_standard(name: str) -> bool:
    return name in _STANDARD or name.startswith(_STANDARD_PREFIXES) or name.endswith(".storage.k8s.io/requests.storage")


@dataclass(frozen=True)
class Beside:
    """An uncounted extended resource covered in one resource group with a counted GPU resource."""

    resource: str
    finding: Finding


def beside_gpus(doc: Document, owner: str, gpu_resources: tuple[str, ...]) -> list[Beside]:
    """Every extended resource ``doc``'s resource groups cover beside a counted GPU resource."""
    out: list[Beside] = []
    for gi, group in enumerate(sequence(mapping(doc.data.get("spec")).get("resourceGroups"))):
        group = mapping(group)
        places: dict[str, DocPath] = {}
        for ci, name in enumerate(sequence(group.get("coveredResources"))):
            if isinstance(name, str):
                places.setdefault(name, ("spec", "resourceGroups", gi, "coveredResources", ci))
        for fi, flavor in enumerate(sequence(group.get("flavors"))):
            for ri, res in enumerate(sequence(mapping(flavor).get("resources"))):
                name = mapping(res).get("name")
                if isinstance(name, str):
                    places.setdefault(name, ("spec", "resourceGroups", gi, "flavors", fi, "resources", ri, "name"))
        gpu = next((n for n in places if n in gpu_resources), None)
        if gpu is None:
            continue
        for name, path in places.items():
            if name in gpu_resources or is_standard(name) or looks_like_gpu(name):
                continue  # counted, ordinary, or already PL905 as a GPU-like name
            out.append(Beside(name, doc.finding(
                "PL905",
                f"{owner} covers '{name}' beside {gpu} in one resource group: policylint does not count '{name}',"
                f" yet Kueue may charge GPU pods against it (a resource transformation in Kueue's Configuration"
                f" replaces {gpu} requests with it), and then its quota, not the {gpu} quota policylint judges,"
                " admits the GPUs",
                path,
                hint=f"if '{name}' is an accelerator, add it to gpu-resources in .policylint.yaml; if it is no GPU"
                f" capacity (an RDMA or EFA network device), add it to PL905's allow option"
                f" (rules: {{PL905: {{allow: \"{name}\"}}}} in .policylint.yaml)",
            )))
    return out


def unlisted(found: list[Beside], params: dict[str, Any]) -> list[Finding]:
    """The findings of ``found`` whose resource neither PL905's ``allow`` (names, or prefixes ending in ``/``)
    nor :data:`DEFAULT_ALLOW` lets pass."""
    allow = params.get("allow", "")
    more = allow if isinstance(allow, str) else " ".join(str(a) for a in sequence(allow))
    words = f"{DEFAULT_ALLOW} {more}".replace(",", " ").split()
    return [b.finding for b in found if not any(b.resource == w or (w.endswith("/") and b.resource.startswith(w))
                                                for w in words)]


def is_configuration(doc: Document) -> bool:
    """A Kueue manager Configuration, or a ConfigMap holding one."""
    if (doc.api_version or "").startswith(CONFIG_API):
        return doc.kind == "Configuration"
    return doc.kind == "ConfigMap" and isinstance(mapping(doc.data.get("data")).get(CONFIG_KEY), str)


def _embedded(doc: Document) -> dict[str, Any] | None:
    """The Configuration a ConfigMap holds as text, read by policylint's own loader (its alias, node and size
    limits: the text is the user's like any file's); None when it is not one readable mapping."""
    from policylint.model.load.compose import parse_text
    from policylint.model.load.documents import SourceFile

    text = mapping(doc.data.get("data"))[CONFIG_KEY]
    source = SourceFile(doc.source.path, doc.source.display, text)
    parse_text(source)
    if len(source.documents) != 1 or not isinstance(source.documents[0].data, dict):
        return None
    return source.documents[0].data


def configuration_findings(documents: list[Document], gpu_resources: tuple[str, ...]) -> list[Finding]:
    """PL905 for every transformation or excluded prefix of a Kueue Configuration that touches a counted GPU."""
    findings: list[Finding] = []
    for doc in documents:
        if not is_configuration(doc):
            continue
        if doc.kind == "ConfigMap":
            config = _embedded(doc)
            if config is None:
                continue
        else:
            config = doc.data
        if not (str(config.get("apiVersion", "")).startswith(CONFIG_API) and config.get("kind") == "Configuration"):
            continue
        resources = mapping(config.get("resources"))
        embedded = doc.kind == "ConfigMap"  # the embedded text has no paths of its own

        def at(*path: str | int) -> DocPath:
            return ("data", CONFIG_KEY) if embedded else path

        for ti, t in enumerate(sequence(resources.get("transformations"))):
            source = mapping(t).get("input")
            if source in gpu_resources:
                outputs = ", ".join(str(k) for k in mapping(mapping(t).get("outputs"))) or "nothing"
                findings.append(doc.finding(
                    "PL905",
                    f"Kueue's Configuration transforms {source} (strategy {mapping(t).get('strategy', 'Retain')},"
                    f" into {outputs}): Kueue charges GPU pods against what the transformation yields, so the"
                    f" {source} quota policylint judges may not be what admits them",
                    at("resources", "transformations", ti, "input"),
                    hint="count the quota Kueue charges: list its resource in gpu-resources, or drop the"
                    " transformation of the GPU resource",
                ))
        for pi, prefix in enumerate(sequence(resources.get("excludeResourcePrefixes"))):
            hit = [g for g in gpu_resources if isinstance(prefix, str) and prefix and g.startswith(prefix)]
            if hit:
                findings.append(doc.finding(
                    "PL905",
                    f"Kueue's Configuration excludes resources starting with '{prefix}' ({', '.join(hit)}):"
                    " Kueue ignores those requests at admission, so the GPU quota policylint judges admits nothing",
                    at("resources", "excludeResourcePrefixes", pi),
                    hint="do not exclude the GPU resource from Kueue's quota accounting",
                ))
    return findings
