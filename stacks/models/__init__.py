"""Typed stack configuration: one pydantic model tree for a whole ``Pulumi.<stack>.yaml``.

Each concern has its own module; :mod:`ekstrain.stacks.models.stack` assembles them and runs the
cross-field rules. YAML keys are camelCase; unknown keys are errors (``extra="forbid"``).
"""

from ekstrain.stacks.models.stack import StackConfig

__all__ = ["StackConfig"]
