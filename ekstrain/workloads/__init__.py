"""Workload kinds described once (ekstrain/workloads/base.py says what a kind declares; registry.py lists them).

One module per kind: ``mpijob``, ``pytorchjob``, ``trainjob``, ``volcano`` (Volcano Job), ``ray`` (RayJob,
RayCluster), ``job`` (batch Job: the Trainium Indexed Job), ``sbatch`` (Slurm), ``pod`` (Pod, notebook server),
``apps`` (Deployment, StatefulSet, ReplicaSet), ``slinky`` (NodeSet, LoginSet). CONTRIBUTING.md "Add a
scheduler" is the recipe.
"""
