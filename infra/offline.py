"""Offline engine: runs the real Pulumi program under the SDK's mock monitor and records it.

Used by the offline render (``python -m ekstrain.cli.render``) and by the tests, so both exercise the
same program with the same fakes. The fakes are strict:

- every resource's inputs are echoed back, plus the outputs real providers compute and the
  program reads (ids, ARNs, kubeconfig, OIDC issuer), so no Output silently resolves to None;
- an invoke with no handler in ``INVOKES`` raises (the program should use literals instead);
- a second registration of the same URN raises, as the real engine does;
- each registration keeps the raw request (parent, dependencies, protect, retainOnDelete,
  provider), which ``pulumi.runtime.Mocks`` alone does not see.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.sync_await import _sync_await

from ekstrain.infra import eks_children

UNKNOWN = "<unknown>"

ACCOUNT = "123456789012"
PROJECT = "ekstrain"

_ID_PREFIX = {  # id prefixes of the fakes, as AWS shapes them
    "aws:ec2/vpc:Vpc": "vpc",
    "aws:ec2/subnet:Subnet": "subnet",
    "aws:ec2/securityGroup:SecurityGroup": "sg",
    "aws:ec2/routeTable:RouteTable": "rtb",
    "aws:ec2/internetGateway:InternetGateway": "igw",
    "aws:ec2/natGateway:NatGateway": "nat",
    "aws:ec2/eip:Eip": "eipalloc",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce",
    "aws:ec2/placementGroup:PlacementGroup": "pg",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt",
    "aws:fsx/lustreFileSystem:LustreFileSystem": "fs",
    "aws:efs/fileSystem:FileSystem": "fs",
    "aws:efs/accessPoint:AccessPoint": "fsap",
    "aws:efs/mountTarget:MountTarget": "fsmt",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": "dra",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "sgr",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "sgr",
}


def _hex(*parts: str, n: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


@dataclass
class Record:
    """One resource registration as the engine received it."""

    urn: str
    type: str
    name: str
    custom: bool
    remote: bool
    parent: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    provider: str = ""
    dependencies: list[str] = field(default_factory=list)
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: list[str] = field(default_factory=list)
    import_id: str = ""
    """``import`` option: the id of an existing cloud resource the engine adopts instead of creating it."""
    synthetic: bool = False
    """Registered by the offline engine for a remote component's provider (infra/eks_children.py)."""
    delete_before_replace: bool = False
    aliases: list[dict[str, Any]] = field(default_factory=list)
    """The ``aliases`` option as sent: ``{"urn": ...}`` or ``{"spec": {"name", "type", "parentUrn", ...}}``."""
    secret_inputs: set[str] = field(default_factory=set)
    """Input paths the SDK sent as Pulumi secrets (``stringData.password``, ``values.auth.rootPassword``):
    stored encrypted in the state."""
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """The ``customTimeouts`` option as sent (``create``/``update``/``delete`` durations such as ``30m``): what the
    engine waits before giving up on the provider's operation (ekstrain/contracts/kinds.py says where it is set)."""
    transforms: list[Any] = field(default_factory=list, repr=False, compare=False)
    """The ``transforms`` option's functions (resolved from the request's callbacks): for a remote component, the
    engine runs them on every child its provider registers, and so does :meth:`RecordingMonitor._register_children`."""


