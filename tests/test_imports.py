"""infra/verify/imports.py: no resource is imported that the same stack creates (a first deploy's preview would
read something that does not exist yet); resources.yaml records every resource's import id."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
from conftest import run_program

from ekstrain.infra import offline
from ekstrain.infra.verify import imports


def test_prod_and_dev_import_nothing(prod_recording: offline.Recording, dev_recording: offline.Recording) -> None:
    for stack, rec in (("prod", prod_recording), ("dev", dev_recording)):
        assert [r.name for r in rec.records if r.import_id] == [], stack
        check = imports.check_recording(rec)
        assert (check.checked, check.problems) == (0, [])


def test_importing_an_access_entry_of_a_cluster_the_stack_creates_is_refused() -> None:
    # GIVEN a program that creates an EKS cluster and imports the creator's access entry on it (what the Cluster
    # component did before: cluster:principal)
    def program() -> None:
        cluster = aws.eks.Cluster("c", name="ml-prod", role_arn="arn:aws:iam::1:role/r", vpc_config={"subnet_ids": []})
        aws.eks.AccessEntry(
            "deployer",
            cluster_name="ml-prod",
            principal_arn="arn:aws:iam::1:role/deploy",
            opts=pulumi.ResourceOptions(depends_on=[cluster], import_="ml-prod:arn:aws:iam::1:role/deploy"),
        )

    rec = run_program(program)
    # WHEN checked THEN refused, naming the import, the resource it needs and the fix
    (problem,) = imports.check_recording(rec).problems
    assert problem.startswith(
        "aws:eks/accessEntry:AccessEntry deployer: imported ('ml-prod:arn:aws:iam::1:role/deploy')"
    )
    assert "its import id names aws:eks/cluster:Cluster c, which this stack creates" in problem
    assert "fix: create the resource" in problem


def test_an_import_that_only_waits_for_a_created_resource_is_refused_too() -> None:
    def program() -> None:
        role = aws.iam.Role("r", name="other", assume_role_policy="{}")
        aws.s3.Bucket(
            "b", bucket="existing-data", opts=pulumi.ResourceOptions(depends_on=[role], import_="existing-data")
        )

    (problem,) = imports.check_recording(run_program(program)).problems
    assert "it depends on aws:iam/role:Role r" in problem


def test_importing_something_outside_the_stack_is_accepted() -> None:
    def program() -> None:
        aws.s3.Bucket("b", bucket="existing-data", opts=pulumi.ResourceOptions(import_="existing-data"))

    check = imports.check_recording(run_program(program))
    assert (check.checked, check.problems) == (1, [])
