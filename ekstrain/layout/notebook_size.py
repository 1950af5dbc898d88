"""A JupyterHub notebook server's guarantee: one fact read by the hub's profiles (assembly/jupyterhub.py) and by the
stack rule that each profile's partition has room for it (stacks/rules/jupyterhub.py), which sits below assembly."""

NOTEBOOK_CPU = 4
"""CPUs kubespawner guarantees a notebook server (``cpu_guarantee``)."""
NOTEBOOK_MEMORY_GIB = 32
"""GiB kubespawner guarantees a notebook server (``mem_guarantee``, its G being 1024**3)."""
