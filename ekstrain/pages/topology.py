"""The architecture picture, drawn from a render: the VPC and its AZs with their subnets (the EFA subnet and the
placement groups in the training AZ), the NAT gateways, the EKS control plane and system node group, each
Karpenter NodePool with its instance types and node limit, FSx for Lustre with its S3 data repository
associations, EFS, the buckets, the schedulers and platform charts, and what talks to what.

Every box is read from the recorded resources (subnets, NAT gateways, placement groups, node group, file systems,
associations) or the stack config the program ran with (NodePools from the partitions' layouts, as the program
builds them: ekstrain/layout/partitions.py), never drawn from a fixed list. The component that registers each box is
its grey caption.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ekstrain.facts import names
from ekstrain.layout.partitions import layout_nodes, shape
from ekstrain.pages import shell

if TYPE_CHECKING:  # matplotlib loads when the picture is drawn
    from matplotlib.figure import Figure

W, H = 140.0, 92.0
"""Drawing units: the figure is 14 x 9.2 inches, one unit = 0.1 inch."""
BLUE, GREEN, ORANGE, GREY, PURPLE = "#e8f0fe", "#e7f6ec", "#fdf0e1", "#f3f4f6", "#f1e8fb"


def _inputs(rec: Any, type_token: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, top component name, inputs) of every recorded resource of ``type_token``."""
    out = []
    for r in rec.records:
        if r.type == type_token:
            out.append((r.name, rec.top_component(r).name, dict(r.inputs or {})))
    return out


