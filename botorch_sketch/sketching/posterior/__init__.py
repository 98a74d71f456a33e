r"""The weight posterior in Nystrom coordinates and its read-outs.

One :class:`WeightPosterior` serves every model and loop (:mod:`.weight_posterior`:
its read-outs and updates; :mod:`.state`: the tensors and statistics it keeps,
:class:`WeightPosteriorState`; :mod:`.updates`: what an update hands to tracked
read-outs; :mod:`.linalg`: the dense algebra they share). It is factorised from
the data's sufficient statistics (:mod:`.statistics`) and read at test points as
the DTC posterior (:mod:`.dtc`, :mod:`.dtc_covariance`), over embedded point
stores (:mod:`.embedded`), and as BKB's confidence width (:mod:`.confidence`).
"""

from botorch_sketch.sketching.posterior.confidence import WidthForm, bkb_width
from botorch_sketch.sketching.posterior.dtc import DTCReadout, posterior_variance
from botorch_sketch.sketching.posterior.dtc_covariance import DTCCovarianceOperator
from botorch_sketch.sketching.posterior.embedded import EmbeddedPoints
from botorch_sketch.sketching.posterior.state import WeightPosteriorState
from botorch_sketch.sketching.posterior.statistics import DTCStatistics
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior

__all__ = [
    "DTCCovarianceOperator",
    "DTCReadout",
    "DTCStatistics",
    "EmbeddedPoints",
    "WeightPosterior",
    "WeightPosteriorState",
    "WidthForm",
    "bkb_width",
    "posterior_variance",
]
