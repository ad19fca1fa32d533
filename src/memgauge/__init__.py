"""memgauge: evaluations of long-term multimodal memory."""

__version__ = "0.1.0"
