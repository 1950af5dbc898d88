"""A trailing newline never passes a check: every pattern is matched whole (``fullmatch`` or ``\\Z``), since
``re.match(r"^...$")`` accepts ``"value\\n"`` (``$`` also matches before a final newline)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ekstrain.infra.verify import aws_rules, iam
from ekstrain.stacks import labels


@given(
    good=st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True),
    tail=st.sampled_from(["\n", "\r\n", "\x00", " "]),
)
def test_label_keys_and_values_refuse_a_trailing_control_character(good: str, tail: str) -> None:
    assert labels.key_problem(good) is None and labels.value_problem(good) is None
    assert labels.key_problem(good + tail) is not None
    assert labels.value_problem(good + tail) is not None
    assert labels.key_problem(f"team.example.com/{good}{tail}") is not None


@pytest.mark.parametrize("name", ["my-bucket\n", "my-bucket"])
def test_bucket_names_are_matched_whole(name: str) -> None:
    problems = aws_rules.bucket_name_problems(name)
    assert bool(problems) == name.endswith("\n")


def test_arn_patterns_are_matched_whole() -> None:
    pattern = iam.arn_pattern("arn:${Partition}:s3:::${BucketName}")
    assert pattern.match("arn:aws:s3:::bucket")
    assert not pattern.match("arn:aws:s3:::bucket\n")


def test_the_label_budget_counts_the_labels_the_platform_sets() -> None:
    """ekstrain.stacks.labels.PROGRAM_LABELS is what karpenter_specs.node_labels adds at most (an EFA partition)."""
    from ekstrain.layout.partitions import shape
    from ekstrain.payloads import karpenter_specs

    spec = karpenter_specs.PartitionSpec(
        name="p",
        shape=shape("p", "gpu", ["p5.48xlarge"], True),
        cluster_name="c",
        availability_zone="us-west-2a",
        max_nodes=1,
        labels={"team.example.com/owner": "ml"},
    )
    added = set(karpenter_specs.node_labels(spec)) - set(spec.labels)
    assert len(added) == labels.PROGRAM_LABELS
    assert all(labels.key_problem(k) is not None for k in added), "the platform's own keys are refused to users"
