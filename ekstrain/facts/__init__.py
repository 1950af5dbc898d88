"""Tables and constants that validation (stacks/) and construction (assembly/, components/) both read: the instance
catalog, offerings, regions, pinned versions and their compatibility, names and labels, prices."""
