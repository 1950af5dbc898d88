"""``ekstrain simulate`` workload files: every bad file exits 2 naming the file, the problem and the fix.

One hypothesis strategy per class of bad input: not YAML, nested too deep, not UTF-8, wrong
types in the fields the simulation reads, sbatch directives that are not numbers, quantities that do not
parse, negative extended-resource requests; plus valid files of the same shapes, which must be accepted
(no false rejection). `make test` runs 50 examples per class: each strategy draws from a few kinds, fields and
forms, so 50 cases meet every one of them several times, and a file read and refused is what each costs. A
bigger run, where rare cases turn up, prints the counts and the slowest refusal:

    EKSTRAIN_FUZZ_EXAMPLES=3000 .venv/bin/python -m pytest tests/simulate/test_simulate_inputs.py -s -q \\
        -p no:cacheprovider
"""

from __future__ import annotations

import atexit
import collections
import copy
import os
import pathlib
import shutil
import tempfile
import time
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ekstrain.cli.main import main
from ekstrain.simulate.inputs import MAX_DEPTH, InputError, read_file, read_workloads, sbatch_request
from ekstrain.simulate.quantity import parse
from ekstrain.simulate.workloads import expand

EXAMPLES = int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize="CI" in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SECONDS_PER_CASE = 5.0  # a hang guard on a loaded 2-core machine, not a speed target
WORKDIR = pathlib.Path(tempfile.mkdtemp(prefix="simulate-inputs-"))
atexit.register(shutil.rmtree, WORKDIR, True)
counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
slowest: dict[str, float] = collections.defaultdict(float)


def _pod(gpus: Any = 8) -> dict[str, Any]:
    return {
        "nodeSelector": {"ekstrain.io/partition": "gpu-h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "train",
                "image": "example/train:1",
                "resources": {
                    "requests": {"cpu": "90", "memory": "1000Gi", "nvidia.com/gpu": gpus},
                    "limits": {"nvidia.com/gpu": gpus},
                },
            }
        ],
    }


def _template() -> dict[str, Any]:
    return {"spec": _pod()}


WORKLOADS: dict[str, dict[str, Any]] = {
    "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": _pod()},
    "Job": {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"parallelism": 2, "completions": 2, "template": _template()},
    },
    "VolcanoJob": {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "v"},
        "spec": {
            "queue": "gpu-h100",
            "minAvailable": 2,
            "tasks": [{"name": "w", "replicas": 2, "template": _template()}],
        },
    },
    "MPIJob": {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "m"},
        "spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2, "template": _template()}}},
    },
    "RayJob": {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r"},
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {"template": _template()},
                "workerGroupSpecs": [{"groupName": "g", "replicas": 2, "numOfHosts": 1, "template": _template()}],
            }
        },
    },
    "TrainJob": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}},
        },
    },
}
POD_PATHS = {
    "Pod": ["spec"],
    "Job": ["spec", "template", "spec"],
    "VolcanoJob": ["spec", "tasks", 0, "template", "spec"],
    "MPIJob": ["spec", "mpiReplicaSpecs", "Worker", "template", "spec"],
    "RayJob": ["spec", "rayClusterSpec", "workerGroupSpecs", 0, "template", "spec"],
}
COUNT_FIELDS = {
    "Job": [["spec", "parallelism"]],
    "VolcanoJob": [["spec", "tasks", 0, "replicas"]],
    "MPIJob": [["spec", "mpiReplicaSpecs", "Worker", "replicas"]],
    "RayJob": [["spec", "rayClusterSpec", "workerGroupSpecs", 0, "replicas"]],
    "TrainJob": [["spec", "trainer", "numNodes"]],
}
# field inside a pod spec -> the type the simulation reads it as
POD_FIELDS: dict[tuple[Any, ...], str] = {
    ("containers",): "list",
    ("containers", 0): "mapping",
    ("containers", 0, "resources"): "mapping",
    ("containers", 0, "resources", "requests"): "mapping",
    ("nodeSelector",): "mapping",
    ("nodeSelector", "ekstrain.io/partition"): "string",
    ("tolerations",): "list",
    ("tolerations", 0): "mapping",
    ("tolerations", 0, "key"): "string",
}
NOT_A: dict[str, st.SearchStrategy[Any]] = {
    "list": st.one_of(
        st.integers(), st.text(max_size=5), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
    ),
    "mapping": st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2), st.booleans()),
    "string": st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), max_size=2)),
    "count": st.one_of(
        st.text(max_size=5), st.floats(allow_nan=False), st.booleans(), st.integers(max_value=-1), st.just([1])
    ),
}


