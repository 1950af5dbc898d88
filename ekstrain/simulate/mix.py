"""A workload mix file for ``ekstrain simulate --timeline`` and the platform facts the timeline reads from
the build. The format (times in hours; docs/simulate.md):

    hours: 48                       # how long to play
    checkpointMinutes: 30           # every job's checkpoint interval
    checkpointSaveSeconds: 281      # optional: one checkpoint's write time; @default the stack's FSx at its
                                    # ekstrain:storage.checkpoint.sizeGiB (ekstrain.layout.storage_sizing)
    launchMinutes: {gpu: 10, trainium: 10, cpu: 3}
    jobs:
      - file: build/examples/llama3-70b-volcano.yaml   # YAML objects or an sbatch, relative to the cwd
        at: 0                       # submitted at
        hours: 20                   # training time it needs
      - notebook: {partition: gpu-h100, accelerators: 1}   # a JupyterHub profile's server pod
        at: 1
        hours: 8
        count: 2
    faults:
      - {at: 5, kind: node-lost, job: Job/llama3-70b-megatron}
      - {at: 6, kind: health-notice, job: ..., windowHours: 72}
      - {at: 1, kind: insufficient-capacity, job: ..., windowHours: 2, nodes: 5}   # EC2 has 5 more, then none for 2 h
      - {at: 2, kind: preflight-hangs, job: ...}                  # the next node's check never returns
      - {at: 3, kind: preflight-fails-pool, job: ..., windowHours: 3}   # every node of its pool fails for 3 h
      - {at: 4, kind: condition-flap, job: ..., minutes: 3}       # NetworkingReady=False for 3 minutes
    upgrade: {at: 6, to: "1.36"}    # optional: a Kubernetes minor upgrade while the jobs run (simulate/upgrade.py)
    spareNodes: {gpu-h100: 1}       # optional: a NodePool's limits one node over the render's (a spare in the
                                    # reservation, simulate/capacity_windows.py with_spare)
    networkLayout:                  # optional: instances under each network node, per type (simulate/topology.py)
      p4d.24xlarge: {nodesPerLayer3: 16, layer3PerLayer2: 4}

Every mistake is an :class:`~ekstrain.simulate.inputs.InputError` naming the key and the fix (exit 2).
"""

from __future__ import annotations

import math
import pathlib
import re
from typing import Any

import yaml

from ekstrain.facts import catalog
from ekstrain.files import inputs_guard, yaml12
from ekstrain.files.paths import in_checkout
from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.layout import storage_sizing
from ekstrain.payloads import health_gate
from ekstrain.simulate import capacity_windows, upgrade
from ekstrain.simulate import topology as net_topology
from ekstrain.simulate.inputs import InputError, read_file
from ekstrain.simulate.notebooks import START_TIMEOUT_KEY
from ekstrain.simulate.quantity import parse
from ekstrain.simulate.timeline import FAULT_KINDS, NEVER, Arrival, Fault, Mix
from ekstrain.workloads import registry
from ekstrain.workloads.base import WorkloadKind

MAX_HOURS = 24 * 31
MAX_MIX_BYTES = 1024 * 1024  # a mix file is a few KiB of YAML
"""The clock runs minute by minute: a month is the longest mix simulated."""


