"""End-to-end tests against a real OpenClaw gateway (see conftest.py)."""
