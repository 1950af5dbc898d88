"""Run this project's ``__main__.py`` on Pulumi's mock engine (no CLI, no cloud) and print, as JSON, every
registration the engine received (type, name, parent, inputs) and where each imported module came from.

    python mock_run.py > recording.json      # cwd: this project; PYTHONPATH: where ekstrain is installed
"""

import hashlib
import json
import runpy
import sys
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

PROJECT = "acme-training"
IDS = {
    "aws:ec2/vpc:Vpc": "vpc-0a1b2c3d4e5f60718",
    "aws:ec2/securityGroup:SecurityGroup": "sg-0e1f2a3b4c5d6e7f8",
}


class Mocks(pulumi.runtime.Mocks):
    """Echo inputs; add the outputs the program reads; refuse every invoke (the components must not need one)."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        out = dict(args.inputs)
        rid = IDS.get(args.typ, f"{args.name}-id")
        if args.typ == "aws:ec2/subnet:Subnet":
            rid = "subnet-0" + hashlib.sha256(args.name.encode()).hexdigest()[:16]
        if args.typ == "eks:index:Cluster":
            out.update(
                clusterSecurityGroupId="sg-0c1a2b3c4d5e6f708",
                kubeconfigJson=json.dumps({"apiVersion": "v1", "kind": "Config"}),
                oidcProviderArn="arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-east-2.amazonaws.com/id/X",
                oidcIssuer="oidc.eks.us-east-2.amazonaws.com/id/X",
            )
        if args.typ == "aws:iam/role:Role":
            out.setdefault("arn", f"arn:aws:iam::111122223333:role/{args.name}")
            out.setdefault("name", args.name)
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            out["latestVersion"] = 1
        out.setdefault("id", rid)
        return rid, out

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        raise NotImplementedError(f"unexpected invoke {args.token}")


class Recorder(MockMonitor):
    """Keeps what the engine received: type, name, parent and the inputs on the wire."""

    def __init__(self, mocks: Mocks):
        super().__init__(mocks)
        self.seen: list[dict[str, Any]] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        self.seen.append(
            {
                "type": request.type,
                "name": request.name,
                "urn": response.urn,
                "id": response.id,
                "parent": request.parent,
                "custom": request.custom,
                "inputs": json_format.MessageToDict(request.object),
            }
        )
        return response


def main() -> None:
    mocks = Mocks()
    monitor = Recorder(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack="dev", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def program() -> Any:
        runpy.run_path("__main__.py", run_name="__main__")
        return pulumi.Output.from_input(None)

    program()
    modules = {
        name: getattr(module, "__file__", None)
        for name, module in sorted(sys.modules.items())
        if name.split(".")[0] in ("ekstrain", "components", "kubernetes_validate", "policy_sentry", "jsonschema")
    }
    json.dump({"resources": monitor.seen, "modules": modules, "sys_path": sys.path}, sys.stdout, default=str)


if __name__ == "__main__":
    main()
