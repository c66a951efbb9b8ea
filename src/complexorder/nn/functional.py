"""Pure functions behind the complex layers (paper appendix B), on complex tensors.

Every function takes and returns ``torch.complex64`` (or ``complex128``) tensors; weights are
kept as real pairs ``(A, B)`` for ``W = A + iB`` so that the real/imaginary weight sharing of
the paper (``A = B``, ``c = d``) is simply ``weight_imag=None``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import SupportsIndex, cast

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.modules import module as _torch_module

from .wave import complex_order_embedding, complex_order_embedding_reference

__all__ = [
    "complex_linear",
    "complex_conv1d",
    "split_activation",
    "complex_dropout",
    "complex_layer_norm",
    "modulus",
    "complex_scaled_dot_product_attention",
    "ATTENTION_SCORES",
    "check_attention_score",
    "causal_mask",
    "complex_order_embedding",
    "complex_order_embedding_reference",
]


def _require_complex(name: str, z: Tensor) -> None:
    if not isinstance(z, Tensor) or not z.is_complex():
        got = z.dtype if isinstance(z, Tensor) else type(z).__name__
        raise TypeError(f"{name} must be a complex tensor (torch.complex64), got {got}")


_COMPLEX_OF = {torch.float16: torch.complex32, torch.float32: torch.complex64, torch.float64: torch.complex128}


def _require_matching_dtype(input: Tensor, weight: Tensor) -> None:
    """A one-line error when a complex input's parts and a layer's real weights differ in precision
    (complex128 into a float32 layer, say), instead of matmul's ``mat1 and mat2 must have the same dtype``.
    Under autocast, half, single and bfloat16 mix freely (autocast takes the real products to its own precision and
    the layers return complex64, see :func:`_join`), but float64 does not mix with them: autocast leaves float64
    alone, so the mix would fail in torch."""
    if _COMPLEX_OF.get(weight.dtype) == input.dtype:
        return  # a dict lookup, not input.real (a new view on every layer call)
    if (not weight.is_complex() and torch.is_autocast_enabled(input.device.type)
            and (input.dtype == torch.complex128) == (weight.dtype == torch.float64)):
        return
    if weight.is_complex():  # Module.to(torch.complex64) converts the real parts into complex tensors
        real = torch.empty(0, dtype=weight.dtype).real.dtype
        raise TypeError(f"the layer's weights are {weight.dtype} (a .to({weight.dtype})?): complex layers keep real "
                        f"parameters and take complex inputs; convert the layer back with .to({real})")
    if weight.dtype in _COMPLEX_OF:
        fix = f"convert the input with .to({_COMPLEX_OF[weight.dtype]}) or the layer with .to({input.real.dtype})"
    else:  # bfloat16 weights have no complex counterpart
        fix = f"convert the layer with .to({input.real.dtype})"
    raise TypeError(f"input is {input.dtype} but the layer's weights are {weight.dtype}: {fix}")


def _join(real: Tensor, imag: Tensor) -> Tensor:
    """``torch.complex(real, imag)`` for parts that real products computed. Under autocast those come in autocast's
    precision: bfloat16 has no complex dtype, and complex32 (float16 parts) lacks most kernels (matmul, sum: the
    next layer, or a bias's gradient, would fail), so autocast's parts are joined in float32: every complex layer
    returns complex64 under autocast (``torch.autocast`` with bfloat16 or float16), shared weights or not, as the
    layers that run complex products (left at float32 by autocast) do. Outside autocast float16 parts give
    complex32 (a ``.half()`` layer's output)."""
    if not torch.jit.is_scripting():
        if real.dtype == torch.bfloat16 or (real.dtype == torch.float16
                                            and torch.is_autocast_enabled(real.device.type)):
            real, imag = real.float(), imag.float()
    return torch.complex(real, imag)


def _native_complex(input: Tensor, weight: Tensor) -> bool:
    """Whether PyTorch's complex matmul takes ``input`` with weights of ``weight``'s dtype: complex64 or complex128
    matching the weights' precision. complex32 has no matmul (``addmm`` is not implemented for ComplexHalf on the
    CPU), and autocast's mixes (a complex32 input into a float32 layer) have none either: those run as real
    products of the parts."""
    return input.dtype != torch.complex32 and _COMPLEX_OF.get(weight.dtype) == input.dtype


def _autocast_input(input: Tensor) -> Tensor:
    """Under autocast, a complex32 input as complex64: autocast's ``cat`` and ``stack`` refuse float16 parts under a
    bfloat16 autocast, and the layers return complex64 there anyway (see :func:`_join`)."""
    if input.dtype == torch.complex32 and torch.is_autocast_enabled(input.device.type):
        return input.to(torch.complex64)
    return input


def _autocast_weight(weight: Tensor) -> Tensor:
    """Under autocast, half-precision weights as float32 before they are assembled into a block (``cat``,
    ``stack``): autocast's ``cat`` refuses float16 under a bfloat16 autocast and bfloat16 under a float16 one. The
    product that follows takes the block to autocast's dtype again."""
    if weight.dtype in (torch.float16, torch.bfloat16) and torch.is_autocast_enabled(weight.device.type):
        return weight.float()
    return weight


def _block_weight(weight_real: Tensor, weight_imag: Tensor | None) -> Tensor:
    """``[[A, -B], [B, A]]`` along the first two dimensions (``B = A`` for ``None``): it maps ``[x, y]`` to
    ``[Ax - By, Bx + Ay]``."""
    a = _autocast_weight(weight_real)
    b = a if weight_imag is None else _autocast_weight(weight_imag)
    return torch.cat((torch.cat((a, -b), 1), torch.cat((b, a), 1)))


def _block_bias(bias_real: Tensor | None, bias_imag: Tensor | None) -> Tensor | None:
    """``[c, d]`` for :func:`_block_weight`'s product (``d = c`` for ``bias_imag=None``), or None without a bias."""
    if bias_real is None:
        return None
    c = _autocast_weight(bias_real)
    return torch.cat((c, c if bias_imag is None else _autocast_weight(bias_imag)))


def _as_complex(real: Tensor, imag: Tensor | None) -> Tensor:
    return torch.complex(real, real if imag is None else imag)


def _check_biases(bias_real: Tensor | None, bias_imag: Tensor | None) -> None:
    """``bias_imag`` alone has no meaning here (``bias_imag=None`` is the sharing ``c = d``, not ``d = 0``); it
    was dropped without a word."""
    if bias_real is None and bias_imag is not None:
        raise ValueError("bias_imag is given without bias_real: pass bias_real too (a zero tensor for b = 0 + id); "
                         "bias_imag=None shares c = d")


def complex_linear(input: Tensor, weight_real: Tensor, weight_imag: Tensor | None = None,
                   bias_real: Tensor | None = None, bias_imag: Tensor | None = None) -> Tensor:
    r"""Complex dense layer, paper Eq. 10/11 without the activation.

    For ``z = x + iy``, ``W = A + iB`` and ``b = c + id``:

    .. math:: W z + b = (Ax - By + c) + i(Bx + Ay + d)

    ``weight_imag=None`` is the paper's weight sharing ``A = B`` (and ``bias_imag=None`` with a
    bias gives ``c = d``); it costs two real products instead of a complex one:
    ``(Ax - Ay + c) + i(Ax + Ay + c)``.

    Args:
        input: complex input ``z``.
        weight_real: real part ``A`` of the weight.
        weight_imag: imaginary part ``B``; ``None`` (default) shares ``B = A``.
        bias_real: real part ``c`` of the bias; ``None`` (default): no bias.
        bias_imag: imaginary part ``d``; ``None`` (default) shares ``d = c``. Needs ``bias_real`` (pass
            ``bias_real=torch.zeros(out)`` for a purely imaginary bias).

    Shape:
        - input: ``[..., in]`` complex.
        - weight_real, weight_imag: ``[out, in]`` real, in the precision of the input's parts.
        - bias_real, bias_imag: ``[out]`` real.
        - output: ``[..., out]``, the input's complex dtype.

    Examples::

        >>> z = torch.randn(2, 5, 4, dtype=torch.complex64)
        >>> A, B, c = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3)
        >>> out = complex_linear(z, A, B, c)
        >>> out.shape, out.dtype
        (torch.Size([2, 5, 3]), torch.complex64)
        >>> torch.allclose(out, z @ torch.complex(A, B).T + torch.complex(c, c), atol=1e-5)  # bias_imag=None: d = c
        True
        >>> torch.allclose(complex_linear(z, A), complex_linear(z, A, A), atol=1e-5)  # weight_imag=None: B = A
        True
    """
    _require_complex("input", input)
    _check_biases(bias_real, bias_imag)
    if not torch.jit.is_scripting():  # TorchScript types the matmul itself
        _require_matching_dtype(input, weight_real)
        input = _autocast_input(input)
    if weight_imag is None:
        x, y = input.real, input.imag
        both = F.linear(torch.stack((x - y, x + y)), weight_real, bias_real if bias_imag is None else None)
        if bias_real is not None and bias_imag is not None:  # (both tested: TorchScript refines each Optional)
            return _join(both[0] + bias_real, both[1] + bias_imag)
        return _join(both[0], both[1])
    if not torch.jit.is_scripting():
        if not _native_complex(input, weight_real):
            # float16 weights (complex32 has no matmul) or autocast's mixes: Eq. 10 as one real product of the
            # parts, [x, y] -> [Ax - By + c, Bx + Ay + d]
            both = F.linear(torch.cat((input.real, input.imag), -1), _block_weight(weight_real, weight_imag),
                            _block_bias(bias_real, bias_imag))
            n = weight_real.shape[0]
            return _join(both[..., :n], both[..., n:])
    bias = None if bias_real is None else _as_complex(bias_real, bias_imag)
    return F.linear(input, _as_complex(weight_real, weight_imag), bias)


def complex_conv1d(input: Tensor, weight_real: Tensor, weight_imag: Tensor | None = None,
                   bias_real: Tensor | None = None, bias_imag: Tensor | None = None,
                   stride: int = 1, padding: int | str = 0, dilation: int = 1) -> Tensor:
    r"""Complex 1-d convolution: Eq. 10 applied to kernels, ``(A*x - B*y + c) + i(B*x + A*y + d)``.

    ``padding=0`` is the narrow (valid) convolution of the paper. ``weight_imag=None`` shares
    ``A = B`` (and ``c = d``) as :func:`complex_linear`.

    Args:
        input: complex input.
        weight_real, weight_imag: real kernels ``A`` and ``B``; ``weight_imag=None`` (default) shares ``B = A``.
        bias_real, bias_imag: real biases ``c`` and ``d``; ``bias_real=None`` (default): no bias;
            ``bias_imag=None`` shares ``d = c`` and needs ``bias_real``.
        stride, padding, dilation: integers (padding also ``"valid"`` or ``"same"``), as
            :func:`torch.nn.functional.conv1d` (defaults 1, 0, 1).

    Shape:
        - input: ``[N, C_in, L]`` complex, or unbatched ``[C_in, L]`` (as :func:`torch.nn.functional.conv1d`).
        - weight_real, weight_imag: ``[C_out, C_in, k]`` real; bias_real, bias_imag: ``[C_out]`` real.
        - output: ``[N, C_out, L_out]`` complex (``[C_out, L_out]`` for an unbatched input),
          ``L_out = (L + 2 padding - dilation (k - 1) - 1) // stride + 1``.

    Examples::

        >>> x = torch.randn(2, 4, 10, dtype=torch.complex64)
        >>> w = torch.randn(3, 4, 3)
        >>> complex_conv1d(x, w).shape  # narrow: L_out = 10 - 3 + 1
        torch.Size([2, 3, 8])
        >>> complex_conv1d(x, w, torch.randn(3, 4, 3), padding=1).shape
        torch.Size([2, 3, 10])
    """
    _require_complex("input", input)
    _check_biases(bias_real, bias_imag)
    if not torch.jit.is_scripting():  # TorchScript types the matmul itself
        _require_matching_dtype(input, weight_real)
        input = _autocast_input(input)
    unbatched = input.dim() == 2
    if unbatched:  # [C_in, L], as F.conv1d takes it: the shared path stacks the parts along the batch dimension
        input = input.unsqueeze(0)
    if weight_imag is None:
        x, y = input.real, input.imag
        both = F.conv1d(torch.cat((x - y, x + y)), weight_real, bias_real if bias_imag is None else None, stride,
                        padding, dilation)
        n = input.shape[0]
        if bias_real is not None and bias_imag is not None:
            out = _join(both[:n] + bias_real.unsqueeze(-1), both[n:] + bias_imag.unsqueeze(-1))
        else:
            out = _join(both[:n], both[n:])
    elif not torch.jit.is_scripting() and not _native_complex(input, weight_real):
        # float16 weights or autocast's mixes (complex32 into a float32 layer, say), as complex_linear: one real
        # convolution of the parts, in block form
        both = F.conv1d(torch.cat((input.real, input.imag), 1), _block_weight(weight_real, weight_imag),
                        _block_bias(bias_real, bias_imag), stride, padding, dilation)
        n = weight_real.shape[0]
        out = _join(both[:, :n], both[:, n:])
    else:
        # PyTorch's native complex convolution runs three real convolutions (Gauss's trick): about 13%
        # faster (forward + backward) than the four-product block form it replaced, on [32, 300, 50]
        # -> 100 channels; the same result up to float rounding.
        bias = None if bias_real is None else _as_complex(bias_real, bias_imag)
        out = F.conv1d(input, _as_complex(weight_real, weight_imag), bias, stride, padding, dilation)
    return out.squeeze(0) if unbatched else out


def split_activation(input: Tensor, activation: Callable[[Tensor], Tensor]) -> Tensor:
    r"""Split activation ``f(z) = sigma(Re z) + i sigma(Im z)`` (paper Eq. 10/12).

    Args:
        input: complex tensor.
        activation: a real function ``sigma`` (e.g. :func:`torch.relu`), applied to each part: called once on a
            copy of the real part and once on a copy of the imaginary part, each of ``input``'s shape (a module's
            hooks see both calls), so that it may act in place (``nn.ReLU(inplace=True)``, as in
            :class:`torch.nn.TransformerEncoderLayer`) and ``input`` is left as it was. The common element-wise
            activations (``relu``, ``gelu``, ``silu``, ``tanh``, ``sigmoid``, ... as functions or ``torch.nn``
            modules without ``inplace``) run on both parts in one pass instead: the same values, faster.

    Shape: ``input [*]`` complex -> ``[*]`` complex.

    Examples::

        >>> split_activation(torch.tensor([1 - 2j, -3 + 4j]), torch.relu)
        tensor([1.+0.j, 0.+4.j])
    """
    _require_complex("input", input)
    input = _autocast_input(input)
    if _elementwise(activation):  # one pass over the interleaved parts, and no copy of them
        return torch.view_as_complex(activation(torch.view_as_real(input.resolve_conj())))
    # Any other callable is called on each part as a tensor of its own, as the paper's sigma(Re z) + i sigma(Im z):
    # a copy, so that it may act in place (nn.ReLU(inplace=True) on input.real and then input.imag, two views of one
    # tensor, broke the backward pass and overwrote the input); a softmax over dim 0, a PReLU or a norm see each part
    # with the input's shape, as they did.
    return _join(activation(input.real.clone()), activation(input.imag.clone()))


#: Real activations known to act element by element and out of place (modules: unless built with inplace=True):
#: split_activation runs them on the interleaved parts (torch.view_as_real), with no copy of the parts; forward +
#: backward of a [64, 128, 256] complex64 input took 3-4 ms with relu where the parts one by one took 31 ms.
_ELEMENTWISE_FUNCTIONS: tuple[Callable[..., Tensor], ...] = (
    F.relu, F.gelu, F.silu, F.sigmoid, F.tanh, F.leaky_relu, F.elu, F.mish, F.softplus, torch.relu, torch.sigmoid,
    torch.tanh)
_ELEMENTWISE_MODULES = (torch.nn.ReLU, torch.nn.GELU, torch.nn.SiLU, torch.nn.Sigmoid, torch.nn.Tanh,
                        torch.nn.LeakyReLU, torch.nn.ELU, torch.nn.Mish, torch.nn.Softplus, torch.nn.Hardtanh,
                        torch.nn.ReLU6)


def _elementwise(activation: object) -> bool:
    """Whether :func:`split_activation` may run ``activation`` on the interleaved parts: one of the functions or
    module types above (the type itself: a subclass's forward may do anything), not acting in place."""
    if type(activation) in _ELEMENTWISE_MODULES:
        return not getattr(activation, "inplace", False)
    return any(activation is f for f in _ELEMENTWISE_FUNCTIONS)


def complex_dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Dropout of whole complex units: one mask for both parts, kept units scaled by ``1/(1-p)``.

    Dropping the complex number (not its parts separately) keeps the phase of surviving units,
    which is where the complex-order embedding stores position.

    Args:
        input: complex tensor.
        p: probability of dropping a unit, in ``[0, 1]`` (default 0.5).
        training: apply dropout (default ``True``); ``False`` returns ``input`` itself.

    Shape: ``input [*]`` complex -> ``[*]`` complex.

    Examples::

        >>> out = complex_dropout(torch.full((2, 4), 1 + 1j), p=0.5)
        >>> bool(((out == 0) | (out == 2 + 2j)).all())  # a unit is dropped whole or scaled by 2
        True
    """
    _require_complex("input", input)
    check_dropout(p, "dropout probability p")
    if not training or p == 0.0:
        return input
    return input * _unit_dropout_mask(input.shape, input.real.dtype, input.device, p)


def _unit_dropout_mask(shape: torch.Size, dtype: torch.dtype, device: torch.device, p: float) -> Tensor:
    """The real mask of :func:`complex_dropout` (0, or ``1 / (1 - p)``, per complex unit), drawn from the random
    numbers ``F.dropout`` draws: the parts path (:func:`_dropout_parts`) takes the same one, so both paths drop the
    same units."""
    return F.dropout(torch.ones(shape, dtype=dtype, device=device), p, True)


def complex_layer_norm(input: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None = None,
                       bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Layer norm applied to the real and imaginary parts separately (appendix B's per-part normalisation, with
    layer instead of batch statistics).

    ``weight``/``bias`` are real ``[2, *normalized_shape]``: row 0 for the real part, row 1 for
    the imaginary part.

    Args:
        input: complex tensor.
        normalized_shape: the trailing dimensions to normalise over, a tuple of ints (as
            :func:`torch.nn.functional.layer_norm`, but not a bare int).
        weight, bias: optional real ``[2, *normalized_shape]`` affine parameters (default ``None``: none), in the
            precision of the input's parts.
        eps: added to the variance (default ``1e-5``).

    Shape: ``input [*, *normalized_shape]`` complex -> same shape, complex.

    Examples::

        >>> z = torch.randn(2, 5, 8, dtype=torch.complex64)
        >>> out = complex_layer_norm(z, (8,), weight=torch.ones(2, 8), bias=torch.zeros(2, 8))
        >>> out.shape, torch.allclose(out.imag.mean(-1), torch.zeros(2, 5), atol=1e-5)  # each part centred
        (torch.Size([2, 5, 8]), True)
    """
    _require_complex("input", input)
    for affine in (weight, bias):  # F.layer_norm refuses the mix; the products below would promote it silently
        if affine is not None and not torch.jit.is_scripting():
            _require_matching_dtype(input, affine)
    if not torch.jit.is_scripting():
        input = _autocast_input(input)
    parts = torch.stack((input.real, input.imag))
    parts = F.layer_norm(parts, normalized_shape, None, None, eps)
    shape = (2, *([1] * (parts.dim() - 1 - len(normalized_shape))), *normalized_shape)
    if weight is not None:
        parts = parts * weight.view(shape)
    if bias is not None:  # as F.layer_norm: a bias without a weight is still added
        parts = parts + bias.view(shape)
    return _join(parts[0], parts[1])


def check_modulus_eps(eps: float, name: str = "eps") -> None:
    """A one-line error unless ``eps`` (of :func:`modulus`, or a norm layer's) is a finite number >= 0 (a negative
    or NaN one gives NaN outputs)."""
    if not (isinstance(eps, (int, float)) and not isinstance(eps, bool) and math.isfinite(eps) and eps >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0, got {eps!r}")


def as_integer(value: object) -> int | None:
    """``value`` as a Python int if it is an integer that is not a bool (``int``, NumPy's integers, a 0-d integer
    tensor: what ``operator.index`` takes), else None: sizes drawn by ``np.random.choice`` are accepted and stored
    as ints, while ``True``, ``2.5`` and ``"8"`` are refused."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(cast(SupportsIndex, value))  # anything is tried: TypeError means no
    except TypeError:
        return None


def positive_int(value: object, name: str, meaning: str = "", low: int = 1) -> int:
    """``value`` as a Python int if it is an integer ``>= low`` (an ``int``, a NumPy integer, a 0-d integer tensor;
    not a bool); else a one-line ``ValueError`` naming the argument, ``meaning`` after the expected form
    (``Linear(True, 4)`` would build one input feature, ``8.0`` fail deep in ``torch.empty``, ``0`` build an empty
    layer)."""
    number = as_integer(value)
    if number is None or number < low:
        form = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise ValueError(f"{name} must be {form}{meaning}, got {value!r}")
    return number


def check_flags(**flags: object) -> None:
    """A one-line error unless every switch is a bool: ``share_weights="no"`` is truthy, and would otherwise
    silently build the shared-weight layer (half the parameters); the embeddings check theirs alike."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")


def check_dropout(p: float, name: str = "dropout") -> None:
    """A one-line error unless the dropout probability ``p`` is a number in [0, 1] (``F.dropout``'s own range)."""
    if not (isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {p!r}")


def modulus(input: Tensor, eps: float = 0.0) -> Tensor:
    """The read-out ``|z| = sqrt(Re z^2 + Im z^2)`` of the last layer (real output).

    With ``eps > 0`` it is ``sqrt(|z|^2 + eps)``, differentiable at ``z = 0``.

    Args:
        input: complex tensor.
        eps: a finite number ``>= 0`` (default 0: the exact modulus).

    Shape: ``input [*]`` complex -> ``[*]`` real (float32 for complex64).

    Examples::

        >>> modulus(torch.tensor([3 + 4j, 0j]))
        tensor([5., 0.])
        >>> modulus(torch.tensor([3 + 4j, 0j]), eps=1e-6)
        tensor([5.0000e+00, 1.0000e-03])
    """
    _require_complex("input", input)
    check_modulus_eps(eps)
    if eps == 0.0:
        return input.abs()
    return torch.sqrt(input.real.square() + input.imag.square() + eps)


def causal_mask(query_len: int, key_len: int | None = None, device=None) -> Tensor:
    """Boolean ``[Lq, Lk]`` mask, True where attention is allowed: query ``i`` sees key ``j <= i + Lk - Lq``.

    The mask is aligned bottom-right, so with a cache of earlier keys (``Lk > Lq``) the last
    query is the newest position and sees every key.

    Args:
        query_len: number of queries ``Lq``.
        key_len: number of keys ``Lk`` (default ``None``: ``Lq``).
        device: where to build the mask (default ``None``: torch's default device).

    Shape: output ``[Lq, Lk]`` bool.

    Examples::

        >>> causal_mask(3)
        tensor([[ True, False, False],
                [ True,  True, False],
                [ True,  True,  True]])
        >>> causal_mask(2, 4)  # two new queries after two cached keys
        tensor([[ True,  True,  True, False],
                [ True,  True,  True,  True]])
    """
    key_len = query_len if key_len is None else key_len
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).tril(key_len - query_len)


#: How a complex query-key product becomes a real attention score.
ATTENTION_SCORES = ("modulus", "real", "bilinear")


def check_attention_score(score: str, name: str = "score") -> str:
    """``score`` if it is one of :data:`ATTENTION_SCORES`, else a one-line ``ValueError`` naming ``name``.

    Args:
        score: the name to check: ``"modulus"``, ``"real"`` or ``"bilinear"``.
        name: the argument or setting it was given as (``attention_score``, ``model.attention_score``).
    """
    if score not in ATTENTION_SCORES:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, ATTENTION_SCORES))}, got {score!r}")
    return score


