"""Planner search times on one core (printed, not asserted). Run under ``taskset -c 0``.

Targets (issue 15): Llama 3 405B on 2,048 p5.48xlarge under 1 s, Mixtral 8x7B on 64 p5.48xlarge
under 3 s. The script pins itself to one core (as ``taskset -c 0`` would). Wall time depends on
what else the machine runs; CPU time (process_time) does not.
"""

from __future__ import annotations

import os
import time

from ekstrain.planner import Fleet, get_model, search

CASES = (
    # (model, instance, nodes, global batch in sequences, seq_len, target seconds)
    ("llama3-8b", "p5.48xlarge", 8, 512, 8192, None),
    ("llama3-70b", "p5.48xlarge", 64, 1024, 8192, None),
    ("llama3-405b", "p5.48xlarge", 2048, 2048, 8192, 1.0),  # Llama 3 405B pre-training: 16M tokens
    ("llama3-405b", "p5.48xlarge", 2048, 128, 131072, None),  # long-context stage: 16M tokens
    ("mixtral-8x7b", "p5.48xlarge", 64, 1024, 4096, 3.0),
)
TOP = 10
"""What ``ekstrain plan search`` prints by default (runner-up reasons are built for these only)."""


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as `taskset -c 0`
    for name, instance, nodes, global_batch, seq_len, target in CASES:
        fleet = Fleet.from_instance(instance, nodes)
        wall, cpu = time.perf_counter(), time.process_time()
        plans = search(get_model(name), fleet, global_batch, seq_len, top=TOP)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        goal = f" (target < {target:g} s: {'met' if cpu < target else 'MISSED'})" if target else ""
        print(
            f"planner search {name:12s} {fleet.ranks:6d} GPUs ({nodes} x {instance}) seq {seq_len:6d}: "
            f"{wall:6.3f} s wall, {cpu:6.3f} s CPU{goal}; best {plans[0].summary()} MFU {plans[0].mfu:.1%}"
        )


if __name__ == "__main__":
    main()
