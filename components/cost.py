"""Spend by team, queue and job: the cost-allocation tags activated in Cost Explorer (only in a later `up` that sets
``ekstrain:cost.activateCostAllocationTags``), the stack's AWS Budget with its (KMS-encrypted) SNS topic, and
OpenCost on the stack's Prometheus with node prices from ekstrain.facts.catalog and the spend dashboard. Values come
from
:mod:`ekstrain.assembly.cost`; this component registers them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ekstrain.assembly import cost
from ekstrain.assembly import observability as obs
from ekstrain.components import iam
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts import spend
from ekstrain.facts.versions import Chart


@dataclass(frozen=True, kw_only=True)
class CostArgs:
    plan: cost.CostPlan
    """Required. From ``ekstrain.assembly.cost.plan(cfg, stack)``."""
    chart: Chart | None = None
    """@default none: no OpenCost. The opencost chart (pinned in ekstrain/facts/versions.py)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the AWS resources (topic, key)."""


class Cost(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<cluster>, <observability>])``; AWS children
    use the default provider."""

    budget: aws.budgets.Budget
    """The stack's monthly cost budget."""
    topic_arn: pulumi.Output[str]
    """The SNS topic the budget notifies."""

    def __init__(self, name: str, args: CostArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:cost:Cost", name, None, opts)
        plan = args.plan
        after = dependencies(opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)

        # Account-wide: Cost Explorer groups and the budget filters by these tags once they are active. Only in a later
        # `up` that declares the keys billed (ekstrain:cost.activateCostAllocationTags): Cost Explorer refuses a key
        # not yet seen on a bill, and member accounts of an Organization (ekstrain/contracts/kinds.py).
        for tag_key in plan.tag_keys:
            aws.costexplorer.CostAllocationTag(
                f"{name}-{tag_key.rsplit('/', 1)[-1]}", tag_key=tag_key, status="Active", opts=child
            )

        key, key_policy = iam.customer_key(
            f"{name}-topic-key",
            f"Budget notifications of {plan.cluster_name}",
            tags,
            child,
            alias=f"{plan.cluster_name}-budget",
            policy=cost.topic_key_policy,
        )
        topic = aws.sns.Topic(
            f"{name}-budget", name=f"{plan.cluster_name}-budget", kms_master_key_id=key.arn, tags=tags, opts=child
        )
        aws.sns.TopicPolicy(
            f"{name}-budget",
            arn=topic.arn,
            policy=topic.arn.apply(lambda arn: cost.topic_policy(arn, arn.split(":")[4])),
            opts=child,
        )
        for i, email in enumerate(plan.emails):
            aws.sns.TopicSubscription(
                f"{name}-budget-{i}", topic=topic.arn, protocol="email", endpoint=email, opts=child
            )
        self.topic_arn = topic.arn
        self.budget = aws.budgets.Budget(
            f"{name}-budget",
            name=plan.budget_name,
            budget_type="COST",
            time_unit="MONTHLY",
            limit_amount=f"{plan.monthly_limit_usd:.2f}",
            limit_unit="USD",
            # Only this stack's spend: resources tagged ekstrain.io/stack=<stack> (an active cost-allocation tag).
            cost_filters=[
                aws.budgets.BudgetCostFilterArgs(name="TagKeyValue", values=[f"user:{spend.STACK_TAG}${plan.stack}"])
            ],
            notifications=[
                aws.budgets.BudgetNotificationArgs(
                    comparison_operator="GREATER_THAN",
                    threshold=n["threshold"],
                    threshold_type="PERCENTAGE",
                    notification_type=n["notification_type"],
                    subscriber_sns_topic_arns=[topic.arn],
                )
                for n in plan.notifications
            ],
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[key_policy]),
        )

        if args.chart is not None and plan.opencost_values is not None and plan.pricing_configmap is not None:
            ns = k8s.core.v1.Namespace(
                f"{name}-ns",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=cost.NAMESPACE,
                    labels={
                        "app.kubernetes.io/part-of": "ekstrain",
                        "pod-security.kubernetes.io/enforce": "restricted",
                    },
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
            in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])
            prices = resource(f"{name}-node-prices", plan.pricing_configmap, opts=in_ns)
            release(
                name,
                release_name=cost.RELEASE,
                chart=args.chart,
                namespace=cost.NAMESPACE,
                values=plan.opencost_values,
                parent=self,
                depends_on=[ns, prices, *after],
            )
        if plan.dashboard is not None:
            cm = obs.dashboard_configmap("spend", plan.dashboard)
            # In the monitoring namespace, which the observability component creates: the caller's depends_on
            # (cluster, observability) orders it after that namespace and the deploy role's access.
            resource(f"{name}-dashboard-spend", cm, opts=pulumi.ResourceOptions(parent=self, depends_on=after))

        outputs: dict[str, Any] = {"budgetTopicArn": self.topic_arn}
        self.register_outputs(outputs)
