"""Programs the platform ships into its pods (standard library only; each is read as text into a ConfigMap): the health
guard, the EFA exporter, checkpoint rotation, the Slurm gang admission."""
