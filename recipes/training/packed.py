"""LoRA on a pre-quantized base kept quantized in memory (recipes/model/prequantized.py says which bases).

transformers loads a compressed-tensors checkpoint with its packed tensors in place (``weight_packed``,
``weight_scale``, …) and a hook that decompresses the whole model on its first forward pass — a dense copy, the
memory of the 16-bit base. :func:`keep_packed` removes that hook and puts a :class:`PackedLinear` in place of each
quantized linear layer: it keeps the layer's compressed tensors and rebuilds the dense weight inside every forward
and backward pass, one layer at a time, through compressed-tensors' own compressor for the format
(``decompress(state_dict, scheme)``). The dense weight is never saved for backward: the pattern of QLoRA's NF4
layers (bitsandbytes ``MatMul4Bit``: dequantize in forward, again in backward). PEFT wraps a PackedLinear as it
wraps any ``torch.nn.Linear`` (it is one, without a ``weight``), so LoRA's A and B train beside the frozen base.
"""
from __future__ import annotations

import torch


class _DequantizedMatmul(torch.autograd.Function):
    """y = x Wᵀ + b with W rebuilt from the packed tensors in forward and again in backward (x: (…, in_features),
    y: (…, out_features)); only the input's gradient flows (the base is frozen)."""

    @staticmethod
    def forward(ctx, x, layer):
        ctx.layer = layer
        return torch.nn.functional.linear(x, layer.dense(x.dtype), layer.bias)

    @staticmethod
    def backward(ctx, grad):
        return grad @ ctx.layer.dense(grad.dtype), None


class PackedLinear(torch.nn.Linear):
    """A frozen linear layer holding compressed-tensors' tensors for one weight (packed integers or FP8 values and
    their scales, as the checkpoint stores them) instead of a dense ``weight``. ``in_features``/``out_features`` as
    the dense layer's."""

    def __init__(self, source: torch.nn.Module, compressor, scheme, rebuild=None):
        torch.nn.Module.__init__(self)  # not Linear's: it would allocate the dense weight this class exists to avoid
        self.compressor, self.scheme = compressor, scheme
        self.rebuild = rebuild or (lambda state: compressor.decompress(state, scheme)["weight"])
        self.names: list[str] = []
        # frozen parameters, as transformers loaded them (not buffers: DDP would broadcast buffers every step)
        for name, value in source.named_parameters(recurse=False):
            if name != "bias":
                self.register_parameter(name, torch.nn.Parameter(value.detach(), requires_grad=False))
                self.names.append(name)
        for name, value in source.named_buffers(recurse=False):
            self.register_buffer(name, value.detach(), persistent=True)
            self.names.append(name)
        bias = getattr(source, "bias", None)
        self.bias = torch.nn.Parameter(bias.detach(), requires_grad=False) if bias is not None else None
        if "weight_shape" in self.names:
            shape = torch.Size(int(x) for x in getattr(self, "weight_shape").tolist())
        else:
            shape = getattr(self, self.names[0]).shape
        self.shape = shape  # a torch.Size, not the tensor: the compiled rebuild reads no tensor for a shape
        self.out_features, self.in_features = int(shape[0]), int(shape[1])

    @property
    def weight(self):  # PEFT reads a base layer's ``weight`` for its device and dtype: there is none to read
        return None

    @property
    def qweight(self):  # … and then ``qweight``: the packed tensor gives the device (and, being integer, no dtype)
        return getattr(self, self.names[0])

    def dense(self, dtype: torch.dtype) -> torch.Tensor:
        """The layer's weight rebuilt, (out_features, in_features) in ``dtype``: a temporary."""
        state = {n: getattr(self, n) for n in self.names} | {"weight_shape": self.shape}
        return self.rebuild(state).to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _DequantizedMatmul.apply(x, self)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, format={self.scheme.format}"


def keep_packed(model: torch.nn.Module) -> dict:
    """Replace every compressed linear layer of a model transformers loaded from a compressed-tensors checkpoint
    (``CompressedTensorsConfig(dequantize=False)``, the default) with a :class:`PackedLinear`, and remove the
    decompress-on-first-forward hook. Returns ``{"layers": n, "packed_bytes": bytes held by the packed layers,
    "dense_bytes": bytes their weights would take in bf16}``.

    Raises:
        RuntimeError: the model has no compressed layer (it was decompressed, or is not compressed-tensors).
    """
    from compressed_tensors.compressors.base import BaseCompressor

    compile_ = compiled_rebuild_wanted(model)
    rebuilds: dict = {}
    hook = getattr(model, "ct_decompress_hook", None)
    if hook is not None:
        hook.remove()
        delattr(model, "ct_decompress_hook")
    layers, packed, dense = 0, 0, 0
    for name, module in list(model.named_modules()):
        scheme = getattr(module, "quantization_scheme", None)
        if not isinstance(module, torch.nn.Linear) or scheme is None or scheme.weights is None \
                or "weight" in dict(module.named_parameters(recurse=False)):
            continue
        compressor = BaseCompressor.get_value_from_registry(str(getattr(scheme.format, "value", scheme.format)))
        key = (compressor, scheme.model_dump_json())
        if compile_ and key not in rebuilds:
            rebuilds[key] = _compiled(compressor, scheme)
        layer = PackedLinear(module, compressor, scheme, rebuilds.get(key))
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, layer)
        layers += 1
        packed += sum(getattr(layer, n).numel() * getattr(layer, n).element_size() for n in layer.names)
        dense += 2 * layer.in_features * layer.out_features
    if not layers:
        raise RuntimeError("the model has no compressed linear layer (already decompressed?)")
    for p in model.parameters():
        p.requires_grad_(False)
    return {"layers": layers, "packed_bytes": packed, "dense_bytes": dense, "compiled": compile_}


def compiled_rebuild_wanted(model: torch.nn.Module) -> bool:
    """Whether to rebuild weights through torch.compile: on CUDA, unless YICHUI_PACKED_COMPILE=0. compressed-tensors'
    unpack and dequantize are a dozen small kernels per layer; compiled they are one or two (measured:
    bench/results/2026-12-03-packed-lora-h200.md). On CPU the compile costs more than it saves on short runs."""
    import os

    on_cuda = any(p.is_cuda for p in model.parameters())
    return on_cuda and os.environ.get("YICHUI_PACKED_COMPILE", "1") != "0"


def _compiled(compressor, scheme):
    """compressed-tensors' decompress for one scheme, compiled whole (fullgraph: the shape comes as a torch.Size,
    the scheme is a constant); a compile that fails falls back to the library's eager call for good."""
    eager = lambda state: compressor.decompress(state, scheme)["weight"]  # noqa: E731
    fn = torch.compile(eager, fullgraph=True, dynamic=False)
    broken: list = []

    def rebuild(state):
        if not broken:
            try:
                return fn(state)
            except torch.OutOfMemoryError:
                raise
            except Exception as e:  # an Inductor/dynamo failure: slower, not wrong
                broken.append(e)
                print(f"packed base: compiled rebuild failed ({type(e).__name__}: {str(e)[:200]}); eager from now on",
                      flush=True)
        return eager(state)

    return rebuild
