"""Active skeletal muscle experiments, as ``haptics muscle`` runs them.

:func:`isometric` is the isometric tension-length experiment (Chen 1991) on a 40 x 10 x
10 mm block of linear tets along its fibres, each load case solved by full Newton, beside
the independent homogeneous solution::

    import haptics.muscle
    curve = haptics.muscle.isometric(stretch=[0.8, 1.0, 1.2], activation=[0, 1])
    curve["force_n"] - curve["reference_force_n"]
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from . import _haptics

__all__ = ["IsometricCurve", "isometric", "DEFAULT_STRETCH", "DEFAULT_ACTIVATION"]

DEFAULT_STRETCH = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3,
                   1.4, 1.5, 1.6, 1.7)
"""The command's default stretches along the fibres."""
DEFAULT_ACTIVATION = (0.0, 0.5, 1.0)
"""The command's default activations."""


@dataclass(frozen=True)
class IsometricCurve:
    """One row per load case (activations outer, stretches inner), the columns of the
    command's CSV: ``stretch, activation, force_n, reference_force_n, lateral_stretch,
    volume_ratio, newton_iterations``. ``force_n`` is the reaction along +x on the moving
    face (N, negative in compression); ``reference_force_n`` the homogeneous solution's."""

    columns: List[str]
    array: np.ndarray
    nodes: int
    """Mesh vertices."""
    elements: int
    """Mesh tets."""

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.array[:, self.columns.index(name)]
        except ValueError:
            raise KeyError(
                f"{name!r}: the curve's columns are {', '.join(self.columns)}"
            ) from None

    def __len__(self) -> int:
        return int(self.array.shape[0])

    def to_dict(self) -> Dict[str, np.ndarray]:
        """Column name -> array."""
        return {c: self.array[:, i] for i, c in enumerate(self.columns)}


def isometric(
    stretch: Sequence[float] = DEFAULT_STRETCH,
    activation: Sequence[float] = DEFAULT_ACTIVATION,
    *,
    material: Optional[Union[str, "os.PathLike[str]"]] = None,
    resolution: int = 2,
) -> IsometricCurve:
    """The isometric tension-length curves: the block held at x = 0, its x = L face moved
    to each stretch, for each activation in [0, 1]. ``material`` is a TOML file (keys
    sigma_max, lambda_opt, mu, kappa, p1, p2, lambda_star; the rest default);
    ``resolution`` the cells across the 10 mm section (1 to 16). Bad values raise
    :class:`haptics.InputError`; a bad material file :class:`haptics.FormatError` with
    its line."""
    columns, rows, data, nodes, elements = _haptics.isometric(
        [float(s) for s in stretch],
        [float(a) for a in activation],
        None if material is None else os.fspath(material),
        int(resolution),
    )
    array = np.frombuffer(data, dtype="<f8").reshape(rows, len(columns)).copy()
    return IsometricCurve(columns=list(columns), array=array, nodes=int(nodes),
                          elements=int(elements))
