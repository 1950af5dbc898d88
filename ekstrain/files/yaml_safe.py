"""PyYAML's safe loader, libyaml's where PyYAML was built with it: the same objects as ``yaml.safe_load`` (YAML 1.1's
safe schema), several times faster on the megabytes of CRDs, chart renders and build files that the program, the
render and the simulator read. Kubernetes objects with YAML 1.1's bare ``=`` read with
``ekstrain.tooling.validation.KubeYamlLoader``, built on this one; stack files with :mod:`ekstrain.files.yaml12`."""

from __future__ import annotations

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
