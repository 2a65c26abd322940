"""`pilot demo`: a scripted agent drives Pilot over real MCP stdio on the paper exchange, each answer checked."""

from pilot.demo.run import DemoRun, Step, run_demo
from pilot.demo.story import demo_policy

__all__ = ["DemoRun", "Step", "demo_policy", "run_demo"]