def _set(obj: dict[str, Any], path: list[Any], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _write(name: str, data: bytes | str) -> pathlib.Path:
    path = WORKDIR / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _refused(klass: str, name: str, data: bytes | str, *expected: str) -> InputError:
    path = _write(name, data)
    started = time.perf_counter()
    with pytest.raises(InputError) as info:
        read_file(path)
    elapsed = time.perf_counter() - started
    assert elapsed < SECONDS_PER_CASE, f"{klass}: {elapsed:.1f} s to refuse"
    slowest[klass] = max(slowest[klass], elapsed)
    counts[klass]["refused"] += 1
    report = info.value.report()
    assert str(path) in report and "\nfix: " in report, report
    for text in expected:
        assert text in report, (text, report)
    return info.value


def _accepted(klass: str, name: str, data: bytes | str) -> list[dict[str, Any]]:
    objects = read_file(_write(name, data))
    counts[klass]["accepted (valid)"] += 1
    return objects


def _report(klass: str) -> None:
    if "EKSTRAIN_FUZZ_EXAMPLES" in os.environ:
        c = counts[klass]
        print(
            f"\n{klass}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())) + f"; slowest {slowest[klass]:.3f} s"
        )


def _dump(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False)


# --- not YAML -----------------------------------------------------------------------------------------

BROKEN = st.sampled_from(
    ["key: [a, b\n", 'key: "unterminated\n', "key: {a: 1\n", "- a\nb: c\n", "a: b: c\n", "\tkey: 1\n", "key: 'x\n"]
)


@FUZZ
@given(
    kind=st.sampled_from(sorted(WORKLOADS)),
    broken=BROKEN,
    where=st.integers(min_value=0, max_value=60),
    comment=st.text(alphabet="abcxyz 0123456789", max_size=40),
)
def test_not_yaml_is_refused(kind: str, broken: str, where: int, comment: str) -> None:
    """GIVEN a valid workload with a syntax error spliced in WHEN read THEN refused as not valid YAML."""
    lines = _dump(WORKLOADS[kind]).splitlines(keepends=True)
    at = min(where, len(lines))
    text = f"# {comment}\n" + "".join(lines[:at]) + broken + "".join(lines[at:])
    _refused("not YAML", "broken.yaml", text, "is not valid YAML", "line")


# --- nested too deep ----------------------------------------------------------------------------------


@FUZZ
@given(depth=st.integers(min_value=MAX_DEPTH + 1, max_value=4000), style=st.sampled_from(["flow", "block", "list"]))
def test_deep_nesting_is_refused(depth: int, style: str) -> None:
    """GIVEN a document nested beyond MAX_DEPTH in any YAML style WHEN read THEN refused, no RecursionError."""
    if style == "flow":
        text = "kind: Pod\nspec: " + "{a: " * depth + "1" + "}" * depth
    elif style == "block":
        depth = min(depth, 1200)  # the text grows with depth squared
        text = "kind: Pod\nspec:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(depth)) + " " * (depth + 1) + "1\n"
    else:
        text = "kind: Pod\nspec:\n" + "- " * depth + "x\n"
    _refused("nested too deep", "deep.yaml", text, "nests")


def test_a_deep_but_legal_object_is_read() -> None:
    """GIVEN nesting just under the limit WHEN read THEN accepted (the limit does not refuse real objects)."""
    text = "kind: ConfigMap\nmetadata: {name: x}\nnested: " + "{a: " * (MAX_DEPTH - 3) + "1" + "}" * (MAX_DEPTH - 3)
    assert read_file(_write("legal-deep.yaml", text))[0]["kind"] == "ConfigMap"


# --- not UTF-8 ----------------------------------------------------------------------------------------


@FUZZ
@given(
    kind=st.sampled_from(sorted(WORKLOADS)),
    bad=st.sampled_from([b"\xff", b"\xc0\xaf", b"\x80", b"\xed\xa0\x80", b"\xe9t\xe9", b"\xf8\x88\x80\x80\x80"]),
    where=st.integers(min_value=0, max_value=2000),
)
def test_not_utf8_is_refused(kind: str, bad: bytes, where: int) -> None:
    """GIVEN a workload with bytes that are not UTF-8 WHEN read THEN refused naming the byte offset."""
    data = _dump(WORKLOADS[kind]).encode()
    at = min(where, len(data))
    _refused("not UTF-8", "latin.yaml", data[:at] + bad + data[at:], "is not UTF-8", f"byte {at}")


# --- wrong types ----------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_wrong_types_in_known_fields_are_refused(data: st.DataObject) -> None:
    """GIVEN a workload with a field the simulation reads set to the wrong type WHEN read THEN refused
    naming that field."""
    kind = data.draw(st.sampled_from(sorted(WORKLOADS)))
    obj = copy.deepcopy(WORKLOADS[kind])
    choices: list[tuple[list[Any], str]] = [(p, "count") for p in COUNT_FIELDS.get(kind, [])]
    if kind in POD_PATHS:
        choices += [(POD_PATHS[kind] + list(f), t) for f, t in POD_FIELDS.items()]
    choices += [(["metadata"], "mapping"), (["spec"], "mapping")]
    path, expected = data.draw(st.sampled_from(choices))
    _set(obj, path, data.draw(NOT_A[expected]))
    shown = ".".join(str(p) for p in path[: 1 if path[0] in ("metadata",) else len(path)])
    err = _refused("wrong types", "types.yaml", _dump(obj))
    assert path[-1] == "spec" and path == ["spec"] or str(path[-1]) in err.where or shown.split(".")[-1] in err.where


@FUZZ
@given(kind=st.sampled_from(sorted(WORKLOADS)), count=st.integers(min_value=0, max_value=5000))
def test_valid_counts_are_accepted(kind: str, count: int) -> None:
    """GIVEN a workload with any legal count in its count field WHEN read THEN accepted and expanded."""
    obj = copy.deepcopy(WORKLOADS[kind])
    for path in COUNT_FIELDS.get(kind, []):
        _set(obj, path, count)
    objects = _accepted("wrong types", "counts.yaml", _dump(obj))
    workload = expand(objects[0], {})
    assert workload is not None


# --- sbatch directives ----------------------------------------------------------------------------------

SBATCH = "#!/bin/bash\n#SBATCH --partition=gpu-a100\n{directive}\n#SBATCH --exclusive\nsrun python train.py\n"
NOT_A_NUMBER = st.one_of(
    st.text(alphabet="abcxyz.,:+ *", min_size=1, max_size=8).filter(lambda s: s.strip() and not s.strip().isdigit()),
    st.sampled_from(["four", "4.5", "1e3", "0x10", "-", "4-", "-4", "4-2", "0", "4-abc", "1,2"]),
)


@FUZZ
@given(
    option=st.sampled_from(["--nodes={v}", "--nodes {v}", "-N {v}", "--ntasks-per-node={v}", "--cpus-per-task={v}"]),
    value=NOT_A_NUMBER,
    name=st.sampled_from(["job.sbatch", "job.yaml", "job"]),
)
def test_sbatch_directives_that_are_not_numbers_are_refused(option: str, value: str, name: str) -> None:
    """GIVEN an sbatch (any file name, .yaml included) with a count directive that is not a number
    WHEN read THEN refused naming the directive."""
    text = SBATCH.format(directive="#SBATCH " + option.format(v=value.strip()))
    _refused("sbatch not numbers", name, text, "#SBATCH --")


@FUZZ
@given(
    low=st.integers(min_value=1, max_value=512),
    extra=st.integers(min_value=0, max_value=64),
    form=st.sampled_from(["--nodes={n}", "--nodes {n}", "-N {n}", "-N{n}"]),
    ranged=st.booleans(),
    name=st.sampled_from(["job.sbatch", "job.yaml"]),
)
def test_valid_sbatch_is_read_whatever_its_name(low: int, extra: int, form: str, ranged: bool, name: str) -> None:
    """GIVEN an sbatch with a legal --nodes (N or MIN-MAX), also when named .yaml (was silently skipped)
    WHEN read THEN it is one Slurm workload of partition gpu-a100 and MIN nodes."""
    n = f"{low}-{low + extra}" if ranged else str(low)
    text = SBATCH.format(directive="#SBATCH " + form.format(n=n))
    objects = _accepted("sbatch not numbers", name, text)
    assert len(objects) == 1
    workload = expand(objects[0], {})
    assert workload is not None and workload.slurm == {"partition": "gpu-a100", "nodes": low}


def test_an_sbatch_named_yaml_in_a_directory_is_simulated(tmp_path: pathlib.Path) -> None:
    """GIVEN a directory with an sbatch script saved as .yaml WHEN read THEN it is a workload (the old reader
    parsed it as YAML, found no object and skipped it silently)."""
    (tmp_path / "train.yaml").write_text(SBATCH.format(directive="#SBATCH --nodes=2"))
    objects = read_workloads([tmp_path])
    assert [expand(o, {}).slurm for o in objects] == [{"partition": "gpu-a100", "nodes": 2}]  # type: ignore[union-attr]


def test_directives_after_the_first_command_are_ignored_as_sbatch_does() -> None:
    assert sbatch_request("#!/bin/bash\n#SBATCH --nodes=2\necho hi\n#SBATCH --nodes=x\n")["nodes"] == 2


# --- quantities -----------------------------------------------------------------------------------------

SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "e3", "E2", "e-1"]
BAD_QUANTITY = st.one_of(
    st.builds(
        lambda n, s: f"{n}{s}",
        st.integers(min_value=1, max_value=10**6),
        st.sampled_from(["GB", "gb", "Kb", "K", "mi", "gi", "i", "MB", "g", " Gi", "Gi ", "x", "%", "e", "e+", "GiB"]),
    ),
    st.sampled_from(["", "abc", "1.2.3", "..5", "--1", "1e", "0x10", "1_000", "inf", "NaN", "∞", "1 000", "Gi"]),
    st.builds(lambda s: f"{s}Gi", st.text(alphabet="abc-+", min_size=1, max_size=4)),
)


