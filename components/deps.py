"""The one dependency idiom: a component's caller passes ``opts=ResourceOptions(depends_on=[...])``.

Pulumi does not make a component's children wait for the component's own ``depends_on``, so each
component hands this list to the children that need it (Helm releases, CRs, IAM associations).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi


def dependencies(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    deps = opts.depends_on if opts is not None else None
    if deps is None:
        return []
    return list(deps) if isinstance(deps, Sequence) else [deps]  # type: ignore[arg-type,list-item]
