r"""Rover trajectory planning in 60 dimensions, as a BoTorch test function."""

from __future__ import annotations

import math

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

#: The centres of the obstacles of the large rover domain (115 squares).
ROVER_OBSTACLES: list[tuple[float, float]] = [
    (0.43143755, 0.20876147),
    (0.38485367, 0.39183579),
    (0.02985961, 0.22328303),
    (0.7803707, 0.3447003),
    (0.93685657, 0.56297285),
    (0.04194252, 0.23598362),
    (0.28049582, 0.40984475),
    (0.6756053, 0.70939481),
    (0.01926493, 0.86972335),
    (0.5993437, 0.63347932),
    (0.57807619, 0.40180792),
    (0.56824287, 0.75486851),
    (0.35403502, 0.38591056),
    (0.72492026, 0.59969313),
    (0.27618746, 0.64322757),
    (0.54029566, 0.25492943),
    (0.30903526, 0.60166842),
    (0.2913432, 0.29636879),
    (0.78512072, 0.62340245),
    (0.29592116, 0.08400595),
    (0.87548394, 0.04877622),
    (0.21714791, 0.9607346),
    (0.92624074, 0.53441687),
    (0.53639253, 0.45127928),
    (0.99892031, 0.79537837),
    (0.84621631, 0.41891986),
    (0.39432819, 0.06768617),
    (0.92365693, 0.72217512),
    (0.95520914, 0.73956575),
    (0.820383, 0.53880139),
    (0.22378049, 0.9971974),
    (0.34023233, 0.91014706),
    (0.64960636, 0.35661133),
    (0.29976464, 0.33578931),
    (0.43202238, 0.11563227),
    (0.66764947, 0.52086962),
    (0.45431078, 0.94582745),
    (0.12819915, 0.33555344),
    (0.19287232, 0.8112075),
    (0.61214791, 0.71940626),
    (0.4522542, 0.47352186),
    (0.95623345, 0.74174186),
    (0.17340293, 0.89136853),
    (0.04600255, 0.53040724),
    (0.42493468, 0.41006649),
    (0.37631485, 0.88033853),
    (0.66951947, 0.29905739),
    (0.4151516, 0.77308712),
    (0.55762991, 0.26400156),
    (0.6280609, 0.53201974),
    (0.92727447, 0.61054975),
    (0.93206587, 0.42107549),
    (0.63885574, 0.37540613),
    (0.15303425, 0.57377797),
    (0.8208471, 0.16566631),
    (0.14889043, 0.35157346),
    (0.71724622, 0.57110725),
    (0.32866327, 0.8929578),
    (0.74435871, 0.47464421),
    (0.9252026, 0.21034329),
    (0.57039306, 0.54356078),
    (0.56611551, 0.02531317),
    (0.84830056, 0.01180542),
    (0.51282028, 0.73916524),
    (0.58795481, 0.46527371),
    (0.83259048, 0.98598188),
    (0.00242488, 0.83734691),
    (0.72505789, 0.04846931),
    (0.07312971, 0.30147979),
    (0.55250344, 0.23891255),
    (0.51161315, 0.46466442),
    (0.802125, 0.93440495),
    (0.9157825, 0.32441602),
    (0.44927665, 0.53380074),
    (0.67708372, 0.67527231),
    (0.81868924, 0.88356194),
    (0.48228814, 0.88668497),
    (0.39805433, 0.99341196),
    (0.86671752, 0.79016975),
    (0.01115417, 0.6924913),
    (0.34272199, 0.89543756),
    (0.40721675, 0.86164495),
    (0.26317679, 0.37334193),
    (0.74446787, 0.84782643),
    (0.55560143, 0.46405104),
    (0.73567977, 0.12776233),
    (0.28080322, 0.26036748),
    (0.17507419, 0.95540673),
    (0.54233783, 0.1196808),
    (0.76670967, 0.88396285),
    (0.61297539, 0.79057776),
    (0.9344029, 0.86252764),
    (0.48746839, 0.74942784),
    (0.18657635, 0.58127321),
    (0.10377802, 0.71463978),
    (0.7771771, 0.01463505),
    (0.7635042, 0.45498358),
    (0.83345861, 0.34749363),
    (0.38273809, 0.51890558),
    (0.33887574, 0.82842507),
    (0.02073685, 0.41776737),
    (0.68754547, 0.96430979),
    (0.4704215, 0.92717361),
    (0.72666234, 0.63241306),
    (0.48494401, 0.72003268),
    (0.52601215, 0.81641253),
    (0.71426732, 0.47077212),
    (0.00258906, 0.30377501),
    (0.35495269, 0.98585155),
    (0.65507544, 0.03458909),
    (0.10550588, 0.62032937),
    (0.60259145, 0.87110846),
    (0.04959159, 0.535785),
]


