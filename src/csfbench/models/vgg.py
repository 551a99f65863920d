"""CIFAR-style VGG-13 with batch norm (FD-Shifts' VGG-13, the CNN of Claros-Olivares & Brockmeier), as the
encoder h(x) of a classifier.

Conv stacks ``[64,64,M,128,128,M,256,256,M,512,512,M,512,512,M]`` (scaled by ``width``), each conv
followed by ReLU and BatchNorm.  With dropout (the ``do1`` variant) the first conv of every block is
followed by Dropout(0.3) in the first block and Dropout(0.4) in the others, and the head is
flatten → Dropout(0.5) → Linear → ReLU → Dropout(0.5); without dropout the conv output is global-
average-pooled (FD-Shifts' ``avg_pool = (do == 0)``).  The penultimate feature dimension is
``round(512 · width)``; at 64×64 inputs the flattened do1 map is 2×2 wide.

The detectors that need the network read the *block maps*: the output of each conv stack before its
max-pool (N×C×H×W; :meth:`VGG13Encoder.block_maps`), and RankFeat continues the forward pass from an edited
last map (:meth:`VGG13Encoder.from_last_block`).
"""
from __future__ import annotations

import torch
from torch import nn

STACKS = ((64, 64), (128, 128), (256, 256), (512, 512), (512, 512))


def _channels(c: int, width: float) -> int:
    return max(1, int(round(c * width)))


class VGG13Encoder(nn.Module):
    """Maps N×3×S×S images (normalised floats) to N×D penultimate features."""

    def __init__(self, image_size: int = 32, width: float = 1.0, dropout: bool = False):
        super().__init__()
        if image_size % 32:
            raise ValueError(f"VGG-13 needs an image size divisible by 32, got {image_size}")
        layers: list[nn.Module] = []
        in_ch = 3
        for block, (c1, c2) in enumerate(STACKS):
            c1, c2 = _channels(c1, width), _channels(c2, width)
            layers += [nn.Conv2d(in_ch, c1, 3, padding=1), nn.ReLU(inplace=True), nn.BatchNorm2d(c1)]
            if dropout:
                layers.append(nn.Dropout(0.3 if block == 0 else 0.4))
            layers += [nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(inplace=True), nn.BatchNorm2d(c2),
                       nn.MaxPool2d(2)]
            in_ch = c2
        self.conv = nn.Sequential(*layers)
        spatial = image_size // 32
        self.feature_dim = _channels(512, width)
        if dropout:
            fc_in = in_ch * spatial * spatial
            self.pool: nn.Module = nn.Flatten()
            self.fc = nn.Sequential(nn.Dropout(0.5), nn.Linear(fc_in, self.feature_dim), nn.ReLU(inplace=True),
                                    nn.Dropout(0.5))
        else:
            self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.fc = nn.Sequential(nn.Linear(in_ch, self.feature_dim), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.conv(x)))

    def block_maps(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The output of every conv stack before its max-pool (5 maps, N×C×H×W); the last one is the map
        :meth:`from_last_block` continues from."""
        maps = []
        layers = list(self.conv)
        for i, layer in enumerate(layers[:-1]):  # the final max-pool belongs to from_last_block
            x = layer(x)
            if isinstance(layers[i + 1], nn.MaxPool2d):
                maps.append(x)
        return maps

    def from_last_block(self, last: torch.Tensor) -> torch.Tensor:
        """The penultimate features from the last block map (the rest of :meth:`forward`)."""
        return self.fc(self.pool(self.conv[-1](last)))
