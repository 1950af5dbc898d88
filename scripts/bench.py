"""`make bench`: wall times that performance targets are judged by (printed, never asserted).

- `make render STACK=prod` as make runs it (a fresh `python -m ekstrain.infra.render` process: imports, program,
  helm renders of every chart, every check), warm (render/schema cache filled; target < 5 s) and cold
  (empty cache: every chart rendered by helm, CRD YAML parsed);
- the offline render of the prod stack (config load + program under the mock engine + writing);
- the same for a synthetic stack with 32 partitions, so growth with stack size is visible;
- the planner's search times, when the planner is installed (scripts/bench_planner.py);
- how long the render takes to refuse the largest bad stack files the reader's limits let through;
- `ekstrain simulate` of the prod render (target < 5 s) and of the prod timeline mix.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import yaml

from ekstrain.infra import render

REPO = pathlib.Path(__file__).resolve().parent.parent
TYPES = [
    ("gpu", ["p5.48xlarge"]),
    ("gpu", ["p4d.24xlarge", "p4de.24xlarge"]),
    ("gpu", ["p5en.48xlarge"]),
    ("trainium", ["trn1.32xlarge"]),
    ("trainium", ["trn2.48xlarge"]),
    ("gpu", ["g5.8xlarge"]),
]


def synthetic_stack(partitions: int, into: pathlib.Path) -> pathlib.Path:
    doc = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    parts = []
    for i in range(partitions):
        accelerator, types = TYPES[i % len(TYPES)]
        parts.append({"name": f"part-{i:02d}", "accelerator": accelerator, "instanceTypes": types, "maxNodes": 4})
    doc["config"]["ekstrain:partitions"] = parts
    doc["config"]["ekstrain:schedulers"] = copy.deepcopy(doc["config"].get("ekstrain:schedulers", {}))
    # Per-partition settings name prod's partitions: drop them.
    doc["config"]["ekstrain:schedulers"].setdefault("volcano", {})["queueWeights"] = {}
    doc["config"]["ekstrain:schedulers"].setdefault("slurm", {}).pop("nodesetReplicas", None)
    path = into / f"Pulumi.synthetic{partitions}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def time_render(stack: str, stack_file: pathlib.Path, out: pathlib.Path, repeats: int = 3) -> tuple[float, int]:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = render.main(["--stack", stack, "--stack-file", str(stack_file), "--out", str(out)])
        best = min(best, time.perf_counter() - started)
        if code != 0:
            raise SystemExit(f"render of {stack} failed (exit {code})")
    return best, sum(1 for _ in (out / "manifests").rglob("*.yaml"))


def bad_stack_files(into: pathlib.Path) -> dict[str, pathlib.Path]:
    """Worst cases just inside or at the limits of stacks/yaml_reader.py."""
    from ekstrain.stacks import yaml_reader

    files = {
        "1 MiB scalar": "config:\n  ekstrain:project: '" + "a" * (yaml_reader.MAX_BYTES - 40) + "'\n",
        "10,000-value mapping": "config:\n  ekstrain:tags:\n"
        + "".join(f"    k{i}: v\n" for i in range(yaml_reader.MAX_NODES // 2 - 10)),
        "alias bomb (10^9 values)": "config:\n  ekstrain:a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"  ekstrain:a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)),
        "nesting 100,000 deep": "config:\n  ekstrain:tags: " + "[" * 100_000 + "]" * 100_000 + "\n",
    }
    paths = {}
    for i, (name, text) in enumerate(files.items()):
        paths[name] = into / f"Pulumi.bad{i}.yaml"
        paths[name].write_text(text)
    return paths


def time_refusal(path: pathlib.Path, out: pathlib.Path) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = render.main(["--stack", "bad", "--stack-file", str(path), "--out", str(out)])
    if code != 2:
        raise SystemExit(f"{path.name} was not refused (exit {code})")
    return time.perf_counter() - started


def time_make_render(out: pathlib.Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of the command `make render STACK=prod` runs, in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ekstrain.infra.render", "--stack", "prod", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"render of prod failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _wall(cmd: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, proc.returncode


def time_simulate(build: pathlib.Path, tmpdir: pathlib.Path) -> None:
    """`ekstrain simulate` on the prod render (fresh process: imports, reading the build, every NodeSet's
    pod) and the 48-hour prod timeline mix when `make examples` has rendered its jobs."""
    empty = tmpdir / "no-workloads"
    empty.mkdir(exist_ok=True)
    base = [sys.executable, "-m", "ekstrain", "simulate", "--stack", "prod", "--build", str(build)]
    wall, rc = min(_wall([*base, str(empty)]) for _ in range(3))
    print(f"  simulate prod render (best of 3, fresh process): {wall:6.2f} s (exit {rc})   target < 5 s")
    if (REPO / "build" / "examples").is_dir():
        wall, rc = min(_wall([*base, "--timeline", "examples/mix-prod.yaml"]) for _ in range(3))
        print(f"  simulate --timeline examples/mix-prod.yaml (48 h): {wall:6.2f} s (exit {rc})")
    else:
        print("  simulate --timeline: skipped (run `make examples` first)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        print(
            "make render STACK=prod (fresh process; wall / CPU seconds; machine load "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
        cold_env = {**os.environ, "EKSTRAIN_CACHE_DIR": str(tmpdir / "cold-cache")}
        wall, cpu = time_make_render(tmpdir / "cold", cold_env)
        print(f"  cold (empty cache):  {wall:6.2f} s wall  {cpu:6.2f} s CPU")
        time_make_render(tmpdir / "warm", dict(os.environ))  # fill the cache of this checkout
        runs = [time_make_render(tmpdir / "warm", dict(os.environ)) for _ in range(3)]
        wall, cpu = min(runs)
        print(f"  warm (best of 3):    {wall:6.2f} s wall  {cpu:6.2f} s CPU   target < 5 s wall")
    print("offline render in-process (best of 3, wall seconds; every check included)")
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        seconds, objs = time_render("prod", REPO / "Pulumi.prod.yaml", tmpdir / "prod")
        print(f"  prod (3 partitions):       {seconds:6.2f} s   {objs} manifests")
        time_simulate(tmpdir / "prod", tmpdir)
        for n in (8, 32):
            seconds, objs = time_render(f"synthetic{n}", synthetic_stack(n, tmpdir), tmpdir / f"s{n}")
            print(f"  synthetic ({n:2d} partitions): {seconds:6.2f} s   {objs} manifests")
        print("refusing bad stack files (render exit 2, wall seconds)")
        for name, path in bad_stack_files(tmpdir).items():
            print(f"  {name + ':':26s} {time_refusal(path, tmpdir / 'bad'):6.2f} s")
    print(f"  peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if importlib.util.find_spec("scripts.bench_planner") is not None:
        from scripts import bench_planner

        print("\nplanner search (one core)")
        bench_planner.main()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