@FUZZ
@given(
    kind=st.sampled_from(sorted(POD_PATHS)),
    resource=st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "vpc.amazonaws.com/efa"]),
    where=st.sampled_from(["requests", "limits"]),
    value=BAD_QUANTITY,
)
def test_quantities_that_do_not_parse_are_refused(kind: str, resource: str, where: str, value: str) -> None:
    """GIVEN a container resource that is no Kubernetes quantity WHEN read THEN refused naming the resource."""
    obj = copy.deepcopy(WORKLOADS[kind])
    _set(obj, POD_PATHS[kind] + ["containers", 0, "resources", where, resource], value)
    err = _refused("quantities", "qty.yaml", _dump(obj), f"resources.{where}[{resource}]")
    assert "quantity" in err.problem


@FUZZ
@given(
    kind=st.sampled_from(sorted(POD_PATHS)),
    number=st.one_of(st.integers(min_value=0, max_value=10**6), st.decimals(min_value=0, max_value=10**4, places=3)),
    suffix=st.sampled_from(SUFFIXES),
)
def test_valid_quantities_are_accepted(kind: str, number: Any, suffix: str) -> None:
    """GIVEN a legal quantity for memory WHEN read THEN accepted and parsed to the same value."""
    obj = copy.deepcopy(WORKLOADS[kind])
    text = f"{number}{suffix}"
    _set(obj, POD_PATHS[kind] + ["containers", 0, "resources", "requests", "memory"], text)
    _accepted("quantities", "qty-ok.yaml", _dump(obj))
    assert parse(text) >= 0


