"""Config problems: the stack layer's name for :mod:`ekstrain.facts.config_errors` (one class, so ``except ConfigError``
catches what a builder raises and what validation raises alike)."""

from __future__ import annotations

from ekstrain.facts.config_errors import ConfigError, ConfigIssue

__all__ = ["ConfigError", "ConfigIssue"]