def clamped_bspline_basis(
    num_points: int,
    num_samples: int,
    degree: int = 3,
    dtype: torch.dtype = torch.double,
) -> Tensor:
    r"""The basis of a clamped uniform B-spline, sampled along its parameter.

    The knots are ``degree + 1`` zeros, ``num_points - degree - 1`` interior knots
    evenly spaced in ``(0, 1)`` and ``degree + 1`` ones, so that the curve
    ``B @ C`` of control points ``C`` starts at the first and ends at the last.
    Computed by the Cox-de Boor recursion.

    Args:
        num_points: The number of control points ``k`` (more than ``degree``).
        num_samples: The number of parameter values ``s``, evenly spaced in
            ``[0, 1]`` (both ends included).
        degree: The spline's degree.
        dtype: The basis's dtype.

    Returns:
        A ``s x k`` tensor whose rows are nonnegative and sum to one.
    """
    if num_points <= degree:
        raise ValueError(
            f"num_points ({num_points}) must exceed the degree ({degree})."
        )
    interior = torch.linspace(0, 1, num_points - degree + 1, dtype=dtype)[1:-1]
    knots = torch.cat(
        [
            torch.zeros(degree + 1, dtype=dtype),
            interior,
            torch.ones(degree + 1, dtype=dtype),
        ]
    )
    u = torch.linspace(0, 1, num_samples, dtype=dtype).unsqueeze(-1)
    # Degree 0: the indicator of each knot span [t_i, t_{i+1}); the last point
    # (u = 1) belongs to the last non-empty span.
    left, right = knots[:-1], knots[1:]
    basis = ((u >= left) & (u < right)).to(dtype)
    last = int(torch.nonzero(right > left).max())
    basis[-1] = 0.0
    basis[-1, last] = 1.0
    for p in range(1, degree + 1):
        width_a = knots[p : p + basis.shape[-1] - 1] - knots[: basis.shape[-1] - 1]
        width_b = knots[p + 1 : p + basis.shape[-1]] - knots[1 : basis.shape[-1]]
        a = torch.where(width_a > 0, (u - knots[: basis.shape[-1] - 1]) / width_a, 0.0)
        b = torch.where(
            width_b > 0, (knots[p + 1 : p + basis.shape[-1]] - u) / width_b, 0.0
        )
        basis = a * basis[:, :-1] + b * basis[:, 1:]
    return basis


