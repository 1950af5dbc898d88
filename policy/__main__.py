"""Entry point of the policy pack: `pulumi preview --policy-pack policy`. Serves and blocks forever:
never import this file (tests import ``ekstrain_policy.pack``)."""

from ekstrain_policy.pack import POLICIES
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(
    name="ekstrain",
    enforcement_level=EnforcementLevel.ADVISORY,  # each policy sets its own level (docs/policies.md)
    policies=POLICIES,
)
