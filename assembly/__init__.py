"""Assembly: turns the validated stack config into the inputs of pure builders and components.

Layering: ekstrain (pure logic) <- stacks (config) <- assembly <- components <- infra.
"""
