"""Encoder-space distances between OOD sets and their source, and near/mid/far regimes
(Claros-Olivares & Brockmeier, §3.3, App. B, Tables 1 and 4)."""
