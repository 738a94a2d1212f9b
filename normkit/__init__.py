"""normkit: training-ready RMSNorm kernels for PyTorch, in Triton.

    import normkit
    y = normkit.rms_norm(x, weight, eps=1e-6)             # autograd-aware
    out, _, rstd = normkit.rms_norm_fwd(x, weight, store_rstd=True)
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, weight, dout, rstd)   # rstd=None recomputes
    norm = normkit.RMSNorm(4096)                           # a torch.nn.RMSNorm drop-in
"""

from .functional import rms_norm
from .modules import RMSNorm
from .ops import rms_norm_bwd, rms_norm_fwd

__all__ = ["rms_norm", "rms_norm_fwd", "rms_norm_bwd", "RMSNorm"]
__version__ = "0.1.0"