# --- negative extended resources -------------------------------------------------------------------------


@FUZZ
@given(
    kind=st.sampled_from(sorted(POD_PATHS)),
    resource=st.sampled_from(["nvidia.com/gpu", "aws.amazon.com/neuron", "vpc.amazonaws.com/efa", "cpu", "memory"]),
    where=st.sampled_from(["requests", "limits"]),
    value=st.one_of(
        st.integers(min_value=-(10**9), max_value=-1),
        st.builds(lambda n: f"-{n}", st.integers(min_value=1, max_value=10**6)),
        st.builds(lambda n: f"-{n}Gi", st.integers(min_value=1, max_value=64)),
    ),
)
def test_negative_requests_are_refused(kind: str, resource: str, where: str, value: Any) -> None:
    """GIVEN a pod asking for a negative GPU (or other resource) count WHEN read THEN refused (was: the
    negative request made room on the node and the pod started)."""
    obj = copy.deepcopy(WORKLOADS[kind])
    _set(obj, POD_PATHS[kind] + ["containers", 0, "resources", where, resource], value)
    _refused("negative GPU", "neg.yaml", _dump(obj), f"[{resource}]", "negative")


@FUZZ
@given(kind=st.sampled_from(sorted(POD_PATHS)), gpus=st.integers(min_value=0, max_value=64))
def test_whole_gpu_counts_are_accepted(kind: str, gpus: int) -> None:
    obj = copy.deepcopy(WORKLOADS[kind])
    _set(obj, POD_PATHS[kind] + ["containers", 0, "resources", "limits", "nvidia.com/gpu"], gpus)
    _accepted("negative GPU", "gpu.yaml", _dump(obj))


