"""Model integrations: `patch(model)` swaps a model's norms for normkit's (torch.nn and Hugging Face)."""

from .patch import patch

__all__ = ["patch"]