def _number(where: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InputError(where, f"is {value!r}", f"give a number from {low:g} to {high:g}")
    return float(value)


def _whole(where: str, value: Any, low: int, high: int) -> int:
    """A count or a time in whole minutes/seconds: 1.5 is refused, not truncated (2.0 is 2)."""
    number = _number(where, value, low, high)
    if not number.is_integer():
        raise InputError(where, f"is {value!r}, not a whole number", f"give a whole number from {low} to {high}")
    return int(number)


def _text(where: str, value: Any, fix: str) -> str:
    if not isinstance(value, str) or not value:
        shown = f"a {type(value).__name__}" if isinstance(value, (dict, list)) else repr(value)
        raise InputError(where, f"is {shown}, not text", fix)
    return value


LAUNCH_FAMILIES = (catalog.GPU, catalog.TRAINIUM, "cpu")
"""The families ``Mix.launch_minutes`` keys (ekstrain/simulate/timeline.py: an instance of another family
launches in the cpu time)."""


def _mapping(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(where, f"is a {type(value).__name__}, expected a mapping", "write it as `key: value` lines")
    return value


def _known(where: str, value: dict[str, Any], keys: tuple[str, ...]) -> None:
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise InputError(where, f"unknown key(s) {', '.join(unknown)}", f"use only {', '.join(keys)}")


def notebook_pod(build: pathlib.Path, partition: str, accelerators: int, where: str) -> dict[str, Any]:
    """The single-user server pod KubeSpawner creates for a profile (kubespawner spawner.py: node_selector,
    tolerations, cpu/mem guarantees as requests, extra_resource_limits/guarantees)."""
    release = build / "helm" / "jupyterhub--jupyterhub.yaml"
    if not release.exists():
        raise InputError(where, f"{release} not found: this stack has no JupyterHub", "drop the notebook or enable it")
    values = yaml.load(release.read_text(), Loader=SAFE_LOADER).get("values") or {}
    for profile in (values.get("singleuser") or {}).get("profileList") or []:
        over = profile.get("kubespawner_override") or {}
        if (over.get("node_selector") or {}).get("ekstrain.io/partition") != partition:
            continue
        choices = ((profile.get("profile_options") or {}).get("devices") or {}).get("choices") or {}
        choice = choices.get(str(accelerators))
        if choice is None:
            raise InputError(
                f"{where}.accelerators",
                f"{accelerators} is no choice of the {partition} profile",
                f"use one of {sorted(choices)}",
            )
        extra = choice.get("kubespawner_override") or {}
        requests = {"cpu": str(over.get("cpu_guarantee", 0)), "memory": str(over.get("mem_guarantee", "0"))}
        requests.update({k: str(v) for k, v in (extra.get("extra_resource_guarantees") or {}).items()})
        limits = {k: str(v) for k, v in (extra.get("extra_resource_limits") or {}).items()}
        parse(requests["memory"])  # kubespawner's "32G" is the quantity 32e9 bytes
        pod_spec: dict[str, Any] = {}
        # KubeSpawner gives up on a server not running after start_timeout: the profile's, else the hub's
        # (z2jh singleuser.startTimeout, default 300 s); ekstrain/simulate/notebooks.py plays it.
        timeout = over.get("start_timeout", (values.get("singleuser") or {}).get("startTimeout", 300))
        if over.get("scheduler_name"):
            pod_spec["schedulerName"] = over["scheduler_name"]
        return {
            "kind": "Pod",
            "metadata": {
                "name": f"jupyter-{partition}-{accelerators}",
                "labels": {"component": "singleuser-server"},
                "annotations": dict(over.get("extra_annotations") or {}),
            },
            "spec": {
                **pod_spec,
                "nodeSelector": dict(over.get("node_selector") or {}),
                "tolerations": list(over.get("tolerations") or []),
                "containers": [{"name": "notebook", "resources": {"requests": requests, "limits": limits}}],
            },
            START_TIMEOUT_KEY: int(timeout),
        }
    raise InputError(
        f"{where}.partition", f"no JupyterHub profile for partition {partition!r}", "name a profile's partition"
    )


def read_mix(path: pathlib.Path, build: pathlib.Path) -> Mix:
    where = str(path)
    try:
        # Read like a stack file (ekstrain/files/yaml12.py): YAML 1.2, duplicate keys and ambiguous scalars refused.
        doc = yaml12.load(inputs_guard.read_text(path, MAX_MIX_BYTES))
    except inputs_guard.NotARegularFile as exc:  # a FIFO would block the read forever
        raise InputError(where, str(exc.strerror), "pass a regular mix file as --timeline") from None
    except inputs_guard.TooLarge as exc:
        raise InputError(where, str(exc.strerror), "a mix file is a few KiB of YAML") from None
    except yaml12.Refusal as exc:
        raise InputError(f"{where}: {exc.path} (line {exc.line})", exc.problem, exc.fix) from None
    except RecursionError:
        raise InputError(where, "nests too deep to read", "a mix file is a few levels deep") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(
            where, f"is not a valid UTF-8 YAML file ({str(exc).splitlines()[0]})", "fix its syntax"
        ) from None
    except OSError as exc:
        raise InputError(where, f"cannot be read ({exc.strerror})", "pass an existing mix file") from None
    doc = _mapping(where, doc)
    _known(
        where,
        doc,
        (
            "hours",
            "checkpointMinutes",
            "checkpointSaveSeconds",
            "launchMinutes",
            "jobs",
            "faults",
            "upgrade",
            "capacityBlocks",
            "spareNodes",
            "networkLayout",
        ),
    )
    mix = Mix(arrivals=[])
    mix.minutes = int(_number(f"{where}: hours", doc.get("hours", 48), 1, MAX_HOURS) * 60)
    mix.checkpoint_every = _whole(f"{where}: checkpointMinutes", doc.get("checkpointMinutes", 30), 1, 10_000)
    if "checkpointSaveSeconds" in doc:  # otherwise the stack's FSx decides (stack_checkpoint_seconds)
        mix.checkpoint_save_seconds = _whole(f"{where}: checkpointSaveSeconds", doc["checkpointSaveSeconds"], 0, 10**6)
        mix.checkpoint_save_given = True
    if "capacityBlocks" in doc:
        mix.capacity_blocks = capacity_windows.parse(
            f"{where}: capacityBlocks", doc["capacityBlocks"], mix.minutes / 60
        )
    if "spareNodes" in doc:
        mix.spare_nodes = _spare_nodes(f"{where}: spareNodes", doc["spareNodes"], build)
    if "networkLayout" in doc:
        mix.network_layout = net_topology.parse_layout(f"{where}: networkLayout", doc["networkLayout"])
    launch = _mapping(f"{where}: launchMinutes", doc.get("launchMinutes") or {})
    _known(f"{where}: launchMinutes", launch, LAUNCH_FAMILIES)
    for family, minutes in launch.items():
        mix.launch_minutes[str(family)] = _whole(f"{where}: launchMinutes.{family}", minutes, 0, 600)
    jobs = doc.get("jobs") or []
    if not isinstance(jobs, list) or not jobs:
        raise InputError(f"{where}: jobs", "is empty or not a list", "list the jobs to play")
    for i, entry in enumerate(jobs):
        at = f"{where}: jobs[{i}]"
        entry = _mapping(at, entry)
        _known(at, entry, ("file", "notebook", "at", "hours", "count"))
        start = int(_number(f"{at}.at", entry.get("at", 0), 0, MAX_HOURS) * 60)
        runs = max(1, int(_number(f"{at}.hours", entry.get("hours", 1), 0, MAX_HOURS) * 60))
        count = _whole(f"{at}.count", entry.get("count", 1), 1, 100)
        if ("file" in entry) == ("notebook" in entry):
            raise InputError(at, "needs exactly one of file or notebook", "give `file: <path>` or `notebook: {...}`")
        if "file" in entry:
            job_file = pathlib.Path(_text(f"{at}.file", entry["file"], "give the workload file's path"))
            if not job_file.is_file():
                # the shipped mixes name workloads `make examples` / `make simulate` render into build/
                made = job_file.parts[:1] == ("build",) and not job_file.exists()
                fix = (
                    "render the example workloads first: `examples/render-all.sh build/examples` of a checkout"
                    f"{in_checkout('make examples')}, or `ekstrain job render ... --out {job_file}`"
                    if made
                    else "give the path of a workload file"
                )
                raise InputError(f"{at}.file", f"{job_file} is not a file", fix)
            objects = read_file(job_file)
            if not [o for o in objects if o.get("kind") != "TrainingRuntime"]:
                raise InputError(
                    f"{at}.file",
                    f"{job_file} holds no workload object" + (" (only TrainingRuntime templates)" if objects else ""),
                    "name a file with the job's YAML objects or an sbatch script",
                )
        else:
            nb = _mapping(f"{at}.notebook", entry["notebook"])
            _known(f"{at}.notebook", nb, ("partition", "accelerators"))
            accel = _whole(f"{at}.notebook.accelerators", nb.get("accelerators", 1), 1, 64)
            partition = _text(f"{at}.notebook.partition", nb.get("partition"), "name a JupyterHub profile's partition")
            objects = [notebook_pod(build, partition, accel, f"{at}.notebook")]
        # A TrainJob's own TrainingRuntime is a template, not a workload: it is looked up by name.
        for obj in objects:
            if obj.get("kind") == "TrainingRuntime":
                mix.runtimes[str((obj.get("metadata") or {}).get("name"))] = obj
        objects = [o for o in objects if o.get("kind") != "TrainingRuntime"]
        for k in range(count):
            for obj in objects:
                described = registry.lookup(obj) or WorkloadKind()
                name = described.arrival_name(obj) + (f"#{k + 1}" if count > 1 else "")
                used = sum(1 for x in mix.arrivals if x.name == name or x.name.startswith(name + " (again"))
                mix.arrivals.append(Arrival(name if not used else f"{name} (again {used})", obj, start, runs))
    if "upgrade" in doc:  # a Kubernetes minor upgrade while the jobs run (ekstrain/simulate/upgrade.py)
        try:
            mix.upgrade = upgrade.read_entry(f"{where}: upgrade", doc["upgrade"], mix.minutes)
        except upgrade.UpgradeError as exc:
            raise InputError(
                exc.where, exc.problem, 'write `upgrade: {at: <hour>, to: "1.36"}` inside the mix'
            ) from None
    names = {a.name for a in mix.arrivals}
    faults = doc.get("faults") or []
    if not isinstance(faults, list):
        raise InputError(
            f"{where}: faults", f"is a {type(faults).__name__}, not a list", "write faults as `- {...}` lines"
        )
    for i, entry in enumerate(faults):
        at = f"{where}: faults[{i}]"
        entry = _mapping(at, entry)
        _known(at, entry, ("at", "kind", "job", "windowHours", "nodes", "minutes"))
        kind, job = entry.get("kind"), entry.get("job")
        if not isinstance(kind, str) or kind not in FAULT_KINDS:
            shown = repr(kind) if kind is None or isinstance(kind, str) else f"a {type(kind).__name__}"
            raise InputError(f"{at}.kind", f"is {shown}", f"use one of {', '.join(FAULT_KINDS)}")
        if not isinstance(job, str) or job not in names:
            shown = repr(job) if job is None or isinstance(job, str) else f"a {type(job).__name__}"
            raise InputError(f"{at}.job", f"is {shown}, no job of the mix", f"use one of {', '.join(sorted(names))}")
        mix.faults.append(
            Fault(
                int(_number(f"{at}.at", entry.get("at", 0), 0, MAX_HOURS) * 60),
                str(entry["kind"]),
                str(entry["job"]),
                int(_number(f"{at}.windowHours", entry.get("windowHours", 72), 0, MAX_HOURS) * 60),
                _whole(f"{at}.nodes", entry.get("nodes", 0), 0, 100_000),
                _flap_minutes(at, entry),
            )
        )
    return mix


def _flap_minutes(at: str, entry: dict[str, Any]) -> int:
    """``minutes`` of a ``condition-flap`` (required there, refused elsewhere)."""
    if entry.get("kind") != "condition-flap":
        if "minutes" in entry:
            raise InputError(f"{at}.minutes", "is only read by condition-flap", "remove it, or use kind condition-flap")
        return 0
    if "minutes" not in entry:
        raise InputError(f"{at}.minutes", "is missing", "say how long NetworkingReady stays False, e.g. minutes: 3")
    return _whole(f"{at}.minutes", entry["minutes"], 1, MAX_HOURS * 60)


def gate_loop_facts(objects_by_kind: dict[str, list[dict[str, Any]]], mix: Mix) -> None:
    """The gate's loops as the build's gate DaemonSets configure their guard (its env): the deadline per NodePool,
    the breaker, the leave thresholds and the recovery period. A build whose guard has none keeps the defaults:
    no deadline, no breaker, leave at once, never recover."""
    for ds in objects_by_kind.get("DaemonSet", []):
        if not str(ds["metadata"]["name"]).startswith("health-gate-"):
            continue
        pod = ds["spec"]["template"]["spec"]
        pool = (pod.get("nodeSelector") or {}).get("karpenter.sh/nodepool")
        guard: dict[str, Any] = next(
            (c for c in [*pod.get("initContainers", []), *pod.get("containers", [])] if c["name"] == "guard"), {}
        )
        env = {e["name"]: str(e.get("value", "")) for e in guard.get("env", []) if "value" in e}
        if not pool:
            continue
        if env.get("DEADLINE_SECONDS"):
            mix.gate_deadline[pool] = math.ceil(int(env["DEADLINE_SECONDS"]) / 60)
        if env.get("BREAKER_FAILURES"):
            mix.breaker[pool] = (int(env["BREAKER_FAILURES"]), int(env.get("BREAKER_WINDOW_SECONDS", "3600")) // 60)
        for item in filter(None, env.get("LEAVE_AFTER", "").split(",")):
            condition, _, seconds = item.partition("=")
            mix.leave_after[condition] = int(seconds) // 60
        if env.get("RECOVER_SECONDS"):
            mix.recover_minutes = math.ceil(int(env["RECOVER_SECONDS"]) / 60)


def _go_minutes(text: Any) -> int:
    """A Go duration in whole minutes (rounded up); ``Never`` (Karpenter: never consolidate) is for ever."""
    if str(text) == "Never":
        return NEVER
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", str(text))
    if not m or not any(m.groups()):
        return 30
    h, mi, s = (int(x or 0) for x in m.groups())
    return h * 60 + mi + (1 if s else 0)


def _spare_nodes(where: str, value: Any, build: pathlib.Path) -> dict[str, int]:
    """``spareNodes: {<NodePool>: N}``: N nodes over the pool's rendered limits (simulate/capacity_windows.py)."""
    entries = _mapping(where, value)
    pools = sorted(p.name.removeprefix("NodePool-").removesuffix(".yaml") for p in build.glob("manifests/*/NodePool-*"))
    out = {}
    for pool, count in entries.items():
        if str(pool) not in pools:
            raise InputError(
                f"{where}.{pool}", f"is not a NodePool of {build}", f"name one of {', '.join(pools) or '(none)'}"
            )
        out[str(pool)] = _whole(f"{where}.{pool}", count, 1, 64)
    return out


def platform_facts(build: pathlib.Path, objects_by_kind: dict[str, list[dict[str, Any]]], mix: Mix) -> None:
    """What the build says about repair, AWS Health handling, consolidation and queue weights."""
    karpenter = build / "helm" / "karpenter--karpenter.yaml"
    gates: dict[str, Any] = {}
    if karpenter.exists():
        values = yaml.load(karpenter.read_text(), Loader=SAFE_LOADER).get("values") or {}
        gates = (values.get("settings") or {}).get("featureGates") or {}
    resources = build / "resources.yaml"
    text = resources.read_text() if resources.exists() else ""
    agent = "eks-node-monitoring-agent" in text
    mix.repair = bool(gates.get("nodeRepair")) and agent
    mix.health_rule = "aws.health" in text
    mix.gated_pools = {p["metadata"]["name"] for p in objects_by_kind.get("NodePool", []) if health_gate.gated(p)}
    if mix.upgrade is not None:
        upgrade.attach_pools(mix.upgrade, objects_by_kind.get("NodePool", []))
    for pool in objects_by_kind.get("NodePool", []):
        after = ((pool.get("spec") or {}).get("disruption") or {}).get("consolidateAfter", "30m")
        mix.consolidate_minutes[pool["metadata"]["name"]] = _go_minutes(after)
    for q in objects_by_kind.get("Queue", []):
        mix.weights[q["metadata"]["name"]] = float((q.get("spec") or {}).get("weight", 1) or 1)
    gate_loop_facts(objects_by_kind, mix)


def stack_checkpoint_seconds(fsx: Any, checkpoint: Any, where: str) -> int:
    """One checkpoint's save on the stack's FSx for Lustre (``ekstrain.layout.storage_sizing``, the model ``ekstrain
    storage`` and the render's SUMMARY use): ``ekstrain:storage.checkpoint.sizeGiB`` at the file system's baseline
    throughput, rounded up to a second."""
    if not fsx.enabled or checkpoint.size_gib is None:
        raise InputError(
            f"{where}: checkpointSaveSeconds",
            "is not given and the stack has no FSx checkpoint size (ekstrain:storage.checkpoint.sizeGiB) to derive it",
            "set checkpointSaveSeconds in the mix, or the stack's ekstrain:storage.checkpoint.sizeGiB",
        )
    seconds = storage_sizing.save_seconds(
        storage_sizing.gib_to_bytes(checkpoint.size_gib),
        fsx.deployment_type,
        fsx.storage_capacity_gib,
        fsx.per_unit_storage_throughput,
    )
    return math.ceil(seconds)
