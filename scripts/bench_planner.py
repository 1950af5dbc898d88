"""Planner search wall times on one core (printed, not asserted): 64, 512 and 16,384 GPUs."""

from __future__ import annotations

import time

from ekstrain.planner import Fleet, get_model, search

CASES = (
    # (model, instance, nodes, global batch in sequences, seq_len)
    ("llama3-8b", "p5.48xlarge", 8, 512, 8192),
    ("llama3-70b", "p5.48xlarge", 64, 1024, 8192),
    ("llama3-405b", "p5.48xlarge", 2048, 2048, 8192),  # Llama 3 405B pre-training: 16M tokens
)


def main() -> None:
    for name, instance, nodes, global_batch, seq_len in CASES:
        fleet = Fleet.from_instance(instance, nodes)
        start = time.perf_counter()
        plans = search(get_model(name), fleet, global_batch, seq_len)
        elapsed = time.perf_counter() - start
        print(
            f"planner search {name:12s} {fleet.ranks:6d} GPUs ({nodes} x {instance}): {elapsed:6.3f} s, "
            f"{len(plans)} fitting plans; best {plans[0].summary()} MFU {plans[0].mfu:.1%}"
        )


if __name__ == "__main__":
    main()
