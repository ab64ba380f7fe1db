"""Real architectures in plain torch (no downloads, random weights: only shapes matter here).

Each entry of ``MODELS`` builds ``(module, example_inputs, dynamic_shapes)`` at a realistic but
CPU-friendly shape (batch 1). Parameters are never planned, so weights stay random.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

# -- MobileNetV2 (Sandler et al. 2018) ----------------------------------------------------------

def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv_bn(cin, hidden, 1)]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=False)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        layers: list[nn.Module] = [_conv_bn(3, 32, 3, 2)]
        cin = 32
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_conv_bn(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


# -- ResNet-50 (He et al. 2016) -----------------------------------------------------------------

class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(_conv_bn(cin, width, 1, act=False), nn.ReLU(),
                                  _conv_bn(width, width, 3, stride, act=False), nn.ReLU(),
                                  _conv_bn(width, cout, 1, act=False))
        self.down = None if stride == 1 and cin == cout else _conv_bn(cin, cout, 1, stride, act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for width, n, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for i in range(n):
                blocks.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))


# -- transformers ---------------------------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        if self.causal:
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        out = scores.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """Pre-norm (GPT-2, ViT) or post-norm (BERT) transformer layer."""

    def __init__(self, dim: int, heads: int, causal: bool = False, pre_norm: bool = True) -> None:
        super().__init__()
        self.attn = Attention(dim, heads, causal)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.pre_norm = pre_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class BertEncoder(nn.Module):
    def __init__(self, vocab: int = 30522, dim: int = 768, layers: int = 12, heads: int = 12, max_len: int = 512) -> None:
        super().__init__()
        self.tok, self.pos, self.typ = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim), nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(Block(dim, heads, pre_norm=False) for _ in range(layers))
        self.pool = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.tok(ids) + self.pos(pos) + self.typ(torch.zeros_like(ids)))
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pool(x[:, 0]))


class GPT2(nn.Module):
    def __init__(self, vocab: int = 50257, dim: int = 768, layers: int = 12, heads: int = 12, max_len: int = 1024) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.layers = nn.ModuleList(Block(dim, heads, causal=True) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for layer in self.layers:
            x = layer(x)
        return self.ln(x) @ self.tok.weight.t()  # tied LM head


class ViT(nn.Module):
    """ViT-B/16 (Dosovitskiy et al. 2021)."""

    def __init__(self, image: int = 224, patch: int = 16, dim: int = 768, layers: int = 12, heads: int = 12, classes: int = 1000) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, dim))
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x[:, 0]))


# -- U-Net (Ronneberger et al. 2015, padded convolutions) ---------------------------------------

def _double(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, cin: int = 3, classes: int = 2, base: int = 64) -> None:
        super().__init__()
        widths = [base * 2**i for i in range(5)]
        self.down = nn.ModuleList([_double(cin, widths[0])] + [_double(widths[i], widths[i + 1]) for i in range(4)])
        self.up = nn.ModuleList(nn.ConvTranspose2d(widths[i + 1], widths[i], 2, 2) for i in reversed(range(4)))
        self.dec = nn.ModuleList(_double(widths[i] * 2, widths[i]) for i in reversed(range(4)))
        self.out = nn.Conv2d(base, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        x = skips.pop()
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([skips.pop(), up(x)], 1))
        return self.out(x)


# -- Hugging Face transformers, built from their configs (random weights, nothing downloaded) ----

def hf_gpt2(seq: int = 512, **config: int) -> tuple[nn.Module, tuple, object]:
    """``transformers``' GPT2LMHeadModel at GPT2Config's defaults (GPT-2 small, 124M) unless
    overridden; eager attention (the explicit softmax graph every runtime can lower)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(use_cache=False, **config)
    model = GPT2LMHeadModel._from_config(cfg, attn_implementation="eager")
    return model, (_tokens(seq, cfg.vocab_size),), None


def hf_bert(seq: int = 128, **config: int) -> tuple[nn.Module, tuple, object]:
    """``transformers``' BertModel at BertConfig's defaults (BERT-base, 110M) unless overridden."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(**config)
    model = BertModel._from_config(cfg, attn_implementation="eager")
    return model, (_tokens(seq, cfg.vocab_size),), None


def _tokens(n: int, vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (1, n), generator=torch.Generator().manual_seed(0))


def _image(size: int) -> torch.Tensor:
    return torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0))


Builder = Callable[[], tuple[nn.Module, tuple, object]]

MODELS: dict[str, tuple[str, Builder]] = {
    "mobilenet_v2": ("1x3x224x224", lambda: (MobileNetV2(), (_image(224),), None)),
    "resnet50": ("1x3x224x224", lambda: (ResNet50(), (_image(224),), None)),
    "bert_base": ("1x128 tokens", lambda: (BertEncoder(), (_tokens(128, 30522),), None)),
    "gpt2": ("1x(2..512) tokens, dynamic seq", lambda: (GPT2(), (_tokens(512, 50257),),
                                                    ({1: torch.export.Dim("seq", min=2, max=512)},))),
    "unet": ("1x3x256x256", lambda: (UNet(), (_image(256),), None)),
    "vit_b16": ("1x3x224x224", lambda: (ViT(), (_image(224),), None)),
    "hf_gpt2": ("1x512 tokens (transformers GPT2LMHeadModel)", hf_gpt2),
    "hf_bert": ("1x128 tokens (transformers BertModel)", hf_bert),
}
