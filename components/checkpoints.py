"""Checkpoint rotation: a CronJob in the training namespace that keeps each job's last N checkpoints on FSx.

The script and its objects are :mod:`ekstrain.agents.checkpoint_rotation` (it deletes an older checkpoint only once
``lfs hsm_state`` shows every file archived to the checkpoints bucket); this component registers the script's
ConfigMap and the CronJob, after the training namespace and its FSx claim.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from ekstrain.agents import checkpoint_rotation as rotation
from ekstrain.components.deps import dependencies
from ekstrain.components.manifest import resource
from ekstrain.facts import names


@dataclass(frozen=True, kw_only=True)
class CheckpointRotationArgs:
    keep: int
    """Required. Checkpoints kept per job (``ekstrain.stacks.loop_rules.rotation_plan``)."""
    root: str
    """Required. The checkpoint directory as the pod mounts it (``<fsx.mountPath>/<fsx.checkpointPath>``)."""
    mount_path: str = "/fsx"
    """@default /fsx: where the FSx claim is mounted."""
    namespace: str = names.TRAINING_NAMESPACE
    """@default training: the namespace of the FSx claim."""
    claim: str = names.FSX_PVC
    """@default fsx-lustre: the static FSx PVC."""

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"CheckpointRotationArgs.keep: {self.keep}; keep at least 1 checkpoint per job")
        if not self.root.startswith(self.mount_path.rstrip("/") + "/"):
            raise ValueError(f"CheckpointRotationArgs.root: {self.root} is not under mount_path {self.mount_path}")


class CheckpointRotation(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<the training volumes>])``."""

    def __init__(self, name: str, args: CheckpointRotationArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:storage:CheckpointRotation", name, None, opts)
        after = dependencies(opts)
        script = resource(
            f"{name}-script",
            rotation.configmap(args.namespace),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        job = rotation.cronjob(
            args.namespace, args.claim, args.mount_path, args.root, args.keep, dict(names.SYSTEM_NODE_SELECTOR)
        )
        resource(name, job, opts=pulumi.ResourceOptions(parent=self, depends_on=[*after, script]))
        self.register_outputs({"keep": args.keep})
