"""Named PromQL templates for the servers and exporters capacity traces usually come from.

A declaration names a template and gives its parameters instead of writing PromQL
(``template: vllm-running``, ``params: {model: chat}``); the rendered query is what
``pull`` sends and what the provenance records, so a changed parameter is a
changed query. Label values are escaped for PromQL string literals, so a value
can never close its quotes and add matchers of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from policylint.errors import PolicylintError


@dataclass(frozen=True)
class Template:
    """One named query: PromQL with ``{param}`` holes, its parameters and what it measures."""

    name: str
    promql: str
    required: tuple[str, ...]
    description: str
    metrics: tuple[str, ...]
    defaults: Mapping[str, str] = field(default_factory=dict)
    #: parameters that are PromQL durations (written into a range selector, not a string)
    durations: tuple[str, ...] = ()


TEMPLATES: dict[str, Template] = {
    t.name: t
    for t in (
        Template(
            "vllm-running",
            'sum(vllm:num_requests_running{model_name="{model}"})',
            ("model",),
            "vLLM: requests being decoded right now (in flight on the GPUs)",
            ("vllm:num_requests_running",),
        ),
        Template(
            "vllm-waiting",
            'sum(vllm:num_requests_waiting{model_name="{model}"})',
            ("model",),
            "vLLM: requests admitted but waiting for a batch slot (queue depth)",
            ("vllm:num_requests_waiting",),
        ),
        Template(
            "vllm-in-flight",
            'sum(vllm:num_requests_running{model_name="{model}"}) + sum(vllm:num_requests_waiting{model_name="{model}"})',
            ("model",),
            "vLLM: running + waiting requests, the demand the replicas were asked to carry",
            ("vllm:num_requests_running", "vllm:num_requests_waiting"),
        ),
        Template(
            "triton-in-flight",
            'sum(rate(nv_inference_request_duration_us{model="{model}"}[{window}])) / 1e6',
            ("model",),
            "Triton: average requests in flight over the window (request-seconds per second, Little's law)",
            ("nv_inference_request_duration_us",),
            {"window": "5m"},
            ("window",),
        ),
        Template(
            "triton-pending",
            'sum(nv_inference_pending_request_count{model="{model}"})',
            ("model",),
            "Triton: requests received and not yet executing (queue depth)",
            ("nv_inference_pending_request_count",),
        ),
        Template(
            "tgi-in-flight",
            'sum(tgi_batch_current_size{job="{job}"}) + sum(tgi_queue_size{job="{job}"})',
            ("job",),
            "Text Generation Inference: requests in the running batch + requests queued",
            ("tgi_batch_current_size", "tgi_queue_size"),
        ),
        Template(
            "dcgm-gpu-util",
            'sum(DCGM_FI_DEV_GPU_UTIL{pod=~"{pod}"})',
            ("pod",),
            "DCGM exporter: GPU utilisation in percent, summed over the GPUs of the matching pods",
            ("DCGM_FI_DEV_GPU_UTIL",),
        ),
        Template(
            "dcgm-fb-used",
            'sum(DCGM_FI_DEV_FB_USED{pod=~"{pod}"})',
            ("pod",),
            "DCGM exporter: framebuffer (GPU memory) used in MiB by the matching pods, for vram.trace (unit: MiB)",
            ("DCGM_FI_DEV_FB_USED",),
        ),
        Template(
            "ksm-jobs-running",
            'sum(kube_job_status_active{namespace="{namespace}"})',
            ("namespace",),
            "kube-state-metrics: Kubernetes Jobs with active pods in the namespace (concurrency of jobs)",
            ("kube_job_status_active",),
        ),
        Template(
            "ksm-job-durations",
            'max by (job_name) (kube_job_status_completion_time{namespace="{namespace}"}'
            ' - kube_job_status_start_time{namespace="{namespace}"})',
            ("namespace",),
            "kube-state-metrics: one series per finished Job whose value is its run time in seconds",
            ("kube_job_status_start_time", "kube_job_status_completion_time"),
        ),
    )
}

_PARAM = re.compile(r"\{([a-z_]+)\}")
_DURATION = re.compile(r"^[0-9]+(ms|s|m|h|d|w|y)$")


def _quote(value: str) -> str:
    """``value`` as the inside of a double-quoted PromQL string."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(name: str, params: Mapping[str, object], *, source: str | None = None, key: str | None = None) -> str:
    """The PromQL of template ``name`` with ``params`` filled in (an unknown name or a
    missing or unknown parameter is a :class:`PolicylintError` naming the key)."""
    template = TEMPLATES.get(name)
    if template is None:
        raise PolicylintError(
            f"unknown query template {name!r} (known: {', '.join(sorted(TEMPLATES))})", source=source, key=key
        )
    allowed = set(template.required) | set(template.defaults)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise PolicylintError(
            f"template {name} has no parameter {unknown[0]!r} (it takes: {', '.join(sorted(allowed))})",
            source=source,
            key=key,
        )
    values = {k: str(v) for k, v in template.defaults.items()}
    values.update({k: str(v) for k, v in params.items()})
    missing = [p for p in template.required if p not in values]
    if missing:
        raise PolicylintError(f"template {name} needs the parameter {missing[0]!r}", source=source, key=key)
    for p in template.durations:
        if not _DURATION.match(values[p]):
            raise PolicylintError(
                f"template {name}: parameter {p!r} must be a duration such as 5m, got {values[p]!r}",
                source=source,
                key=key,
            )

    def fill(match: re.Match[str]) -> str:
        return values[match.group(1)] if match.group(1) in template.durations else _quote(values[match.group(1)])

    return _PARAM.sub(fill, template.promql)
