"""The log agent's Lua filter run by a real LuaJIT, against the Python model the query tests use.

Fluent Bit runs its `lua` filter on LuaJIT (fluent-bit CMakeLists.txt ``FLB_LUAJIT``, on by default), so Debian's
``luajit`` runs the very script the render puts in the chart's ``luaScripts`` (assembly/logs.py ``lua_script``).
GIVEN every job kind's pods (as the job templates label them), sbatch output files, node journal lines and edge
records WHEN LuaJIT calls ``ekstrain_record`` on each THEN the flat fields it returns equal what
``logs.record_fields`` (which tests/assembly/test_logs_and_spend.py evaluates the CloudWatch queries on) computes.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from typing import Any

import pytest
from conftest import stack_config
from support.jobs import FakePlanner
from test_jobs_templates import pod_specs, spec_for
from test_logs_and_spend import KINDS, _holder

from ekstrain.assembly import logs
from ekstrain.assembly.jobs.render import render as render_job

PROD = stack_config("prod")


def _lua_string(s: str) -> str:
    """A Lua string literal of ``s``: every byte outside a safe set as a decimal escape (no quoting surprises)."""
    safe = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ./_-:")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03d}" for b in s.encode()) + '"'


def _lua_table(d: dict[str, Any]) -> str:
    items = []
    for k, v in d.items():
        value = _lua_table(v) if isinstance(v, dict) else _lua_string(v)
        items.append(f"[{_lua_string(k)}] = {value}")
    return "{" + ", ".join(items) + "}"


def _case(tag: str, **kw: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(tag, the record Fluent Bit hands the filter, record_fields' keyword arguments)."""
    rec: dict[str, Any] = {"node_partition": kw.get("node_partition", "none")}
    if "message" in kw:  # the systemd input's journal field; the filter copies it to log
        rec["MESSAGE"] = kw.pop("message")
        kw["log"] = rec["MESSAGE"]
    elif "log" in kw:
        rec["log"] = kw["log"]
    if kw.get("namespace") is not None:
        rec["kubernetes"] = {
            "namespace_name": kw["namespace"],
            "pod_name": kw["pod"],
            "container_name": kw["container"],
            "labels": kw.get("labels") or {},
            "annotations": kw.get("annotations") or {},
        }
    if kw.get("file") is not None:
        rec["file"] = kw["file"]
    return tag, rec, kw


def _cases() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    cases = []
    for scheduler, partition in sorted(KINDS.items()):
        objects = render_job(spec_for(partition, name="run"), PROD, scheduler, FakePlanner())
        for i, spec in enumerate(pod_specs(objects)):
            meta = (_holder(objects, spec) or {}).get("metadata") or {}
            for c in spec["containers"]:
                for line in ("step 1", "[1,3]<stdout>:loss 2.1", "  7: NCCL WARN"):
                    cases.append(
                        _case(
                            "kube.var.log.containers.x",
                            namespace="training",
                            pod=f"run-worker-{i}",
                            container=c["name"],
                            labels=meta.get("labels") or {},
                            annotations=meta.get("annotations") or {},
                            node_partition=partition,
                            log=line,
                        )
                    )
    for job_id, name, line in (("41", "run", "0: a"), ("57", "llama-70b", "12: NCCL INFO"), ("9", "x.y", "b")):
        cases.append(
            _case("slurm.x", file=f"{logs.SLURM_LOG_DIR}/{job_id}/{name}.out", node_partition="gpu-a100", log=line)
        )
    cases += [
        _case("node.kernel", node_partition="gpu-h100", message="NVRM: Xid (PCI:0000:10:1c): 79, pid=1"),
        _case("node.kubelet", node_partition="trainium", message="E1205 kubelet.go:2 failed"),
        _case("kube.x", namespace="kube-system", pod="aws-node-abcde", container="aws-node", log="ok"),
        _case("kube.x", namespace="training", pod="nb-7", container="notebook", log="", labels={"a": ""}),
        _case(
            "kube.x",
            namespace="training",
            pod="hand-written",
            container="c",
            log="x",
            annotations={"scheduling.volcano.sh/queue-name": "gpu-a100-llm"},
            labels={"ekstrain.io/job": "none"},
        ),
    ]
    return cases


def _run_lua(cases: list[tuple[str, dict[str, Any], dict[str, Any]]], tmp: pathlib.Path) -> list[dict[str, str]]:
    luajit = shutil.which("luajit")
    assert luajit, "luajit not found: apt-get install -y luajit (.ci/run installs it)"
    harness = (
        logs.lua_script()
        + "\nlocal cases = {\n"
        + ",\n".join(f"  {{{_lua_string(tag)}, {_lua_table(rec)}}}" for tag, rec, _ in cases)
        + "\n}\n"
        + """
for i, c in ipairs(cases) do
  local code, ts, out = ekstrain_record(c[1], 1733400000, c[2])
  local keys = {}
  for k, v in pairs(out) do
    if type(v) ~= "table" then table.insert(keys, k) end
  end
  table.sort(keys)
  io.write(i, "\\tcode\\t", code, "\\n")
  for _, k in ipairs(keys) do io.write(i, "\\t", k, "\\t", tostring(out[k]), "\\n") end
end
"""
    )
    script = tmp / "harness.lua"
    script.write_text(harness)
    done = subprocess.run([luajit, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out: list[dict[str, str]] = [{} for _ in cases]
    for line in done.stdout.splitlines():
        i, key, value = line.split("\t", 2)
        out[int(i) - 1][key] = value
    return out


def test_the_real_lua_filter_computes_what_the_queries_are_tested_on(tmp_path: pathlib.Path) -> None:
    cases = _cases()
    assert len(cases) > 30
    got = _run_lua(cases, tmp_path)
    for (tag, rec, kw), lua in zip(cases, got, strict=True):
        assert lua.pop("code") == "2", (tag, rec)  # record changed, timestamp kept
        lua.pop("file", None)  # the tail input's path, kept as it came
        lua.pop("MESSAGE", None)
        want = {k: v for k, v in logs.record_fields(tag=tag, **kw).items() if v is not None}
        assert lua == want, (tag, rec)
    # the table's sources are all exercised: a rank from each kind of source, a queue from the annotation
    ranks = {lua.get("rank") for lua in got}
    assert {"3", "7", "12", "0"} <= ranks
    assert any(lua.get("queue") == "gpu-a100-llm" for lua in got)
    assert any(lua.get("source") == "kernel" and "Xid" in lua.get("log", "") for lua in got)


# GIVEN a pattern in the table that Lua and the Python model read differently WHEN the real Lua runs THEN the
# comparison above fails: a patterned field that LuaJIT rejects is an error, not a silent nil.
def test_a_broken_lua_pattern_fails_in_luajit(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(logs.FIELDS, "rank", ("log:^%[(%d+",))  # malformed: unfinished capture
    with pytest.raises(AssertionError, match="malformed pattern|unfinished capture"):
        _run_lua([_case("kube.x", namespace="n", pod="p-1", container="c", log="[1,2]<stdout>:x")], tmp_path)
