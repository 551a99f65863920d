"""Encoder-space distances between OOD sets and their source, and near/mid/far regimes (spec 000 §6)."""
