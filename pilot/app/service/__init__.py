"""Pilot as a running service: boot (the composition root), upkeep between calls, the actions a human approved outside the client, and the doctor."""
