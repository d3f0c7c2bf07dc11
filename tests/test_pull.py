"""``policylint pull`` against a real Prometheus server, and the provenance rules on what it wrote.

A session fixture writes three weeks of synthetic series as OpenMetrics, backfills
them with ``promtool tsdb create-blocks-from openmetrics``, and starts two real
servers on loopback ports over copies of the blocks: one plain, and one behind
TLS (a throw-away CA made with ``openssl``) with basic auth. ``pull`` runs
through the CLI; the pulled trace must equal the series written, sample for
sample. The retry tests use a small local HTTP server that fails on purpose,
because a healthy Prometheus cannot be made to answer 429 or 503.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as dt
import http.server
import hashlib
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from realtools import in_ci, require

from policylint.errors import PolicylintError
from policylint.measure.sources import prometheus as prom
from policylint.model import prometheus_settings as prom_settings
from policylint.measure.sources.templates import TEMPLATES, render

#: the synthetic series: 2026-09-01 for 21 days at one-minute steps, last minute included
T0 = int(dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc).timestamp())
STEP = 60
DAYS = 21
N = DAYS * 86_400 // STEP + 1
END = T0 + (N - 1) * STEP
TOKEN = "tok-3f9a1c77e0b24d5e"
USER, PASSWORD = "capacity", "pw-7b1e55d0c9"


def _running(i: int) -> int:
    # a daily wave plus a deterministic wobble: every value is an exact integer
    minute_of_day = i % 1440
    return 40 + (minute_of_day * 60) // 1440 + (i * 7919) % 13


def _fb_used(i: int) -> float:
    # MiB with quarter fractions: exact in binary floating point and in Prometheus' text
    return 20_480.0 + (i % 97) * 0.25


def _openmetrics() -> str:
    lines = ["# TYPE vllm:num_requests_running gauge"]
    for model, offset in (("chat", 0), ("rerank", 5)):
        lines += [f'vllm:num_requests_running{{model_name="{model}"}} {_running(i) + offset} {T0 + i * STEP}' for i in range(N)]
    lines.append("# TYPE DCGM_FI_DEV_FB_USED gauge")
    lines += [f'DCGM_FI_DEV_FB_USED{{pod="chat-0",gpu="0"}} {_fb_used(i)} {T0 + i * STEP}' for i in range(N)]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bcrypt(password: str) -> str | None:
    """A bcrypt hash for Prometheus' web config, from the system's libcrypt (None without one)."""
    name = ctypes.util.find_library("crypt")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt.restype = ctypes.c_char_p
    salt = lib.crypt_gensalt(b"$2b$", 4, None, 0)
    hashed = lib.crypt(password.encode(), salt) if salt else None
    return hashed.decode() if hashed and hashed.startswith(b"$2b$") else None


@dataclass
class Servers:
    plain: str
    tls: str | None  # None when no bcrypt or openssl is available for the TLS server
    ca_file: Path | None


def _start(binary: str, data: Path, workdir: Path, web_config: Path | None) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\n", encoding="utf-8")
    cmd = [
        binary,
        f"--storage.tsdb.path={data}",
        "--storage.tsdb.retention.time=100y",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--config.file={config}",
    ]
    if web_config is not None:
        cmd.append(f"--web.config.file={web_config}")
    with (workdir / "prometheus.log").open("wb") as log:  # the server keeps its own copy of the handle
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    scheme = "https" if web_config is not None else "http"
    return proc, f"{scheme}://127.0.0.1:{port}"


def _wait_ready(proc: subprocess.Popen[bytes], url: str, workdir: Path, context: Any = None, auth: str | None = None) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {(workdir / 'prometheus.log').read_text()[-2000:]}")
        request = urllib.request.Request(f"{url}/-/ready")
        if auth:
            request.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"prometheus not ready in 120 s: {(workdir / 'prometheus.log').read_text()[-2000:]}")


def _make_ca(folder: Path) -> tuple[Path, Path, Path] | None:
    """(CA certificate, server certificate, server key) for 127.0.0.1, or None without openssl."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    ca_key, ca_crt = folder / "ca.key", folder / "ca.crt"
    key, csr, crt, ext = folder / "server.key", folder / "server.csr", folder / "server.crt", folder / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n", encoding="utf-8")
    steps = [
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_crt),
         "-days", "2", "-subj", "/CN=policylint test CA"],
        [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1"],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
         "-out", str(crt), "-days", "2", "-extfile", str(ext)],
    ]
    for cmd in steps:
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return ca_crt, crt, key


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """Two real Prometheus servers over the same backfilled blocks; stopped at the end."""
    binary = require("prometheus")
    promtool = require("promtool")
    base = tmp_path_factory.mktemp("prometheus")
    source = base / "series.om"
    source.write_text(_openmetrics(), encoding="utf-8")
    blocks = base / "blocks"
    # Three-week blocks: the default two-hour blocks make 250 of them, which takes promtool
    # a minute on a busy machine. A promtool without the flag gets the default.
    for extra in (["--max-block-duration=504h"], []):
        shutil.rmtree(blocks, ignore_errors=True)
        done = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", *extra, str(source), str(blocks)],
            capture_output=True, text=True, timeout=600, check=False,
        )
        if done.returncode == 0:
            break
    assert done.returncode == 0, done.stderr[-2000:]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        plain_dir = base / "plain"
        plain_dir.mkdir()
        shutil.copytree(blocks, plain_dir / "data")
        proc, plain = _start(binary, plain_dir / "data", plain_dir, None)
        procs.append(proc)
        tls_url = ca = None
        hashed = _bcrypt(PASSWORD)
        tls_dir = base / "tls"
        tls_dir.mkdir()
        made = _make_ca(tls_dir) if hashed else None
        if made is not None and hashed is not None:
            ca, crt, key = made
            web = tls_dir / "web.yml"
            web.write_text(
                f"tls_server_config:\n  cert_file: {crt}\n  key_file: {key}\n"
                f"basic_auth_users:\n  {USER}: '{hashed}'\n",
                encoding="utf-8",
            )
            shutil.copytree(blocks, tls_dir / "data")
            proc, tls_url = _start(binary, tls_dir / "data", tls_dir, web)
            procs.append(proc)
        _wait_ready(procs[0], plain, plain_dir)
        if tls_url is not None and ca is not None:
            import base64
            import ssl

            auth = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            _wait_ready(procs[1], tls_url, tls_dir, ssl.create_default_context(cafile=str(ca)), auth)
        yield Servers(plain, tls_url, ca)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


