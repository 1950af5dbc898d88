"""CloudWatch Logs facts read by stack validation and by the components alike."""

from __future__ import annotations

RETENTION_DAYS: tuple[int, ...] = (
    *(1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096),
    *(1827, 2192, 2557, 2922, 3288, 3653),
)
"""The values a log group's retention may take (PutRetentionPolicy ``retentionInDays``, CloudWatch Logs API
reference): validation and construction both read this one table, so a value one accepts the other accepts."""
