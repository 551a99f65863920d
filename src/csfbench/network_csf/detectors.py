"""Detectors that need the network (docs/methods.md §5.14): ODIN with input perturbation, GRAM and RankFeat.

The CSFs of :mod:`csfbench.csf` read the stored outputs (logits, penultimate features); these three run
the trained classifier on images, so they take a :class:`~csfbench.models.network.Classifier` in eval
mode and batches of normalised images ``x`` (N×3×S×S float32, on the model's device).  They read only
the C class logits (Deep Gamblers' abstention output is dropped), compute in float32 except where noted
(GRAM: float64), never use mixed precision (ODIN's perturbation is below bfloat16's resolution), and
return confidences: higher = more in-distribution.

* **ODIN-IP** (Liang, Li & Srikant, ICLR 2018, arXiv 1706.02690, §3): the softmax maximum at temperature
  ``T`` of ``x̃ = x − ε · sign(−∇ₓ log S_ŷ(x; T)) / σ``, ``σ`` the per-channel normalisation std, so that
  ``ε`` is in pixel units of [0, 1] images (the authors' code).  ``T`` and ``ε`` are picked from a grid by
  validation −AUGRC (:func:`tune_odin`).
* **GRAM** (Sastry & Oore, ICML 2020, arXiv 1912.12510, §3): per block map ``F_l`` (C_l×S) and power
  ``p``, the row sums of ``G_l^p = (F_l^p F_l^{pᵀ})^{1/p}`` (sign kept); their per-class minima and
  maxima over the training rows *predicted* as the class; a sample's deviation from the bounds of its
  predicted class summed per layer, each layer divided by its mean deviation on the validation split,
  the sum negated.
* **RankFeat** (Song, Sebe & Wang, NeurIPS 2022, arXiv 2209.08590, §3): the rank-1 term ``s₁u₁v₁ᵀ`` of
  the last block's C×S feature map removed (exact SVD, or power iteration), the rest of the forward pass
  run on the edited map, the energy score ``LSE(z)``.

GRAM and RankFeat read the model's block maps (:meth:`~csfbench.models.network.Classifier.block_maps`: VGG-13's
conv stacks, a ResNet's ``layer1`` … ``layer4``, a ViT's transformer blocks; the last one is RankFeat's map);
ODIN-IP reads only the class logits and their input gradient, so it runs on any architecture
(:mod:`csfbench.network_csf.architectures` says which have block maps).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import torch
from torch.nn import functional as F

from csfbench.metrics import augrc
from csfbench.models.network import Classifier
from csfbench.network_csf.architectures import BLOCK_MAP_DETECTORS

log = logging.getLogger(__name__)

#: the network-pass CSFs, in the order they are computed and reported
NAMES = ("ODIN-IP", "GRAM", "RankFeat")
#: GRAM's guard of the relative deviation against a zero bound (the authors' code)
GRAM_EPS = 1e-6

#: a source of batches: called once per pass, yields normalised image tensors in a fixed order
Batches = Callable[[], Iterable[torch.Tensor]]


@dataclass(frozen=True)
class NetworkSettings:
    """What the network-pass CSFs run with: the methods, ODIN's grid, GRAM's powers, RankFeat's solver.

    ``power_iterations`` 0 = exact SVD."""

    methods: tuple[str, ...]
    temperatures: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
    noises: tuple[float, ...] = (0.0, 0.0007, 0.0014, 0.0028)
    powers: tuple[int, ...] = tuple(range(1, 11))
    power_iterations: int = 0

    def __post_init__(self):
        unknown = sorted(set(self.methods) - set(NAMES))
        if unknown:
            raise ValueError(f"unknown network-pass CSF(s) {unknown}; known: {list(NAMES)}")
        if not self.temperatures or min(self.temperatures) <= 0:
            raise ValueError(f"ODIN temperatures must be positive, got {self.temperatures}")
        if not self.noises or min(self.noises) < 0:
            raise ValueError(f"ODIN noise magnitudes must be >= 0, got {self.noises}")
        if not self.powers or min(self.powers) < 1:
            raise ValueError(f"GRAM powers must be integers >= 1, got {self.powers}")
        if self.power_iterations < 0:
            raise ValueError(f"RankFeat power_iterations must be >= 0, got {self.power_iterations}")

    @classmethod
    def from_config(cls, section: dict) -> "NetworkSettings":
        """From the config's ``network_csf`` section (defaults filled in by the schema)."""
        return cls(tuple(section["methods"]), tuple(float(t) for t in section["odin"]["temperatures"]),
                   tuple(float(e) for e in section["odin"]["noise"]), tuple(int(p) for p in section["gram"]["powers"]),
                   int(section["rankfeat"]["power_iterations"]))


