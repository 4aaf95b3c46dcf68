"""Copies of CPU tensors to the model's device that do not stop the host: on a GPU through pinned
memory and ``non_blocking`` (the host prepares the next batch while the copy runs); elsewhere a
plain copy. Results stay on the device until the caller reads them once, after its loop."""
from __future__ import annotations

import torch


def to_device(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """``tensor`` (on the CPU) on ``device``, copied asynchronously when ``device`` is a GPU."""
    device = torch.device(device)
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)
