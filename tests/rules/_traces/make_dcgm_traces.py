"""Write the per-pod DCGM-style VRAM traces used by the PL501/PL503 fixtures.

Long tables, one row per pod and sample, as a Prometheus or Grafana CSV export
of ``DCGM_FI_DEV_FB_USED`` (MiB) and ``DCGM_FI_DEV_GPU_UTIL`` (percent) comes:
one day at five-minute steps, float epoch seconds, pods sampled a few seconds
apart. ``chat-0`` holds its model all day, ``chat-1`` only the first half.

Run from this folder: ``python make_dcgm_traces.py``.
"""

from __future__ import annotations

import numpy as np

T0 = 1_793_491_200.0  # 2026-11-01T00:00:00Z
STEP = 300.0
N = 288  # one day


def main() -> None:
    t = T0 + STEP * np.arange(N)
    half = np.arange(N) < N // 2
    pods = {
        "chat-0": (t + 0.25, np.full(N, 40_960.0), 5.0, 80.0),
        "chat-1": (t + 2.5, np.where(half, 40_960.0, 0.0), 10.0, 90.0),
    }
    fb = ["timestamp,pod,DCGM_FI_DEV_FB_USED"]
    util = ["timestamp,pod,DCGM_FI_DEV_GPU_UTIL"]
    busy = ["timestamp,pod,DCGM_FI_DEV_FB_USED,DCGM_FI_DEV_GPU_UTIL"]
    for pod, (times, used, idle_util, busy_util) in pods.items():
        for at, mib in zip(times, used, strict=True):
            fb.append(f"{at:.3f},{pod},{mib:.0f}")
            util.append(f"{at:.3f},{pod},{idle_util:g}")
            busy.append(f"{at:.3f},{pod},{mib:.0f},{busy_util:g}")
    for name, lines in (("dcgm-fb-pods.csv", fb), ("dcgm-util-pods.csv", util), ("dcgm-busy-pods.csv", busy)):
        with open(name, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
