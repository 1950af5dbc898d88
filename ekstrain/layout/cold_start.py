"""How long a pod waits on a cold partition: the node's launch, the health gate's pre-flight, the image pull.

One table for the render and the simulator: ``ekstrain simulate --timeline`` launches nodes in
:data:`LAUNCH_MINUTES` (``Mix.launch_minutes``; a mix file's ``launchMinutes`` overrides it) plus
``health_gate.gate_minutes``, and the JupyterHub profiles give KubeSpawner a ``start_timeout`` of the same sum plus
the notebook image's pull (assembly/jupyterhub.py), so a notebook on a partition with no node yet starts instead of
being given up on at z2jh's default ``singleuser.startTimeout`` of 300 s (charts/jupyterhub 4.4.0 values.yaml).
"""

from __future__ import annotations

import math

from ekstrain.facts import catalog
from ekstrain.payloads import health_gate

LAUNCH_MINUTES: dict[str, int] = {catalog.GPU: 10, catalog.TRAINIUM: 10, "cpu": 3}
"""EC2 boot + kubelet join + device plugins and EFA/Neuron drivers ready, per instance family (an accelerator
instance with 4-32 EFA interfaces boots and attaches slower than a CPU one; the platform's measured range)."""

PULL_MIB_PER_SECOND = 50
"""Image pull + unpack rate on a fresh node (containerd unpacks layers one at a time on the root gp3 volume;
125 MiB/s is gp3's baseline throughput, unpacking compressed layers is slower than that): an estimate."""
IMAGE_GIB: dict[str, float] = {
    catalog.GPU: 6.0,
    catalog.TRAINIUM: 9.0,
}
"""Compressed size of the notebook image per family (quay.io/jupyter/pytorch-notebook:cuda12 with CUDA and PyTorch;
the Neuron SDK training image with torch-neuronx and its compilers), rounded up."""
TRAINING_IMAGE_GIB = 10.0
"""Compressed size of a training image (an NGC PyTorch image, nvcr.io/nvidia/pytorch:25.01-py3, is ~10 GB of
layers): what the first step of a job on a fresh node waits for (``ekstrain simulate --deploy``)."""
NEURON_SINGLEUSER_MINUTES = 2
"""The Neuron image has no Jupyter: ``pip install jupyterhub jupyterlab`` at start (assembly/jupyterhub.py)."""
MARGIN_MINUTES = 3
"""Scheduling, Karpenter's batching window, the EFS access point of the user's home, the server's own start."""


def pull_seconds(gib: float) -> int:
    """Seconds to pull and unpack an image of ``gib`` compressed GiB on a node that has none of its layers."""
    return math.ceil(gib * 1024 / PULL_MIB_PER_SECOND)


def pull_minutes(family: str) -> int:
    """Minutes to pull and unpack the notebook image of ``family`` on a node that has none of its layers."""
    return math.ceil(pull_seconds(IMAGE_GIB.get(family, 0.0)) / 60)


def node_minutes(family: str, gated: bool = True) -> int:
    """A fresh node of ``family`` until it takes pods: launch, then the health gate's pre-flight when gated."""
    launch = LAUNCH_MINUTES.get(family, LAUNCH_MINUTES["cpu"])
    return launch + (health_gate.gate_minutes(family) if gated else 0)


def notebook_start_minutes(family: str, gated: bool = True) -> int:
    """A notebook server on a cold partition: node, image pull, the Neuron image's Jupyter install, a margin."""
    extra = NEURON_SINGLEUSER_MINUTES if family == catalog.TRAINIUM else 0
    return node_minutes(family, gated) + pull_minutes(family) + extra + MARGIN_MINUTES


def notebook_start_timeout(family: str, gated: bool = True) -> int:
    """KubeSpawner ``start_timeout`` (seconds) for a profile of ``family``: the cold start, never below z2jh's
    default 300 s."""
    return max(300, notebook_start_minutes(family, gated) * 60)
