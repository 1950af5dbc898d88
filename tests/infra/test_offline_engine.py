"""The offline engine itself must be strict, or every other test could pass without checking."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pytest
from conftest import run_program


def test_unmocked_invoke_fails() -> None:
    with pytest.raises(Exception, match="unmocked invoke aws:ec2/getAmi:getAmi"):
        run_program(lambda: aws.ec2.get_ami_output(most_recent=True, owners=["amazon"]).id)


def test_duplicate_urn_fails_like_the_engine() -> None:
    with pytest.raises(Exception, match="duplicate URN"):
        run_program(lambda: [aws.s3.Bucket("b").id, aws.s3.Bucket("b").id])


def test_outputs_that_never_resolve_fail() -> None:
    with pytest.raises(AssertionError, match="never resolved"):
        run_program(
            lambda: (
                pulumi.Output.from_input(None)
                .apply(lambda _: pulumi.Output.from_input(1))
                .apply(lambda _: (_ for _ in ()).throw(AssertionError("never resolved")))
            )
        )


def test_records_protect_and_dependencies() -> None:
    def program():
        first = aws.s3.Bucket("first")
        second = aws.s3.Bucket(
            "second", opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True, depends_on=[first])
        )
        return second.id

    rec = run_program(program)
    second = rec.one("aws:s3/bucket:Bucket", "second")
    assert second.protect and second.retain_on_delete
    assert rec.one("aws:s3/bucket:Bucket", "first").urn in second.dependencies


def test_preview_mode_builds_with_unknown_ids() -> None:
    rec = run_program(lambda: aws.ec2.Vpc("v", cidr_block="10.0.0.0/16").id, preview=True)
    assert rec.one("aws:ec2/vpc:Vpc", "v").inputs["cidrBlock"] == "10.0.0.0/16"
