"""A corpus of numeric extremes for every command that reads numbers (deliverable 7).

GIVEN each numeric flag of `ekstrain storage`, `ekstrain job render` and `ekstrain plan search/evaluate`, and values a
careless user or a hostile CI input passes (NaN, infinities, 1e308, 10^30, 5000 digits, zero, negatives, int32 + 1,
fractions, hex, underscores, blanks) WHEN the command runs THEN it answers (exit 0/1) or refuses with exit 2 and a
message naming the flag, in under a second; never a traceback, another exit code or a hang. A value the flag's
oracle calls valid is never refused (no false rejection), one it calls invalid is never accepted.

The cases are drawn with a fixed seed (``EKSTRAIN_CORPUS_SEED``, default 32) at a CI size
(``EKSTRAIN_CORPUS_SIZE`` per command, default 60; 0 = every case); `python tests/test_bad_input_corpus.py` prints
the counts (docs/validation.md).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import pathlib
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import REPO

from ekstrain.cli.main import main

SEED = int(os.environ.get("EKSTRAIN_CORPUS_SEED", "32"))
SIZE = int(os.environ.get("EKSTRAIN_CORPUS_SIZE", "60"))
SECONDS = 1.0
"""CPU seconds a refusal may take (time.process_time, not wall: a loaded machine stretches wall time, not the work a
refusal did before refusing)."""

EXTREMES = [
    "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e309", "-1e308", "0", "-0", "-1", "1", "2", "3",
    str(2**31 - 1), str(2**31), str(2**63), str(10**30), "9" * 5000, "0.5", "1.5", "1e3", "0x10", "1_0",
    "", " ", " 4", "4 ", "four", "1/2", "+4", "٣",
]  # fmt: skip


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(text: str) -> int | None:
    """What a whole-number flag may accept: decimal digits (argparse's int() also takes '+4', ' 4', '1_0' and
    other scripts' digits; the oracle leaves those undecided)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) < 4300 else None


def _undecided(text: str) -> bool:
    """Spellings int()/float() read that a stricter reader may refuse: either answer is right."""
    return text != text.strip() or text.startswith("+") or "_" in text or not text.isascii() or text == "-0"


# flag -> (argv builder, oracle: True valid / False invalid / None either)
Oracle = Callable[[str], bool | None]
STORAGE_BASE = ["storage", "--checkpoint-gib", "920"]
JOB = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--image", "img:1", "--model", "llama3-8b"]
JOB += ["--scheduler", "volcano", "--partition", "gpu-h100"]
JOB_SIZE = {"--nodes": "2", "--global-batch": "256", "--seq-len": "4096"}
PLAN = ["plan", "search", "--model", "llama3-8b", "--instance", "p5.48xlarge", "--top", "1"]
PLAN_SIZE = {"--nodes": "2", "--global-batch": "256", "--seq-len": "4096"}


def _whole(lo: int, hi: int) -> Oracle:
    def oracle(text: str) -> bool | None:
        if _undecided(text):
            return None
        value = _int(text)
        return (
            None
            if value is not None and not lo <= value <= hi and hi >= 2**62
            else (value is not None and lo <= value <= hi)
        )

    return oracle


def _real(lo: float, hi: float) -> Oracle:
    def oracle(text: str) -> bool | None:
        if _undecided(text) or text.startswith("0x"):
            return None
        value = _finite(text)
        return value is not None and lo <= value <= hi

    return oracle


def _outcome_only(text: str) -> bool | None:
    return None


COMMANDS: dict[str, dict[str, tuple[Callable[[str], list[str]], Oracle]]] = {
    "storage": {
        "--checkpoint-gib": (lambda v: ["storage", f"--checkpoint-gib={v}"], _outcome_only),
        "--checkpoint-bytes": (lambda v: ["storage", f"--checkpoint-bytes={v}"], _outcome_only),
        "--target-seconds": (lambda v: [*STORAGE_BASE, f"--target-seconds={v}"], _real(1, 86400)),
        "--capacity-gib": (lambda v: [*STORAGE_BASE, f"--capacity-gib={v}"], _outcome_only),
        "--throughput": (lambda v: [*STORAGE_BASE, f"--throughput={v}"], _outcome_only),
    },
    "job render": {
        flag: (
            lambda v, flag=flag: [*JOB, *(a for k, d in JOB_SIZE.items() if k != flag for a in (k, d)), f"{flag}={v}"],
            _outcome_only,
        )
        for flag in [*JOB_SIZE, "--lora-rank", "--max-restarts", "--tp", "--pp", "--hugepages-2mi"]
    },
    "plan search": {
        flag: (
            lambda v, flag=flag: [
                *PLAN,
                *(a for k, d in PLAN_SIZE.items() if k != flag for a in (k, d)),
                f"{flag}={v}",
            ],
            _outcome_only,
        )
        for flag in [*PLAN_SIZE, "--lora-rank", "--top"]
    },
}
# Whole-number flags: a fraction, a float spelling or NaN is never a count (argparse int() refuses them too).
for flags in COMMANDS.values():
    for flag, (argv, oracle) in list(flags.items()):
        if oracle is _outcome_only and flag not in ("--throughput", "--hugepages-2mi", "--checkpoint-gib"):
            flags[flag] = (argv, lambda t: False if _int(t) is None and not _undecided(t) else None)


def cases(command: str) -> list[tuple[str, str]]:
    every = [(flag, value) for flag in COMMANDS[command] for value in EXTREMES]
    if SIZE == 0 or len(every) <= SIZE:
        return every
    return random.Random(f"{SEED}-{command}").sample(every, SIZE)


class Hang(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(command: str, flag: str, value: str) -> tuple[str, str]:
    """(outcome, detail): accepted, refused, or a defect class (traceback, hang, slow, exit N, unnamed refusal)."""
    argv = COMMANDS[command][flag][0](value)
    out, err = io.StringIO(), io.StringIO()
    started = time.process_time()
    try:
        with _deadline(30), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    except Hang as exc:
        return "hang", str(exc)
    except Exception as exc:  # noqa: BLE001 - the defect class this corpus counts
        return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
    seconds = time.process_time() - started
    text = err.getvalue()
    if "Traceback" in text:
        return "traceback", text[-300:]
    if code == 2 and "does not fit on" in text and "with any layout" in text:
        outcome = "accepted"  # the planner's answer for a size it read: no layout fits (docs/planner.md)
    elif code == 2:
        if flag not in text and flag.lstrip("-") not in text:
            return "unnamed refusal", text.strip()[-300:]
        outcome = "refused"
    elif code in (0, 1):
        outcome = "accepted"
    else:
        return f"exit {code}", text[-300:]
    if outcome == "refused" and seconds > SECONDS:
        return "slow refusal", f"{seconds:.2f} s CPU"
    return outcome, ""


def judge(command: str, flag: str, value: str) -> tuple[str, str]:
    """The outcome class, with the oracle applied: false rejection / accepted invalid are defects too."""
    outcome, detail = run_case(command, flag, value)
    expected = COMMANDS[command][flag][1](value)
    if outcome == "refused" and expected is True:
        return "false rejection", detail
    if outcome == "accepted" and expected is False:
        return "accepted invalid", detail
    return outcome, detail


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_numeric_extremes_are_answered_or_refused_by_name(command: str) -> None:
    found: Counter[str] = Counter()
    defects = []
    for flag, value in cases(command):
        outcome, detail = judge(command, flag, value)
        found[outcome] += 1
        if outcome not in ("accepted", "refused"):
            defects.append(f"{command} {flag}={value[:40]!r}: {outcome} {detail}")
    assert not defects, "\n".join(defects)
    assert found["refused"] > 0 and sum(found.values()) == len(cases(command))


# ---- deployability: stacks that validate but that AWS, Pulumi or the API server refuse ------------------------

DEPLOY_SUBNET = {"A": "subnet-0123456789abcdef0", "B": "subnet-0123456789abcdef1", "C": "subnet-0123456789abcdef2"}


def _byo(prefixes: dict[str, int], public_id: str | None) -> Callable[[dict[str, Any]], None]:
    """dev's sections deploying into an existing VPC: the private, EFA and public subnets with the given prefixes."""
    import ipaddress

    def cidr(base: str, prefix: int) -> str:
        return str(ipaddress.IPv4Network(f"{base}/{prefix}", strict=False))

    def change(s: dict[str, Any]) -> None:
        s["network"] = {
            "trainingAvailabilityZone": "us-west-2a",
            "existingVpc": {
                "vpcId": "vpc-0123456789abcdef0",
                "privateSubnets": {
                    "us-west-2a": {"id": DEPLOY_SUBNET["A"], "cidr": cidr("10.20.0.0", prefixes["a"])},
                    "us-west-2b": {"id": DEPLOY_SUBNET["B"], "cidr": cidr("10.40.0.0", prefixes["b"])},
                },
                "efaSubnets": {"us-west-2a": {"id": DEPLOY_SUBNET["A"], "cidr": cidr("10.20.0.0", prefixes["a"])}},
                "publicSubnets": (
                    [{"id": public_id, "cidr": cidr("10.60.0.0", prefixes["public"])}] if public_id else []
                ),
            },
        }

    return change


def deploy_cases() -> list[tuple[str, Any, Callable[[list[str]], bool | None]]]:
    """(name, what to run, oracle on the issue texts: True = the rule's refusal must be there, False = absent)."""
    from ekstrain.facts import catalog

    out: list[tuple[str, Any, Callable[[list[str]], bool | None]]] = []
    for where in ("a", "b", "public"):
        for prefix in range(8, 33):
            prefixes = {"a": 19, "b": 19, "public": 22, where: prefix}
            bad = not 16 <= prefix <= 28
            out.append(
                (
                    f"existingVpc {where} subnet /{prefix}",
                    ("sections", "dev", _byo(prefixes, DEPLOY_SUBNET["C"])),
                    lambda issues, bad=bad: any("EC2 subnets are /16 to /28" in i for i in issues) == bad,
                )
            )
    for name, public in (("public = private", "B"), ("public = EFA", "A"), ("public of its own", "C")):
        bad = public != "C"
        out.append(
            (
                f"existingVpc {name}",
                ("sections", "dev", _byo({"a": 19, "b": 19, "public": 19}, DEPLOY_SUBNET[public])),
                lambda issues, bad=bad: any("route table" in i for i in issues) == bad,
            )
        )
    import itertools

    for n in range(5):
        for listed in itertools.combinations(["aws", "kubernetes", "random", "*"], n):
            bad = "aws" in listed or "*" in listed
            out.append(
                (
                    f"disable-default-providers {list(listed)}",
                    ("file", f"  pulumi:disable-default-providers: {list(listed)!r}\n"),
                    lambda issues, bad=bad: any("disables the default provider" in i for i in issues) == bad,
                )
            )
    for text in ('""', "' '", '"\\t"', "v1:AAAA", "AAAAAQ=="):
        bad = text in ('""', "' '", '"\\t"')
        out.append(
            (
                f"secure: {text}",
                ("file", f"  ekstrain:jupyterhubClientSecret:\n    secure: {text}\n"),
                lambda issues, bad=bad: any("no ciphertext" in i for i in issues) == bad,
            )
        )
    for name in sorted(catalog.known()):
        it = catalog.get(name)
        # an independent oracle: Karpenter keeps 7.5 % of memory for the VM and kube-reserved/eviction ~1-10 GiB
        bad = True if it.memory_gib * 0.925 < 32 else False if it.memory_gib * 0.925 - 12 >= 32 else None

        def add(s: dict[str, Any], name: str = name, family: str = it.family) -> None:
            s["partitions"].append(
                {"name": "extra", "accelerator": family, "instanceTypes": [name], "maxNodes": 1, "efa": False}
            )

        out.append(
            (
                f"notebook profile on {name}",
                ("sections", "prod", add),
                lambda issues, bad=bad: (
                    None if bad is None else any("a notebook of this partition" in i for i in issues) == bad
                ),
            )
        )
    out += offering_cases()
    out += ami_launch_cases()
    rng = random.Random(f"{SEED}-pods")
    for _ in range(60):
        paths = [rng.choice(["/x", "/y", "/dev/shm", "/data"]) for _ in range(rng.randint(1, 3))]
        pages = rng.choice(["2Mi", "4Mi", "3Mi", "1Gi", "1025Mi", "0", "6Mi", "2048Ki", "1.5Mi"])
        spec = {
            "containers": [
                {
                    "name": "c",
                    "volumeMounts": [{"name": f"v{j}", "mountPath": p} for j, p in enumerate(paths)],
                    "resources": {"limits": {"hugepages-2Mi": pages}},
                }
            ],
            "volumes": [{"name": f"v{j}", "emptyDir": {}} for j in range(len(paths))],
        }
        from ekstrain.simulate.quantity import parse as quantity

        bad = len(set(paths)) < len(paths) or quantity(pages) <= 0 or quantity(pages) % 2**21 != 0
        out.append(
            (f"pod mounts {paths} hugepages-2Mi {pages}", ("pod", spec), lambda issues, bad=bad: bool(issues) == bad)
        )
    return out


def _moved(region: str, instance_type: str, regions: list[str] | None = None) -> Callable[[dict[str, Any]], None]:
    """dev in ``region`` (its first zones) with one partition of ``instance_type`` (and the type's regions under
    ekstrain:instanceTypes when given)."""
    from ekstrain.facts import catalog
    from ekstrain.facts.regions import AVAILABILITY_ZONES

    def change(s: dict[str, Any]) -> None:
        letters = AVAILABILITY_ZONES[region]
        s["region"] = region
        s["network"]["availabilityZones"] = [region + x for x in letters[:2]]
        s["network"]["trainingAvailabilityZone"] = region + letters[0]
        it = catalog.CATALOG[instance_type]
        s["partitions"] = [
            {"name": "p", "accelerator": it.family, "instanceTypes": [instance_type], "maxNodes": 2, "efa": False}
        ]
        s["jupyterhub"] = {"enabled": False}
        if regions is not None:
            s["instanceTypes"] = {
                instance_type: {
                    "override": True,
                    "accelerator": {"kind": it.family, "model": it.accelerator.model, "count": it.accelerator_count},
                    "vcpus": it.vcpus,
                    "memoryGiB": it.memory_gib,
                    "networkGbps": it.network_gbps,
                    "efa": {"maxInterfaces": it.efa_max_interfaces, "networkCards": it.network_cards},
                    "regions": regions,
                }
            }

    return change


def offering_cases() -> list[tuple[str, Any, Callable[[list[str]], bool | None]]]:
    """Every accelerated catalog type in every region of ekstrain/facts/regions.py (and, on a seeded sample, with the
    region listed under ekstrain:instanceTypes.<type>.regions). The oracle is the dated table read directly: a
    region it lists is never refused, one it does not list always is, a type it cannot place (None) never is."""
    from ekstrain.facts import offerings
    from ekstrain.facts.regions import AVAILABILITY_ZONES

    out: list[tuple[str, Any, Callable[[list[str]], bool | None]]] = []
    rng = random.Random(f"{SEED}-offerings")
    for name, where in sorted(offerings.OFFERED_IN.items(), key=lambda kv: kv[0]):
        for region in sorted(AVAILABILITY_ZONES):
            bad = where is not None and region not in where
            text = f"{name} is not offered in {region}"
            out.append(
                (
                    f"{name} in {region}",
                    ("sections", "dev", _moved(region, name)),
                    lambda issues, bad=bad, text=text: any(text in i for i in issues) == bad,
                )
            )
            if bad and rng.random() < 0.1:
                out.append(
                    (
                        f"{name} in {region}, listed under instanceTypes.regions",
                        ("sections", "dev", _moved(region, name, [region])),
                        lambda issues, text=text: not any(text in i for i in issues),
                    )
                )
    return out


def ami_launch_cases() -> list[tuple[str, Any, Callable[[list[str]], bool | None]]]:
    """Each catalog type on each Kubernetes version EKS supports on the corpus day, with AMI releases the day
    before, on and after its launch (and the version's release and v20261119). The oracle: refused exactly when
    the release predates the launch; None when another rule (a release before the version's EKS release) speaks.
    Four more release days per pair are drawn (seeded) between the version's release and v20261119."""
    import datetime as dt

    from ekstrain.facts import offerings, versions

    out: list[tuple[str, Any, Callable[[list[str]], bool | None]]] = []
    rng = random.Random(f"{SEED}-ami")
    standard, extended = versions.window(dt.date(2026, 12, 3))
    for name, launch in sorted(offerings.LAUNCHED.items()):
        for k8s in (*standard, *extended):
            k8s_released = versions.KUBERNETES_RELEASES[k8s].released
            days = {launch.date - dt.timedelta(days=1), launch.date, launch.date + dt.timedelta(days=1), k8s_released}
            days.add(dt.date(2026, 11, 19))
            span = (dt.date(2026, 11, 19) - k8s_released).days
            days.update(k8s_released + dt.timedelta(days=rng.randrange(span)) for _ in range(4))
            for day in sorted(days):
                ami = "v" + day.strftime("%Y%m%d")
                bad: bool | None = day < launch.date
                if day < k8s_released or ami in versions.AMI_RELEASES_WITH_KNOWN_DEFECTS:
                    bad = None

                def change(s: dict[str, Any], name: str = name, k8s: str = k8s, ami: str = ami) -> None:
                    _moved("us-west-2", name)(s)  # the one region offering every type the table places
                    s["cluster"]["kubernetesVersion"] = k8s
                    s["versions"] = {"amiAliasVersion": ami}

                out.append(
                    (
                        f"AMI {ami} on Kubernetes {k8s} with {name}",
                        ("sections", "dev", change),
                        lambda issues, bad=bad, name=name: (
                            None
                            if bad is None
                            else any("predates an instance type" in i and name in i for i in issues) == bad
                        ),
                    )
                )
    return out


@functools.cache
def shipped_sections(stack: str) -> dict[str, Any]:
    """A shipped stack file's sections, read once: the ~1,250 cases that edit prod or dev each start from a deep
    copy of them (reading and checking the YAML again was four fifths of the corpus' time; the file is the same)."""
    from ekstrain.stacks.loader import read_stack_file, sections_from_flat

    flat, _ = read_stack_file(REPO / f"Pulumi.{stack}.yaml")
    sections: dict[str, Any] = sections_from_flat(flat)[0]
    return sections


def run_deploy_case(what: Any) -> list[str] | str:
    """The issues the stack (or the pod) gets, or a defect class."""
    import copy
    import datetime as dt
    import tempfile

    from ekstrain.infra.verify import admission
    from ekstrain.stacks.errors import ConfigError
    from ekstrain.stacks.loader import load_flat, parse, read_stack_file

    try:
        if what[0] == "pod":
            check = getattr(admission, "api_validation", None)
            return [] if check is None else list(check(what[1]))
        if what[0] == "sections":
            sections = copy.deepcopy(shipped_sections(what[1]))
            what[2](sections)
            parse(sections, "corpus", today=dt.date(2026, 12, 3))
            return []
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "Pulumi.x.yaml"
            path.write_text((REPO / "Pulumi.dev.yaml").read_text().replace("config:\n", "config:\n" + what[1], 1))
            flat, secrets = read_stack_file(path)
            load_flat(flat, path.name, today=dt.date(2026, 12, 3), secret_keys=secrets)
            return []
    except ConfigError as exc:
        return [str(i) for i in exc.issues]
    except Exception as exc:  # noqa: BLE001 - the defect class this corpus counts
        return f"traceback {type(exc).__name__}: {str(exc)[:200]}"


def judge_deploy(name: str, what: Any, oracle: Callable[[list[str]], bool | None]) -> str:
    issues = run_deploy_case(what)
    if isinstance(issues, str):
        return "traceback"
    verdict = oracle(issues)
    if verdict is None or verdict:
        return "refused" if issues else "accepted"
    return "accepted invalid" if not issues or not any("fix:" in i for i in issues) else "wrong refusal"


def test_deployability_corpus() -> None:
    """GIVEN every generated case WHEN loaded THEN the rule's refusal is there exactly when the oracle says it must
    be (each refusal with its fix line), never a traceback."""
    found: Counter[str] = Counter()
    defects = []
    for name, what, oracle in deploy_cases():
        outcome = judge_deploy(name, what, oracle)
        found[outcome] += 1
        if outcome not in ("accepted", "refused"):
            defects.append(f"{name}: {outcome}")
    assert not defects, "\n".join(defects)
    assert found["refused"] > 50 and found["accepted"] > 50, found


if __name__ == "__main__":  # the counts docs/validation.md quotes
    sys.path.insert(0, str(REPO / "tests"))
    for command in sorted(COMMANDS):
        counts: Counter[str] = Counter()
        for flag, value in cases(command):
            outcome, detail = judge(command, flag, value)
            counts[outcome] += 1
            if outcome not in ("accepted", "refused"):
                print(f"  {command} {flag}={value[:40]!r}: {outcome} {detail}")
        print(f"{command}: {sum(counts.values())} cases: {dict(sorted(counts.items()))}")
    deploy: Counter[str] = Counter()
    for name, what, oracle in deploy_cases():
        outcome = judge_deploy(name, what, oracle)
        deploy[outcome] += 1
        if outcome not in ("accepted", "refused"):
            print(f"  {name}: {outcome}")
    print(f"deployability: {sum(deploy.values())} cases: {dict(sorted(deploy.items()))}")
