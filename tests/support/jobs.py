"""Test double of the planner for the job-template tests (only used until/unless a test pins it).

It implements the contract the jobs resolver relies on (``search``/``evaluate`` and the Plan
fields and emitters) with deliberately simple arithmetic; the real planner's numbers are checked
by the planner's own tests and by tests/assembly/test_jobs_planner.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ekstrain.facts import catalog

PARAMS = {"llama3-8b": 8.0e9, "llama3-70b": 70.6e9, "bert-large": 0.34e9, "gpt3-1.3b": 1.3e9}


@dataclass(frozen=True)
class FakePlan:
    instance_type: str
    nodes: int
    accelerators_per_node: int
    tp: int
    pp: int
    dp: int
    micro_batch: int
    grad_accum: int
    fits: bool
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    zero: int = 3
    recompute: str = "selective"
    sequence_parallel: bool = False
    checkpoint_bytes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def deepspeed_config(self) -> dict[str, Any]:
        return {
            "train_batch_size": self.micro_batch * self.grad_accum * self.dp,
            "train_micro_batch_size_per_gpu": self.micro_batch,
            "gradient_accumulation_steps": self.grad_accum,
            "zero_optimization": {"stage": self.zero},
            "bf16": {"enabled": True},
        }

    def torchrun_args(self) -> list[str]:
        return [
            f"--nnodes={self.nodes}",
            f"--nproc-per-node={self.accelerators_per_node}",
            "--rdzv-backend=c10d",
            "--rdzv-endpoint=$(MASTER_ADDR):$(MASTER_PORT)",
        ]

    def torchrun_env(self) -> dict[str, str]:
        env = {"NNODES": str(self.nodes), "WORLD_SIZE": str(self.nodes * self.accelerators_per_node)}
        return {**env, "CUDA_DEVICE_MAX_CONNECTIONS": "1"} if self.tp > 1 else env

    def megatron_args(self) -> list[str]:
        return [
            f"--tensor-model-parallel-size={self.tp}",
            f"--pipeline-model-parallel-size={self.pp}",
            f"--micro-batch-size={self.micro_batch}",
            f"--global-batch-size={self.micro_batch * self.grad_accum * self.dp}",
        ]

    def neuron_args(self) -> list[str]:
        return [
            f"--tensor_parallel_size={self.tp}",
            f"--pipeline_parallel_size={self.pp}",
            f"--batch_size={self.micro_batch}",
            f"--grad_accum_usteps={self.grad_accum}",
        ]


class FakePlanner:
    """Ranks tp in (1, 2, 4, 8...) by memory fit; pure data parallelism when the model fits one device."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def _plan(
        self,
        model: str,
        it: catalog.InstanceType,
        nodes: int,
        global_batch: int,
        tp: int,
        pp: int,
        micro_batch: int,
        lora_rank: int | None,
    ) -> FakePlan | None:
        workers = it.workers_per_node
        world = nodes * workers
        if world % (tp * pp):
            return None
        dp = world // (tp * pp)
        if global_batch % (dp * micro_batch):
            return None
        params = PARAMS[model]
        per_device_gib = it.accelerator.memory_gib / it.accelerator.cores_per_device
        state = (2.0 if lora_rank else 16.0) * params / (tp * pp * dp)
        fits = state / 2**30 < per_device_gib * 0.8
        return FakePlan(it.name, nodes, workers, tp, pp, dp, micro_batch, global_batch // (dp * micro_batch), fits)

    def search(
        self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int, **options: Any
    ) -> list[FakePlan]:
        if model not in PARAMS:
            raise KeyError(f"unknown model {model!r}")
        self.calls.append((model, instance_type, nodes))
        it = catalog.get(instance_type)
        plans = [
            self._plan(model, it, nodes, global_batch, tp, 1, 1, options.get("lora_rank"))
            for tp in (1, 2, 4, 8)
            if tp <= it.workers_per_node
        ]
        return sorted((p for p in plans if p), key=lambda p: (not p.fits, p.tp))

    def evaluate(
        self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int, **degrees: Any
    ) -> FakePlan:
        plan = self._plan(
            model,
            catalog.get(instance_type),
            nodes,
            global_batch,
            degrees["tp"],
            degrees["pp"],
            degrees["micro_batch"],
            degrees.get("lora_rank"),
        )
        if plan is None:
            raise ValueError(f"degrees {degrees} do not divide the fleet")
        return plan


def kubelet_expand(text: str, env: dict[str, str] | None = None) -> str:
    """What the kubelet makes of a container command/arg/env value: ``$(NAME)`` -> the value of a defined
    variable (left as is otherwise), ``$$`` -> ``$`` (kubernetes third_party/forked/golang/expansion/expand.go,
    ``Expand`` and ``tryReadVariableName``, same loop)."""
    env = env or {}
    out: list[str] = []
    checkpoint = cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                read, advance = "$", 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close == -1:
                    read, advance = "$(", 1
                else:
                    name = rest[1:close]
                    read, advance = env.get(name, f"$({name})"), close + 1
            else:
                read, advance = "$" + rest[0], 1
            out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]
