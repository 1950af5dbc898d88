"""``ekstrain``: one command tree on Click (render, diff, plan, job, simulate, storage, catalog).

Each area declares its own flags next to its handler, in this package (``add_*_command`` with argparse's
``add_argument``: plan.py, job.py, simulate.py, diff.py, storage.py); :func:`ekstrain.cli.kit.command_from_parser`
turns those declarations into Click
commands, so Click parses every command line, prints every ``--help`` (defaults and an example), suggests
the closest command, flag or choice, and answers ``--version``. ``render`` runs the offline render
(``python -m ekstrain.cli.render``) in its own process: its stage lines go to stderr as they happen.

Exit codes: 0 ok, 1 problems found (blocked workloads, flagged changes, failed checks, a too-slow file
system), 2 bad input (one line naming the flag and the fix). A closed pipe (``ekstrain catalog | head -1``)
ends quietly.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import pathlib
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import click

from ekstrain.cli import kit as cli_kit
from ekstrain.cli import storage
from ekstrain.cli.argtypes import OneLineParser
from ekstrain.cli.deploy_policy import add_deploy_policy_command
from ekstrain.cli.diff import add_diff_command
from ekstrain.cli.job import add_job_commands
from ekstrain.cli.plan import add_plan_commands
from ekstrain.cli.plan import run as run_plan
from ekstrain.cli.simulate import add_simulate_command
from ekstrain.cli.upstream import add_upstream_commands
from ekstrain.facts import catalog
from ekstrain.tooling import lock

EXIT_BAD_INPUT = 2
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away (``yes | head -1``)."""

_PLAN = "--model llama3-70b --instance p5.48xlarge --nodes 8 --global-batch 512 --seq-len 8192"
EXAMPLES: dict[str, str] = {
    "ekstrain": """
ekstrain render --stack dev
ekstrain plan search --model llama3-8b --instance p5.48xlarge --nodes 2 --global-batch 256 --seq-len 4096
ekstrain catalog --family gpu --json""",
    "ekstrain plan": f"""
ekstrain plan search {_PLAN}
ekstrain plan search {_PLAN} --emit megatron""",
    "ekstrain plan search": f"""
ekstrain plan search {_PLAN} --top 5
ekstrain plan search {_PLAN} --json > plans.json
ekstrain plan search {_PLAN} --emit deepspeed     # the launch lines `job render` would write""",
    "ekstrain plan evaluate": f"""
ekstrain plan evaluate {_PLAN} --tp 8 --pp 2 --dp 4 --micro-batch 1 --recompute selective
ekstrain plan evaluate {_PLAN} --tp 8 --pp 2 --dp 4 --micro-batch 1 --recompute selective --emit torchrun""",
    "ekstrain plan calibrate": f"""
ekstrain plan calibrate                              # fit and held-out errors per generation
ekstrain plan calibrate --measured 7.9 {_PLAN} --tp 8 --pp 2 --dp 4 --micro-batch 1 --recompute selective \\
    --out calib.json""",
    "ekstrain job": """
ekstrain job render --stack prod --scheduler nccl-test --partition gpu-h100 > nccl.yaml
ekstrain job schedulers""",
    "ekstrain job render": """
ekstrain job render --stack prod --scheduler volcano --partition gpu-h100 --nodes 8 \\
    --model llama3-70b --image nvcr.io/nvidia/pytorch:25.01-py3 --global-batch 512 --seq-len 8192 > job.yaml
ekstrain job render --stack prod --scheduler nccl-test --partition gpu-h100 > nccl.yaml
ekstrain job render ... --framework megatron -- --lr 1e-4 --train-iters 5000   # args for the script""",
    "ekstrain job schedulers": """
ekstrain job schedulers
ekstrain job schedulers --json""",
    "ekstrain simulate": """
ekstrain simulate --stack prod build/examples
ekstrain simulate --stack prod --timeline examples/mix-prod.yaml
ekstrain simulate --stack prod --deploy            # rehearse the first `pulumi up` (--destroy: teardown)""",
    "ekstrain deploy-policy": """
ekstrain deploy-policy --stack prod > deploy-policy.json
ekstrain deploy-policy --stack prod --read-only --out preview-policy.json
ekstrain deploy-policy --stack prod --write-docs     # regenerate docs/delivery.md's table""",
    "ekstrain diff": """
ekstrain diff --stack prod --base origin/main
ekstrain diff --stack prod --old-stack-file Pulumi.prod.old.yaml --json --allow training-nodes""",
    "ekstrain storage": """
ekstrain storage --checkpoint-gib 1043 --capacity-gib 4800 --throughput 250
ekstrain storage --checkpoint-gib 140 --deployment-type SCRATCH_2 --json""",
    "ekstrain render": """
ekstrain render --stack dev
ekstrain render --stack prod --out build/prod --allow-unchecked
ekstrain render --stack prod --lock write""",
    "ekstrain upstream": """
ekstrain upstream fetch
ekstrain upstream helm""",
    "ekstrain upstream fetch": """
ekstrain upstream fetch
ekstrain upstream fetch --mirror http://127.0.0.1:8080 --dest .upstream""",
    "ekstrain upstream helm": """
ekstrain upstream helm
ekstrain upstream helm --dest .tools/helm
ekstrain upstream helm --mirror file:///srv/get.helm.sh""",
    "ekstrain catalog": """
ekstrain catalog
ekstrain catalog --family trainium --json""",
}


