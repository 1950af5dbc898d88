"""Deploy contracts: what AWS, EKS, Kubernetes and the Pulumi engine require of every kind the program creates.

Kept as data, keyed by the exact type token a resource is recorded under (``type`` in the render's resources.yaml):
``aws:<module>/<resource>:<Resource>``, ``kubernetes:<group/version>:<Kind>``, ``kubernetes:helm.sh/v3:Release``.
:mod:`ekstrain.contracts.kinds` holds the preconditions, parallelism and timeouts; the render refuses a recorded
kind without a contract (infra/verify/order.py), so a new resource cannot land unmodelled.
"""
