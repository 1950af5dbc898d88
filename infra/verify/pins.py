"""Everything the stack installs carries its version at apply time.

An EKS add-on without ``addonVersion`` gets EKS's default on the day of the first ``pulumi up`` (EKS CreateAddon:
"If you don't specify a version, the default version is used"); a managed node group without ``releaseVersion`` gets
the newest AMI release on the day it is created (EKS CreateNodegroup ``releaseVersion``: "By default, the latest
available AMI version for the node group's current Kubernetes version is used"). Both make two stacks of one commit
differ, and make an upgrade change more than the version the user edited. The recorded resources are read, so a new
add-on or node group cannot enter unpinned.
"""

from __future__ import annotations

from ekstrain.infra import offline
from ekstrain.infra.verify import Check

CHECK_NAME = "pins: every EKS add-on and node group AMI release versioned"

ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def check_recording(rec: offline.Recording) -> Check:
    check = Check(CHECK_NAME, what="add-ons and node groups")
    for r in rec.of_type(ADDON):
        check.checked += 1
        if not r.inputs.get("addonVersion"):
            name = r.inputs.get("addonName", r.name)
            check.problems.append(
                f"{ADDON} {r.name} ({name}) has no addonVersion: EKS would install its default of the day; "
                f"fix: pin it in ekstrain/facts/versions.py (ADDON_VERSIONS_BY_KUBERNETES / DEFAULT_ADDON_VERSIONS) or "
                f"set ekstrain:versions.addons.{name}"
            )
    for r in rec.of_type(NODE_GROUP):
        check.checked += 1
        if not r.inputs.get("releaseVersion"):
            check.problems.append(
                f"{NODE_GROUP} {r.name} has no releaseVersion: EKS would pick the newest AMI release the day the "
                "group is created; fix: add the Kubernetes version's row to ekstrain/facts/versions.py "
                "SYSTEM_NODE_RELEASE_VERSIONS"
            )
    return check