def complex_scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                                         dropout_p: float = 0.0, training: bool = True,
                                         scale: float | None = None, score: str = "modulus") -> tuple[Tensor, Tensor]:
    r"""Complex attention, paper Eq. 13-14.

    .. math::
        e_{ij} = \frac{|q_i \cdot \overline{k_j}|}{\sqrt{d}}, \quad
        a_{ij} = \mathrm{softmax}_j(e_{ij}), \quad out_i = \sum_j a_{ij} v_j

    ``q_i . conj(k_j)`` is the Hermitian product; the weights are real.

    ``score="real"`` (not the paper's) takes :math:`\Re(q_i \cdot \overline{k_j}) / \sqrt{d}` instead of
    the modulus: the real dot product of ``[Re q, Im q]`` and ``[Re k, Im k]``. It keeps the sign and the
    phase of the product (the modulus gives the same score to ``z`` and ``-z``, and ``z`` and
    ``conj(z)``), as a real Transformer's dot product and rotary position encodings do.

    ``score="bilinear"`` (not the paper's either) takes :math:`|q_i \cdot k_j| / \sqrt{d}`, the modulus of
    the product *without* the conjugate, as the authors' classification code computes it
    (``attention_complex.py`` of FreedomIntelligence/complex-order: ``Re = q_r k_r^T - q_i k_i^T``,
    ``Im = q_r k_i^T + q_i k_r^T``). With complex-order embeddings the phases of query and key then add,
    so the score depends on ``omega * (pos_q + pos_k)`` instead of ``omega * (pos_q - pos_k)``.

    Args:
        query: ``[..., Lq, d]`` complex.
        key: ``[..., Lk, d]`` complex.
        value: ``[..., Lk, dv]`` complex.
        mask: boolean, broadcastable to ``[..., Lq, Lk]``, True where attention is allowed (the
            convention of :func:`torch.nn.functional.scaled_dot_product_attention`). A query with
            no allowed key gets zero weights and a zero output. Default ``None``: every key.
        dropout_p: dropout on the attention weights (only when ``training``), in ``[0, 1]`` (default 0).
        training: apply ``dropout_p`` (default ``True``).
        scale: defaults to ``1 / sqrt(d)``.
        score: ``"modulus"`` (paper Eq. 14, the default), ``"real"`` or ``"bilinear"``.

    Shape:
        - query: ``[..., Lq, d]``, key: ``[..., Lk, d]``, value: ``[..., Lk, dv]`` complex, all with the same
          number of dimensions (leading ones broadcast as in :func:`torch.matmul`).
        - mask: broadcastable to ``[..., Lq, Lk]``, with no more dimensions than the query.
        - output: ``[..., Lq, dv]`` complex; weights: ``[..., Lq, Lk]`` real, each row summing to 1 (0 for a
          fully masked query).

    Returns:
        ``(output [..., Lq, dv] complex, weights [..., Lq, Lk] real)``.

    Examples::

        >>> q = torch.randn(2, 4, 3, 8, dtype=torch.complex64)  # [B, H, Lq, d]
        >>> k, v = torch.randn(2, 4, 5, 8, dtype=torch.complex64), torch.randn(2, 4, 5, 6, dtype=torch.complex64)
        >>> out, weights = complex_scaled_dot_product_attention(q, k, v, mask=causal_mask(3, 5))
        >>> out.shape, out.dtype, weights.shape, weights.dtype
        (torch.Size([2, 4, 3, 6]), torch.complex64, torch.Size([2, 4, 3, 5]), torch.float32)
        >>> bool(weights[..., 0, 3:].abs().max() == 0), torch.allclose(weights.sum(-1), torch.ones(2, 4, 3))
        (True, True)
    """
    for name, z in (("query", query), ("key", key), ("value", value)):
        _require_complex(name, z)
        if z.dim() < 2 or z.shape[-1] == 0:
            raise ValueError(f"{name} must be [..., L, d] with d >= 1, got {tuple(z.shape)}")
    if not query.dim() == key.dim() == value.dim():
        raise ValueError(f"query, key and value must have the same number of dimensions, got {tuple(query.shape)}, "
                         f"{tuple(key.shape)} and {tuple(value.shape)}")
    if mask is not None and mask.dim() > query.dim():
        raise ValueError(f"mask [..., Lq, Lk] may not have more dimensions than query {tuple(query.shape)}, got "
                         f"{tuple(mask.shape)}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query and key must share their last dimension, got {query.shape[-1]} and {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value must have the same length, got {key.shape[-2]} and {value.shape[-2]}")
    check_attention_score(score)
    query, key, value = _autocast_input(query), _autocast_input(key), _autocast_input(value)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if score != "real" and (query.dtype == torch.complex32 or query.dtype != key.dtype):
        # complex32 has no matmul (nor has a mix): the complex product as one real product of the parts,
        # [qr, qi] . [kr, ki] and [qr, qi] . [-ki, kr] (conjugate key), [kr, -ki] and [ki, kr] (bilinear)
        q = torch.cat((query.real, query.imag), -1)
        kr, ki = key.real, key.imag
        first, second = (((kr, ki), (-ki, kr)) if score == "modulus" else ((kr, -ki), (ki, kr)))
        k = torch.cat((torch.cat(first, -1), torch.cat(second, -1)), -2)
        both = torch.matmul(q, k.transpose(-2, -1))
        scores = _join(both[..., :key.shape[-2]], both[..., key.shape[-2]:]).abs() * scale  # abs: 0 grad at 0 (hypot: NaN)
    elif score == "modulus":
        scores = torch.matmul(query, key.transpose(-2, -1).conj()).abs() * scale
    elif score == "bilinear":
        scores = torch.matmul(query, key.transpose(-2, -1)).abs() * scale
    else:  # Re(q . conj(k)) = [Re q, Im q] . [Re k, Im k]: one real product of twice the width
        q = torch.view_as_real(query.resolve_conj()).flatten(-2)  # view_as_real refuses lazy conj() views
        k = torch.view_as_real(key.resolve_conj()).flatten(-2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    weights = _attention_weights(scores, mask, dropout_p, training)
    # Real weights times complex values: one real product over the interleaved parts.
    v = torch.view_as_real(value.resolve_conj()).flatten(-2)
    out = torch.matmul(weights, v).unflatten(-1, (value.shape[-1], 2))
    return torch.view_as_complex(out.contiguous()), weights


def _attention_weights(scores: Tensor, mask: Tensor | None, dropout_p: float, training: bool) -> Tensor:
    """Eq. 13's weights from real scores: masked (-inf where ``mask`` is False), softmax over the keys, a row with no
    allowed key set to zero, then dropout."""
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a boolean tensor (True = attention allowed), got dtype {mask.dtype}")
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    check_dropout(dropout_p, "dropout_p")
    if dropout_p > 0.0 and training:
        weights = F.dropout(weights, dropout_p, True)
    return weights


# ------------------------------------------------------------------------------------------------------------------
# Fast paths on the parts (stop 79). A layer whose input, sub-layers and output are all complex converts every
# complex tensor between its sub-layers: each complex product reads the interleaved parts, each norm stacks them, each
# dropout promotes its mask to complex. The Transformer encoder layer and the CNN classifier therefore split their
# input into its real and imaginary parts once (two contiguous real tensors), run every sub-layer on the parts, and
# join the parts at the end. On the parts a complex product costs three real products instead of four (Gauss's
# trick, as PyTorch's complex convolution does):
#
#     (x + iy)(A + iB) = (x(A + B) - t) + i(y(A - B) + t),   t = (x + y)B.
#
# The results equal the straightforward formulas up to float rounding (tests/test_layer_fast_paths.py holds them to
# them, values and gradients, and to float64). They run on the CPU only, in complex64 or complex128, outside autocast;
# everything else, and any call the fast path does not cover, takes the straightforward path with its checks.

#: False runs the straightforward formulas everywhere (tests, benchmarks/layer_speed.py).
_FAST_PATHS = True


def _fast_paths_enabled() -> bool:
    return _FAST_PATHS


def _parts_ok(input: object, weight: Tensor) -> bool:
    """Whether a fast path on the parts may take ``input``: a complex64 or complex128 CPU tensor in the precision of
    the layer's real ``weight``, outside autocast (whose real products run in half precision)."""
    return (_FAST_PATHS and isinstance(input, Tensor) and input.device.type == "cpu"
            and input.dtype in (torch.complex64, torch.complex128) and _COMPLEX_OF.get(weight.dtype) == input.dtype
            and weight.device.type == "cpu" and not torch.is_autocast_enabled("cpu"))


def _no_hooks(*modules: torch.nn.Module) -> bool:
    """Whether calling these modules' forward code directly skips nothing: no forward or backward hooks on them, and
    no global module hooks."""
    if any(getattr(_torch_module, name, None) for name in ("_global_forward_hooks", "_global_forward_pre_hooks",
                                                             "_global_backward_hooks", "_global_backward_pre_hooks")):
        return False
    return not any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks
                   for m in modules)


