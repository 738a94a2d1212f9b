"""normkit: training-ready RMSNorm and LayerNorm kernels for PyTorch, in Triton.

    import normkit
    y = normkit.rms_norm(x, weight, eps=1e-6)                       # autograd-aware
    y, h = normkit.rms_norm(x, weight, residual=r, prenorm=True)    # fused residual add
    y = normkit.layer_norm(x, weight, bias)
    out, _, rstd = normkit.rms_norm_fwd(x, weight, store_rstd=True)
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, weight, dout, rstd)  # rstd=None recomputes
    norm = normkit.RMSNorm(4096)                                     # torch.nn.RMSNorm drop-in
    normkit.patch(model)                     # a model's torch.nn / Hugging Face norms → normkit's
"""

from .functional import layer_norm, rms_norm
from .lowlevel import layer_norm_bwd, layer_norm_fwd, rms_norm_bwd, rms_norm_fwd
from .modules import FusedAddRMSNorm, LayerNorm, RMSNorm
from .integrations import patch
from .variant import CompileFallbackWarning

__all__ = [
    "rms_norm", "layer_norm", "rms_norm_fwd", "rms_norm_bwd", "layer_norm_fwd", "layer_norm_bwd",
    "RMSNorm", "LayerNorm", "FusedAddRMSNorm", "patch", "CompileFallbackWarning",
]
__version__ = "0.2.0.dev0"
