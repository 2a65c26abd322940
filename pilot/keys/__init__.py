"""Exchange API keys: stored encrypted, accepted only with least privilege, never shown."""
