"""Every container image the stack runs: an explicit version, a registry without anonymous pull-rate limits where
the image is published on one, and no re-pull of a pinned tag.

Reads every container of every object the stack applies (manifests and chart-rendered objects; the container
walker of :mod:`ekstrain.infra.verify.requests`: pod specs anywhere, Slinky's and the Prometheus Operator's CR
containers). A container image is a problem when:

- it names no version: no tag and no digest (the runtime pulls ``:latest``), or the tag ``latest``;
- it is a Docker Official Image pulled from Docker Hub (``docker.io/library/<name>``, or a bare ``<name>``): those
  are mirrored on Amazon ECR Public as ``public.ecr.aws/docker/library/<name>`` (gallery.ecr.aws/docker), which
  AWS nodes pull without Docker Hub's anonymous rate limit (100 pulls per 6 hours per IP; docs.docker.com
  docker-hub/usage);
- it has ``imagePullPolicy: Always`` on a pinned tag or digest: the image never changes, and every pod start
  then needs the registry (kubernetes docs concepts/containers/images "Image pull policy").

:func:`image_rows` is the table SUMMARY.md lists: every image with its registry and where it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ekstrain.infra.verify import Check
from ekstrain.infra.verify.requests import NOT_WORKLOADS

CHECK_NAME = "images: explicit versions, rate-limit-free registries, no re-pull of pinned tags"
ECR_DOCKER_LIBRARY = "public.ecr.aws/docker/library/"


def registry(image: str) -> str:
    """The registry host of an image reference (``docker.io`` when the first part is no host)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def split(image: str) -> tuple[str, str, str]:
    """(repository with registry, tag, digest) of an image reference; "" where absent."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    repo = name[: len(name) - len(tag) - 1] if tag else name
    return repo, tag, digest


def _image_containers(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(``<path> <name>``, container) of every container object with an ``image`` in ``obj``."""
    if obj.get("kind") in NOT_WORKLOADS:
        return

    def walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
        if isinstance(node, list):
            for item in node:
                yield from walk(item, path)
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("image"), str):
            yield (f"{path}{node.get('name') or ''}".rstrip("."), node)
        elif isinstance(node.get("image"), dict) and isinstance(node["image"].get("repository"), str):
            yield (path.rstrip(".") or "spec", node)  # chart-style image objects inside a CR are not rendered
        for key, value in node.items():
            if key not in ("metadata", "status", "image"):
                yield from walk(value, f"{path}{key}.")

    yield from walk(obj.get("spec"), "")


def image_problems(image: str, pull_policy: str | None) -> list[str]:
    """What is wrong with one container's image and pull policy (empty: nothing)."""
    out = []
    repo, tag, digest = split(image)
    if not digest and tag in ("", "latest"):
        out.append(f"{image}: no explicit version (tag {tag or 'absent: latest'}); pin a tag or a digest")
    host = registry(image)
    path = repo if host != "docker.io" or repo.startswith("docker.io/") else f"docker.io/{repo}"
    library = path.removeprefix("docker.io/")
    if host == "docker.io" and ("/" not in library or library.startswith("library/")):
        name = library.removeprefix("library/")
        out.append(
            f"{image}: a Docker Official Image from Docker Hub (anonymous pull-rate limit); use its Amazon ECR "
            f"Public mirror {ECR_DOCKER_LIBRARY}{name}{':' + tag if tag else ''}{'@' + digest if digest else ''}"
        )
    if pull_policy == "Always" and (digest or tag not in ("", "latest")):
        out.append(f"{image}: imagePullPolicy Always on a pinned version re-pulls it on every start; use IfNotPresent")
    return out


def image_rows(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per image: registry, image, pull policies seen and the objects that run it (SUMMARY.md)."""
    by_image: dict[str, dict[str, Any]] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        where = f"{obj.get('kind')}/{meta.get('namespace') or '-'}/{meta.get('name')}"
        for _, c in _image_containers(obj):
            image = c["image"] if isinstance(c.get("image"), str) else None
            if image is None:
                continue
            row = by_image.setdefault(image, {"registry": registry(image), "image": image, "pull": set(), "in": []})
            row["pull"].add(c.get("imagePullPolicy") or "default")
            if where not in row["in"]:
                row["in"].append(where)
    return [
        {
            "registry": r["registry"],
            "image": r["image"],
            "pull policy": ", ".join(sorted(r["pull"])),
            "objects": len(r["in"]),
            "first": r["in"][0],
        }
        for r in sorted(by_image.values(), key=lambda r: (r["registry"], r["image"]))
    ]


@dataclass
class ImagesCheck(Check):
    rows: list[dict[str, Any]] = field(default_factory=list)
    """:func:`image_rows` of the objects checked (SUMMARY.md's "Images" table)."""


def check(objects: Iterable[dict[str, Any]]) -> ImagesCheck:
    objects = list(objects)
    result = ImagesCheck(CHECK_NAME, what="containers", rows=image_rows(objects))
    seen: set[str] = set()
    for obj in objects:
        meta = obj.get("metadata") or {}
        where = f"{obj.get('kind')}/{meta.get('namespace') or '-'}/{meta.get('name')}"
        for name, c in _image_containers(obj):
            if not isinstance(c.get("image"), str):
                continue
            result.checked += 1
            for p in image_problems(c["image"], c.get("imagePullPolicy")):
                line = f"{where} container {name}: {p}"
                if line not in seen:
                    seen.add(line)
                    result.problems.append(line)
    return result
