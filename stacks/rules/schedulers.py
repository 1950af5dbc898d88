"""Schedulers: Volcano, Slurm (and its login node), teams.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.rules.network import _allow_list


def _slurm_login(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    from ekstrain.stacks import slurm_login

    s = cfg.schedulers.slurm
    if not s.enabled:
        return [], []
    if not s.login_ssh:
        unused = [
            key
            for key, value in (
                ("loginSshAuthorizedKeys", s.login_ssh_authorized_keys),
                ("loginSshAuthorizedKeysFile", s.login_ssh_authorized_keys_file),
                ("loginAllowedCidrs", s.login_allowed_cidrs),
            )
            if value
        ]
        return [
            ConfigIssue(
                f"ekstrain:schedulers.slurm.{key}",
                "is set but loginSsh is false: the login node has no SSH endpoint, so it changes nothing",
                "set loginSsh: true to reach the login node over SSH, or remove the key",
            )
            for key in unused
        ], []
    keys = list(s.login_ssh_authorized_keys)
    path = slurm_login.keys_file(cfg)
    if path is not None:
        file_keys, problems = slurm_login.read_keys_file(path)
        if problems:
            return [ConfigIssue(slurm_login.KEY, problem, fix) for problem, fix in problems], []
        keys += file_keys
    if not keys:
        return [], [
            "ekstrain:schedulers.slurm.loginSshAuthorizedKeys: the login node has no SSH key, so "
            "`ssh root@<login>` is refused; add a public key to loginSshAuthorizedKeys or to the "
            "loginSshAuthorizedKeysFile, then deploy (README, Slurm), or set loginSsh: false (kubectl exec only)"
        ]
    return [], []


def team_warnings(cfg: StackConfig) -> list[str]:
    """Guarantees that leave a partition nothing to share: no team can borrow and its ``-shared`` queue (Slurm,
    notebooks, jobs without a team) gets no node."""
    out = []
    teams = cfg.schedulers.volcano.teams
    for part in cfg.partitions:
        total = sum(t.guarantees.get(part.name, 0) for t in teams)
        if teams and total == part.max_nodes and any(part.name in t.guarantees for t in teams):
            out.append(
                f"ekstrain:schedulers.volcano.teams: the guarantees in {part.name} cover all its {part.max_nodes} "
                f"nodes, so no team can borrow there and {part.name}-shared (Slurm's slurmd pods, notebooks, jobs "
                "without --team) is never admitted; leave some nodes unguaranteed"
            )
    return out


def _teams(cfg: StackConfig) -> list[ConfigIssue]:
    """``schedulers.volcano.teams``: known partitions, guarantees that fit the partition, unique queue names."""
    teams = cfg.schedulers.volcano.teams
    if not teams:
        return []
    out: list[ConfigIssue] = []
    key = "ekstrain:schedulers.volcano.teams"
    if not cfg.schedulers.volcano.enabled:
        out.append(ConfigIssue(key, "teams are Volcano queues, but Volcano is off", "set schedulers.volcano.enabled"))
    by_name = {p.name: p for p in cfg.partitions}
    seen: set[str] = set()
    for i, team in enumerate(teams):
        at = f"{key}[{i}] ({team.name})"
        if team.name in seen:
            out.append(ConfigIssue(f"{at}.name", "two teams have this name", "give every team its own name"))
        seen.add(team.name)
        if team.name == "shared":
            out.append(
                ConfigIssue(
                    f"{at}.name",
                    "'shared' is the queue of Slurm, notebooks and jobs without a team in each partition",
                    "choose another team name",
                )
            )
        for part, nodes in sorted(team.guarantees.items()):
            where = f"{at}.guarantees.{part}"
            if part not in by_name:
                out.append(
                    ConfigIssue(where, f"{part!r} is not a partition", f"use partition names: {sorted(by_name)}")
                )
            elif not 0 <= nodes <= by_name[part].max_nodes:
                out.append(
                    ConfigIssue(
                        where,
                        f"{nodes} guaranteed nodes is outside 0..maxNodes ({by_name[part].max_nodes})",
                        "guarantee whole nodes the partition can launch",
                    )
                )
    for part in sorted(by_name):
        total = sum(t.guarantees.get(part, 0) for t in teams)
        if total > by_name[part].max_nodes:
            out.append(
                ConfigIssue(
                    key,
                    f"the teams' guarantees in {part} add up to {total} nodes, more than its maxNodes "
                    f"{by_name[part].max_nodes}: Volcano cannot hold them all at once",
                    f"lower the guarantees of {part} to {by_name[part].max_nodes} nodes in total, "
                    "or raise its maxNodes",
                )
            )
        for team in teams:
            queue = f"{part}-{team.name}"
            if part in team.guarantees and queue in by_name:
                out.append(
                    ConfigIssue(
                        key,
                        f"team {team.name!r}'s queue in {part} would be {queue!r}, the name of another "
                        "partition's queue",
                        "rename the team or the partition",
                    )
                )
    return out


def _schedulers(cfg: StackConfig) -> list[ConfigIssue]:
    s = cfg.schedulers
    out = []
    if s.kubeflow.flavor == "training-operator":
        # Nothing unpinned is applied: pulumi-kubernetes's kustomize/v2 Directory fetches this kustomization from
        # GitHub at deploy time, so what `pulumi up` applies is nothing the render checked or pinned by content.
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.kubeflow.flavor",
                "the legacy training operator v1.9.4 is a kustomization fetched from GitHub at deploy time: nothing "
                "the render validated or pinned by content (and it owns mpijobs.kubeflow.org like the MPI operator)",
                "set flavor: trainer (Kubeflow Trainer v2: TrainJob, `ekstrain job render --scheduler trainjob`), "
                "or none and install the legacy operator outside this stack",
            )
        )
    names = {p.name for p in cfg.partitions}
    unknown = sorted(set(s.volcano.queue_weights) - names)
    if unknown:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.volcano.queueWeights",
                f"{unknown} are not partitions",
                f"use partition names: {sorted(names)}",
            )
        )
    bad = {k: v for k, v in s.volcano.queue_weights.items() if v < 1}
    if bad:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.volcano.queueWeights", f"weights must be >= 1, got {bad}", "use positive integers"
            )
        )
    out += _teams(cfg)
    by_name = {p.name: p for p in cfg.partitions}
    for part, replicas in sorted(s.slurm.nodeset_replicas.items()):
        key = f"ekstrain:schedulers.slurm.nodesetReplicas.{part}"
        if part not in by_name:
            out.append(ConfigIssue(key, f"{part!r} is not a partition", f"use partition names: {sorted(names)}"))
        elif not 0 <= replicas <= by_name[part].max_nodes:
            out.append(
                ConfigIssue(
                    key,
                    f"{replicas} slurmd pods is outside 0..maxNodes ({by_name[part].max_nodes})",
                    "each replica holds one whole node: use a count between 0 and the partition's maxNodes",
                )
            )
    out += _allow_list("ekstrain:schedulers.slurm.loginAllowedCidrs", s.slurm.login_allowed_cidrs, public=False)
    if s.slurm.enabled and s.slurm.autoscale and not cfg.observability.enabled:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.slurm.autoscale",
                "elastic Slurm reads Slurm's pending-job metrics from Prometheus, which this stack does not install",
                "set ekstrain:observability.enabled: true, or ekstrain:schedulers.slurm.autoscale: false (NodeSets "
                "then keep nodesetReplicas and are scaled by hand)",
            )
        )
    if s.slurm.enabled and not cfg.storage.fsx.enabled:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.slurm.enabled",
                "Slurm needs the shared FSx file system for its NodeSets and login nodes",
                "set ekstrain:storage.fsx.enabled: true",
            )
        )
    return out
