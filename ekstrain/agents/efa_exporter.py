"""EFA traffic exporter: serves the EFA devices' hardware counters in the Prometheus text format.

Runs as-is (standard library only) in a DaemonSet on EFA nodes: the observability component puts
this file in a ConfigMap and runs ``python3 efa_exporter.py``. The EFA kernel driver exposes its
counters under ``/sys/class/infiniband/<device>/ports/<port>/hw_counters/<name>`` (tx_bytes,
rx_bytes, rdma_read_bytes, ...) and some per device under ``<device>/hw_counters``; node-exporter's
infiniband collector does not read EFA's counter names, hence this exporter.

    EFA_SYSFS=/host/sys/class/infiniband PORT=9809 python3 efa_exporter.py
"""

from __future__ import annotations

import http.server
import os
import re

METRIC = "efa_hw_counter_total"
NOT_COUNTERS = {"lifespan"}
"""Files of hw_counters that are settings, not monotonically increasing counts."""


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def samples(root: str) -> list[tuple[str, str, str, int]]:
    """(device, port, counter, value) for every readable counter under ``root``; port "" = device-wide."""
    out: list[tuple[str, str, str, int]] = []
    if not os.path.isdir(root):
        return out
    for device in sorted(os.listdir(root)):
        dirs = [("", os.path.join(root, device, "hw_counters"))]
        ports = os.path.join(root, device, "ports")
        if os.path.isdir(ports):
            dirs += [(port, os.path.join(ports, port, "hw_counters")) for port in sorted(os.listdir(ports))]
        for port, counters in dirs:
            if not os.path.isdir(counters):
                continue
            for name in sorted(os.listdir(counters)):
                if name in NOT_COUNTERS or not re.fullmatch(r"[A-Za-z0-9_]+", name):
                    continue
                value = _read_int(os.path.join(counters, name))
                if value is not None:
                    out.append((device, port, name, value))
    return out


def render(root: str) -> str:
    """The /metrics page."""
    found = samples(root)
    lines = [f"# HELP {METRIC} EFA device hardware counter (sysfs hw_counters).", f"# TYPE {METRIC} counter"]
    lines += [f'{METRIC}{{device="{_label(d)}",port="{_label(p)}",counter="{_label(c)}"}} {v}' for d, p, c, v in found]
    devices = len({d for d, _, _, _ in found})
    lines += [
        "# HELP efa_devices EFA devices with readable counters.",
        "# TYPE efa_devices gauge",
        f"efa_devices {devices}",
    ]
    return "\n".join(lines) + "\n"


class Handler(http.server.BaseHTTPRequestHandler):
    root = os.environ.get("EFA_SYSFS", "/sys/class/infiniband")

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if self.path.split("?", 1)[0] not in ("/metrics", "/healthz"):
            self.send_error(404)
            return
        body = (render(self.root) if self.path.startswith("/metrics") else "ok\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server API)
        return  # one line per scrape would flood the logs


def main() -> None:
    server = http.server.ThreadingHTTPServer(("", int(os.environ.get("PORT", "9809"))), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
