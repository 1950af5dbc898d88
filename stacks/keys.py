"""Map model locations to the keys users write in ``Pulumi.<stack>.yaml``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PROJECT = "ekstrain"
PROVIDER_KEYS = {"region": "aws:region", "defaultTags": "aws:defaultTags"}


def config_key(section: str) -> str:
    """'partitions' -> 'ekstrain:partitions'; 'region' -> 'aws:region'."""
    return PROVIDER_KEYS.get(section, f"{PROJECT}:{section}")


def key_path(loc: Sequence[int | str], raw: dict[str, Any] | None = None) -> str:
    """('partitions', 1, 'maxNodes') -> 'ekstrain:partitions[1] (gpu-h100).maxNodes'."""
    if not loc:
        return f"{PROJECT}:<stack>"
    head, *rest = loc
    out = config_key(str(head))
    node: Any = (raw or {}).get(str(head))
    for part in rest:
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                out += f" ({node['name']})"
        else:
            out += f".{part}"
            node = node.get(part) if isinstance(node, dict) else None
    return out