def test_fractional_gpus_are_refused() -> None:
    obj = copy.deepcopy(WORKLOADS["Pod"])
    _set(obj, ["spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"], "0.5")
    _refused("negative GPU", "half.yaml", _dump(obj), "whole numbers")


# --- the CLI --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("a.yaml", b"kind: Pod\nmetadata: {name: x\n", "is not valid YAML"),
        ("b.yaml", b"kind: Pod\nmetadata:\n  name: caf\xe9\n", "is not UTF-8"),
        ("c.yaml", _dump(WORKLOADS["Pod"]).replace("8", "-1").encode(), "negative"),
        ("d.sbatch", b"#!/bin/bash\n#SBATCH --nodes=four\nsrun x\n", "--nodes='four'"),
    ],
)
def test_cli_exits_2_with_file_problem_and_fix(
    name: str, data: bytes, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN a bad workload file WHEN `ekstrain simulate` runs THEN exit 2, one report, no traceback (the
    files are read before the rendered build is needed)."""
    path = _write(name, data)
    assert main(["simulate", "--build", str(WORKDIR / "no-build"), str(path)]) == 2
    err = capsys.readouterr().err
    assert f"ekstrain simulate: {path}" in err and problem in err and "\nfix: " in err and "Traceback" not in err


def test_report_counts() -> None:
    """Prints the per-class counts of a bigger run (EKSTRAIN_FUZZ_EXAMPLES); every class ran."""
    ran = {k: c for k, c in counts.items() if c}
    assert all(c["refused"] > 0 for c in ran.values()), ran
    for klass in ran:
        _report(klass)