CLUSTER = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod
spec:
  pools:
    - name: serving
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 14
      serves: [inference]
      overflow: queue
      queue: {maxDepth: 100, maxWaitSeconds: 2}
"""

WORKLOAD = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat
  team: platform
spec:
  class: inference
  cluster: prod
  pool: serving
  gpusPerReplica: 1
  concurrency:
    trace:
      path: ../measurements/chat.json
      prometheus:
        template: vllm-running
        params: {model: chat}
        step: 1m
        lookback: 21d
  perGpuConcurrency: {value: 10, measuredIn: production, source: "grafana: latency board, 2026-11"}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 2
    evidence: "p99 time-to-first-token SLO of 2 s, product SLO document 2026-Q3"
  vram:
    trace:
      path: ../measurements/chat-vram.json
      unit: MiB
      prometheus:
        query: 'DCGM_FI_DEV_FB_USED{pod="chat-0"}'
        step: 1m
        lookback: 21d
"""


def _repo(tmp_path: Path, url: str | None, extra: str = "") -> Path:
    repo = tmp_path / "capacity"
    (repo / "clusters").mkdir(parents=True)
    (repo / "workloads").mkdir()
    settings = f"prometheus:\n  url: {url}\n{extra}" if url else extra
    (repo / ".policylint.yaml").write_text(settings, encoding="utf-8")
    (repo / "clusters" / "prod.yaml").write_text(CLUSTER, encoding="utf-8")
    (repo / "workloads" / "chat.yaml").write_text(WORKLOAD, encoding="utf-8")
    return repo


