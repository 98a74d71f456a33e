#!/usr/bin/env python3
r"""Nystrom embedding of an inducing set.

For a kernel ``k`` and inducing inputs ``S`` (``m x d``), the Nystrom embedding is
``z(x) = (K_SS^{1/2})^+ k_S(x)``, so that ``z(x)^T z(x') = k_S(x)^T K_SS^+ k_S(x')``
is the Nystrom approximation of ``k(x, x')``. Every model and bandit policy of
this package works in these coordinates.

The pseudo-inverse root is built from an eigendecomposition of ``K_SS`` with a
relative cutoff, as in [Calandriello2019bkb]_: directions whose eigenvalue is
below ``cutoff * max eigenvalue`` are dropped, so the embedding dimension
``m'`` may be smaller than ``m`` (duplicated or nearly collinear inducing
points add nothing). The eigenvectors are computed without gradient and the
kernel restricted to the kept subspace is factorised by Cholesky *with*
gradient: at the current hyperparameters this is exactly the pseudo-inverse
root, and its gradient is that of the Nystrom approximation on the kept
subspace, free of the ``1 / (s_i - s_j)`` terms that make the gradient of
``eigh`` blow up on (near-)degenerate spectra.

The relative cutoff is blind to the noise, but the data are not: with noise
variance ``lambda``, a direction of eigenvalue ``e`` moves the posterior by about
``e / lambda``, so at ``lambda = 1e-6`` the default cutoff (``10 m eps`` of the
largest eigenvalue) costs 1e-6 to 1e-4 of the mean where every input is
inducing. Given the noise, the embedding keeps such directions down to the
rounding level of ``K_SS``.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT 2019.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import UnsupportedError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.sketching.embedding.growing import grown_block
from botorch_sketch.sketching.embedding.kernels import kernel_diagonal, kernel_matrix


def default_relative_cutoff(dtype: torch.dtype, num_inducing: int) -> float:
    r"""Eigenvalue cutoff, relative to the largest eigenvalue of ``K_SS``.

    Eigenvalues below this are at the level of the rounding error of a kernel
    matrix of size ``num_inducing`` in ``dtype``.

    Args:
        dtype: The floating point type the kernel matrix is computed in.
        num_inducing: The number of inducing points ``m``.

    Returns:
        The relative cutoff ``10 * m * eps``.
    """
    return 10.0 * max(num_inducing, 1) * torch.finfo(dtype).eps


def residual_variance(prior_variance: Tensor, Z: Tensor) -> Tensor:
    r"""The prior variance an embedding misses, ``k(x, x) - ||z(x)||^2 >= 0``.

    Args:
        prior_variance: A ``batch_shape x n`` tensor ``k(x, x)``.
        Z: The ``batch_shape x n x m'`` embedding of the points.

    Returns:
        A ``batch_shape x n`` tensor, clamped at zero against rounding.
    """
    return (prior_variance - Z.pow(2).sum(-1)).clamp_min(0)


#: Rows (all batches together) from which the CPU embeds by a triangular solve
#: instead of the product with the formed root: the two were even near 500
#: rows at m = 100 (forward and backward), the solve 2.2x faster at 2000 x 512.
TRIANGULAR_SOLVE_MIN_ROWS = 1024

#: Inputs up to which :meth:`NystromEmbedding.kernel_rows_and_prior` makes one
#: kernel call for both parts: its extra ``n x n`` block stays small.
FEW_ROWS = 64

#: Smallest relative Cholesky pivot of ``K_SS`` taken without an eigendecomposition.
WELL_CONDITIONED_PIVOT = 1e-6

#: With a known noise level, eigenvalues of ``K_SS`` above this times the noise are
#: kept whatever the relative cutoff: dropping a direction of eigenvalue ``e``
#: moves the posterior mean by about ``e / noise`` times a factor that reaches
#: 1e2 at points beside tight clusters (measured), so the all-inducing DTC
#: posterior stays within about 1e-8 of the exact GP's where rounding allows.
NOISE_RESOLUTION = 1e-10

#: Eigenvalues below this many ``eps`` times the largest are never kept: they are
#: rounding error of ``K_SS`` itself (and the Cholesky of the kept block must
#: succeed; it is retried with a larger cutoff if it does not).
ROUNDING_FLOOR = 4.0


class NystromEmbedding:
    r"""The map ``x -> z(x) = (K_SS^{1/2})^+ k_S(x)`` for a fixed inducing set.

    Example:
        >>> kernel = gpytorch.kernels.RBFKernel()
        >>> emb = NystromEmbedding(kernel, torch.rand(20, 3, dtype=torch.double))
        >>> Z = emb(torch.rand(100, 3, dtype=torch.double))  # 100 x m'
    """

    #: The Cholesky factor ``L`` of ``K_SS`` when ``root = L^{-T}`` (the
    #: well-conditioned case), which embeds by a triangular solve; else None
    #: (an eigendecomposition's root, or one grown by :meth:`extended`).
    _lower: Tensor | None = None

    def __init__(
        self,
        kernel: Kernel,
        inducing_points: Tensor,
        relative_cutoff: float | None = None,
        gram: Tensor | None = None,
        noise: float | Tensor | None = None,
    ) -> None:
        r"""Build the embedding.

        Args:
            kernel: A gpytorch kernel without batch dimensions.
            inducing_points: A ``m x d`` tensor of inducing inputs (already
                input-transformed).
            relative_cutoff: Eigenvalues of ``K_SS`` below this times the largest
                are dropped. Defaults to :func:`default_relative_cutoff`.
            gram: ``K_SS`` if the caller has it already (as rows of a kernel block
                it computed anyway); computed otherwise.
            noise: The smallest noise variance of the data the embedding will
                carry, if known. In float64, eigenvalues above
                ``NOISE_RESOLUTION * noise`` are then kept even below
                ``relative_cutoff`` (down to ``ROUNDING_FLOOR * eps`` relative), as
                small noise makes the posterior sensitive to them.
        """
        self.kernel = kernel
        self.inducing_points = inducing_points
        m = inducing_points.shape[-2]
        if relative_cutoff is None:
            relative_cutoff = default_relative_cutoff(inducing_points.dtype, m)
        self.relative_cutoff = relative_cutoff
        # Set by ``extended``: how the last coordinate depends on the old ones.
        self.border_coefficients: Tensor | None = None
        if m == 0:
            # An empty set embeds into R^0: the DTC posterior is then the prior.
            self.root = inducing_points.new_zeros(0, 0)
            return
        K = kernel_matrix(kernel, inducing_points) if gram is None else gram
        K = 0.5 * (K + K.mT)
        # Fast path: a well-conditioned K_SS (every Cholesky pivot, the variance
        # of a point given the previous ones, well above rounding) needs no
        # eigendecomposition; root = L^{-T}. Sets drawn by posterior variance
        # are spread out and take this path; near-duplicates fall through.
        L, info = torch.linalg.cholesky_ex(K)
        if int(info) == 0:
            floor = WELL_CONDITIONED_PIVOT * K.diagonal().max()
            if bool(L.diagonal().pow(2).min() > floor):
                eye = torch.eye(m, dtype=K.dtype, device=K.device)
                self.root = torch.linalg.solve_triangular(L, eye, upper=False).mT
                self._lower = L
                return
        with torch.no_grad():
            evals, evecs = torch.linalg.eigh(K)
            top = evals[-1].clamp_min(0)
            default_cut = relative_cutoff * top
            cut = default_cut
            if noise is not None and K.dtype == torch.float64:
                # Small noise lets the data see directions far below the relative
                # cutoff (issue 15: the mean's error grew as 1 / noise); keep them
                # down to the rounding level of K_SS. Not in float32: there the
                # rounding of K - Z Z^T dominates, and keeping directions near
                # rounding made non-PSD posterior covariances more frequent (40
                # of 400 random cases against 36, SingleTaskGP 37).
                floor = ROUNDING_FLOOR * torch.finfo(K.dtype).eps * top
                cut = cut.clamp_max(NOISE_RESOLUTION * float(noise)).clamp_min(floor)
        while True:
            with torch.no_grad():
                basis = evecs[:, evals > cut]
            K_kept = basis.mT @ K @ basis
            K_kept = 0.5 * (K_kept + K_kept.mT)
            L, info = torch.linalg.cholesky_ex(K_kept)
            if int(info) == 0 or bool(cut >= default_cut):
                break
            # A kept eigenvalue near rounding came out non-positive in U^T K U:
            # raise the cutoff towards the default (rare; each try is O(m^3)).
            cut = (4 * cut).clamp_max(default_cut)
        if int(info) != 0:
            # The kept spectrum is well above rounding error at the default
            # cutoff; this raises torch's own error if even that fails.
            L = torch.linalg.cholesky(K_kept)
        # root = U L^{-T}, so that z = root^T k_S(x) and root root^T = K_SS^+.
        self.root = torch.linalg.solve_triangular(L, basis.mT, upper=False).mT

    @property
    def num_inducing(self) -> int:
        r"""The number ``m`` of inducing points."""
        return self.inducing_points.shape[-2]

    @property
    def dim(self) -> int:
        r"""The embedding dimension ``m' <= m``."""
        return self.root.shape[-1]

    def __call__(self, X: Tensor) -> Tensor:
        r"""Embed inputs.

        Args:
            X: A ``batch_shape x n x d`` tensor of (input-transformed) points.

        Returns:
            A ``batch_shape x n x m'`` tensor ``Z`` with rows ``z(x_i)``. Callers with
            large ``n`` pass chunks (see
                :mod:`botorch_sketch.sketching.embedding.chunks`).
        """
        if self.dim == 0:
            return X.new_zeros(*X.shape[:-1], 0)
        K = self.kernel_rows(X)
        rows = K.reshape(-1, K.shape[-1])
        if (
            self._lower is not None
            and X.device.type == "cpu"
            and rows.shape[0] >= TRIANGULAR_SOLVE_MIN_ROWS
        ):
            # root = L^{-T}: a triangular solve with L, half the flops of the
            # product with the formed root, and no less accurate: the posterior
            # state at n = 10^6 took 1.13-1.18x less time (m = 512, 256) on 2
            # cores. All rows in one solve (a batched one broadcasts L and was
            # 70x slower for 512 x 1 points); small blocks (an acquisition's
            # candidates) keep the product, which is faster there. GPUs keep
            # it too: on an H100 it was 1.09x faster for the same statistics.
            Z = torch.linalg.solve_triangular(self._lower, rows.mT, upper=False).mT
            return Z.reshape(*K.shape[:-1], Z.shape[-1])
        return K @ self.root

    def kernel_rows(self, X: Tensor) -> Tensor:
        r"""The kernel between inputs and the inducing set, ``k_S(x)^T``.

        Args:
            X: A ``batch_shape x n x d`` tensor of (input-transformed) points.

        Returns:
            A ``batch_shape x n x m`` tensor; ``z(x) = root^T k_S(x)``.
        """
        if self.num_inducing == 0:
            return X.new_zeros(*X.shape[:-1], 0)
        # The kernel has no batch dimensions, so the rows of all batches are one
        # block: gpytorch would otherwise broadcast the inducing points to every
        # batch (a b x m x d copy, and more for its distance computation).
        rows = X.reshape(-1, X.shape[-1])
        K_XS = kernel_matrix(self.kernel, rows, self.inducing_points)
        return K_XS.reshape(*X.shape[:-1], self.num_inducing)

    def kernel_rows_and_prior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""``k_S(x)^T`` and the prior variances ``k(x, x)`` of a few inputs.

        An online loop scores a handful of candidates a round, where each
        gpytorch kernel call costs several times its arithmetic (0.16 ms for
        the diagonal of 10 points against 0.43 ms for their 10 x 558 rows, RBF,
        one thread). Up to :data:`FEW_ROWS` inputs both parts therefore come
        from one call, ``k(X, [S; X])``: the rows are its first ``m`` columns
        and the variances the diagonal of its last ``n``. More inputs take two
        calls, which costs less than the ``n x n`` block.

        Args:
            X: A ``n x d`` tensor of (input-transformed) points.

        Returns:
            The ``n x m`` rows and the ``n`` prior variances.
        """
        n, m = X.shape[0], self.num_inducing
        if n > FEW_ROWS:
            return self.kernel_rows(X), kernel_diagonal(self.kernel, X)
        both = kernel_matrix(self.kernel, X, torch.cat([self.inducing_points, X]))
        return both[:, :m], both[:, m:].diagonal()

    def residual_variance(
        self,
        X: Tensor,
        Z: Tensor | None = None,
        prior_variance: Tensor | None = None,
    ) -> Tensor:
        r"""The prior variance the embedding misses, ``k(x, x) - ||z(x)||^2 >= 0``.

        Args:
            X: A ``batch_shape x n x d`` tensor of points.
            Z: Their embedding, if already computed.
            prior_variance: Their ``batch_shape x n`` prior variances ``k(x, x)``,
                if already computed.

        Returns:
            A ``batch_shape x n`` tensor, clamped at zero against rounding.
        """
        if Z is None:
            Z = self(X)
        if prior_variance is None:
            prior_variance = kernel_diagonal(self.kernel, X)
        return residual_variance(prior_variance, Z)

    def new_coordinate(self, X: Tensor, Z_old: Tensor) -> Tensor:
        r"""The last coordinate of points whose other coordinates are known.

        For an embedding returned by :meth:`extended`: the new coordinate is
        ``(k(x, s_new) - z_old(x)^T z_old(s_new)) / sqrt(schur)``, ``O(m')`` per
        point from its old embedding and one kernel column, where embedding it
        again would cost ``O(m m')``.

        Args:
            X: A ``n x d`` tensor of points.
            Z_old: Their ``n x m'`` embedding before the point was added.

        Returns:
            The ``n`` new coordinates.
        """
        if self.border_coefficients is None:
            raise UnsupportedError(
                "new_coordinate needs an embedding made by extended()."
            )
        k_new = kernel_matrix(self.kernel, X, self.inducing_points[-1:]).squeeze(-1)
        return Z_old @ self.border_coefficients + self.root[-1, -1] * k_new

    def extended(
        self,
        x_new: Tensor,
        z_new: Tensor | None = None,
        k_new: Tensor | None = None,
    ) -> NystromEmbedding | None:
        r"""The embedding of the inducing set grown by one point (Schur bordering).

        The new coordinate is the normalised residual of ``k(x_new, .)`` after
        projection on the current span, so the old coordinates are unchanged and
        the cost is ``O(m m')`` instead of a new ``O(m^3)`` decomposition.

        Args:
            x_new: A ``1 x d`` (or ``d``) tensor, the point to add.
            z_new: Its embedding ``z(x_new)`` (``m'`` or ``1 x m'``), if the
                caller holds it (a bandit tracks every arm's); computed if None.
            k_new: Its prior variance ``k(x_new, x_new)`` (one element), if
                known; computed if None.

        Returns:
            The grown embedding, or None if ``x_new`` is (numerically) in the span of
            the current set, in which case adding it would change nothing.
        """
        x_new = x_new.reshape(1, -1)
        z_new = self(x_new) if z_new is None else z_new.reshape(1, -1)  # 1 x m'
        if k_new is None:
            k_new = kernel_diagonal(self.kernel, x_new)
        k_new = k_new.reshape(1)
        schur = self.residual_variance(x_new, z_new, prior_variance=k_new)
        scale = k_new.clamp_min(torch.finfo(x_new.dtype).tiny)
        if bool(schur <= self.relative_cutoff * max(1, self.num_inducing) * scale):
            return None
        inv_sqrt = schur.rsqrt()  # 1
        m, m_prime = self.root.shape
        # In the spare room of the root's buffer: no m x m' copy per point.
        root, store = grown_block(
            self.root, getattr(self, "_root_buffer", None), m + 1, m_prime + 1
        )
        root[:m, m_prime] = -(self.root @ z_new.squeeze(0)) * inv_sqrt
        root[m, m_prime] = inv_sqrt.squeeze(0)
        grown = NystromEmbedding.__new__(NystromEmbedding)
        grown.kernel = self.kernel
        grown.inducing_points = torch.cat([self.inducing_points, x_new], dim=-2)
        grown.relative_cutoff = self.relative_cutoff
        grown.root = root
        grown._root_buffer = store
        # A point with old embedding z gets the new coordinate
        # z^T border_coefficients + k(x, x_new) / sqrt(schur): callers that keep
        # embeddings grow them in O(m') per point, without K(x, S).
        grown.border_coefficients = -z_new.squeeze(0) * inv_sqrt
        return grown
