"""The running Pilot: its runtime and clock, the policy file, assembling it (boot), upkeep between calls, and the doctor."""
