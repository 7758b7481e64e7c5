"""clawwatch: watch OpenClaw sessions for tool-call loops and token burn, and stop them."""

__version__ = "0.1.0"
