"""``ekstrain simulate --stack STACK [FILE ...]``: would each workload start on an empty cluster?

Reads ``build/<stack>/manifests/**`` and ``build/<stack>/charts/**`` (``make render STACK=...``) and the
workload files (YAML objects or ``.sbatch`` scripts; directories are read recursively; default
``build/examples``). Prints one ``BLOCKED`` line per blocked pod group with the reason, one ``STARTS``
line per workload that starts; exit 0 when everything starts, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import yaml

from ekstrain.cli import argtypes as cli_types
from ekstrain.cli import kit as cli_kit
from ekstrain.files import inputs_guard, outputs
from ekstrain.files.paths import in_checkout
from ekstrain.simulate import charts
from ekstrain.simulate.engine import nodeset_workloads, simulate
from ekstrain.simulate.inputs import InputError, read_workloads
from ekstrain.simulate.load import build_objects, load
from ekstrain.simulate.mix import platform_facts, read_mix, stack_checkpoint_seconds
from ekstrain.simulate.timeline import Report, job_line, simulate_timeline
from ekstrain.simulate.workloads import sbatch

EXIT_BLOCKED = 1
EXIT_BAD_INPUT = 2


def add_simulate_command(subparsers: Any) -> None:
    p = subparsers.add_parser("simulate", help="empty-cluster scheduling simulation of workloads on a rendered stack")
    p.add_argument("--stack", default="prod")
    p.add_argument("--build", type=pathlib.Path, help="rendered stack directory (default build/<stack>)")
    p.add_argument("--stack-file", type=pathlib.Path, help="default ./Pulumi.<stack>.yaml")
    p.add_argument(
        "--scale-nodesets",
        action="store_true",
        help="assume Slurm NodeSets are scaled to each sbatch's --nodes first (docs/schedulers.md)",
    )
    p.add_argument(
        "--timeline",
        type=pathlib.Path,
        metavar="MIX",
        help="play a workload mix file over time instead (arrivals, faults; docs/simulate.md)",
    )
    rehearse = p.add_mutually_exclusive_group()
    rehearse.add_argument(
        "--deploy",
        action="store_true",
        help="rehearse the first `pulumi up` on build/<stack>/resources.yaml: where it fails, or the time to a ready "
        "cluster and to a job's first step (docs/simulate.md)",
    )
    rehearse.add_argument(
        "--destroy",
        action="store_true",
        help="rehearse `pulumi destroy`: what protect and deletion protection stop, what stays billed",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of one line per workload")
    p.add_argument(
        "--html",
        type=cli_types.writable_out,
        metavar="FILE",
        help="with --timeline: also write a self-contained page of it",
    )
    p.add_argument("files", nargs="*", type=pathlib.Path, help="workload files or directories (default build/examples)")
    p.set_defaults(func=cmd_simulate)


def _system_types(args: argparse.Namespace) -> list[str]:
    from ekstrain.stacks.loader import load_stack_file

    path = args.stack_file or pathlib.Path(f"Pulumi.{args.stack}.yaml")
    cfg, _ = load_stack_file(path)
    return list(cfg.cluster.system_node_group.instance_types)


def _stack_config(args: argparse.Namespace) -> Any:
    from ekstrain.stacks.loader import load_stack_file

    return load_stack_file(args.stack_file or pathlib.Path(f"Pulumi.{args.stack}.yaml"))[0]


def _system_size(args: argparse.Namespace) -> int:
    from ekstrain.stacks.loader import load_stack_file

    cfg, _ = load_stack_file(args.stack_file or pathlib.Path(f"Pulumi.{args.stack}.yaml"))
    return int(cfg.cluster.system_node_group.desired_size)


def _upstream() -> pathlib.Path:
    from ekstrain.tooling import validation

    root = validation.upstream_dir() or pathlib.Path(os.environ.get("EKSTRAIN_UPSTREAM_DIR", "../shared/upstream"))
    return pathlib.Path(root) / "chart-src"


def _simulate(args: argparse.Namespace) -> int:
    try:
        workloads = read_workloads(args.files or [pathlib.Path("build/examples")])
    except InputError as exc:
        print(exc.report(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"error: ekstrain simulate: {exc.filename}: cannot be read ({exc.strerror})", file=sys.stderr)
        print("fix: give a readable workload file or directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    build = rendered_build(args)
    if build is None:
        return EXIT_BAD_INPUT
    if (build / "helm").is_dir():
        helm = charts.helm_binary()
        missing = [f for f in (build / "helm").glob("*.yaml") if not (build / "charts" / f.stem).exists()]
        if missing and helm is None:
            print(
                f"error: ekstrain simulate: {build}/charts lacks {len(missing)} releases and no helm binary is "
                "available\nfix: run `ekstrain upstream helm`, put helm on PATH or set EKSTRAIN_HELM",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        with reading_build(build, args.stack):
            problems = charts.render_missing(build, _upstream(), helm) if missing and helm else []
        for problem in problems:
            print(f"warning: {problem}", file=sys.stderr)
    try:
        system = _system_types(args)
    except Exception as exc:  # noqa: BLE001 - the loader's ConfigError and a missing file read alike
        print(cli_kit.error_lines("ekstrain simulate", f"stack {args.stack}: {exc}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    with reading_build(build, args.stack):
        cluster = load(build, system)
    cluster.scale_nodesets = args.scale_nodesets
    # Every NodeSet's slurmd pod must be able to start too, whether or not an sbatch names it. A NodeSet at 0
    # replicas runs no pod: its slurmd pod is capacity that could start if scaled, not a workload.
    standing = nodeset_workloads(cluster)
    scaled_to_zero = {
        f"Pod/{w['metadata']['name']}"
        for w, ns in zip(standing, cluster.nodesets.values(), strict=True)
        if not (ns.get("spec") or {}).get("replicas")
    }
    result = simulate(cluster, standing + workloads)
    capacity = [line for line in result.started if line.removeprefix("STARTS ").split(":")[0] in scaled_to_zero]
    started = [line for line in result.started if line not in capacity]
    if getattr(args, "json", False):
        blocked = [{"workload": b.workload, "role": b.role, "reason": b.reason} for b in result.blocked]
        could = [line.replace("STARTS ", "", 1) for line in capacity]
        print(cli_kit.dumps({"started": started, "blocked": blocked, "could_start_if_scaled": could}))
        return EXIT_BLOCKED if result.blocked else 0
    for line in started:
        print(line)
    for line in capacity:
        print(line.replace("STARTS ", "CAPACITY ", 1) + " (NodeSet at 0 replicas: could start if scaled)")
    for b in result.blocked:
        print(b.line())
    print(
        f"{len(started)} workloads start, {len({b.workload for b in result.blocked})} blocked"
        + (f"; {len(capacity)} Slurm NodeSets at 0 replicas could start if scaled" if capacity else "")
    )
    return EXIT_BLOCKED if result.blocked else 0


def rendered_build(args: argparse.Namespace) -> pathlib.Path | None:
    """The stack's render (``--build`` or build/<stack>); None, after saying how to make it, when absent."""
    build: pathlib.Path = args.build or pathlib.Path("build") / args.stack
    if not (build / "manifests").is_dir():
        print(
            f"error: ekstrain simulate: {build}/manifests not found\nfix: run `ekstrain render --stack {args.stack}`"
            f"{in_checkout(f'make render STACK={args.stack}')} first, or pass --build DIR",
            file=sys.stderr,
        )
        return None
    # a FIFO or a device where the render wrote a file would block or never end the reads below: refused first
    special = next(((f, what) for f in build.rglob("*") if (what := inputs_guard.is_special(f))), None)
    if special is not None:
        print(
            f"ekstrain simulate: {special[0]} is {special[1]}, not a file the render writes; fix: render the stack "
            f"again (`ekstrain render --stack {args.stack}`) or pass --build with an intact render",
            file=sys.stderr,
        )
        return None
    return build


