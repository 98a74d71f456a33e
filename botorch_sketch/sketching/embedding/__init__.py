r"""Nystrom embeddings and feature maps: the coordinates every model works in.

Dense kernel blocks (:mod:`.kernels`), row chunking (:mod:`.chunks`), the Nystrom
embedding of an inducing set (:mod:`.nystrom`) and the growth buffer it grows
in (:mod:`.growing`), and finite feature maps for the linear models
(:mod:`.features`).
"""

from botorch_sketch.sketching.embedding.chunks import chunk_size_for, row_chunks
from botorch_sketch.sketching.embedding.features import (
    FeatureMap,
    IdentityFeatures,
    NystromFeatures,
    RandomFourierFeatures,
)
from botorch_sketch.sketching.embedding.growing import GrowthBuffer
from botorch_sketch.sketching.embedding.kernels import kernel_diagonal, kernel_matrix
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding

__all__ = [
    "FeatureMap",
    "GrowthBuffer",
    "IdentityFeatures",
    "NystromEmbedding",
    "NystromFeatures",
    "RandomFourierFeatures",
    "chunk_size_for",
    "kernel_diagonal",
    "kernel_matrix",
    "row_chunks",
]