def _values(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["status"] == "success" and doc["data"]["resultType"] == "matrix"
    result: list[dict[str, Any]] = doc["data"]["result"]
    return result


def _all_text(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.mark.realtool
def test_pull_writes_the_series_exactly_in_chunks(
    servers: Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, servers.plain)
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_TOKEN", TOKEN)  # Prometheus ignores it; it must not leak
    code, out, err = run_cli(["pull", str(repo), "--end", str(END)])
    assert code == 0, err
    # progress: plain lines on stderr when it is not a terminal; results on stdout
    assert err.splitlines() == ["pulling chat concurrency (3 requests)", "pulling chat vram (3 requests)"]
    assert out.splitlines() == [
        f"pulled chat concurrency: 1 series, {N:,} samples -> measurements/chat.json",
        f"pulled chat vram: 1 series, {N:,} samples -> measurements/chat-vram.json",
    ]
    # 30,241 points per series: more than Prometheus answers at once, so three requests
    assert len(prom.chunks(END - DAYS * 86_400, END, STEP)) == 3
    [chat] = _values(repo / "measurements" / "chat.json")
    assert chat["metric"] == {}
    assert [t for t, _ in chat["values"]] == [T0 + i * STEP for i in range(N)]
    assert [float(v) for _, v in chat["values"]] == [float(_running(i)) for i in range(N)]
    [vram] = _values(repo / "measurements" / "chat-vram.json")
    assert vram["metric"] == {"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0", "pod": "chat-0"}
    assert [float(v) for _, v in vram["values"]] == [_fb_used(i) for i in range(N)]
    record = json.loads((repo / "measurements" / "chat.json.provenance.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in record.items() if k != "pulled_at"} == {
        "format": "policylint-provenance/1",
        "query": 'sum(vllm:num_requests_running{model_name="chat"})',
        "template": "vllm-running",
        "params": {"model": "chat"},
        "server": servers.plain,
        "start": "2026-09-01T00:00:00Z",
        "end": "2026-09-22T00:00:00Z",
        "step_seconds": 60,
        "lookback_seconds": 21 * 86_400,
        "series": 1,
        "samples": N,
        "sha256": hashlib.sha256((repo / "measurements" / "chat.json").read_bytes()).hexdigest(),
    }
    assert TOKEN not in out + err and TOKEN not in _all_text(repo)
    # the readers take the pulled file as any other Prometheus answer
    from policylint.readers import read_series

    series = read_series(repo / "measurements" / "chat.json")
    assert series.values.tolist() == [float(_running(i)) for i in range(N)]


@pytest.mark.realtool
def test_provenance_rules_judge_what_pull_wrote(servers: Servers, tmp_path: Path) -> None:
    repo = _repo(tmp_path, servers.plain)
    assert run_cli(["pull", str(repo), "--end", str(END), "--quiet"])[:2] == (0, "")

    def codes(now: str) -> list[str]:
        code, out, err = run_cli(["check", str(repo), "--now", now, "--format", "json", "--select", "PL130,PL131"])
        assert err == "", err
        return [f"{f['code']}:{f['line']}" for f in json.loads(out)["findings"]]

    today = dt.datetime.now(dt.timezone.utc)
    assert codes(today.strftime("%Y-%m-%dT%H:%M:%SZ")) == []
    later = today + dt.timedelta(days=8)
    assert codes(later.strftime("%Y-%m-%dT%H:%M:%SZ")) == ["PL131:13", "PL131:26"]  # the two trace paths
    # one value edited inside the pulled range: the file is no longer what the pull wrote (PL978)
    pulled = repo / "measurements" / "chat.json"
    honest = pulled.read_text(encoding="utf-8")
    [chat] = _values(pulled)
    t, v = chat["values"][100]
    edited = honest.replace(f"[{t},\"{v}\"]", f"[{t},\"{float(v) + 40:g}\"]", 1)
    assert edited != honest
    pulled.write_text(edited, encoding="utf-8")
    code, out, _ = run_cli(["check", str(repo), "--now", today.strftime("%Y-%m-%dT%H:%M:%SZ"), "--format", "json", "--select", "PL978"])
    assert [f["code"] for f in json.loads(out)["findings"]] == ["PL978"], out
    pulled.write_text(honest, encoding="utf-8")
    code, out, _ = run_cli(["check", str(repo), "--now", today.strftime("%Y-%m-%dT%H:%M:%SZ"), "--format", "json", "--select", "PL978"])
    assert json.loads(out)["findings"] == []
    workload = repo / "workloads" / "chat.yaml"
    workload.write_text(WORKLOAD.replace("{model: chat}", "{model: rerank}"), encoding="utf-8")
    code, out, _ = run_cli(["check", str(repo), "--select", "PL130"])
    assert code == 1
    assert 'asks for `sum(vllm:num_requests_running{model_name="rerank"})`' in out
    assert 'pulled with `sum(vllm:num_requests_running{model_name="chat"})`' in out
    # a new pull brings the trace back in line with its declaration
    assert run_cli(["pull", str(repo), "--end", str(END), "--quiet"])[:2] == (0, "")
    assert run_cli(["check", str(repo), "--select", "PL130"])[0] == 0
    [rerank] = _values(repo / "measurements" / "chat.json")
    assert [float(v) for _, v in rerank["values"]] == [float(_running(i) + 5) for i in range(N)]
    # a query that matches nothing leaves the committed trace as it was, exit 2
    workload.write_text(WORKLOAD.replace("{model: chat}", "{model: gone}"), encoding="utf-8")
    before = (repo / "measurements" / "chat.json").read_bytes()
    code, _, err = run_cli(["pull", str(repo), "--end", str(END), "--quiet"])
    assert code == 2
    assert "at key 'spec.concurrency.trace.prometheus': the query returned no series" in err
    assert (repo / "measurements" / "chat.json").read_bytes() == before


@pytest.mark.realtool
def test_dry_run_lists_and_writes_nothing(servers: Servers, tmp_path: Path) -> None:
    repo = _repo(tmp_path, None)  # no server needed to list
    code, out, err = run_cli(["pull", str(repo), "--end", str(END), "--dry-run"])
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        'chat concurrency -> measurements/chat.json: sum(vllm:num_requests_running{model_name="chat"})',
        "    2026-09-01T00:00:00Z .. 2026-09-22T00:00:00Z, step 1m, 30,241 points per series in 3 requests",
    ]
    assert not (repo / "measurements").exists()


@pytest.mark.realtool
def test_tls_with_custom_ca_and_basic_auth(servers: Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if servers.tls is None or servers.ca_file is None:
        reason = "no TLS server: openssl or a bcrypt-capable libcrypt is missing to configure it"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    repo = _repo(tmp_path, servers.tls)
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_USER", USER)
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_PASSWORD", "wrong-" + PASSWORD)
    # untrusted certificate: one line naming the remedy, exit 2
    code, out, err = run_cli(["pull", str(repo), "--end", str(END), "--quiet", "--workload", "chat"])
    assert code == 2
    assert "TLS certificate not trusted" in err and "prometheus.ca-file" in err
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_CA_FILE", str(servers.ca_file))
    code, out, err = run_cli(["pull", str(repo), "--end", str(END), "--quiet"])
    assert code == 2 and "HTTP 401" in err
    assert PASSWORD not in out + err
    monkeypatch.setenv("POLICYLINT_PROMETHEUS_PASSWORD", PASSWORD)
    # the CA named in the configuration instead (relative to the configuration file)
    monkeypatch.delenv("POLICYLINT_PROMETHEUS_CA_FILE")
    (repo / "certs").mkdir()
    shutil.copy(servers.ca_file, repo / "certs" / "ca.pem")
    (repo / ".policylint.yaml").write_text(f"prometheus:\n  url: {servers.tls}\n  ca-file: certs/ca.pem\n", encoding="utf-8")
    code, out, err = run_cli(["pull", str(repo), "--end", str(END)])
    assert code == 0, err
    [chat] = _values(repo / "measurements" / "chat.json")
    assert [float(v) for _, v in chat["values"]] == [float(_running(i)) for i in range(N)]
    text = _all_text(repo)
    assert PASSWORD not in out + err + text and USER not in text
    assert json.loads((repo / "measurements" / "chat.json.provenance.json").read_text())["server"] == servers.tls


def test_pull_refuses_paths_outside_the_root_and_non_json(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "http://127.0.0.1:9")
    workload = repo / "workloads" / "chat.yaml"
    workload.write_text(WORKLOAD.replace("../measurements/chat.json", "../../escape.json"), encoding="utf-8")
    code, _, err = run_cli(["pull", str(repo), "--dry-run"])
    assert code == 2
    assert "at key 'spec.concurrency.trace.path': trace path '../../escape.json' leaves the repository root" in err
    workload.write_text(WORKLOAD.replace("../measurements/chat.json", "../measurements/chat.csv"), encoding="utf-8")
    code, _, err = run_cli(["pull", str(repo), "--dry-run"])
    assert code == 2 and "must end in .json" in err
    assert not (tmp_path / "escape.json").exists()


def test_pull_without_server_or_with_credentials_in_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLICYLINT_PROMETHEUS_URL", raising=False)
    repo = _repo(tmp_path, None)
    code, _, err = run_cli(["pull", str(repo)])
    assert code == 2 and "no Prometheus server: set prometheus.url" in err
    code, out, err = run_cli(["pull", str(repo), "--url", "https://admin:hunter2@prom.example.com"])
    assert code == 2 and "carries credentials" in err and "hunter2" not in out + err


def test_nothing_to_pull_is_an_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path, None)
    text = WORKLOAD.split("      prometheus:")[0] + "  coldStartSeconds: 600\n"
    (repo / "workloads" / "chat.yaml").write_text(text, encoding="utf-8")
    code, _, err = run_cli(["pull", str(repo), "--dry-run"])
    assert code == 2 and "nothing to pull" in err


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503, then 429 with Retry-After, then a small matrix; records what it saw."""

    seen: list[dict[str, str]] = []
    script: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler API's name
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        self.seen.append({"authorization": self.headers.get("Authorization", ""), "body": body})
        status = self.script.pop(0) if self.script else 200
        if status != 200:
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"status":"error","error":"busy"}')
            return
        from urllib.parse import parse_qs

        form = parse_qs(body)
        start, end, step = (int(form[k][0]) for k in ("start", "end", "step"))
        values = [[t, "1"] for t in range(start, end + 1, step)]
        payload = {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": values}]}}
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(payload).encode())

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the server's log
        return


@pytest.fixture
def flaky() -> Iterator[str]:
    _Flaky.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    # shutdown() waits for the next poll: the default half second is most of these tests' time
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_retries_429_and_5xx_with_backoff_then_joins_chunks(flaky: str) -> None:
    _Flaky.script = [503, 429]
    pauses: list[float] = []
    client = prom.Client(prom_settings.settings_from({prom_settings.ENV_TOKEN: TOKEN}, url=flaky), sleep=pauses.append)
    series = client.query_range("up", 0, 25 * 60, 60, max_points=10)
    assert [t for t, _ in series[0]["values"]] == list(range(0, 25 * 60 + 1, 60))
    # 503 (own pause of 1 s), 429 (the server's Retry-After: 0), then three windows of <= 10 points
    assert pauses == [1.0, 0.0] and client.retries == 2
    assert len(_Flaky.seen) == 5
    assert {s["authorization"] for s in _Flaky.seen} == {f"Bearer {TOKEN}"}


def test_gives_up_after_bounded_attempts(flaky: str) -> None:
    _Flaky.script = [503] * 10
    pauses: list[float] = []
    settings = prom_settings.settings_from({}, url=flaky)
    settings.max_attempts = 3
    with pytest.raises(PolicylintError, match=r"gave up after 3 attempts; last: HTTP 503: busy"):
        prom.Client(settings, sleep=pauses.append).query_range("up", 0, 60, 60)
    assert pauses == [1.0, 2.0]


def test_connection_refused_is_retried_then_one_error() -> None:
    settings = prom_settings.settings_from({}, url=f"http://127.0.0.1:{_free_port()}")
    settings.max_attempts = 2
    pauses: list[float] = []
    with pytest.raises(PolicylintError, match=r"gave up after 2 attempts"):
        prom.Client(settings, sleep=pauses.append).query_range("up", 0, 60, 60)
    assert pauses == [1.0]


def test_chunks_cover_the_range_without_overlap() -> None:
    assert prom.chunks(0, 100, 10, max_points=4) == [(0, 30), (40, 70), (80, 100)]
    assert prom.chunks(0, 0, 60) == [(0, 0)]
    windows = prom.chunks(0, 30_240 * 60, 60)
    assert all((b - a) // 60 + 1 <= prom.MAX_POINTS for a, b in windows)
    assert sum((b - a) // 60 + 1 for a, b in windows) == 30_241


def test_server_name_never_carries_credentials_or_query() -> None:
    assert prom_settings.server_name("https://u:p@prom.example.com:9443/prom/?token=x#f") == "https://prom.example.com:9443/prom"
    settings = prom_settings.settings_from({prom_settings.ENV_TOKEN: TOKEN}, url="http://prom:9090")
    assert TOKEN not in repr(settings)


def test_templates_render_escaped_and_check_parameters() -> None:
    assert render("vllm-in-flight", {"model": "chat"}) == (
        'sum(vllm:num_requests_running{model_name="chat"}) + sum(vllm:num_requests_waiting{model_name="chat"})'
    )
    assert render("triton-in-flight", {"model": "m", "window": "1m"}) == (
        'sum(rate(nv_inference_request_duration_us{model="m"}[1m])) / 1e6'
    )
    # a value cannot close its quotes and add a matcher of its own
    assert render("vllm-running", {"model": 'x"} or up{a="'}) == (
        'sum(vllm:num_requests_running{model_name="x\\"} or up{a=\\""})'
    )
    with pytest.raises(PolicylintError, match="needs the parameter 'model'"):
        render("vllm-running", {})
    with pytest.raises(PolicylintError, match="has no parameter 'modle'"):
        render("vllm-running", {"model": "a", "modle": "b"})
    with pytest.raises(PolicylintError, match="must be a duration"):
        render("triton-in-flight", {"model": "m", "window": "5m]) or vector(1"})


def test_every_template_is_documented_with_its_metrics() -> None:
    from conftest import REPO

    doc = (REPO / "docs" / "measurements.md").read_text(encoding="utf-8")
    schema = json.loads((REPO / "schemas" / "workload.schema.json").read_text(encoding="utf-8"))
    assert schema["$defs"]["prometheusSource"]["properties"]["template"]["enum"] == list(TEMPLATES)
    for t in TEMPLATES.values():
        assert f"`{t.name}`" in doc
        for metric in t.metrics:
            assert f"`{metric}`" in doc


@pytest.mark.parametrize("end", ["nan", "inf", "-5", "99999999999999", "yesterday"])
def test_bad_end_is_one_line(tmp_path: Path, end: str) -> None:
    repo = _repo(tmp_path, None)
    code, out, err = run_cli(["pull", str(repo), "--dry-run", "--end", end])
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: --end:") and err.count("\n") == 1


def test_a_range_larger_than_a_trace_may_hold_is_refused_before_any_request(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "http://127.0.0.1:9")
    workload = repo / "workloads" / "chat.yaml"
    workload.write_text(WORKLOAD.replace("step: 1m\n        lookback: 21d", "step: 1s\n        lookback: 200d", 1))
    code, _, err = run_cli(["pull", str(repo), "--end", str(END)])
    assert code == 2
    assert "at key 'spec.concurrency.trace.prometheus': lookback 200d at step 1s is 17,280,001 points" in err


def test_a_refused_document_is_named_not_silently_skipped(tmp_path: Path) -> None:
    repo = _repo(tmp_path, None)
    workload = repo / "workloads" / "chat.yaml"
    workload.write_text(WORKLOAD.replace("template: vllm-running", "template: vllm-runing"), encoding="utf-8")
    code, _, err = run_cli(["pull", str(repo), "--dry-run", "--end", str(END)])
    # the schema refuses the whole workload, so nothing is left to pull; the warning says why
    assert code == 2
    assert "policylint: warning: 1 problem in the documents" in err and "PL010" in err
    assert "nothing to pull" in err


def test_progress_bar_on_a_terminal_and_its_result_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from policylint.commands.pull import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    progress = _Progress(quiet=False)
    assert progress.bar is not None
    progress.begin("chat concurrency", 3)
    for done in (1, 2, 3):
        progress.advance(done, 3)
    progress.end("pulled chat concurrency: 1 series, 30,241 samples -> measurements/chat.json")
    progress.close()
    assert "pulled chat concurrency: 1 series, 30,241 samples" in screen.getvalue()
    quiet = _Progress(quiet=True)
    assert quiet.bar is None


def test_check_never_loads_the_client() -> None:
    """The lint judges committed files: the HTTP client is not even imported by a check run."""
    import sys

    from conftest import REPO

    script = (
        "import sys\n"
        "from policylint.cli import main\n"
        "code = main(['check', 'examples/bad', '--format', 'json', '--no-cache'])\n"
        "sys.stderr.write(str(sorted(m for m in sys.modules if m.startswith('policylint.measure.sources'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.stderr.strip().splitlines()[-1] == (
        "['policylint.measure.sources', 'policylint.measure.sources.declared', 'policylint.measure.sources.provenance', "
        "'policylint.measure.sources.templates']"
    )


def test_config_url_with_a_password_is_refused_without_echoing_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "https://admin:hunter2@prom.example.com")
    code, out, err = run_cli(["pull", str(repo), "--dry-run"])
    assert code == 2
    assert "at key 'prometheus.url': must be an http:// or https:// URL without a user or password" in err
    assert "hunter2" not in out + err
    code, out, _ = run_cli(["config", str(repo)])
    assert code == 2 and "hunter2" not in out
