"""``ekstrain plan search`` and ``ekstrain plan evaluate``: the stable CLI contract (docs/planner.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ekstrain.cli import kit as cli_kit
from ekstrain.cli.argtypes import OneLineParser
from ekstrain.files import outputs
from ekstrain.planner import calibration, frameworks, inputs, validation
from ekstrain.planner.efficiency import Efficiency, efficiency_for
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import BF16, FP8, Fleet
from ekstrain.planner.models import MODELS, ModelSpec, get_model
from ekstrain.planner.parallel import RECOMPUTE_MODES, ZERO_STAGES, ParallelConfig
from ekstrain.planner.plan import Plan, build_plan
from ekstrain.planner.search import SearchSpace, search_specs
from ekstrain.planner.software import FP8_RECIPES, MAX_BUCKET, Software
from ekstrain.planner.training import FRAMEWORKS, TrainingSpec

EXIT_USAGE = 2
DEFAULT_TOP = 10
EMIT_CHOICES = frameworks.CHOICES
"""``--emit``: print the launch lines ``ekstrain job render`` would write for the (first) plan instead of the
table; the plans are ranked for that framework. Same names as ``--framework`` and ``job render --framework``
(frameworks.py). The command line sets ``args.launch`` (ekstrain/assembly/plan_emit.py: the job templates' code)."""


def add_plan_commands(subparsers: argparse._SubParsersAction) -> None:
    plan = subparsers.add_parser("plan", help="parallelism planner")
    commands = plan.add_subparsers(dest="plan_command", required=True, parser_class=OneLineParser)

    search_cmd = commands.add_parser("search", help="rank every layout that fits")
    _add_common(search_cmd)
    search_cmd.add_argument("--top", type=int, default=DEFAULT_TOP, help="plans to print (0 = all)")
    search_cmd.add_argument("--allow-offload", action="store_true", help="also try ZeRO-Offload")
    _add_emit(search_cmd, "the best plan")
    _add_html(search_cmd)
    search_cmd.set_defaults(handler=_search)

    evaluate_cmd = commands.add_parser("evaluate", help="evaluate one fixed layout")
    _add_common(evaluate_cmd)
    _add_layout(evaluate_cmd)
    _add_emit(evaluate_cmd, "this layout")
    _add_html(evaluate_cmd)
    evaluate_cmd.set_defaults(handler=_evaluate)

    calibrate_cmd = commands.add_parser(
        "calibrate",
        help="print fit and validation errors per hardware generation; with --measured, fit the "
        "framework's software factor to one measured step of a layout",
    )
    calibrate_cmd.add_argument(
        "--measured", type=float, help="measured seconds per training step of the layout given by the other flags"
    )
    _add_common(calibrate_cmd, required=False)
    _add_layout(calibrate_cmd, required=False)
    calibrate_cmd.set_defaults(handler=_calibrate)


def _add_emit(parser: argparse.ArgumentParser, which: str) -> None:
    parser.add_argument(
        "--emit",
        choices=EMIT_CHOICES,
        help=f"print the launch lines `ekstrain job render` would run for {which} (torchrun line, DeepSpeed "
        "JSON, Megatron-LM or neuronx-distributed arguments, NeMo overrides) instead of the table",
    )


def _add_html(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained page: candidates chart, breakdown")


def _page(args: argparse.Namespace, plans: list[Plan], model: ModelSpec, fleet: Fleet, batch: int, opts: dict) -> None:
    """``--html FILE``: the page of ``plans`` (ekstrain/pages/plan_page.py; matplotlib loads only then)."""
    if getattr(args, "html", None) and plans:
        from ekstrain.pages import plan_page

        inputs.check_output_path("--html", args.html)
        title = f"ekstrain plan {args.plan_command}: {model.name}, {args.nodes} x {args.instance or args.fleet_json}"
        try:
            plan_page.write(args.html, plans, model, fleet, batch, args.seq_len, opts, title)
        except outputs.OutputRefused as error:  # checked above; the write itself can still fail (/proc, a full disk)
            raise PlanError(str(error)) from None


def _add_layout(parser: argparse.ArgumentParser, required: bool = True) -> None:
    for degree in ("tp", "pp", "dp"):
        parser.add_argument(f"--{degree}", type=int, required=required)
    for degree in ("cp", "ep", "vpp"):
        parser.add_argument(f"--{degree}", type=int, default=1)
    parser.add_argument("--micro-batch", type=int, required=required)
    parser.add_argument("--recompute", choices=RECOMPUTE_MODES, required=required)
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--zero", type=int, default=0, help=f"one of {ZERO_STAGES}")
    parser.add_argument("--offload-optimizer", action="store_true")


LAYOUT_FLAGS = ("tp", "pp", "dp", "micro_batch", "recompute")
COMMON_FLAGS = ("nodes", "seq_len")


def _add_common(parser: argparse.ArgumentParser, required: bool = True) -> None:
    model = parser.add_mutually_exclusive_group(required=required)
    model.add_argument("--model", help=f"built-in model: {', '.join(MODELS)}")
    model.add_argument("--model-json", help="model JSON file (keys: docs/planner.md)")
    fleet = parser.add_mutually_exclusive_group(required=required)
    fleet.add_argument("--instance", help="instance type from ekstrain.facts.catalog")
    fleet.add_argument("--fleet-json", help="custom fleet JSON file; replaces --instance")
    parser.add_argument("--nodes", type=int, required=required)
    parser.add_argument(
        "--network-tiers",
        action="store_true",
        help="with --instance: price a group spanning many nodes with the bandwidth share of the EC2 network tier "
        "its packed nodes reach (ekstrain/layout/topology.py; a stated assumption, docs/planner.md); default: "
        "every node "
        "pair at the full EFA figure",
    )
    batch = parser.add_mutually_exclusive_group(required=required)
    batch.add_argument("--global-batch", type=int, help="global batch in sequences")
    batch.add_argument("--global-batch-tokens", type=int, help="global batch in tokens")
    parser.add_argument("--seq-len", type=int, required=required)
    parser.add_argument(
        "--calibration-json",
        help="a calibration written by `ekstrain plan calibrate --measured ... --out FILE`: its software "
        "factor replaces the fitted one for its framework and generation",
    )
    parser.add_argument("--precision", choices=(BF16, FP8), default=BF16)
    parser.add_argument("--lora-rank", type=int, default=0, help="0 = full fine-tune")
    parser.add_argument(
        "--no-flash-attention",
        action="store_true",
        help="store the attention scores (Korthikanti's 5as/h term)",
    )
    parser.add_argument(
        "--eager",
        action="store_true",
        help="the model runs in eager PyTorch without torch.compile (torchtitan's Llama code: RMSNorm as tensor ops, "
        "fp32 RoPE, SwiGLU in two kernels): its elementwise kernels' HBM traffic counted one by one; default: fused "
        "kernels (Megatron, NeMo, torch.compile)",
    )
    add_software_flags(parser)
    parser.add_argument(
        "--framework",
        choices=frameworks.CHOICES,
        default=None,
        help="the framework (or stack preset: megatron-lm = plain Megatron-LM, fsdp-eager) that runs the plan and "
        "ranks it, with its switches (frameworks.PRESETS; each overridable by its flag); default megatron, or --emit's",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help="write the output to this file instead of stdout")


ON_OFF = ("on", "off")


def add_software_flags(parser: argparse.ArgumentParser) -> None:
    """The stack's switches (ekstrain/planner/software.py), each over its --framework preset; `plan` and
    `job render` take the same flags, so a rendered job launches with what the plan was priced with."""
    parser.add_argument(
        "--tp-comm-overlap",
        choices=ON_OFF,
        default=None,
        help="the stack overlaps TP collectives with GEMMs (Megatron-core --tp-comm-overlap); default: the "
        "preset's (on for megatron/nemo: NVIDIA's recipes; off for megatron-lm, fsdp, hsdp, deepspeed)",
    )
    parser.add_argument(
        "--fp8-recipe",
        choices=FP8_RECIPES,
        default=None,
        help="FP8 scaling recipe with --precision fp8 (Megatron-core --fp8-recipe; default delayed)",
    )
    parser.add_argument(
        "--fp8-bf16-layers",
        type=int,
        default=None,
        help="layers kept in BF16 at each end of the model under FP8 (Megatron-core --first-last-layers-bf16)",
    )
    parser.add_argument(
        "--activation-offload-layers",
        type=int,
        default=None,
        help="layers whose activations go to host memory (Megatron-core --cpu-offloading-num-layers)",
    )
    parser.add_argument(
        "--overlap-grad-reduce",
        choices=ON_OFF,
        default=None,
        help="gradient reduce overlapped with the backward (Megatron --overlap-grad-reduce, DeepSpeed overlap_comm)",
    )
    parser.add_argument(
        "--overlap-param-gather",
        choices=ON_OFF,
        default=None,
        help="distributed optimizer's parameter all-gather overlapped (Megatron --overlap-param-gather)",
    )
    parser.add_argument(
        "--bucket-size",
        type=int,
        default=None,
        help="gradient bucket in elements (Megatron --ddp-bucket-size, DeepSpeed reduce/allgather_bucket_size)",
    )
    parser.add_argument(
        "--prefetch-bucket-size",
        type=int,
        default=None,
        help="DeepSpeed ZeRO-3 stage3_prefetch_bucket_size in elements (default 5e7)",
    )


def software_from_args(args: argparse.Namespace, preset: str) -> Software:
    """The preset's switches with each flag given on the command line put over them."""

    def on(value: str | None) -> bool | None:
        return None if value is None else value == "on"

    return frameworks.software_for(
        preset,
        tp_comm_overlap=on(args.tp_comm_overlap),
        fp8_recipe=args.fp8_recipe,
        fp8_bf16_layers=args.fp8_bf16_layers,
        activation_offload_layers=args.activation_offload_layers,
        eager=True if getattr(args, "eager", False) else None,
        overlap_grad_reduce=on(args.overlap_grad_reduce),
        overlap_param_gather=on(args.overlap_param_gather),
        bucket_params=args.bucket_size,
        prefetch_bucket_params=args.prefetch_bucket_size,
    )


DEGREES = ("tp", "pp", "dp", "cp", "ep", "vpp")
FLAG_BOUNDS: dict[str, tuple[int, int, str]] = {
    "nodes": (1, inputs.MAX_NODES, "plan a smaller fleet"),
    "seq_len": (1, inputs.MAX_SEQ_LEN, "sequences longer than 16M tokens are not modelled"),
    "global_batch": (1, inputs.MAX_GLOBAL_BATCH, "global batches are counted in sequences"),
    "global_batch_tokens": (1, inputs.MAX_GLOBAL_BATCH_TOKENS, "global batches are counted in tokens"),
    "top": (0, 1 << 30, "0 prints every plan"),
    "lora_rank": (0, inputs.MAX_LORA_RANK, "LoRA ranks are 4-256 in practice"),
    "fp8_bf16_layers": (0, 10_000, "a model has fewer layers"),
    "activation_offload_layers": (0, 10_000, "a model has fewer layers"),
    "bucket_size": (1, MAX_BUCKET, "buckets are counted in elements (Megatron's default is 40M)"),
    "prefetch_bucket_size": (1, MAX_BUCKET, "buckets are counted in elements (DeepSpeed's default is 5e7)"),
    **{
        d: (1, inputs.MAX_DEGREE, "a degree cannot exceed the fleet's ranks")
        for d in ("tp", "pp", "dp", "cp", "ep", "vpp")
    },
    "micro_batch": (1, inputs.MAX_GLOBAL_BATCH, "a micro-batch cannot exceed the global batch"),
}
"""Every whole-number flag and its bounds (inputs.py says why each bound exists)."""


def _check_flags(args: argparse.Namespace) -> None:
    for name, (low, high, fix) in FLAG_BOUNDS.items():
        inputs.check_count("--" + name.replace("_", "-"), getattr(args, name, None), low, high, fix)


def _inputs(args: argparse.Namespace) -> tuple[ModelSpec, Fleet, int, dict[str, Any]]:
    _check_flags(args)
    if getattr(args, "zero", 0) not in ZERO_STAGES:
        raise PlanError(f"--zero must be one of {', '.join(map(str, ZERO_STAGES))}, got {args.zero}")
    if args.out:
        inputs.check_output_path("--out", args.out)
    model = get_model(args.model) if args.model else ModelSpec.from_json(args.model_json)
    if getattr(args, "network_tiers", False) and not args.instance:
        raise PlanError("--network-tiers needs --instance (a --fleet-json fleet has no EC2 network topology)")
    fleet = (
        Fleet.from_instance(args.instance, args.nodes, network_tiers=getattr(args, "network_tiers", False))
        if args.instance
        else Fleet.from_json(args.fleet_json, args.nodes)
    )
    if fleet.generation_inferred:
        print(
            f'warning: --fleet-json {args.fleet_json!r} has no "generation"; inferred {fleet.generation!r} '
            'from peak_tflops_bf16 and hbm_gbytes_per_s. Add "generation" to the file to say which '
            "calibration applies.",
            file=sys.stderr,
        )
    if args.global_batch is not None:
        global_batch = args.global_batch
    elif args.global_batch_tokens % args.seq_len:
        raise PlanError(f"--global-batch-tokens {args.global_batch_tokens} is not a multiple of --seq-len")
    else:
        global_batch = args.global_batch_tokens // args.seq_len
        inputs.check_count(
            "--global-batch-tokens / --seq-len", global_batch, 1, inputs.MAX_GLOBAL_BATCH, "use fewer tokens per step"
        )
    preset = args.framework or getattr(args, "emit", None) or frameworks.MEGATRON
    framework, args.emit = frameworks.for_plan_command(args.framework, getattr(args, "emit", None))
    args.framework = frameworks.cost_model(framework)
    software = software_from_args(args, preset)
    args.eager = software.eager  # a preset (fsdp-eager) may imply it: the calibration check below reads it
    options = {
        "precision": args.precision,
        "lora_rank": args.lora_rank,
        "flash_attention": not args.no_flash_attention,
        "software": software,
        "framework": args.framework,
        "efficiency": _efficiency(args, fleet),
    }
    inputs.check_lora_rank(model, args.lora_rank)
    return model, fleet, global_batch, options


def training_spec(global_batch: int, seq_len: int, options: dict[str, Any]) -> TrainingSpec:
    """The TrainingSpec of a command's options (the keywords of ``evaluate``, efficiency aside)."""
    return TrainingSpec(
        global_batch,
        seq_len,
        precision=options["precision"],
        lora_rank=options["lora_rank"],
        flash_attention=options["flash_attention"],
        framework=options["framework"],
        software=options["software"],
    )


def _efficiency(args: argparse.Namespace, fleet: Fleet) -> Efficiency:
    """The fleet's fitted constants, with a user's ``--calibration-json`` software factor applied."""
    base = efficiency_for(fleet)
    if not args.calibration_json:
        return base
    source = f"--calibration-json {args.calibration_json!r}"
    data = inputs.read_json_object(args.calibration_json, "calibration")
    generation = inputs.check_string(source, "generation", data.get("generation", "")) if data.get("generation") else ""
    framework = data.get("framework")
    if framework not in FRAMEWORKS:
        raise PlanError(f"{source}: framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
    if framework != args.framework or generation != fleet.generation:
        raise PlanError(
            f"{source}: calibrated for {framework} on {generation or 'an unknown generation'}, but this run is "
            f"{args.framework} on {fleet.generation or 'an unknown generation'}; calibrate this combination"
        )
    eager = data.get("eager", False)  # calibrations written before --eager existed are of fused stacks
    if not isinstance(eager, bool):
        raise PlanError(f"{source}: eager must be true or false (JSON booleans), got {eager!r}")
    if eager is not args.eager:
        raise PlanError(
            f"{source}: calibrated {'with' if eager else 'without'} --eager, but this run is "
            f"{'with' if args.eager else 'without'} it; the factor holds for the kernels it was measured on: "
            f"{'add' if eager else 'drop'} --eager or calibrate again"
        )
    factor = inputs.check_number(source, "software", data.get("software"), 0.0, 10.0, "x Megatron's GEMM throughput")
    return calibration.with_software(base, framework, factor)


def _calibrate(args: argparse.Namespace) -> int:
    if args.measured is None:
        given = [f for f in ("model", "instance", "fleet_json", "tp") if getattr(args, f, None) is not None]
        if given:
            raise PlanError(f"--{given[0].replace('_', '-')} needs --measured SECONDS (the step time to fit to)")
        if args.json:
            tables = cli_kit.markdown_tables(calibration.generation_report())
            print(
                cli_kit.dumps(
                    {
                        "narayanan_2021_table1": cli_kit.markdown_tables(calibration.report())[0],
                        "per_generation": tables[0],
                        "per_generation_and_framework": tables[1],
                        "rows": tables[2],
                        "leave_one_source_out": cli_kit.markdown_tables(validation.report()),
                    }
                )
            )
            return 0
        print("Narayanan et al. 2021 Table 1 (A100 fit set):\n")
        print(calibration.report())
        print("\nPer-generation fit and held-out validation (tokens/s per device):\n")
        print(calibration.generation_report())
        covered, total = validation.coverage()
        print(f"\nLeave one source out (fit on the others, predict it; bands cover {covered}/{total}):\n")
        print(validation.report())
        return 0
    if not 0 < args.measured < 1e7 or args.measured != args.measured:
        raise PlanError(f"--measured must be seconds per step, > 0 and finite, got {args.measured}")
    missing = [f for f in (*COMMON_FLAGS, *LAYOUT_FLAGS) if getattr(args, f) is None]
    missing += [] if args.model or args.model_json else ["model"]
    missing += [] if args.instance or args.fleet_json else ["instance"]
    missing += [] if args.global_batch or args.global_batch_tokens else ["global_batch"]
    if missing:
        flags = ", ".join("--" + f.replace("_", "-") for f in missing)
        raise PlanError(f"--measured needs the layout it was measured on: add {flags} (as for `plan evaluate`)")
    model, fleet, global_batch, options = _inputs(args)
    base = options.pop("efficiency")

    def plan_with(eff: Efficiency) -> Plan:
        return _evaluate_layout(args, model, fleet, global_batch, {**options, "efficiency": eff})

    factor = calibration.software_from_step(plan_with, base, options["framework"], args.measured)
    fitted = plan_with(calibration.with_software(base, options["framework"], factor))
    result = {
        "generation": fleet.generation,
        "framework": options["framework"],
        "eager": args.eager,
        "software": factor,
        "measured_step_s": args.measured,
        "predicted_step_s_before": round(plan_with(base).step_time_s, 6),
        "predicted_step_s_after": round(fitted.step_time_s, 6),
        "layout": fitted.summary(),
    }
    text = (
        inputs.dumps(result)
        if args.json or args.out
        else (
            f"{options['framework']} on {fleet.generation or 'an unknown generation'}: software factor {factor:.3f} "
            f"(fitted {base.software_for(options['framework']):.3f}); "
            f"predicted step {result['predicted_step_s_before']:.3f} s "
            f"-> {result['predicted_step_s_after']:.3f} s for the measured {args.measured:g} s. "
            "Save it with --out FILE and pass --calibration-json FILE to search/evaluate."
        )
    )
    _emit(args, text)
    return 0


def _search(args: argparse.Namespace) -> int:
    model, fleet, global_batch, options = _inputs(args)
    space = SearchSpace(
        allow_offload=args.allow_offload,
        top=None if getattr(args, "html", None) else args.top or None,  # the page charts every candidate
    )
    plans = search_specs(model, fleet, training_spec(global_batch, args.seq_len, options), space, options["efficiency"])
    _page(args, plans, model, fleet, global_batch, options)
    plans = plans[: args.top] if args.top else plans
    if getattr(args, "emit", None):
        if not plans:
            raise PlanError("no plan fits, so there is nothing to --emit; add nodes or pick a larger instance")
        _emit(args, _launch(args, plans[0], global_batch))
        return 0
    _emit(args, inputs.dumps([p.to_json() for p in plans]) if args.json else _table(plans))
    return 0


def _evaluate_layout(
    args: argparse.Namespace, model: ModelSpec, fleet: Fleet, global_batch: int, options: dict[str, Any]
) -> Plan:
    parallel = ParallelConfig(
        tp=args.tp,
        pp=args.pp,
        dp=args.dp,
        cp=args.cp,
        ep=args.ep,
        vpp=args.vpp,
        micro_batch=args.micro_batch,
        recompute=args.recompute,
        sequence_parallel=args.sequence_parallel,
        zero=args.zero,
        offload_optimizer=args.offload_optimizer,
    )
    return build_plan(model, fleet, training_spec(global_batch, args.seq_len, options), parallel, options["efficiency"])


def _evaluate(args: argparse.Namespace) -> int:
    model, fleet, global_batch, options = _inputs(args)
    plan = _evaluate_layout(args, model, fleet, global_batch, options)
    _page(args, [plan], model, fleet, global_batch, options)
    # A layout that does not fit memory is an answer, not an error: the plan says "fits": false and
    # carries the memory breakdown (exit 0); only invalid input exits 2.
    if getattr(args, "emit", None):
        _emit(args, _launch(args, plan, global_batch))
        return 0
    _emit(args, inputs.dumps(plan.to_json()) if args.json else _table([plan], memory=True))
    return 0


def _launch(args: argparse.Namespace, plan: Plan, global_batch: int) -> str:
    launch = getattr(args, "launch", None)
    if launch is None:
        raise PlanError("--emit needs the ekstrain command line (ekstrain plan ... --emit)")
    model = args.model or plan.model.name
    return str(launch(plan, args.emit, model=model, global_batch=global_batch, seq_len=args.seq_len, json=args.json))


def _emit(args: argparse.Namespace, text: str) -> None:
    if not args.out:
        print(text)
        return
    inputs.write_output("--out", args.out, text + "\n")


def _table(plans: list[Plan], memory: bool = False) -> str:
    header = (
        f"{'#':>3} {'tp':>3} {'pp':>3} {'dp':>5} {'cp':>3} {'ep':>3} {'vpp':>3} {'mb':>3} {'ga':>4} "
        f"{'zero':>4} {'recompute':>9} {'sp':>3} {'fits':>4} {'mem GiB':>8} {'step s':>13} {'TFLOP/s':>8} "
        f"{'MFU':>6}  limits"
    )
    rows = []
    if plans:
        band = plans[0].error_band
        rows.append(
            f"step s: predicted ±{band.fraction:.0%} ({band.basis}); MFU counts causal attention as half "
            "of the square (Llama 3, Megatron-LM); JSON mfu_full_square counts all of it"
        )
        if not band.calibrated:
            rows.insert(0, f"warning: {band.basis.split(';')[0]}")
    rows.append(header)
    for i, p in enumerate(plans, 1):
        step = f"{p.step_time_s:.3f}±{p.error_band.fraction:.0%}"
        rows.append(
            f"{i:>3} {p.tp:>3} {p.pp:>3} {p.dp:>5} {p.cp:>3} {p.ep:>3} {p.vpp:>3} {p.micro_batch:>3} "
            f"{p.grad_accum:>4} {p.zero:>4} {p.recompute:>9} {'y' if p.sequence_parallel else 'n':>3} "
            f"{'y' if p.fits else 'n':>4} {p.memory.total / 2**30:>8.1f} {step:>13} "
            f"{p.model_tflops_per_gpu:>8.1f} {p.mfu:>6.1%}  {p.explain()}"
        )
        if p.notes:
            rows.append(f"    vs #1: {'; '.join(p.notes)}")
        if memory:
            parts = ", ".join(f"{k} {v:.2f}" for k, v in p.memory.gib().items())  # the allocator term is ~0.04
            rows.append(f"    memory GiB ({p.memory.stage}): {parts}; capacity {p.fleet.rank_memory_bytes / 2**30:.1f}")
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``plan`` command; PlanError becomes one line on stderr and exit code 2."""
    try:
        return int(args.handler(args))
    except PlanError as error:
        command = f"ekstrain plan {getattr(args, 'plan_command', '') or ''}".strip()
        print(cli_kit.error_lines(command, error), file=sys.stderr)
        return EXIT_USAGE
