"""ekstrain's CrossGuard policy pack: plain rules (``rules``) and their pulumi-policy adapters (``pack``)."""
