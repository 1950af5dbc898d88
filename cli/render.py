"""``ekstrain render``'s process: the flags, the stage lines and the short summary of an offline render.

    python -m ekstrain.cli.render --stack prod --out build/prod     (what ``ekstrain render`` runs)

The render itself (run the program under the mock engine, write and check every file, replay an unchanged one)
is ekstrain/infra/render.py; this module reads the command line, refuses bad input before anything runs, and
prints. Exit 0: every check passed; 1: problems (or checks that could not run); 2: bad input.
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import sys

from ekstrain.assembly.schedulers import mpi_operator
from ekstrain.facts.names import stack_name_problem
from ekstrain.files import outputs
from ekstrain.files.paths import example_stack, project_of, use_project
from ekstrain.infra import render, report
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import load_flat, read_stack_file
from ekstrain.tooling import lock, validation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="ekstrain render",
        description="Offline render of one stack under the Pulumi mock engine (not a cloud preview).",
    )
    parser.add_argument("--stack", required=True, help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--out", help="output directory (default build/<stack> beside the stack file)")
    parser.add_argument(
        "--stack-file", help="path of the stack file (default ./Pulumi.<stack>.yaml in the current directory)"
    )
    parser.add_argument("--preview", action="store_true", help="emulate preview: computed values are unknown")
    parser.add_argument(
        "--allow-unchecked",
        action="store_true",
        help="exit 0 even when checks could not run (no upstream schemas); default: exit 1 and say which",
    )
    parser.add_argument(
        "--lock",
        choices=lock.MODES,
        default=lock.DEFAULT_MODE,
        help=f"how {lock.LOCK_NAME} answers the no-op values check: use its answers (default), check that it is "
        "current (CI), write this stack's answers into it, or ignore it",
    )
    args = parser.parse_args(argv)
    stack_problem = stack_name_problem(args.stack)
    if stack_problem:
        parser.error(stack_problem)
    missing = render.missing_render_dependencies()
    if missing:
        print(
            f"error: the render's checks need {', '.join(missing)}: pip install 'ekstrain[render]' "
            "(the components and `pulumi up` do not)",
            file=sys.stderr,
        )
        return 2
    # The stack file of the project being deployed: the current directory, never this checkout.
    stack_file = pathlib.Path(args.stack_file) if args.stack_file else pathlib.Path.cwd() / f"Pulumi.{args.stack}.yaml"
    example = example_stack(args.stack) if not args.stack_file and not stack_file.exists() else None
    if example is not None:
        # Outside any Pulumi project (an installed wheel in an empty directory): the shipped example, said so; the
        # output, cache and lock stay in the working directory, never in the package.
        print(
            f"note: no Pulumi.{args.stack}.yaml here and no Pulumi project: rendering the shipped example stack "
            f"{args.stack}; to edit it: cp {example} .",
            file=sys.stderr,
        )
        stack_file, args.out = example, args.out or str(pathlib.Path("build") / args.stack)
        with use_project(pathlib.Path.cwd()):
            return _render(args, stack_file)
    # Cache and the files a stack names (the Slurm login key file) belong to the stack file's Pulumi project
    # (else the working directory's), never to the installed package.
    with use_project(project_of(stack_file)):
        return _render(args, stack_file)


def _render(args: argparse.Namespace, stack_file: pathlib.Path) -> int:
    flag = "--out" if args.out else f"--stack {args.stack} (output build/{args.stack})"
    requested = pathlib.Path(args.out) if args.out else stack_file.parent / "build" / args.stack
    kept = outputs.kept_dirs(stack_file.absolute().parent, project_of(stack_file))
    try:  # before anything runs: a render never replaces what it did not write
        out = outputs.check_dir(flag, requested, kept)
    except outputs.OutputRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render.BANNER, file=sys.stderr)
    try:
        flat, secrets = read_stack_file(stack_file)
        cfg, warnings = load_flat(flat, stack_file.name, secret_keys=secrets)
        if cfg.schedulers.mpi_operator.enabled:
            # a file the program applies (infra/program.py reads it first too): refused here, before it runs
            mpi_operator.mpijob_crd(validation.upstream_dir())
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if not args.stack_file and not stack_file.exists():
            print(
                f"  stacks in {stack_file.parent}: {sorted(p.name for p in stack_file.parent.glob('Pulumi.*.yaml'))}",
                file=sys.stderr,
            )
        return 2
    try:
        if args.lock != "ignore":
            lock.load()  # a broken lock file is refused here, before the program runs
        if args.lock == "write":
            lock.writable(lock.lock_path())
    except (lock.LockError, outputs.OutputRefused) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"[1/3] config {stack_file.name} valid: {len(cfg.partitions)} partition(s)", file=sys.stderr)
    try:
        _summary, _problems, resources = outputs.replace_dir(
            out,
            lambda staging: render.render_or_replay(
                stack_file,
                args.stack,
                args.preview,
                flat,
                secrets,
                cfg,
                warnings,
                staging,
                lock_mode=args.lock,
                final=out,
            ),
            by=f"ekstrain render --stack {args.stack}",
        )
    except outputs.OutputRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # stdout: a few lines from the render's structured result (checks.json); the whole report is SUMMARY.md.
    try:
        result = report.load(out)
    except report.ReportError as exc:
        print(f"error: ekstrain render: {exc}", file=sys.stderr)
        print("fix: render again with EKSTRAIN_REPLAY=0 (the stored render predates checks.json)", file=sys.stderr)
        return 1
    shown = [p for c in result.checks for p in c.problems]
    check_warnings = sum(len(c.warnings) for c in result.checks)
    print(f"stack {args.stack}: {resources} resources registered; {result.kubernetes}")
    print(
        f"checks: {len(result.passed)} passed, {len(result.failed)} failed, {len(result.not_run)} did not run; "
        f"{len(shown)} problem(s), {check_warnings} check warning(s), {len(warnings)} config warning(s)"
    )
    for p in shown[:5]:
        print(f"  problem: {p[:200]}")
    if len(shown) > 5:
        print(f"  ... {len(shown) - 5} more")
    print(f"full report: {out / 'SUMMARY.md'}")
    if result.not_run:
        reason = "; ".join(sorted({c.note.removesuffix(": NOT checked") for c in result.not_run}))
        names = "; ".join(c.name for c in result.not_run)
        if args.allow_unchecked:
            # asked for: a render headed NOT VALIDATED (SUMMARY.md), said as a note, not an error
            print(
                f"note: NOT VALIDATED (--allow-unchecked): {len(result.not_run)} checks did not run: {names}; "
                f"to run them: {reason}",
                file=sys.stderr,
            )
            if not shown:
                return 0
        else:
            print(f"error: ekstrain render: {len(result.not_run)} checks did not run: {names}", file=sys.stderr)
            print(f"fix: {reason}; or pass --allow-unchecked to accept an unvalidated render", file=sys.stderr)
    return 1 if shown or result.not_run else 0


if __name__ == "__main__":
    # A batch process that builds a large object graph once and frees it at exit: the imported modules are moved out
    # of the cyclic collector's generations (gc.freeze, https://docs.python.org/3/library/gc.html#gc.freeze) and it
    # collects after 50,000 allocations instead of 2,000; the collector's walks were ~40 % of a program run under
    # the mocks (perf), for ~10 MB more peak memory.
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    exit_code = main()
    # Skip interpreter teardown (about a second of freeing the SDKs' module graph, as mypy's hard_exit does):
    # every file has been written and closed; only the standard streams need flushing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)
