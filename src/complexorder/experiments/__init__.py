"""Experiment runners: thin drivers of the library, configured by files in ``complexorder/configs``."""
