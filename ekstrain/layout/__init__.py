"""Sizing and placement maths (pure): partitions, subnets, storage and Prometheus sizes, EFA interface layouts, network
topology, Capacity Block windows, cold starts, controller requests."""
