"""Pulumi ComponentResources of the platform, one concern per module.

Conventions (see README "Writing components"): type token ``ekstrain:<module>:<Type>``; children
named from the component name; ``parent=self`` on every child; flat, typed, frozen args
dataclasses; ``register_outputs`` last; tags passed explicitly (``default_tags`` and transforms are
invisible to tests and policies).
"""
