"""``ekstrain job ...``: render training workloads for kubectl (or sbatch) users.

    ekstrain job render --stack prod --partition gpu-a100 --nodes 4 --scheduler volcano \\
        --model llama3-8b --image <image> --global-batch 256 --seq-len 4096 > job.yaml
    ekstrain job render --stack prod --partition gpu-h100 --scheduler nccl-test > nccl.yaml
    ekstrain job render ... --framework megatron -- --lr 1e-4 --train-iters 5000   # args for the script
    ekstrain job schedulers

Bad requests (too many nodes, wrong accelerator family, no fitting plan, unknown partition)
print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from ekstrain.assembly.jobs import logs as joblogs
from ekstrain.assembly.jobs import nccl, windows
from ekstrain.assembly.jobs.render import SCHEDULERS, render, render_sbatch, scheduler_problem, to_yaml
from ekstrain.assembly.jobs.spec import FRAMEWORK_CHOICES, JobRequestError, RunSpec
from ekstrain.cli import argtypes as t
from ekstrain.cli import kit as cli_kit
from ekstrain.cli.plan import add_software_flags, software_from_args
from ekstrain.files import outputs
from ekstrain.planner import frameworks
from ekstrain.planner.errors import PlanError
from ekstrain.stacks.errors import ConfigError

EXIT_BAD_REQUEST = 2
EXIT_INVALID = 1


def add_job_commands(subparsers: Any) -> None:
    job = subparsers.add_parser(
        "job",
        help="render training workloads (MPIJob, PyTorchJob, TrainJob, Volcano, "
        "Ray, Trainium, Slurm, NCCL health check)",
    )
    sub = job.add_subparsers(dest="job_command", required=True)

    r = sub.add_parser("render", help="print the manifests (YAML) or the sbatch script of one training run")
    r.add_argument(
        "--stack", type=t.stack_name, default="prod", help="stack name: reads Pulumi.<stack>.yaml (default prod)"
    )
    r.add_argument("--stack-file", type=pathlib.Path, help="explicit stack file (default ./Pulumi.<stack>.yaml)")
    r.add_argument("--scheduler", required=True, choices=list(SCHEDULERS))
    r.add_argument("--partition", required=True)
    r.add_argument("--nodes", type=t.positive_int, help="nodes (default: 2 for nccl-test; required otherwise)")
    r.add_argument("--name", help="workload name (default: <model>-<scheduler>)")
    r.add_argument("--image", type=t.image, help="training image (required except for nccl-test)")
    r.add_argument("--model", help="planner model name, e.g. llama3-70b (required except for nccl-test)")
    r.add_argument("--global-batch", type=t.positive_int)
    r.add_argument("--seq-len", type=t.positive_int)
    r.add_argument(
        "--framework",
        choices=FRAMEWORK_CHOICES,
        default=None,
        help="default fsdp (neuronx-distributed on trainium partitions); it also ranks the plan",
    )
    r.add_argument("--script", default="train.py")
    r.add_argument("--lora-rank", type=t.positive_int)
    r.add_argument(
        "--eager",
        action="store_true",
        help="the script runs its model in eager PyTorch without torch.compile: the plan is ranked with its "
        "elementwise kernels counted one by one (as `plan search --eager`); default: fused kernels",
    )
    add_software_flags(r)
    r.add_argument("--instance-type", help="one of the partition's instance types (default: its first)")
    r.add_argument(
        "--team",
        help="a team of ekstrain:schedulers.volcano.teams: the job goes to its queue <partition>-<team> "
        "(default: the partition's queue for work of no team)",
    )
    r.add_argument("--dataset-path")
    r.add_argument("--checkpoint-path")
    r.add_argument("--namespace", type=t.namespace)
    r.add_argument(
        "--hugepages-2mi", type=t.quantity, help="request hugepages-2Mi (e.g. 5120Mi) on nodes that pre-allocate them"
    )
    r.add_argument(
        "--resume-flag",
        default="--resume_from_checkpoint",
        help="script flag for <checkpoint dir>/latest ('' for none)",
    )
    r.add_argument("--no-precompile", action="store_true", help="Trainium: skip neuron_parallel_compile")
    r.add_argument("--max-restarts", type=t.nonneg_int, default=3)
    r.add_argument(
        "--hours",
        type=t.positive_float,
        help="training hours the run needs; on a Capacity Block partition, checked against the block's window",
    )
    for degree in ("tp", "pp", "cp", "ep", "micro-batch"):
        r.add_argument(f"--{degree}", type=t.positive_int, help=f"pin the plan's {degree.replace('-', ' ')}")
    r.add_argument("--zero", type=int, choices=range(4), metavar="{0,1,2,3}", help="pin the plan's ZeRO stage")
    r.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra env (repeatable)")
    r.add_argument("--configmap", action="store_true", help="slurm: wrap the sbatch script in a ConfigMap")
    r.add_argument(
        "--validate",
        action="store_true",
        help="validate every object against the upstream CRDs / built-in schemas; exit 1 if invalid",
    )
    r.add_argument("--out", type=t.writable_out, help="write to FILE instead of stdout")
    r.set_defaults(func=cmd_render)

    s = sub.add_parser("schedulers", help="list the templates")
    s.add_argument("--json", action="store_true", help="print the list as JSON instead of a table")
    s.set_defaults(func=cmd_schedulers)


def _stack_file(args: argparse.Namespace) -> pathlib.Path:
    # The project being deployed is the current directory, never the installed ekstrain checkout.
    return args.stack_file or pathlib.Path.cwd() / f"Pulumi.{args.stack}.yaml"


def _load(args: argparse.Namespace) -> Any:
    from ekstrain.stacks.loader import load_stack_file

    cfg, _warnings = load_stack_file(_stack_file(args))
    return cfg


def spec_from_args(args: argparse.Namespace, cfg: Any) -> RunSpec:
    missing = [
        f"--{k.replace('_', '-')}"
        for k in ("nodes", "image", "model", "global_batch", "seq_len")
        if getattr(args, k) is None
    ]
    if missing:
        raise JobRequestError(f"{args.scheduler} needs {', '.join(missing)}")
    framework = args.framework
    if framework is None:
        part = next((p for p in cfg.partitions if p.name == args.partition), None)
        framework = "neuronx-distributed" if part is not None and part.accelerator == "trainium" else "fsdp"
    # The stack's switches (its --framework preset with the flags over it) rank the plan and go into the launch
    # line the template writes (ekstrain/planner/emit.py), so the job runs what was priced.
    try:
        software = software_from_args(args, framework) if hasattr(args, "fp8_recipe") else None
    except PlanError as exc:  # a switch out of range: the same one-line refusal as every bad flag
        raise JobRequestError(str(exc)) from None
    framework = frameworks.STACKS.get(framework, framework)
    eager = getattr(args, "eager", False) or bool(software and software.eager)
    if eager and frameworks.canonical(framework) in (frameworks.MEGATRON, frameworks.NEURON):
        raise JobRequestError(
            f"--eager: {framework} runs its own model code with fused kernels, not the script's eager PyTorch; "
            "drop --eager (it is for --framework fsdp, hsdp or deepspeed)"
        )
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise JobRequestError(f"--env {item!r} must be NAME=VALUE")
        env[key] = value
    return RunSpec(
        name=args.name or f"{args.model}-{args.scheduler}".replace(".", "-").lower()[:40].rstrip("-"),
        partition=args.partition,
        nodes=args.nodes,
        image=args.image,
        model=args.model,
        global_batch=args.global_batch,
        seq_len=args.seq_len,
        script=args.script,
        framework=framework,
        lora_rank=args.lora_rank,
        team=args.team,
        instance_type=args.instance_type,
        dataset_path=args.dataset_path,
        checkpoint_path=args.checkpoint_path,
        namespace=args.namespace,
        hugepages_2mi=args.hugepages_2mi,
        resume_flag=args.resume_flag,
        precompile=not args.no_precompile,
        max_restarts=args.max_restarts,
        planned_hours=getattr(args, "hours", None),
        env=env,
        args=tuple(getattr(args, "script_args", ()) or ()),
        tp=args.tp,
        pp=args.pp,
        cp=args.cp,
        ep=args.ep,
        micro_batch=args.micro_batch,
        zero=args.zero,
        planner_options={"software": software} if software is not None else {},
    )


def _validate(objects: list[dict[str, Any]], kubernetes_version: str) -> list[str]:
    from ekstrain.files import paths
    from ekstrain.tooling import validation

    if validation.upstream_dir() is None:
        return [f"upstream schemas not found: {paths.upstream_fix()}"]
    return [p for o in objects for p in validation.validate_object(o, kubernetes_version)]


def cmd_render(args: argparse.Namespace) -> int:
    job_name = ""
    try:
        cfg = _load(args)
        part = next((p for p in cfg.partitions if p.name == args.partition), None)
        problem = scheduler_problem(cfg, args.scheduler, part.accelerator if part else None)
        if problem:
            raise JobRequestError(problem)
        if args.scheduler == "nccl-test":
            objects: list[dict[str, Any]] = nccl.render(cfg, args.partition, args.nodes, args.image)
            text = to_yaml(objects)
        else:
            spec = spec_from_args(args, cfg)
            job_name = spec.name
            note = windows.check(spec, cfg)
            if note:
                print(f"warning: ekstrain job render: {note}", file=sys.stderr)
            if args.scheduler == "slurm" and not args.configmap:
                objects, text = [], render_sbatch(spec, cfg)
            else:
                objects = render(spec, cfg, args.scheduler)
                text = to_yaml(objects)
    except (JobRequestError, ConfigError) as exc:
        print(cli_kit.error_lines("ekstrain job render", exc), file=sys.stderr)
        return EXIT_BAD_REQUEST
    if args.validate:
        problems = _validate(objects, cfg.cluster.kubernetes_version)
        if problems:
            for p in problems:
                print(f"invalid: {p}", file=sys.stderr)
            return EXIT_INVALID
    if args.out:
        try:
            # every file or none (ekstrain/files/outputs.py write_files): each one checked like FILE, then written
            beside = joblogs.files_beside(args.out, args.scheduler, job_name, args.namespace, cfg)
            files = {args.out: text, **{outputs.check_file("--out", pathlib.Path(p)): b for p, b in beside.items()}}
            outputs.write_files("--out", files)
        except outputs.OutputRefused as exc:
            print(cli_kit.error_lines("ekstrain job render", exc), file=sys.stderr)
            return EXIT_BAD_REQUEST
    else:
        sys.stdout.write(text)
    return 0


def cmd_schedulers(args: argparse.Namespace) -> int:
    rows = [{"scheduler": s.name, "family": s.family or "any", "summary": s.summary} for s in SCHEDULERS.values()]
    if getattr(args, "json", False):
        print(cli_kit.dumps(rows))
    else:
        cli_kit.print_table(rows, ["scheduler", "family", "summary"])
    return 0