def version() -> str:
    try:
        return importlib.metadata.version("ekstrain")
    except importlib.metadata.PackageNotFoundError:  # a source checkout without `pip install -e .`
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    """Every area's flags, as each declares them (argparse ``add_argument``): the tree's one source."""
    parser = OneLineParser(prog="ekstrain", description="ekstrain: EKS distributed-training platform tools")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_plan_commands(subparsers)
    add_job_commands(subparsers)
    add_simulate_command(subparsers)
    add_diff_command(subparsers)
    add_deploy_policy_command(subparsers)
    add_upstream_commands(subparsers)
    return parser


def dispatch(args: argparse.Namespace) -> int:
    if hasattr(args, "func"):
        return int(args.func(args))
    from ekstrain.assembly import plan_emit  # only plan --emit needs the job templates' resolver

    args.launch = plan_emit.launch
    return run_plan(args)


# ---- commands that are Click only ----------------------------------------------------------------------


def _catalog_row(t: catalog.InstanceType) -> dict[str, Any]:
    return {
        "type": t.name,
        "family": t.family,
        "accelerators": f"{t.accelerator_count}x {t.accelerator.model}",
        "HBM GiB": f"{t.accelerator.memory_gib:g}",
        "BF16 TFLOPS": f"{t.accelerator.peak_tflops_bf16:g}",
        "vCPU": t.vcpus,
        "memory GiB": t.memory_gib,
        "network Gbps": t.network_gbps,
        "EFA": t.efa_max_interfaces,
        "network cards": t.network_cards,
        "EFA cards": f"{t.efa_card_indices[0]}-{t.efa_card_indices[-1]}" if t.efa_capable else "-",
        "RDMA": "yes" if t.gpudirect_rdma else "no",
        "USD/h": "n/a" if t.price_per_hour_usd is None else f"{t.price_per_hour_usd:.2f}",
    }


def _catalog_json(t: catalog.InstanceType) -> dict[str, Any]:
    data = dataclasses.asdict(t)
    data["efa_card_indices"] = list(t.efa_card_indices)
    data["workers_per_node"] = t.workers_per_node
    data["accelerator_resource"] = t.accelerator_resource
    return data


@click.command(
    "catalog",
    help="The instance-type catalog (ekstrain/facts/catalog.py): accelerators, HBM, EFA interfaces, network cards, "
    f"on-demand price (us-east-1, as of {catalog.PRICES_AS_OF}).",
    epilog="\b\nExamples:\n" + "\n".join(f"  {line}" for line in EXAMPLES["ekstrain catalog"].strip().splitlines()),
)
@click.option(
    "--family",
    type=cli_kit.ArgType(choices=("all", catalog.GPU, catalog.TRAINIUM)),
    default="all",
    show_default=True,
    help="only this accelerator family",
)
@click.option("--json", "as_json", is_flag=True, help="print JSON (one object per type) instead of a table")
def catalog_command(family: str, as_json: bool) -> int:
    types = [t for t in catalog.CATALOG.values() if family in ("all", t.family)]
    if as_json:
        print(cli_kit.dumps([_catalog_json(t) for t in types]))
    else:
        rows = [_catalog_row(t) for t in types]
        cli_kit.print_table(rows, list(rows[0]) if rows else ["type"])
    return 0