class OfflineMocks(pulumi.runtime.Mocks):
    """Provider fakes: echo inputs, add computed outputs, refuse unknown invokes."""

    def __init__(self, region: str = "us-west-2"):
        self.region = region
        self.monitor: RecordingMonitor | None = None
        self.invokes: list[pulumi.runtime.MockCallArgs] = []

    # -- resources ---------------------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        out = dict(args.inputs)
        rid = f"{_ID_PREFIX.get(args.typ, args.name)}-{_hex(args.typ, args.name)}"
        handler = getattr(self, "_" + args.typ.replace(":", "_").replace("/", "_").replace(".", "_"), None)
        if handler is not None:
            out.update(handler(args, rid))
        elif args.custom and args.typ.startswith("aws:"):
            out.setdefault("arn", f"arn:aws:mock:{self.region}:{ACCOUNT}:{args.name}")
        if args.typ.startswith("aws:") and "name" not in out and args.custom:
            out["name"] = f"{args.name}-{_hex(args.name, n=7)}"
        out.setdefault("id", rid)
        return rid, out

    def _eks_index_Cluster(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802 (type token)
        name = args.inputs.get("name", args.name)
        issuer = f"oidc.eks.{self.region}.amazonaws.com/id/{_hex(name, n=32).upper()}"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "aws",
            "clusters": [
                {
                    "name": "kubernetes",
                    "cluster": {
                        "server": f"https://{_hex(name, n=32).upper()}.gr7.{self.region}.eks.amazonaws.com",
                        "certificate-authority-data": "T0ZGTElORQ==",
                    },
                }
            ],
            "contexts": [{"name": "aws", "context": {"cluster": "kubernetes", "user": "aws"}}],
            "users": [
                {
                    "name": "aws",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": ["eks", "get-token", "--cluster-name", name, "--region", self.region],
                        }
                    },
                }
            ],
        }
        return {
            "kubeconfig": kubeconfig,
            "kubeconfigJson": json.dumps(kubeconfig),
            "clusterSecurityGroupId": f"sg-{_hex(name, 'cluster')}",
            "nodeSecurityGroupId": f"sg-{_hex(name, 'node')}",
            "oidcProviderArn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{issuer}",
            "oidcProviderUrl": f"https://{issuer}",
            "oidcIssuer": issuer,
        }

    def _aws_iam_role_Role(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        name = args.inputs.get("name") or f"{args.name}-{_hex(args.name, n=7)}"
        return {"name": name, "arn": f"arn:aws:iam::{ACCOUNT}:role/{name}", "uniqueId": f"AROA{_hex(name).upper()}"}

    def _aws_kms_key_Key(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        key_id = f"{_hex(args.name, n=8)}-{_hex(args.name, 'k', n=4)}-4000-8000-{_hex(args.name, 'x', n=12)}"
        return {"keyId": key_id, "arn": f"arn:aws:kms:{self.region}:{ACCOUNT}:key/{key_id}"}

    def _aws_sqs_queue_Queue(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        name = args.inputs.get("name") or args.name
        return {
            "name": name,
            "arn": f"arn:aws:sqs:{self.region}:{ACCOUNT}:{name}",
            "url": f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT}/{name}",
        }

    def _aws_s3_bucket_Bucket(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        prefix = args.inputs.get("bucketPrefix") or f"{args.name}-"
        bucket = args.inputs.get("bucket") or f"{prefix}{_hex(args.name, n=8)}"
        return {"bucket": bucket, "arn": f"arn:aws:s3:::{bucket}", "id": bucket}

    def _aws_fsx_lustreFileSystem_LustreFileSystem(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        return {
            "dnsName": f"{rid}.fsx.{self.region}.amazonaws.com",
            "mountName": _hex(rid, n=8),
            "arn": f"arn:aws:fsx:{self.region}:{ACCOUNT}:file-system/{rid}",
        }

    def _aws_efs_fileSystem_FileSystem(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        return {
            "arn": f"arn:aws:elasticfilesystem:{self.region}:{ACCOUNT}:file-system/{rid}",
            "dnsName": f"{rid}.efs.{self.region}.amazonaws.com",
        }

    def _aws_efs_accessPoint_AccessPoint(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        return {"arn": f"arn:aws:elasticfilesystem:{self.region}:{ACCOUNT}:access-point/{rid}"}

    def _aws_ec2_launchTemplate_LaunchTemplate(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        arn = f"arn:aws:ec2:{self.region}:{ACCOUNT}:launch-template/{rid}"
        return {"latestVersion": 1, "defaultVersion": 1, "arn": arn}

    def _aws_cloudwatch_logGroup_LogGroup(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        name = args.inputs.get("name") or args.name
        return {"name": name, "arn": f"arn:aws:logs:{self.region}:{ACCOUNT}:log-group:{name}"}

    def _aws_amp_workspace_Workspace(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        ws = f"ws-{_hex(args.name, n=8)}-{_hex(args.name, 'w', n=4)}-4000-8000-{_hex(args.name, 'p', n=12)}"
        return {
            "arn": f"arn:aws:aps:{self.region}:{ACCOUNT}:workspace/{ws}",
            "id": ws,
            "prometheusEndpoint": f"https://aps-workspaces.{self.region}.amazonaws.com/workspaces/{ws}/",
        }

    def _random_index_randomPassword_RandomPassword(self, args: Any, rid: str) -> dict[str, Any]:  # noqa: N802
        return {"result": "offline-" + _hex(args.name, n=int(args.inputs.get("length", 32)) - 8)}

    # -- invokes -----------------------------------------------------------------------------
    INVOKES: dict[str, Callable[[OfflineMocks, dict[str, Any]], dict[str, Any]]] = {}

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        self.invokes.append(args)
        handler = self.INVOKES.get(args.token)
        if handler is None:
            raise NotImplementedError(
                f"unmocked invoke {args.token}: the program should not need it offline "
                "(use a literal, or add a handler to OfflineMocks.INVOKES)"
            )
        return handler(self, dict(args.args)), None


class RecordingMonitor(MockMonitor):
    """MockMonitor that keeps every registration and rejects duplicate URNs like the engine."""

    def __init__(self, mocks: OfflineMocks):
        super().__init__(mocks)
        self.records: list[Record] = []
        self._by_urn: dict[str, Record] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        if urn in self._by_urn:
            raise ValueError(f"duplicate URN {urn}: two resources share type {request.type} and name {request.name}")
        # Decode without re-hydrating resource references: MockMonitor's own decoding builds
        # Resource objects on this executor thread's event loop ("attached to a different loop").
        wire = json_format.MessageToDict(request.object)
        inputs = _decode(wire)
        record = Record(
            urn=urn,
            type=request.type,
            name=request.name,
            custom=bool(request.custom),
            remote=bool(request.remote),
            parent=request.parent,
            inputs=inputs,
            provider=request.provider,
            dependencies=list(request.dependencies),
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            ignore_changes=list(request.ignoreChanges),
            import_id=request.importId,
            delete_before_replace=bool(request.deleteBeforeReplace),
            aliases=[json_format.MessageToDict(a) for a in request.aliases],
            secret_inputs=_secret_paths(wire),
            custom_timeouts={
                k: v
                for k in ("create", "update", "delete")
                if (v := getattr(request.customTimeouts, k, "") if request.HasField("customTimeouts") else "")
            },
            transforms=pulumi_mocks._resolve_callbacks(request.transforms),  # noqa: SLF001
        )
        self._by_urn[urn] = record
        self.records.append(record)
        rid, state = self.mocks.new_resource(
            pulumi.runtime.MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=bool(request.custom),
            )
        )
        record.outputs = state
        if request.type in REMOTE_CHILDREN:
            self._register_children(record)
        rid = rid or ""  # Mocks.new_resource may return no id; the engine's "no id" is the empty string
        # The engine, not the SDK, marks additionalSecretOutputs (RandomPassword.result) secret: do the same.
        secret_outputs = set(request.additionalSecretOutputs)
        obj = _sync_await(
            rpc.serialize_properties(
                {
                    k: {rpc._special_sig_key: rpc._special_secret_sig, "value": v} if k in secret_outputs else v
                    for k, v in state.items()
                },
                {},
            )
        )
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, rid, state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=rid, object=obj)

    def _register_children(self, component: Record) -> None:
        """Register what the remote component's provider would (infra/eks_children.py): the mock engine never
        constructs remote components, so without this no check would see the EKS cluster, its role, access
        entries, add-ons, OIDC provider or node group."""
        outside: list[str] = []
        if component.type == "eks:index:Cluster":
            region = getattr(self.mocks, "region", "us-west-2")
            children = eks_children.cluster_children(
                component.name, component.inputs, _partition(region), str(component.outputs.get("oidcProviderUrl"))
            )
        else:
            ref = component.inputs.get("cluster") or {}
            cluster = self._by_urn.get(ref.get("$ref", "")) if isinstance(ref, dict) else None
            cluster_name = (cluster.inputs.get("name") if cluster else None) or UNKNOWN
            children = eks_children.node_group_children(component.name, component.inputs, cluster_name)
            # The node group is created once the cluster's EKS cluster exists (nodegroup.ts: its clusterName input).
            if cluster is not None:
                outside = [
                    r.urn for r in self.records if r.parent == cluster.urn and r.type == "aws:eks/cluster:Cluster"
                ]
        urns: dict[str, str] = {}
        for child in children:
            parent = urns.get(child.parent, component.urn) if child.parent else component.urn
            urn = self.make_urn(parent, child.type, child.name)
            urns[child.name] = urn
            if urn in self._by_urn:
                raise ValueError(f"duplicate URN {urn}: a child of {component.name} clashes with another resource")
            inputs = _resolve_refs(child.inputs, self._by_urn, urns)
            inputs = _transformed(component.transforms, child, inputs)
            record = Record(
                urn=urn,
                type=child.type,
                name=child.name,
                custom=child.custom,
                remote=False,
                parent=parent,
                inputs=inputs,
                # The provider constructs children once the component's inputs resolve: they wait for what it waits for.
                dependencies=sorted(
                    {*component.dependencies, *outside, *(urns[d] for d in child.dependencies if d in urns)}
                ),
                # Children inherit protect from their component (the provider's SDK does, as a local one would).
                protect=component.protect,
                ignore_changes=list(child.ignore_changes),
                synthetic=True,
            )
            if child.custom:
                _, record.outputs = self.mocks.new_resource(
                    pulumi.runtime.MockResourceArgs(typ=child.type, name=child.name, inputs=inputs, custom=True)
                )
            self._by_urn[urn] = record
            self.records.append(record)


REMOTE_CHILDREN = ("eks:index:Cluster", "eks:index:ManagedNodeGroup")


def _transformed(transforms: list[Any], child: eks_children.Child, inputs: dict[str, Any]) -> dict[str, Any]:
    """A child's inputs after the component's ``transforms`` (the engine runs a remote component's transforms on
    the children its provider registers: Pulumi "transforms" reach packaged components' children)."""
    for fn in transforms:
        result = fn(
            pulumi.ResourceTransformArgs(
                custom=child.custom, type_=child.type, name=child.name, props=inputs, opts=pulumi.ResourceOptions()
            )
        )
        if result is not None:
            inputs = dict(result.props)
    return inputs


def _partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"


def _resolve_refs(value: Any, by_urn: dict[str, Record], siblings: dict[str, str]) -> Any:
    """``<ref name>`` placeholders of eks_children -> the sibling's resource reference, as the engine sends it."""
    if isinstance(value, dict):
        return {k: _resolve_refs(v, by_urn, siblings) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_refs(v, by_urn, siblings) for v in value]
    if isinstance(value, str) and value.startswith("<ref ") and value.endswith(">"):
        # ``<ref sibling.attribute>``: the real provider passes the sibling's output (its ARN or name).
        name, _, attribute = value[5:-1].rpartition(".")
        sibling = by_urn.get(siblings.get(name, ""))
        return sibling.outputs.get(attribute, UNKNOWN) if sibling is not None else UNKNOWN
    return value


def _secret_paths(value: Any, path: str = "") -> set[str]:
    """Dotted paths of the values the SDK wrapped as secrets in a protobuf-JSON object."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return {path}
        return set().union(*(_secret_paths(v, f"{path}.{k}" if path else k) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(_secret_paths(v, f"{path}[{i}]") for i, v in enumerate(value)))
    return set()


def _decode(value: Any) -> Any:
    """Protobuf-JSON inputs -> plain data; resource references become ``{"$ref": urn}``."""
    if isinstance(value, dict):
        sig = value.get(rpc._special_sig_key)
        if sig == rpc._special_resource_sig:
            return {"$ref": value.get("urn"), "id": value.get("id")}
        if sig == rpc._special_secret_sig:
            return _decode(value.get("value"))
        if sig == rpc._special_output_value_sig:
            return _decode(value.get("value")) if "value" in value else UNKNOWN
        return {k: _decode(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if value == rpc.UNKNOWN:
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def plain(value: Any) -> Any:
    """Inputs as YAML/JSON-safe data: resource references become ``<ref Type>``, unknowns ``<unknown>``."""
    if isinstance(value, dict) and "$ref" not in value:
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict) and "$ref" in value:
        return f"<ref {value['$ref']}>"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return "<unknown>"


@dataclass
class Recording:
    """Everything one offline run of a program registered."""

    records: list[Record]
    outputs: dict[str, Any]
    invokes: list[Any]

    def of_type(self, type_token: str) -> list[Record]:
        return [r for r in self.records if r.type == type_token]

    def one(self, type_token: str, name: str) -> Record:
        found = [r for r in self.records if r.type == type_token and r.name == name]
        if len(found) != 1:
            names = sorted(r.name for r in self.of_type(type_token))
            raise AssertionError(f"expected one {type_token} named {name!r}, found {len(found)}; names: {names}")
        return found[0]

    def by_urn(self, urn: str) -> Record | None:
        return next((r for r in self.records if r.urn == urn), None)

    def children_of(self, urn: str) -> Iterator[Record]:
        return (r for r in self.records if r.parent == urn)

    def top_component(self, record: Record) -> Record:
        """The outermost component a record belongs to (the render groups manifests by it)."""
        current = record
        while True:
            parent = self.by_urn(current.parent) if current.parent else None
            if parent is None or parent.type == "pulumi:pulumi:Stack":
                return current
            current = parent


def run(
    program: Callable[[], Any],
    config: dict[str, str],
    secret_keys: list[str] | None = None,
    stack: str = "offline",
    region: str | None = None,
    preview: bool = False,
) -> Recording:
    """Run ``program`` once under fresh mocks with ``config``; return what it registered.

    ``program`` returns the value to resolve (usually the stack outputs dict); if it never
    resolves (an Output unknown in preview or missing from the fakes) this raises.
    """
    mocks = OfflineMocks(region or config.get("aws:region", "us-west-2"))
    monitor = RecordingMonitor(mocks)
    mocks.monitor = monitor
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config), secret_keys=list(secret_keys or []))
    box: dict[str, Any] = {}

    @pulumi.runtime.test
    def _run() -> Any:
        return pulumi.Output.from_input(program()).apply(lambda value: box.setdefault("value", value))

    _run()
    if "value" not in box and not preview:
        raise AssertionError("program outputs never resolved: an Output is missing from the offline fakes")
    return Recording(records=list(monitor.records), outputs=box.get("value") or {}, invokes=list(mocks.invokes))