def facts(rec: Any, cfg: Any) -> dict[str, Any]:
    """What the picture shows, from the recording and the config."""
    subnets = _inputs(rec, "aws:ec2/subnet:Subnet")
    nats = _inputs(rec, "aws:ec2/natGateway:NatGateway")
    vpc = next(iter(_inputs(rec, "aws:ec2/vpc:Vpc")), None)
    zones = list(cfg.network.availability_zones)

    def kind(name: str) -> str:
        return "efa" if "-efa-" in name else "public" if "-public-" in name else "private"

    by_zone: dict[str, list[tuple[str, str]]] = {z: [] for z in zones}
    for name, _, i in subnets:
        by_zone.setdefault(str(i.get("availabilityZone")), []).append((kind(name), str(i.get("cidrBlock") or "")))
    nat_zones = sorted(n.rsplit("-nat-", 1)[-1] for n, _, _ in nats)
    pools = []
    for p in cfg.partitions:
        s = shape(p.name, p.accelerator, p.instance_types, p.efa)
        for layout, limit in layout_nodes(s, p.max_nodes):
            types = [t.name for t in layout.instance_types]
            pools.append(
                {
                    "name": layout.name,
                    "types": types,
                    "limit": limit,
                    "efa": max(s.efa_for(t) for t in types),
                    "pg": names.placement_group_name(cfg.cluster.name, layout.name) if p.wants_placement_group else "",
                }
            )
    system = next(iter(_inputs(rec, "eks:index:ManagedNodeGroup")), None)
    fsx = next(iter(_inputs(rec, "aws:fsx/lustreFileSystem:LustreFileSystem")), None)
    # sorted: the engine registers resources concurrently, so the recording's order is not stable
    dras = sorted(
        (str(i.get("fileSystemPath")), str(i.get("dataRepositoryPath", "")).removeprefix("s3://"))
        for _, _, i in _inputs(rec, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    )
    buckets = sorted(n for n, _, _ in _inputs(rec, "aws:s3/bucket:Bucket") + _inputs(rec, "aws:s3/bucketV2:BucketV2"))
    sch = cfg.schedulers
    schedulers = [
        name
        for name, on in (
            ("Slurm (Slinky)", sch.slurm.enabled),
            ("Volcano queues", sch.volcano.enabled),
            ("MPI operator", sch.mpi_operator.enabled),
            ("Kubeflow Trainer", sch.kubeflow.flavor == "trainer"),
            ("KubeRay", sch.kuberay.enabled),
        )
        if on
    ]
    platform = [
        name
        for name, on in (
            ("Prometheus + Grafana", cfg.observability.enabled),
            ("Fluent Bit -> CloudWatch", cfg.logging.enabled),
            ("OpenCost + budget", cfg.cost.enabled),
            ("JupyterHub", cfg.jupyterhub.enabled),
            ("Argo CD", cfg.delivery.argocd),
        )
        if on
    ]
    return {
        "region": cfg.region,
        "cluster": cfg.cluster.name,
        "kubernetes": cfg.cluster.kubernetes_version,
        "vpc": str(vpc[2].get("cidrBlock")) if vpc else "existing VPC",
        "zones": zones,
        "training_zone": cfg.network.training_availability_zone,
        "subnets": by_zone,
        "nat_zones": nat_zones,
        "pools": pools,
        "system": system[2] if system else None,
        "fsx": fsx[2] if fsx else None,
        "dras": dras,
        "buckets": buckets,
        "efs": bool(_inputs(rec, "aws:efs/fileSystem:FileSystem")),
        "schedulers": schedulers,
        "platform": platform,
    }


def figure(rec: Any, cfg: Any, salt: str) -> str:
    """The picture as inline SVG (drawn once per process for the same facts: shell.drawn)."""
    f = facts(rec, cfg)
    return shell.drawn(f, salt, lambda: _draw(f))


def _draw(f: dict[str, Any]) -> Figure:
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig = shell.figure(W / 10, H / 10)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, W)
    ax.set_ylim(H, 0)
    ax.axis("off")

    def box(x: float, y: float, w: float, h: float, colour: str, lw: float = 1.0, dashed: bool = False) -> None:
        ax.add_patch(
            FancyBboxPatch(
                (x, y),
                w,
                h,
                boxstyle="round,pad=0.3",
                facecolor=colour,
                edgecolor="#5b6b8c",
                lw=lw,
                ls="--" if dashed else "-",
            )
        )

    def text(x: float, y: float, s: str, size: float = 8, bold: bool = False, colour: str = "#1d2330") -> None:
        ax.text(x, y, s, fontsize=size, fontweight="bold" if bold else "normal", va="top", color=colour)

    def arrow(a: tuple[float, float], b: tuple[float, float], both: bool = False) -> None:
        ax.add_patch(
            FancyArrowPatch(a, b, arrowstyle="<|-|>" if both else "-|>", mutation_scale=9, color="#5b6b8c", lw=1)
        )

    # -- the VPC and its AZs --------------------------------------------------------------------------------------
    text(1, 0.8, f"AWS region {f['region']} · cluster {f['cluster']}", 10, True)
    box(1, 4.5, 95, 45, "#fbfbfd", 1.4)
    text(2.5, 5.3, f"VPC {f['vpc']}", 9, True)
    text(62, 5.5, "component: network", 7, colour="#6b7280")
    zones = f["zones"]
    zw = 92 / max(1, len(zones))
    for i, zone in enumerate(zones):
        x = 2.5 + i * zw
        training = zone == f["training_zone"]
        box(x, 9, zw - 2, 39, "#ffffff", dashed=not training)
        text(x + 1, 9.6, f"AZ {zone}" + (" (training)" if training else ""), 8, True)
        y = 13.5
        for kind, cidr in sorted(f["subnets"].get(zone, []), key=lambda kc: ("public", "private", "efa").index(kc[0])):
            colour = {"public": GREY, "private": BLUE, "efa": ORANGE}[kind]
            h = 6.5 if kind != "efa" else 27.5 - (y - 13.5)
            box(x + 1, y, zw - 4, h - 1, colour)
            label = {"public": "public subnet", "private": "private subnet", "efa": "EFA subnet"}[kind]
            text(x + 2, y + 0.5, f"{label} {cidr}", 7.5, True)
            if kind == "public" and zone in f["nat_zones"]:
                text(x + 2, y + 2.8, "NAT gateway", 7)
            if kind == "private":
                text(x + 2, y + 2.8, "system and CPU nodes", 7)
            if kind == "efa":
                text(x + 2, y + 2.8, "accelerated nodes, EFA security group", 7)
                pgs = [p["pg"] for p in f["pools"] if p["pg"]]
                if pgs:
                    text(x + 2, y + 5.3, "cluster placement groups:", 7)
                    text(x + 3, y + 7.6, "\n".join(pgs), 7)
            y += h
    # -- the control plane, the system node group, the schedulers -------------------------------------------------
    box(100, 4.5, 39, 8.5, PURPLE)
    text(101, 5.2, "EKS control plane", 8.5, True)
    text(101, 7.8, f"Kubernetes {f['kubernetes']}, private endpoint", 7)
    text(101, 10.1, "component: cluster", 7, colour="#6b7280")
    if f["system"]:
        scaling = f["system"].get("scalingConfig") or {}
        types = ", ".join(f["system"].get("instanceTypes") or [])
        box(100, 15, 39, 8.5, BLUE)
        text(101, 15.7, "system node group (private subnets)", 8, True)
        text(
            101, 18.3, f"{scaling.get('desiredSize')} x {types} ({scaling.get('minSize')}-{scaling.get('maxSize')})", 7
        )
        text(101, 20.6, "Karpenter, CoreDNS, operators", 7)
    lines = f["schedulers"] + [""] + f["platform"]
    box(100, 25.5, 39, 24, GREEN)
    text(101, 26.2, "schedulers and platform (Helm)", 8, True)
    text(101, 28.8, "\n".join(lines), 7)
    arrow((119.5, 13.3), (119.5, 14.8))
    # -- NodePools -------------------------------------------------------------------------------------------------
    pools = f["pools"]
    text(1, 51.5, "Karpenter NodePools (launched in the EFA subnet, each in its placement group)", 9, True)
    text(100, 51.7, "component: karpenter", 7, colour="#6b7280")
    pw = 138 / max(1, len(pools))
    for i, p in enumerate(pools):
        x = 1 + i * pw
        box(x, 55, pw - 2, 11.5, ORANGE)
        text(x + 1, 55.6, f"NodePool {p['name']}", 8, True)
        text(x + 1, 58.2, ", ".join(p["types"]), 7)
        text(x + 1, 60.5, f"limit {p['limit']} nodes · EFA x{p['efa']}", 7)
        if p["pg"]:
            text(x + 1, 62.8, f"PG {p['pg']}", 7)
    arrow((119.5, 49.8), (119.5, 54.7))  # schedulers place pods on the NodePools' nodes
    arrow((48, 49.8), (48, 54.7))  # the NodePools' nodes are in the EFA subnet
    # -- storage ----------------------------------------------------------------------------------------------------
    text(1, 69.5, "Storage (mounted by the training pods)", 9, True)
    if f["fsx"]:
        box(1, 73, 44, 17, ORANGE)
        text(2, 73.6, "FSx for Lustre (training AZ)", 8, True)
        text(2, 76.2, f"{f['fsx'].get('deploymentType')} {f['fsx'].get('storageCapacity')} GiB", 7)
        text(2, 78.5, "\n".join(f"{path} <-> s3://{bucket}" for path, bucket in f["dras"]), 7)
        text(2, 86.2, "component: fsx", 7, colour="#6b7280")
    if f["buckets"]:
        box(52, 73, 40, 17, GREY)
        text(53, 73.6, "S3 buckets (data repository associations)", 8, True)
        text(53, 76.2, "\n".join(f["buckets"]), 7)
        arrow((45.5, 81), (51.5, 81), both=True)
    if f["efs"]:
        box(99, 73, 40, 17, BLUE)
        text(100, 73.6, "EFS model store (every AZ)", 8, True)
        text(100, 76.2, "models, shared read-mostly files", 7)
        text(100, 86.2, "component: efs", 7, colour="#6b7280")
    arrow((23, 66.8), (23, 72.7))
    arrow((119.5, 66.8), (119.5, 72.7))
    return fig
