"""ekstrain/payloads/kms_policy.py: every key the program creates has the account-administers statement plus its own."""

from __future__ import annotations

from ekstrain.assembly import cost, logs
from ekstrain.payloads import kms_policy

KEY = "arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/abc"


# GIVEN a key ARN in another partition WHEN any of the program's key policies is built THEN its first statement lets
# that partition's account root administer the key and the service statement follows it.
def test_every_key_policy_starts_with_the_accounts_administration() -> None:
    admin = {
        "Sid": "EnableIAMPolicies",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws-us-gov:iam::123456789012:root"},
        "Action": "kms:*",
        "Resource": "*",
    }
    assert kms_policy.key_policy(KEY, "x") == {"Version": "2012-10-17", "Id": "x", "Statement": [admin]}
    topic = cost.topic_key_policy(KEY)
    assert topic["Statement"][0] == admin and topic["Statement"][1]["Sid"] == "BudgetsEncrypt"
    assert topic["Statement"][1]["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    groups = logs.kms_key_policy(KEY, "us-gov-west-1", "c1")
    assert groups["Statement"][0] == admin and len(groups["Statement"]) == 2
    arn = groups["Statement"][1]["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    assert arn == "arn:aws-us-gov:logs:us-gov-west-1:123456789012:log-group:/ekstrain/c1/*"
