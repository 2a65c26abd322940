"""The human's side: approvals the model cannot give itself, the kill switch, exchange keys and the human's desk (CLI and console)."""
