"""Shift sets: CIFAR-10-C-style corruptions (:mod:`.corruptions`), the official archive layout
(:mod:`.cifar_c`) and the names of generated sets (:mod:`.names`, imported by the config without numpy work)."""
