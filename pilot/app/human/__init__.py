"""The human's side: approvals the model cannot give itself, parked actions, the kill switch, the loss latch, exchange keys and the human's desk."""
