"""Paired statistics: bootstrap CIs, paired permutation tests, Holm–Bonferroni, MPI.

Every comparison is paired by seed and task index: two methods run on the same
seeds see the same task streams, so the per-seed mean of the per-task
differences is the unit that is resampled (bootstrap) or sign-flipped
(permutation).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np


@dataclass(frozen=True, slots=True)
class Estimate:
    mean: float
    ci_low: float
    ci_high: float


def _check_matrix(name: str, values: np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of per-seed values, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def bootstrap_ci(per_seed: Sequence[float] | np.ndarray, *, n_boot: int = 5000,
                 confidence: float = 0.95, seed: int = 0) -> Estimate:
    """Mean of per-seed values with a percentile bootstrap CI over seeds."""
    values = _check_matrix("per_seed", np.asarray(per_seed))
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    means = _resample_counts(values.size, n_boot, seed) @ values / values.size
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Estimate(float(values.mean()), float(low), float(high))


def paired_permutation_test(per_seed_diff: Sequence[float] | np.ndarray, *, n_perm: int = 20000,
                            alternative: str = "greater", seed: int = 0) -> float:
    """p-value of a paired sign-flip permutation test on per-seed mean differences.

    ``alternative="greater"`` tests whether the mean difference is positive
    (directional, as in the paper); ``"less"`` and ``"two-sided"`` are offered too.
    Exact enumeration is used for up to 16 seeds, Monte Carlo otherwise.
    """
    diffs = _check_matrix("per_seed_diff", np.asarray(per_seed_diff))
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    observed = diffs.mean()
    n = diffs.size
    exact = n <= 16
    signs = _sign_matrix(n, n_perm, seed)
    null = signs @ diffs / n
    tolerance = 1e-12
    if alternative == "greater":
        hits = np.count_nonzero(null >= observed - tolerance)
    elif alternative == "less":
        hits = np.count_nonzero(null <= observed + tolerance)
    else:
        hits = np.count_nonzero(np.abs(null) >= abs(observed) - tolerance)
    if exact:
        return float(hits / len(null))
    return float((hits + 1) / (len(null) + 1))


@lru_cache(maxsize=16)
def _resample_counts(n: int, n_boot: int, seed: int) -> np.ndarray:
    """How often each seed is drawn in each bootstrap resample (shared across calls, read-only)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    counts = np.zeros((n_boot, n))
    np.add.at(counts, (np.repeat(np.arange(n_boot), n), idx.ravel()), 1.0)
    counts.setflags(write=False)
    return counts


@lru_cache(maxsize=16)
def _sign_matrix(n: int, n_perm: int, seed: int) -> np.ndarray:
    """Every sign pattern for small n, else ``n_perm`` random ones (shared across tests, read-only)."""
    if n <= 16:
        signs = (1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)).astype(np.float64)
    else:
        signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(n_perm, n))
    signs.setflags(write=False)
    return signs


def holm_bonferroni(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("p_values must be 1-D")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted_sorted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adjusted_sorted, 1.0)
    return adjusted


def memory_pollution_index(success_no_memory: float, success_method: float) -> float:
    """MPI = (S_nomem - S_m) / S_nomem; positive when memory made the agent worse."""
    if success_no_memory <= 0:
        return float("nan")
    return (success_no_memory - success_method) / success_no_memory