class RoverTrajectory(SyntheticTestFunction):
    r"""Rover trajectory planning in 60 dimensions (maximised).

    The ``60`` inputs in ``[0, 1]``, mapped to ``[-0.1, 1.1]``, are ``30``
    control points in the plane. The trajectory is the clamped uniform cubic
    B-spline of these points, sampled at ``1000`` parameter values (so a batch of
    trajectories is one product with a fixed ``1000 x 30`` basis). Its cost is
    the trapezoidal integral along the path of

        ``c(p) = 0.05 + 20 * [p in an obstacle or outside [0, 1]^2]``,

    plus ``10`` times the L1 distances from the path's first point to the start
    ``(0.05, 0.05)`` and from its last point to the goal ``(0.95, 0.95)``; the
    reward is ``5 - cost``. The obstacles are the ``115`` axis-aligned squares of
    half-width ``0.025`` of the authors' large domain (:data:`ROVER_OBSTACLES`).
    The reward is at most ``5 - 0.05 * 0.9 * sqrt(2)``, about ``4.94``. Inputs
    are ``b x 60`` (or ``batch x q x 60``), rewards ``b`` (``batch x q``).

    The authors fit a smoothing spline through the points with scipy
    (``splprep``); here the points are the B-spline's control points, so the
    values differ from theirs, with the same structure and scale. It is also a
    harder problem: with ``splprep``'s default smoothing, 30 points get a spline
    without interior knots (one least-squares cubic through all of them), where
    the clamped B-spline has 27 spans and follows its control polygon. The
    function is noise-free by default.

    Example:
        >>> rover = RoverTrajectory()
        >>> reward = rover(torch.rand(8, 60, dtype=torch.double))  # 8

    References

    .. [Wang2018ebo]
        Z. Wang, C. Li, S. Jegelka, P. Kohli. Batched Large-scale Bayesian
        Optimization in High-dimensional Spaces. AISTATS 2018.
    """

    num_points = 30
    num_samples = 1000
    start = (0.05, 0.05)
    goal = (0.95, 0.95)
    half_width = 0.025
    _is_minimization_by_default = False  # a reward
    free_cost = 0.05
    collision_cost = 20.0
    miss_cost = 10.0
    offset = 5.0
    grid_size = 40

    def __init__(
        self,
        noise_std: float | None = None,
        negate: bool = False,
        chunk_size: int = 128,
        dtype: torch.dtype = torch.double,
    ) -> None:
        r"""Rover-60.

        Args:
            noise_std: Standard deviation of the observation noise (none by
                default).
            negate: If True, negate the function (the reward is maximised as it
                is).
            chunk_size: Trajectories evaluated at once (memory about
                ``chunk_size x 1000 x 4 x 2`` numbers).
            dtype: The dtype of the bounds and of the computation.
        """
        self.dim = 2 * self.num_points
        self.continuous_inds = list(range(self.dim))
        self.chunk_size = int(chunk_size)
        super().__init__(
            noise_std=noise_std,
            negate=negate,
            bounds=[(0.0, 1.0)] * self.dim,
            dtype=dtype,
        )
        self.register_buffer(
            "basis",
            clamped_bspline_basis(self.num_points, self.num_samples, dtype=dtype),
        )
        self.register_buffer("obstacles", torch.tensor(ROVER_OBSTACLES, dtype=dtype))
        self.register_buffer("cell_obstacles", self._cell_table(self.obstacles))

    @property
    def optimal_value(self) -> float:
        r"""Unknown: NaN (the reward is below ``5``)."""
        return math.nan

    def trajectory(self, X: Tensor) -> Tensor:
        r"""The sampled paths of ``X``.

        Args:
            X: A ``b x 60`` tensor of inputs in ``[0, 1]``.

        Returns:
            A ``b x 1000 x 2`` tensor of points in the plane.
        """
        b = X.shape[0]
        points = (-0.1 + 1.2 * X).reshape(b, self.num_points, 2)
        # One s x k by k x 2b product rather than b batched ones.
        stacked = points.transpose(0, 1).reshape(self.num_points, 2 * b)
        path = self.basis.to(X) @ stacked  # s x 2b
        return path.reshape(-1, b, 2).transpose(0, 1)

    def _cell_table(self, obstacles: Tensor) -> Tensor:
        # For each cell of a G x G grid over the unit square, the centres of the
        # obstacles that can hold one of its points (centre within the half-width
        # of the closed cell), padded with a centre no point reaches:
        # G^2 x K x 2, K the most any cell has (4 for the large domain, G = 40).
        G, r = self.grid_size, self.half_width
        low = torch.arange(G, dtype=obstacles.dtype) / G
        high = low + 1.0 / G
        near = [
            (obstacles[:, i, None] >= low - r) & (obstacles[:, i, None] <= high + r)
            for i in range(2)
        ]  # each o x G
        # Cell (gx, gy) is row gx * G + gy.
        member = (near[0].unsqueeze(-1) & near[1].unsqueeze(-2)).reshape(-1, G * G)
        K = max(int(member.sum(0).max()), 1)
        table = torch.full((G * G, K, 2), 1e3, dtype=obstacles.dtype)
        for cell in range(G * G):
            inside = obstacles[member[:, cell]]
            table[cell, : inside.shape[0]] = inside
        return table

    def obstacle_hits(self, path: Tensor) -> Tensor:
        r"""Whether each point lies in an obstacle (boundary included).

        Each point is compared with the few obstacles that can hold a point of
        its cell of a ``40 x 40`` grid over the unit square (points outside it
        are compared with those of the nearest cell: they pay the collision cost
        anyway).

        Args:
            path: A ``b x s x 2`` tensor of points in the plane.

        Returns:
            A ``b x s`` boolean tensor.
        """
        G, r = self.grid_size, self.half_width
        index = (path * G).floor().clamp(0, G - 1).long()
        cell = index[..., 0] * G + index[..., 1]  # b x s
        table = self.cell_obstacles.to(path)
        near_x = (path[..., :1] - table[..., 0][cell]).abs() <= r  # b x s x K
        near_y = (path[..., 1:] - table[..., 1][cell]).abs() <= r
        return (near_x & near_y).any(dim=-1)

    def _chunk_reward(self, X: Tensor) -> Tensor:
        path = self.trajectory(X)  # b x s x 2
        hit = self.obstacle_hits(path)  # b x s
        outside = ((path < 0) | (path > 1)).any(dim=-1)
        cost = self.free_cost + self.collision_cost * (hit | outside).to(X)
        step = (path[..., 1:, :] - path[..., :-1, :]).norm(dim=-1)
        along = (step * 0.5 * (cost[..., 1:] + cost[..., :-1])).sum(dim=-1)
        start = torch.tensor(self.start, dtype=X.dtype, device=X.device)
        goal = torch.tensor(self.goal, dtype=X.dtype, device=X.device)
        ends = (path[..., 0, :] - start).abs().sum(-1) + (
            path[..., -1, :] - goal
        ).abs().sum(-1)
        return self.offset - along - self.miss_cost * ends

    def _evaluate_true(self, X: Tensor) -> Tensor:
        flat = X.reshape(-1, self.dim)
        if flat.shape[0] == 0:
            return flat.new_zeros(X.shape[:-1])
        reward = torch.cat(
            [self._chunk_reward(chunk) for chunk in flat.split(self.chunk_size)]
        )
        return reward.reshape(X.shape[:-1])