@click.command(
    "render",
    help="Offline render of one stack (Pulumi mock engine; not a cloud preview): runs the program, writes "
    "manifests, Helm releases and SUMMARY.md to --out and checks them. Stage lines go to stderr as they "
    "happen; stdout gets a short summary (the whole report is <out>/SUMMARY.md). Exit 1 when a check found "
    "problems or could not run.",
    epilog="\b\nExamples:\n" + "\n".join(f"  {line}" for line in EXAMPLES["ekstrain render"].strip().splitlines()),
)
@click.option("--stack", default="prod", show_default=True, help="stack name: reads Pulumi.<stack>.yaml")
@click.option("--out", default=None, help="output directory  [default: build/<stack>]")
@click.option("--stack-file", default=None, help="path of the stack file  [default: ./Pulumi.<stack>.yaml]")
@click.option("--preview", is_flag=True, help="emulate preview: computed values are unknown")
@click.option(
    "--allow-unchecked",
    is_flag=True,
    help="exit 0 even when checks could not run (no upstream schemas); default: exit 1 and say which",
)
@click.option(
    "--lock",
    "lock_mode",
    type=cli_kit.ArgType(choices=lock.MODES),
    default=lock.DEFAULT_MODE,
    show_default=True,
    help=f"how {lock.LOCK_NAME} answers the no-op values check: use its answers, check that it is current (CI), "
    "write this stack's answers into it, or ignore it",
)
@click.option(
    "--upstream-dir",
    default=None,
    help="the pinned upstream files (crds/, chart archives, chart values) the checks read  "
    "[default: $EKSTRAIN_UPSTREAM_DIR, ./.upstream, a checkout's ../shared/upstream]",
)
@click.option("--helm", "helm_path", default=None, help="helm binary  [default: $EKSTRAIN_HELM, helm on PATH]")
def render_command(
    stack: str,
    out: str | None,
    stack_file: str | None,
    preview: bool,
    allow_unchecked: bool,
    lock_mode: str,
    upstream_dir: str | None = None,
    helm_path: str | None = None,
) -> int:
    env = dict(os.environ)
    # The flags set what the render reads (ekstrain/tooling/validation.py upstream_dir, ekstrain/tooling/helm.py
    # helm_binary).
    if upstream_dir is not None:
        if not (pathlib.Path(upstream_dir) / "crds").is_dir():
            print(
                f"error: --upstream-dir {upstream_dir!r}: no crds/ directory there (the pinned upstream files)",
                file=sys.stderr,
            )
            return 2
        env["EKSTRAIN_UPSTREAM_DIR"] = str(pathlib.Path(upstream_dir).absolute())
    if helm_path is not None:
        if not (os.path.isfile(helm_path) and os.access(helm_path, os.X_OK)):
            print(f"error: --helm {helm_path!r}: not an executable file (a helm v3 or v4 binary)", file=sys.stderr)
            return 2
        env["EKSTRAIN_HELM"] = str(pathlib.Path(helm_path).absolute())
    # --flag=value: a value that begins with '-' stays a value (the render refuses it with its own message)
    argv = [sys.executable, "-m", "ekstrain.cli.render", f"--stack={stack}"]
    argv += [f"--out={out}"] if out else []
    argv += [f"--stack-file={stack_file}"] if stack_file else []
    argv += ["--preview"] if preview else []
    argv += ["--allow-unchecked"] if allow_unchecked else []
    argv += ["--lock", lock_mode] if lock_mode != lock.DEFAULT_MODE else []
    sys.stdout.flush()
    # Its own process (the render's exit skips interpreter teardown); stdout and stderr pass straight through.
    return subprocess.run(argv, check=False, env=env).returncode


def build_cli() -> click.Group:
    """The Click tree: the argparse-declared areas, then ``catalog`` and ``render``."""
    root = cli_kit.command_from_parser("ekstrain", build_parser(), dispatch, examples=EXAMPLES)
    assert isinstance(root, click.Group)
    root.context_settings["max_content_width"] = 120
    root.help = (
        "ekstrain: EKS distributed-training platform tools. Exit 0 ok, 1 problems found, 2 bad input "
        "(one line naming the flag)."
    )
    root.params.append(
        click.Option(
            ["--version"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            help="print the version and exit",
            callback=_print_version,
        )
    )
    # One declaration of storage's flags: ekstrain/cli/storage.py's parser.
    root.add_command(
        cli_kit.command_from_parser(
            "storage",
            storage.build_parser(),
            storage.run,
            "FSx for Lustre checkpoint save time and the cheapest configuration meeting a target "
            "(exit 1 when the configured file system is too slow).",
            EXAMPLES,
            "ekstrain",
        )
    )
    root.add_command(catalog_command)
    root.add_command(render_command)
    return root


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"ekstrain {version()}")
        ctx.exit(0)


def _quiet_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (a test's capture)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    words = list(argv) if argv is not None else sys.argv[1:]
    # `ekstrain job render ... -- --lr 1e-4 --foo`: everything after `--` goes to the training script as is.
    script_args: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, script_args = words[:cut], words[cut + 1 :]
    cli = build_cli()
    try:
        # Click's own main() turns EPIPE into exit 1; the context API leaves exits and errors to us.
        with cli.make_context("ekstrain", words, obj={"script_args": script_args}) as ctx:
            result = cli.invoke(ctx)
        sys.stdout.flush()
    except click.exceptions.Exit as exc:  # --help, --version
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # `ekstrain plan` alone: its help, as a usage error
        print(exc.format_message(), file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None
    except click.ClickException as exc:
        print(cli_kit.one_line(exc), file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None
    except click.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
