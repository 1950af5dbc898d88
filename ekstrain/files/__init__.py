"""Files in and out: where files are, the read guard, the write guard, per-process file memos, YAML 1.2 as the Pulumi
CLI reads it, and the one fast safe YAML loader."""