# ---------------------------------------------------------------------------------------------
# ODIN with input perturbation
# ---------------------------------------------------------------------------------------------

def _channel_scale(x: torch.Tensor, std: Sequence[float]) -> torch.Tensor:
    return torch.as_tensor(std, dtype=x.dtype, device=x.device).view(1, -1, *([1] * (x.ndim - 2)))


def _sign_step(x: torch.Tensor, logits: torch.Tensor, temperature: float, std: Sequence[float],
               retain_graph: bool = False) -> torch.Tensor:
    """``sign(∇ₓ −log S_ŷ(x; T)) / σ``, the direction ODIN moves ``x`` against, from class logits computed from
    ``x`` with a graph (ŷ = their argmax).

    The loss is summed over the batch, so each row's gradient is its own; only the input gets a gradient."""
    with torch.enable_grad():
        scaled = logits / temperature
        loss = F.cross_entropy(scaled, scaled.argmax(1), reduction="sum")
        (grad,) = torch.autograd.grad(loss, x, retain_graph=retain_graph)
    return grad.sign() / _channel_scale(x, std)


@torch.no_grad()
def _max_softmax(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(logits.float() / temperature, dim=1).amax(1).double()


def odin_table(model: Classifier, x: torch.Tensor, temperatures: Sequence[float], noises: Sequence[float],
               std: Sequence[float]) -> torch.Tensor:
    """ODIN confidences of ``x`` for every (T, ε): (len(temperatures), len(noises), N) float64.

    One forward pass with a graph gives every temperature's gradient (one backward pass each) and every ε = 0
    value (the tempered softmax of ``x`` itself); each (T, ε > 0) costs one forward pass of its x̃."""
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        logits = model.class_logits(x).float()
        out = []
        for i, t in enumerate(temperatures):
            step = (_sign_step(x, logits, t, std, retain_graph=i < len(temperatures) - 1)
                    if any(e > 0 for e in noises) else None)
            with torch.no_grad():
                out.append(torch.stack([_max_softmax(logits if e == 0 else model.class_logits(x.detach() - e * step), t)
                                        for e in noises]))
    return torch.stack(out)


def odin_grid(model: Classifier, x: torch.Tensor, temperature: float, noises: Sequence[float],
              std: Sequence[float]) -> torch.Tensor:
    """ODIN confidences of ``x`` at one temperature for every noise magnitude: (len(noises), N) float64."""
    return odin_table(model, x, (temperature,), noises, std)[0]


def odin(model: Classifier, x: torch.Tensor, temperature: float, noise: float, std: Sequence[float]) -> torch.Tensor:
    """ODIN's confidence (N,) float64: ``max_k softmax(z(x̃)/T)_k``, x̃ the perturbed input."""
    return odin_grid(model, x, temperature, (noise,), std)[0]


def tune_odin(model: Classifier, val: Batches, val_correct: np.ndarray, temperatures: Sequence[float],
              noises: Sequence[float], std: Sequence[float]) -> dict:
    """Grid search of (T, ε) maximising −AUGRC of ODIN's confidence on the validation rows
    (misclassification as the failure); ties go to the first grid point (temperatures, then noises, in
    the given order).  Returns params {temperature, noise}, ``probed`` (G×2) and ``objective`` (G,)."""
    grid = [(t, e) for t in temperatures for e in noises]
    table = np.concatenate([odin_table(model, x, temperatures, noises, std).cpu().numpy() for x in val()], axis=2)
    residual = (~np.asarray(val_correct, dtype=bool)).astype(np.float64)
    if table.shape[2] != len(residual):
        raise ValueError(f"ODIN tuning: {table.shape[2]} validation images, {len(residual)} correctness flags")
    rows = table.reshape(len(grid), -1)  # grid order: temperatures, then noises
    objective = np.array([-augrc(row, residual) if np.isfinite(row).all() else -1.0 for row in rows])
    best = int(np.argmax(objective))  # first maximum: the grid order breaks ties
    params = {"temperature": float(grid[best][0]), "noise": float(grid[best][1])}
    log.info("ODIN-IP: best %s (validation -AUGRC %.6g over %d grid points)", params, objective[best], len(grid))
    return {"params": params, "probed": np.asarray(grid, dtype=np.float64), "objective": objective}


# ---------------------------------------------------------------------------------------------
# GRAM
# ---------------------------------------------------------------------------------------------

def gram_rows(block_map: torch.Tensor, power: int) -> torch.Tensor:
    """Row sums of the order-``p`` Gram matrix of each map, sign kept: (N, C) float64.

    ``block_map`` is N×C×… (positions flattened).  ``Σ_j (F^p F^{pᵀ})_{ij} = Σ_s F^p_{is} Σ_j F^p_{js}``, so
    the C×C matrix is never formed; then ``sign(g)·|g|^{1/p}``."""
    return gram_rows_by_power(block_map, (power,))[0]


def gram_rows_by_power(block_map: torch.Tensor, powers: Sequence[int]) -> list[torch.Tensor]:
    """:func:`gram_rows` for every power in ``powers`` (the elementwise powers by repeated multiplication)."""
    f = block_map.detach().flatten(2).double()
    fp, done, out = f, 1, {}
    for p in sorted(set(powers)):
        while done < p:
            fp, done = fp * f, done + 1
        g = torch.einsum("ncs,ns->nc", fp, fp.sum(1))
        out[p] = g.sign() * (g.abs() if p == 1 else g.abs() ** (1.0 / p))
    return [out[p] for p in powers]


def gram_deviation(g: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """Σ over entries of the relative excursion of ``g`` outside [low, high]: (N,).

    ``(low − g)/|low + 1e-6|`` below, ``(g − high)/|high + 1e-6|`` above, 0 inside (Sastry & Oore's code)."""
    below = torch.relu(low - g) / torch.abs(low + GRAM_EPS)
    above = torch.relu(g - high) / torch.abs(high + GRAM_EPS)
    return (below + above).sum(1)


@dataclass
class GramFit:
    """Per block map ``l``: ``mins[l]``, ``maxs[l]`` (P×K×C_l float64, P powers, K classes) and the
    validation normaliser ``norms`` (L,)."""

    powers: tuple[int, ...]
    mins: list[torch.Tensor]
    maxs: list[torch.Tensor]
    norms: torch.Tensor = field(default_factory=lambda: torch.ones(0, dtype=torch.float64))
    #: classes no training row was predicted as (their bounds are those of all training rows)
    unpredicted: tuple[int, ...] = ()


class GramBounds:
    """Streaming per-class minima and maxima of the Gram rows over the training batches."""

    def __init__(self, n_classes: int, powers: Sequence[int]):
        self.n_classes, self.powers = n_classes, tuple(powers)
        self.mins: list[torch.Tensor] | None = None
        self.maxs: list[torch.Tensor] | None = None
        self.counts = torch.zeros(n_classes, dtype=torch.int64)

    def update(self, maps: Sequence[torch.Tensor], pred: torch.Tensor) -> None:
        if self.mins is None:
            shape = [(len(self.powers), self.n_classes + 1, m.shape[1]) for m in maps]  # last row: every class
            self.mins = [torch.full(s, torch.inf, dtype=torch.float64, device=pred.device) for s in shape]
            self.maxs = [torch.full(s, -torch.inf, dtype=torch.float64, device=pred.device) for s in shape]
        everyone = torch.full_like(pred, self.n_classes)
        for l, block_map in enumerate(maps):
            for i, g in enumerate(gram_rows_by_power(block_map, self.powers)):
                for rows in (pred, everyone):
                    index = rows[:, None].expand_as(g)
                    self.mins[l][i].scatter_reduce_(0, index, g, "amin")
                    self.maxs[l][i].scatter_reduce_(0, index, g, "amax")
        self.counts += torch.bincount(pred.cpu(), minlength=self.n_classes)

    def fit(self) -> GramFit:
        if self.mins is None:
            raise ValueError("GRAM: no training rows")
        unpredicted = tuple(int(c) for c in torch.nonzero(self.counts == 0).flatten())
        mins, maxs = [], []
        for low, high in zip(self.mins, self.maxs):
            low, high = low.clone(), high.clone()
            for c in unpredicted:  # a class never predicted on the training split: the bounds of all rows
                low[:, c], high[:, c] = low[:, -1], high[:, -1]
            mins.append(low[:, :-1].contiguous())
            maxs.append(high[:, :-1].contiguous())
        if unpredicted:
            log.warning("GRAM: no training row is predicted as class(es) %s; they take the bounds of all rows",
                        list(unpredicted))
        return GramFit(self.powers, mins, maxs, torch.ones(len(mins), dtype=torch.float64), unpredicted)


def gram_layer_deviations(maps: Sequence[torch.Tensor], pred: torch.Tensor, fit: GramFit) -> torch.Tensor:
    """(N, L) float64: per block map, the deviation summed over powers and Gram rows from the bounds of the
    predicted class."""
    out = []
    for l, block_map in enumerate(maps):
        low, high = fit.mins[l].to(block_map.device), fit.maxs[l].to(block_map.device)
        dev = torch.zeros(len(pred), dtype=torch.float64, device=block_map.device)
        for i, g in enumerate(gram_rows_by_power(block_map, fit.powers)):
            dev += gram_deviation(g, low[i][pred], high[i][pred])
        out.append(dev)
    return torch.stack(out, dim=1)


def gram_class_deviations(maps: Sequence[torch.Tensor], fit: GramFit) -> torch.Tensor:
    """(N, K) float64: for every class k the GRAM deviation from class k's bounds, each layer divided by its
    validation normaliser and summed — the class-dependent GRAM score of Novello, Dalmau & Andéol
    (arXiv 2403.11532, App. B); the column of the predicted class is −:func:`gram_confidence`."""
    total = None
    for l, block_map in enumerate(maps):
        low, high = fit.mins[l].to(block_map.device), fit.maxs[l].to(block_map.device)  # P×K×C_l
        layer = 0.0
        for i, g in enumerate(gram_rows_by_power(block_map, fit.powers)):  # g: N×C_l
            below = torch.relu(low[i][None] - g[:, None]) / torch.abs(low[i][None] + GRAM_EPS)
            above = torch.relu(g[:, None] - high[i][None]) / torch.abs(high[i][None] + GRAM_EPS)
            layer = layer + (below + above).sum(2)
        layer = layer / fit.norms[l].to(block_map.device)
        total = layer if total is None else total + layer
    return total


def gram_confidence(layer_deviations: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
    """``−Σ_l δ_l / E_val[δ_l]``: (N,) float64."""
    return 0.0 - (layer_deviations / norms.to(layer_deviations.device)).sum(1)  # 0.0 -: no negative zeros


def gram_norms(val_deviations: torch.Tensor) -> torch.Tensor:
    """The mean validation deviation of every layer (L,); 1 where it is 0 (no validation row leaves the bounds)."""
    mean = val_deviations.mean(0)
    return torch.where(mean > 0, mean, torch.ones_like(mean))


# ---------------------------------------------------------------------------------------------
# RankFeat
# ---------------------------------------------------------------------------------------------

def remove_rank1(block_map: torch.Tensor, power_iterations: int = 0) -> torch.Tensor:
    """The map minus its rank-1 term ``s₁u₁v₁ᵀ`` per sample, the map viewed as C×S (positions flattened).

    ``power_iterations`` 0: exact SVD; k > 0: k rounds of power iteration from the all-ones right vector
    (the fast variant of Song et al. §3)."""
    shape = block_map.shape
    m = block_map.flatten(2)
    if power_iterations == 0:
        u, s, vh = torch.linalg.svd(m, full_matrices=False)
        rank1 = s[:, :1, None] * (u[:, :, :1] @ vh[:, :1, :])
    else:
        v = torch.ones(m.shape[0], m.shape[2], 1, dtype=m.dtype, device=m.device)
        v = v / v.norm(dim=1, keepdim=True)
        for _ in range(power_iterations):
            u = m @ v
            u = u / u.norm(dim=1, keepdim=True).clamp_min(torch.finfo(m.dtype).tiny)
            v = m.transpose(1, 2) @ u
            v = v / v.norm(dim=1, keepdim=True).clamp_min(torch.finfo(m.dtype).tiny)
        sigma = (u.transpose(1, 2) @ m @ v)
        rank1 = sigma * (u @ v.transpose(1, 2))
    return (m - rank1).reshape(shape)


@torch.no_grad()
def rankfeat(model: Classifier, last_map: torch.Tensor, power_iterations: int = 0) -> torch.Tensor:
    """RankFeat's confidence (N,) float64: ``LSE`` of the logits computed from the rank-1-removed last map."""
    logits = model.logits_from_last_block(remove_rank1(last_map, power_iterations)).double()
    return torch.logsumexp(logits, dim=1)


# ---------------------------------------------------------------------------------------------
# fit and score over batches
# ---------------------------------------------------------------------------------------------

@dataclass
class NetworkFit:
    """The fitted state of the network-pass CSFs of one model: ODIN's tuned (T, ε) with its grid trace,
    GRAM's bounds and normaliser, RankFeat's solver."""

    settings: NetworkSettings
    odin: dict | None = None
    gram: GramFit | None = None


def tuning_protocols(fitted: NetworkFit) -> dict[str, str]:
    """{CSF: how its hyper-parameters were chosen}, the ``tuning_protocol`` of its metric rows: ODIN-IP
    ``id_grid`` (grid search on ID validation −AUGRC; ``fixed`` when the grid has one point), GRAM and
    RankFeat ``none`` (no tuned hyper-parameter)."""
    s = fitted.settings
    odin = "fixed" if len(s.temperatures) * len(s.noises) == 1 else "id_grid"
    return {name: odin if name == "ODIN-IP" else "none" for name in s.methods}


@torch.no_grad()
def _maps_and_pred(model: Classifier, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    maps = model.block_maps(x)
    return maps, model.logits_from_last_block(maps[-1]).argmax(1)


def fit(model: Classifier, train: Batches, val: Batches, val_correct: np.ndarray, settings: NetworkSettings,
        std: Sequence[float]) -> NetworkFit:
    """Fit the selected network-pass CSFs: GRAM's bounds on the training batches and its normaliser on the
    validation batches, ODIN's (T, ε) by validation −AUGRC.  Only ID data is read."""
    out = NetworkFit(settings)
    if "GRAM" in settings.methods:
        bounds = GramBounds(model.n_classes, settings.powers)
        for x in train():
            maps, pred = _maps_and_pred(model, x)
            bounds.update(maps, pred)
        gram = bounds.fit()
        deviations = [gram_layer_deviations(*_maps_and_pred(model, x), gram).cpu() for x in val()]
        gram.norms = gram_norms(torch.cat(deviations))
        out.gram = gram
    if "ODIN-IP" in settings.methods:
        out.odin = tune_odin(model, val, val_correct, settings.temperatures, settings.noises, std)
    return out


def score(model: Classifier, batches: Batches, fitted: NetworkFit, std: Sequence[float]) -> dict[str, np.ndarray]:
    """{CSF: (N,) float64 confidences} of every selected network-pass CSF over the batches.

    One forward pass per batch serves all three (with a graph when ODIN-IP runs: its backward pass follows);
    ODIN-IP adds the forward pass of the perturbed batch.  Only GRAM and RankFeat read the block maps: ODIN-IP
    alone runs on any architecture (:mod:`csfbench.network_csf.architectures`)."""
    methods = fitted.settings.methods
    parts: dict[str, list[np.ndarray]] = {name: [] for name in NAMES if name in methods}
    odin_on = "ODIN-IP" in parts
    maps_on = any(name in parts for name in BLOCK_MAP_DETECTORS)
    for x in batches():
        with torch.set_grad_enabled(odin_on):
            x = x.detach().requires_grad_(odin_on)
            if maps_on:
                maps = model.block_maps(x)
                logits = model.logits_from_last_block(maps[-1]).float()
            else:  # ODIN-IP alone: the logits of any architecture, no block maps
                logits = model.class_logits(x).float()
        with torch.no_grad():
            maps = [m.detach() for m in maps] if maps_on else []
            if "GRAM" in parts:
                dev = gram_layer_deviations(maps, logits.detach().argmax(1), fitted.gram)
                parts["GRAM"].append(gram_confidence(dev, fitted.gram.norms).cpu().numpy())
            if "RankFeat" in parts:
                parts["RankFeat"].append(rankfeat(model, maps[-1], fitted.settings.power_iterations).cpu().numpy())
        if odin_on:
            t, eps = fitted.odin["params"]["temperature"], fitted.odin["params"]["noise"]
            with torch.no_grad():
                moved = x.detach() - eps * _sign_step(x, logits, t, std) if eps > 0 else x.detach()
                conf = _max_softmax(logits.detach() if eps == 0 else model.class_logits(moved), t)
            parts["ODIN-IP"].append(conf.cpu().numpy())
    return {name: np.concatenate(chunks) if chunks else np.zeros(0) for name, chunks in parts.items()}
