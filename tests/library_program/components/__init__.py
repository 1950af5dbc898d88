"""The user's own ``components`` package: it must import, and ekstrain's must not shadow it."""

OWNER = "acme-ml"


def tags(name: str) -> dict[str, str]:
    return {"Owner": OWNER, "Name": f"acme-{name}"}
