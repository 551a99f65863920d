"""White-box adversarial attacks (PGD-L∞, FGSM) and the adversarial evaluation sets built with them."""
from csfbench.attacks.pgd import fgsm, pgd_linf

__all__ = ["fgsm", "pgd_linf"]
