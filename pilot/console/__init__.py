"""`pilot console`: a local web page for the human (live receipts, approvals, the kill switch, policy, charts).

Layered like the CLI: it imports pilot.app (and pilot.core for the policy's types), never the store or an
exchange. `build_app(home)` is the Starlette app; `pilot.cli.console` serves it on 127.0.0.1.
"""
