"""Pure builders for the workload schedulers: Helm values and manifests from a StackConfig.

Components in ``components/`` turn these into resources; tests check them directly.
"""
