"""Can a runner at a given address reach the cluster's API server, as the recording configures it?

Every Kubernetes resource of a `pulumi up` goes through the API endpoint, so a stack whose runner cannot reach
it fails at its first Kubernetes resource. EKS's rules
(docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html):
- from outside the VPC only the public endpoint answers, and only to ``publicAccessCidrs`` (EKS's default
  when the list is empty: 0.0.0.0/0);
- from inside the VPC, with private access on, the endpoint's name resolves to ENIs that carry the EKS-created
  cluster security group, which admits only its members plus the ingress rules added to it (here: 443 from
  ``deployCidrs``/``deploySecurityGroupIds``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ekstrain.infra import offline

EKS_CLUSTER = "aws:eks/cluster:Cluster"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


@dataclass(frozen=True)
class Runner:
    """Where `pulumi up` runs: its source address and whether that is inside the stack's VPC."""

    address: str
    in_vpc: bool
    security_group: str = ""


def api_reachable(rec: offline.Recording, runner: Runner) -> tuple[bool, str]:
    clusters = rec.of_type(EKS_CLUSTER)
    if len(clusters) != 1:
        return False, f"expected one EKS cluster in the recording, found {len(clusters)}"
    vpc = clusters[0].inputs.get("vpcConfig") or {}
    ip = ipaddress.ip_address(runner.address)
    if not runner.in_vpc:
        if not vpc.get("endpointPublicAccess"):
            return False, "the endpoint is private and the runner is outside the VPC"
        cidrs = vpc.get("publicAccessCidrs") or ["0.0.0.0/0"]
        if any(ip in ipaddress.ip_network(c) for c in cidrs):
            return True, f"public endpoint, {runner.address} in publicAccessCidrs {cidrs}"
        return False, f"{runner.address} is not in publicAccessCidrs {cidrs}"
    if not vpc.get("endpointPrivateAccess"):
        return False, "private endpoint access is off: in-VPC clients go out through NAT to the public endpoint"
    component = rec.by_urn(clusters[0].parent)  # eks:index:Cluster: its output is the EKS-created cluster SG
    cluster_sg = (component.outputs or {}).get("clusterSecurityGroupId") if component else None
    for rule in rec.of_type(INGRESS):
        i = rule.inputs
        if cluster_sg and i.get("securityGroupId") != cluster_sg:
            continue
        if not (int(i.get("fromPort", -1)) <= 443 <= int(i.get("toPort", -1))) and i.get("ipProtocol") != "-1":
            continue
        if i.get("cidrIpv4") and ip in ipaddress.ip_network(i["cidrIpv4"]):
            return True, f"private endpoint, 443 from {i['cidrIpv4']} on the cluster security group"
        if runner.security_group and i.get("referencedSecurityGroupId") == runner.security_group:
            return True, f"private endpoint, 443 from {runner.security_group} on the cluster security group"
    return False, f"no 443 rule on the cluster security group admits {runner.address}"
