"""Config problems: the stack layer's name for :mod:`ekstrain.config_errors` (one class, so ``except ConfigError``
catches what a builder raises and what validation raises alike)."""

from __future__ import annotations

from ekstrain.config_errors import ConfigError, ConfigIssue

__all__ = ["ConfigError", "ConfigIssue"]
