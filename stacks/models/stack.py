"""The whole stack: every ``ekstrain:*`` key of a ``Pulumi.<stack>.yaml`` plus ``aws:region``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ekstrain.facts import catalog, regions
from ekstrain.stacks.models.base import DNS_LABEL, Model
from ekstrain.stacks.models.cluster import ClusterConfig
from ekstrain.stacks.models.instance_types import InstanceTypeFacts, check_instance_types
from ekstrain.stacks.models.maintenance import MaintenanceConfig
from ekstrain.stacks.models.network import NetworkConfig
from ekstrain.stacks.models.partitions import PartitionConfig
from ekstrain.stacks.models.platform import (
    CostConfig,
    DeliveryConfig,
    JupyterHubConfig,
    LoggingConfig,
    ObservabilityConfig,
)
from ekstrain.stacks.models.schedulers import SchedulersConfig
from ekstrain.stacks.models.storage import StorageConfig
from ekstrain.stacks.models.tags import AwsDefaultTags, ResourceTags
from ekstrain.stacks.models.versions import VersionsConfig


class StackConfig(Model):
    region: str
    """From ``aws:region``."""
    environment: Literal["prod", "staging", "dev", "test"] = "dev"
    """Environment tag and the policy pack's notion of production."""
    project: str = Field(default="ekstrain", pattern=DNS_LABEL, max_length=63)
    """Project tag on every AWS resource."""
    default_tags: AwsDefaultTags | None = None
    """From ``aws:defaultTags`` (the AWS provider adds these tags to every resource): counted with ``tags``
    against AWS's 50 per resource; @default none."""
    tags: ResourceTags = Field(default_factory=dict)
    """Extra tags on every AWS resource: at most 38 (AWS allows 50; the program adds up to 12), keys <= 128 and
    values <= 256 characters, no ``aws:`` prefix, never one of the program's own tags (Project, Environment,
    ManagedBy, Name, ekstrain.io/, kubernetes.io/, karpenter.sh/, eks: ...)."""
    cluster: ClusterConfig
    """EKS control plane, access and the system node group."""
    network: NetworkConfig
    """VPC, subnets and the training AZ."""
    instance_types: dict[str, InstanceTypeFacts] = Field(default_factory=dict)
    """Instance types outside the built-in catalog (docs/catalog.md), by EC2 name, with their accelerator,
    EFA and sizing facts: partitions may then use them like built-in types. Naming a built-in type needs
    ``override: true``; @default none."""
    partitions: list[PartitionConfig] = Field(default_factory=list)
    """Compute partitions: one Karpenter NodePool + EC2NodeClass each."""
    storage: StorageConfig = Field(default_factory=StorageConfig)
    """S3 buckets, FSx for Lustre, EFS."""
    schedulers: SchedulersConfig = Field(default_factory=SchedulersConfig)
    """Which schedulers and training operators run."""
    versions: VersionsConfig = Field(default_factory=VersionsConfig)
    """Overrides of the pinned chart and add-on versions (defaults in ekstrain/facts/versions.py)."""
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    """When drifted nodes roll (an AMI or Kubernetes upgrade): @default no window, they never roll under jobs."""
    observability: ObservabilityConfig = Field(default_factory=ObservabilityConfig)
    """Prometheus, Grafana, GPU/Neuron/EFA metrics, dashboards, optional AMP remote write."""
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    """Workload, kernel and kubelet logs shipped to CloudWatch Logs."""
    cost: CostConfig = Field(default_factory=CostConfig)
    """Spend by team, queue and job: OpenCost, cost-allocation tags, the budget."""
    jupyterhub: JupyterHubConfig = Field(default_factory=JupyterHubConfig)
    """Interactive notebooks on the partitions."""
    jupyterhub_client_secret: str | None = None
    """JupyterHub's OAuth client secret (the dummy password outside prod). A secret: set it with
    ``pulumi config set --secret ekstrain:jupyterhubClientSecret <value>``; @default none."""
    delivery: DeliveryConfig = Field(default_factory=DeliveryConfig)
    """Argo CD as a delivery option."""

    @field_validator("instance_types")
    @classmethod
    def _instance_types(cls, value: dict[str, InstanceTypeFacts]) -> dict[str, InstanceTypeFacts]:
        return check_instance_types(value)

    def catalog_types(self) -> dict[str, catalog.InstanceType]:
        """The stack's own instance types as catalog entries (merged by
        :func:`ekstrain.facts.catalog.use_stack_types`)."""
        return {name: facts.to_catalog(name) for name, facts in self.instance_types.items()}

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        problem = regions.region_problem(value)
        if problem:
            raise ValueError("; ".join(problem))
        return value

    def partition(self, name: str) -> PartitionConfig:
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(f"no partition named {name!r}; stack has {[p.name for p in self.partitions]}")

    def team_of(self, partition: str) -> str:
        """The team a partition's nodes are charged to (its own ``team``, else ``cost.team``)."""
        return self.partition(partition).team or self.cost.team

    @property
    def common_tags(self) -> dict[str, str]:
        # The program's own tags last: user tags never replace them (the models refuse such keys too).
        return {**self.tags, "Project": self.project, "Environment": self.environment, "ManagedBy": "pulumi"}