def _split(input: Tensor) -> tuple[Tensor, Tensor]:
    """The real and imaginary parts of a complex tensor as two contiguous real tensors (one pass each way)."""
    real, imag = torch.view_as_real(input.resolve_conj()).unbind(-1)
    return real.contiguous(), imag.contiguous()


def _affine(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``input @ weight.T + bias`` for a 2-d ``input``: a new tensor (not a view), so it may be changed in place."""
    weight = weight.t()
    return torch.mm(input, weight) if bias is None else torch.addmm(bias, input, weight)


def _linear_parts(real: Tensor, imag: Tensor, weight_real: Tensor, weight_imag: Tensor | None,
                  bias_real: Tensor | None = None, bias_imag: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """:func:`complex_linear` on the parts: ``(x, y) -> (Ax - By + c, Bx + Ay + d)`` for ``[..., in]`` parts, with
    three real products (Gauss's trick), or two for shared weights (``A = B``: ``(A(x - y) + c, A(x + y) + d)``).
    ``bias_imag=None`` shares ``d = c``."""
    shape = real.shape[:-1]
    x, y = real.reshape(-1, real.shape[-1]), imag.reshape(-1, imag.shape[-1])
    d = bias_real if bias_imag is None else bias_imag
    if weight_imag is None:
        out_real, out_imag = _affine(x - y, weight_real, bias_real), _affine(x + y, weight_real, d)
    else:
        t = torch.mm(x + y, weight_imag.t())
        out_real = _affine(x, weight_real + weight_imag, bias_real).sub_(t)
        out_imag = _affine(y, weight_real - weight_imag, d).add_(t)
    return out_real.view(*shape, -1), out_imag.view(*shape, -1)


def _conv1d_parts(real: Tensor, imag: Tensor, weight_real: Tensor, weight_imag: Tensor | None,
                  bias_real: Tensor | None = None, bias_imag: Tensor | None = None, stride: int = 1,
                  padding: int | str = 0, dilation: int = 1,
                  combos: dict[str, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """:func:`complex_conv1d` on the parts ``[N, C_in, L]`` of its input, as :func:`_linear_parts`: three real
    convolutions (two for shared weights). ``combos`` (a dict, filled here) keeps ``x + y`` (and ``x - y``) for the
    next convolution of the same input."""
    combos = {} if combos is None else combos

    def combo(name: str) -> Tensor:
        if name not in combos:
            combos[name] = real + imag if name == "sum" else real - imag
        return combos[name]

    d = bias_real if bias_imag is None else bias_imag
    if weight_imag is None:
        return (F.conv1d(combo("difference"), weight_real, bias_real, stride, padding, dilation),
                F.conv1d(combo("sum"), weight_real, d, stride, padding, dilation))
    t = F.conv1d(combo("sum"), weight_imag, None, stride, padding, dilation)
    return (F.conv1d(real, weight_real + weight_imag, bias_real, stride, padding, dilation).sub_(t),
            F.conv1d(imag, weight_real - weight_imag, d, stride, padding, dilation).add_(t))


def _activation_parts(activation: Callable[[Tensor], Tensor], real: Tensor, imag: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`split_activation` on the parts: the activation on each part, a copy of it unless the activation is one of
    the known element-wise ones (it may act in place), as :func:`split_activation` calls it."""
    if _elementwise(activation):
        return activation(real), activation(imag)
    return activation(real.clone()), activation(imag.clone())


def _dropout_parts(p: float, training: bool, real: Tensor, imag: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`complex_dropout` on the parts: the same mask, drawn from the same random numbers (one draw per complex
    unit, as there), on both."""
    check_dropout(p, "dropout probability p")
    if not training or p == 0.0:
        return real, imag
    mask = _unit_dropout_mask(real.shape, real.dtype, real.device, p)
    return real * mask, imag * mask


def _layer_norm_parts(real: Tensor, imag: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor]:
    """:func:`complex_layer_norm` on the parts, each with its row of ``weight`` and ``bias`` (``[2, *shape]``)."""
    return (F.layer_norm(real, normalized_shape, None if weight is None else weight[0],
                         None if bias is None else bias[0], eps),
            F.layer_norm(imag, normalized_shape, None if weight is None else weight[1],
                         None if bias is None else bias[1], eps))


def _attention_parts(query: tuple[Tensor, Tensor], key: tuple[Tensor, Tensor], value: tuple[Tensor, Tensor],
                     mask: Tensor | None, dropout_p: float, training: bool, scale: float,
                     score: str) -> tuple[Tensor, Tensor]:
    """:func:`complex_scaled_dot_product_attention` on the parts of ``[..., L, d]`` query, key and value (any
    strides), returning the output's parts: the scores as there (``"modulus"`` and ``"bilinear"`` by a complex
    product of the query and key, joined from their parts, which was 10-25% faster forward and backward than one real
    product of the parts stacked in blocks, at [64, 8, 20-50, 32]), and one real product of the weights with
    ``[Re v, Im v]`` for the output."""
    (qr, qi), (kr, ki), (vr, vi) = query, key, value
    if score == "real":
        scores = torch.matmul(torch.cat((qr, qi), -1), torch.cat((kr, ki), -1).transpose(-2, -1)) * scale
    else:
        q = torch.view_as_complex(torch.stack((qr, qi), -1))
        k = torch.view_as_complex(torch.stack((kr, ki), -1)).transpose(-2, -1)
        scores = torch.matmul(q, k.conj() if score == "modulus" else k).abs() * scale
    weights = _attention_weights(scores, mask, dropout_p, training)
    # (split, not two slices: its backward joins the two gradients, where each slice's fills a zero tensor)
    out_real, out_imag = torch.matmul(weights, torch.cat((vr, vi), -1)).split(vr.shape[-1], -1)
    return out_real, out_imag