class DamagedBuild(Exception):
    """The rendered build cannot be read (a file the render wrote is truncated, edited or not YAML)."""


@contextlib.contextmanager
def reading_build(build: pathlib.Path, stack: str) -> Iterator[None]:
    """Turn a failure while reading the rendered build into :class:`DamagedBuild` (one line, not a traceback):
    the render writes these files, so one that does not parse, or holds an object of the wrong shape, is damaged."""
    try:
        yield
    except InputError:
        raise
    except (
        yaml.YAMLError,
        OSError,
        UnicodeDecodeError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        RecursionError,
    ) as exc:
        what = str(exc).splitlines()[0][:160] if str(exc) else ""
        raise DamagedBuild(
            f"ekstrain simulate: {build}: the rendered build is damaged ({type(exc).__name__}: {what}); fix: render "
            f"the stack again (`ekstrain render --stack {stack}`) or pass --build with an intact render"
        ) from None


def cmd_simulate(args: argparse.Namespace) -> int:
    if getattr(args, "deploy", False) or getattr(args, "destroy", False):
        return cmd_rehearse(args)
    if getattr(args, "html", None) and args.timeline is None:
        # a page of the timeline only: without --timeline nothing would be written, so say so instead of ignoring it
        print(
            "error: ekstrain simulate: --html draws the timeline's page, and no --timeline was given", file=sys.stderr
        )
        print("fix: add --timeline MIX (a mix file, docs/simulate.md), or drop --html", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return (_timeline if args.timeline is not None else _simulate)(args)
    except DamagedBuild as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_INPUT


def cmd_rehearse(args: argparse.Namespace) -> int:
    """``--deploy`` / ``--destroy``: ekstrain/simulate/deploy.py on the render's resources.yaml."""
    from ekstrain.facts import spend
    from ekstrain.payloads import health_gate
    from ekstrain.simulate import deploy

    flag = "--deploy" if args.deploy else "--destroy"
    if args.timeline is not None or args.files or args.html is not None:
        print(
            f"error: simulate: {flag} plays the render's resource graph, not workloads or a mix\n"
            f"fix: drop --timeline, --html and the workload files, or drop {flag}",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    build: pathlib.Path = args.build or pathlib.Path("build") / args.stack
    try:
        rows = deploy.load_rows(build)
        nodes = deploy.read_graph(rows)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(
            f"error: simulate: {flag}: {build}/resources.yaml cannot be read ({str(exc)[:160]})\n"
            f"fix: run `ekstrain render --stack {args.stack}`{in_checkout(f'make render STACK={args.stack}')} first, "
            "or pass --build DIR of a render",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if deploy.bare(rows):
        # Bare names are ambiguous (the pulumi-eks Cluster and the platform component are both `cluster`): the
        # recording names every parent and dependency by URN.
        from ekstrain.diff.sides import REPO, DiffInputError, record

        stack_file = args.stack_file or pathlib.Path(f"Pulumi.{args.stack}.yaml")
        try:
            recorded = [r.to_dict() for r in record(REPO, args.stack, stack_file, "--stack-file")]
            nodes = deploy.read_graph(deploy.with_exact_refs(rows, recorded))
        except DiffInputError as exc:
            print(f"warning: simulate: {flag}: bare names kept ({str(exc)[:200]})", file=sys.stderr)
    deploy_role, family, flags = None, "gpu", frozenset[str]()
    with contextlib.suppress(Exception):  # no stack file: the access rule is not checked, a GPU job is timed
        from ekstrain.infra.render import contract_flags

        cfg = _stack_config(args)
        deploy_role = cfg.cluster.deploy_role_arn
        family = cfg.partitions[0].accelerator if cfg.partitions else family
        flags = contract_flags(cfg)  # the later steps the stack declares done, as the render reads them
    if args.deploy:
        objects = build_objects(build) if (build / "manifests").is_dir() else []
        pools = [o for o in objects if o.get("kind") == "NodePool"]
        gated = any(health_gate.gated(p) for p in pools)
        crds = deploy.crd_installers(build) if (build / "charts").is_dir() else None
        up = deploy.up(nodes, family=family, gated=gated, deploy_role_arn=deploy_role, flags=flags, crds=crds)
        for line in up.lines():
            print(line)
        return EXIT_BLOCKED if up.play.failed or up.play.cycle else 0
    instance_types = [str(t) for n in nodes.values() for t in (n.inputs.get("instanceTypes") or [])]
    prices = spend.price_table(instance_types)
    report = deploy.destroy(nodes, prices)
    protected = sorted(k for k, n in nodes.items() if n.protect)
    print(f"protected ({len(protected)}): " + ", ".join(protected))
    for line in report.lines():
        print(line)
    if protected:
        after = deploy.destroy(deploy.unprotected(nodes), prices)
        print(f"after `pulumi state unprotect` of the {len(protected)} protected resources:")
        for line in after.lines():
            print(f"  {line}")
    return EXIT_BLOCKED if report.play.failed else 0


def _timeline(args: argparse.Namespace) -> int:
    build = rendered_build(args)
    if build is None:
        return EXIT_BAD_INPUT
    try:
        with reading_build(build, args.stack):
            mix = read_mix(args.timeline, build)
        system = _system_types(args)
        if not mix.checkpoint_save_given:
            from ekstrain.stacks.loader import load_stack_file

            cfg, _ = load_stack_file(args.stack_file or pathlib.Path(f"Pulumi.{args.stack}.yaml"))
            mix.checkpoint_save_seconds = stack_checkpoint_seconds(
                cfg.storage.fsx, cfg.storage.checkpoint, str(args.timeline)
            )
    except InputError as exc:
        print(exc.report(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except DamagedBuild:
        raise
    except Exception as exc:  # noqa: BLE001 - the stack loader's ConfigError and a missing file read alike
        print(cli_kit.error_lines("ekstrain simulate", f"stack {args.stack}: {exc}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    by_kind: dict[str, list[dict[str, Any]]] = {}
    with reading_build(build, args.stack):
        for o in build_objects(build):
            by_kind.setdefault(o["kind"], []).append(o)
        platform_facts(build, by_kind, mix)
        cluster = load(build, system)
    mix.scale_nodesets = bool(getattr(args, "scale_nodesets", False))
    mix.system_nodes = _system_size(args)
    if getattr(args, "html", None):
        from ekstrain.pages import timeline_page  # matplotlib loads only for a page

        title = f"ekstrain simulate --stack {args.stack} --timeline {args.timeline.name}"
        try:
            report = timeline_page.run_and_write(cluster, mix, args.html, title)
        except outputs.OutputRefused as exc:  # checked when read; the write itself can still fail (/proc, full)
            print(cli_kit.error_lines("ekstrain simulate", exc), file=sys.stderr)
            return EXIT_BAD_INPUT
    else:
        report = simulate_timeline(cluster, mix)
    if getattr(args, "json", False):
        print(cli_kit.dumps(timeline_json(report)))
        return EXIT_BLOCKED if report.problems else 0
    for line in report.lines():
        print(line)
    if mix.faults:
        training = [j for j in report.jobs if j.kind != "standing"]
        print(
            f"FAULTS {len(mix.faults)} injected: {sum(j.restarts for j in training)} restarts, "
            f"{sum(j.lost_accelerator_hours for j in training):.1f} accelerator-hours of training lost, "
            f"{sum(sum(c.values()) for c in report.idle.values()) / 60:.1f} idle accelerator-hours "
            f"(${sum(sum(c.values()) for c in report.idle_usd.values()):,.0f})"
        )
    print(
        f"{sum(j.state == 'finished' for j in report.jobs)} jobs finished, {len(report.problems)} problems "
        f"(repair {'on' if mix.repair else 'off'}, AWS Health drain {'on' if mix.health_rule else 'off'}, "
        f"health gate on {len(mix.gated_pools)} NodePools, checkpoint save {mix.checkpoint_save_seconds} s)"
    )
    return EXIT_BLOCKED if report.problems else 0


def timeline_json(report: Report) -> dict[str, Any]:
    """``simulate --timeline --json``: one object per job (minutes since the start), idle time, faults, problems."""
    jobs = [
        {
            "name": j.name,
            "kind": j.kind,
            "state": j.state,
            "arrived": j.arrival.at,
            "admitted": j.admitted_at,
            "started": j.first_started_at,
            "ended": j.ended_at,
            "restarts": j.restarts,
            "lost_accelerator_hours": round(j.lost_accelerator_hours, 2),
            "waited": dict(j.waited),
            "events": list(j.events),
            "failure": j.failure,
            "line": job_line(j),
        }
        for j in report.jobs
        if j.kind != "standing"
    ]
    idle_hours = {p: {k: v / 60 for k, v in cats.items()} for p, cats in report.idle.items()}
    return {
        "jobs": jobs,
        "idle_accelerator_hours": idle_hours,
        "idle_usd": report.idle_usd,
        "faults": report.faults,
        "waits": report.waits,
        "problems": report.problems,
    }


__all__ = ["add_simulate_command", "cmd_simulate", "sbatch"]
