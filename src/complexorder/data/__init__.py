"""Data: loaders for the real data sets, the synthetic task, batching and downloads."""
