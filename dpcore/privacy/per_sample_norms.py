"""Per-example gradient norms without per-example gradients (the "book-keeping" trick).

For a Linear layer out = a Wᵀ + b called once per forward on a 2-D input, example i's weight
gradient is the outer product g_i a_iᵀ, where a_i is its input row and g_i = ∂loss_i/∂out_i.
Hence (Goodfellow 2015, "Efficient per-example gradient computations"; Li et al. 2022, ghost
clipping, eq. for ‖∇W‖² = vec(aaᵀ)·vec(ggᵀ)):

    ‖∇_W loss_i‖² = ‖a_i‖² ‖g_i‖²,      ‖∇_b loss_i‖² = ‖g_i‖²,

and the clipped sum Σ_i c_i g_i a_iᵀ is one re-weighted matmul (g ∘ c)ᵀ a. So one forward that
keeps a, and one backward that yields g, are all DP-SGD needs. The backward asks autograd for
the gradients w.r.t. each Linear *output* only (as GradientEdges captured in the forward hook,
so in-place ops on the output do not confuse it); autograd then skips the weight-gradient
matmuls altogether and the re-weighted matmul replaces them: a DP step costs about a plain one.

Because the backward is of Σ_i loss_i, g_i equals ∂loss_i/∂out_i only when examples do not
interact (no BatchNorm, no mixing across the batch) and row i of every Linear input belongs to
example i (batch first). Repeated uses of one weight (a layer called twice, tied weights, or a
3-D "sequence" input) are stacked along a position axis t and use the ghost norm
‖Σ_t g_t a_tᵀ‖² = Σ_{t,s} (a_t·a_s)(g_t·g_s). Any other use of a parameter (a non-Linear layer, a
bare nn.Parameter, a Linear weight also used outside its layer) is found by walking the autograd
graph and handled by `autograd_sq_norms`: correct, but a slower batched backward.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from torch.autograd.graph import GradientEdge, get_gradient_edge

# Above this many floats, per-example gradients of fallback parameters are computed in chunks.
_FALLBACK_CHUNK_FLOATS = 1 << 24


@dataclass
class LinearCall:
    """One call of a hooked nn.Linear during a forward: its input and the edge of its output."""

    module: nn.Linear
    a: torch.Tensor                 # detached input, (b, ..., in)
    edge: GradientEdge              # where autograd delivers ∂Σloss/∂out (taken before in-place ops)
    g: torch.Tensor | None = None   # filled by the backward: (b, ..., out)
    g_writable: bool = False        # g is this call's own dense tensor (the clipped sum may scale it)
    g_clipped: bool = False         # g already holds c_i·g_i (scaled in place by the clipped sum)


@dataclass
class Plan:
    """Which parameters take the Linear fast path for one step, and which the autograd fallback."""

    calls: list[LinearCall]                       # connected Linear calls, in forward order
    fast: dict[int, list[tuple[LinearCall, str]]] = field(default_factory=dict)  # id(p) -> uses
    fallback: list[torch.Tensor] = field(default_factory=list)


class LinearTap:
    """Forward hooks on the nn.Linear layers that own trainable parameters; records LinearCalls.

    Only plain nn.Linear (or subclasses that keep Linear.forward) are hooked: a subclass with its
    own forward may not compute a Wᵀ + b. The hook is prepended so it sees the raw output even if
    the user registered output-changing hooks of their own.
    """

    def __init__(self, module: nn.Module, params: list[torch.Tensor]):
        ids = {id(p) for p in params}
        self.owners: dict[int, list[tuple[nn.Linear, str]]] = {}
        self.calls: list[LinearCall] = []
        self._handles = []
        for m in module.modules():
            if not isinstance(m, nn.Linear) or type(m).forward is not nn.Linear.forward:
                continue
            roles = [(p, r) for r, p in (("weight", m.weight), ("bias", m.bias))
                     if p is not None and id(p) in ids]
            if not roles:
                continue
            for p, r in roles:
                self.owners.setdefault(id(p), []).append((m, r))
            self._handles.append(m.register_forward_hook(self._hook, prepend=True))

    def _hook(self, m: nn.Linear, args: tuple, out: torch.Tensor) -> None:
        if not torch.is_grad_enabled() or not isinstance(out, torch.Tensor) or out.grad_fn is None:
            return
        self.calls.append(LinearCall(m, args[0].detach(), get_gradient_edge(out)))

    def clear(self) -> None:
        self.calls = []

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        self.calls = []

    def plan(self, loss: torch.Tensor, params: list[torch.Tensor]) -> Plan:
        """Walk the graph of `loss`; a parameter is fast iff every use of it is a hooked call."""
        seen, refs = graph_uses(loss)
        b = loss.shape[0]
        calls = [c for c in self.calls if c.edge.node in seen]
        uses: dict[int, list[tuple[LinearCall, str]]] = {}
        bad: set[int] = set()
        for c in calls:
            for r in ("weight", "bias"):
                p = getattr(c.module, r)
                if p is None or id(p) not in self.owners:
                    continue
                uses.setdefault(id(p), []).append((c, r))
                if c.a.dim() < 2 or c.a.shape[0] != b:
                    bad.add(id(p))
        plan = Plan(calls=[])
        used_calls: dict[int, LinearCall] = {}
        for p in params:
            k = id(p)
            if k not in refs:
                continue                          # not in the graph: zero gradient, noise only
            if k in uses and k not in bad and len(uses[k]) == refs[k]:
                plan.fast[k] = uses[k]
                for c, _ in uses[k]:
                    used_calls[id(c)] = c
            else:
                plan.fallback.append(p)
        plan.calls = [c for c in calls if id(c) in used_calls]
        return plan


def graph_uses(loss: torch.Tensor) -> tuple[set, dict[int, int]]:
    """Nodes reachable from `loss`, and for each leaf tensor (by id) how many edges feed it.

    A Linear call contributes exactly one edge to its weight and one to its bias, so a parameter
    whose edge count exceeds its number of reachable hooked calls is used somewhere else too.
    """
    seen: set = set()
    refs: dict[int, int] = {}
    stack = [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            var = getattr(nxt, "variable", None)
            if var is not None:
                refs[id(var)] = refs.get(id(var), 0) + 1
            elif nxt not in seen:
                stack.append(nxt)
    return seen, refs


def _out_grad(call: LinearCall) -> torch.Tensor:
    """The output gradient the backward delivered to `call` (set before any norm is taken)."""
    if call.g is None:
        raise RuntimeError("a hooked Linear call got no output gradient from the backward")
    return call.g


def _stacked(uses: list[tuple[LinearCall, str]], b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (b, T, in) and output grads (b, T, out) of all uses, stacked along positions T."""
    a = torch.cat([c.a.reshape(b, -1, c.a.shape[-1]) for c, _ in uses], dim=1)
    gs = [_out_grad(c) for c, _ in uses]
    g = torch.cat([x.reshape(b, -1, x.shape[-1]) for x in gs], dim=1)
    return a, g


def linear_sq_norms(uses: list[tuple[LinearCall, str]], role: str, b: int,
                    cache: dict) -> torch.Tensor:
    """‖∂loss_i/∂p‖² for a weight or bias p whose every use is a hooked Linear call. Shape (b,).

    Single 2-D use: ‖a_i‖²‖g_i‖² (weight) or ‖g_i‖² (bias); otherwise the ghost norm over the
    stacked positions, or the explicit per-example gradient when T² exceeds in·out.
    """
    if len(uses) == 1 and uses[0][0].a.dim() == 2:
        c = uses[0][0]
        sg = cache.get(("g", id(c)))
        if sg is None:
            sg = cache[("g", id(c))] = _row_sq(_out_grad(c))
        if role == "bias":
            return sg
        # two heads reading one input (VAE mean and log-variance) share ‖a_i‖²
        key = ("a", c.a.data_ptr(), c.a.shape, c.a.stride())
        sa = cache.get(key)
        if sa is None:
            sa = cache[key] = _row_sq(c.a)
        return sg * sa
    a, g = _stacked(uses, b)
    if role == "bias":
        return _row_sq(g.sum(1))
    t = a.shape[1]
    if t * t <= a.shape[2] * g.shape[2]:
        ga = torch.bmm(a, a.transpose(1, 2))
        gg = torch.bmm(g, g.transpose(1, 2))
        return torch.einsum("bts,bts->b", ga, gg)
    per = torch.bmm(g.transpose(1, 2), a)          # (b, out, in): per-example gradients
    return _row_sq(per.flatten(1))


def _row_sq(x: torch.Tensor) -> torch.Tensor:
    """‖x_i‖² per row (a fused norm kernel: several times faster than einsum/bmm on CPU)."""
    return torch.linalg.vector_norm(x, dim=1).square()


def linear_clipped_sum_(out: torch.Tensor, uses: list[tuple[LinearCall, str]], role: str,
                        c: torch.Tensor, b: int) -> None:
    """out += Σ_i c_i ∂loss_i/∂p for a fast-path parameter (one re-weighted matmul).

    Single 2-D use: g is scaled in place when the call owns it (`g_writable`: the backward is over
    and the norms are taken), once for the weight and the bias, which then needs no c, unless a is
    far narrower (the P3GM decoder's first layer scales a copy of its 30-wide input, not its
    1 000-wide output gradient): the pass over memory is the only extra work the clipped sum does
    beyond the matmul a plain step also does, and no (b, out) temporary is allocated (~1 ms of a
    21 ms P3GM decoder step; the DP-VAE's 794 → 1 000 encoder layer scales g, not a copy of a).
    """
    if len(uses) == 1 and uses[0][0].a.dim() == 2:
        call = uses[0][0]
        g, a = _out_grad(call), call.a
        if 4 * a.shape[1] >= g.shape[1] and call.g_writable and not call.g_clipped:
            g.mul_(c[:, None])
            call.g_clipped = True
        if call.g_clipped:
            if role == "bias":
                out.add_(g.sum(0))
            else:
                out.addmm_(g.t(), a)
        elif role == "bias":
            out.addmv_(g.t(), c)
        elif a.shape[1] < g.shape[1]:
            out.addmm_(g.t(), a * c[:, None])
        else:
            out.addmm_((g * c[:, None]).t(), a)
        return
    a, g = _stacked(uses, b)
    gc = g * c[:, None, None]
    if role == "bias":
        out.add_(gc.sum((0, 1)))
    else:
        out.addmm_(gc.reshape(-1, gc.shape[-1]).t(), a.reshape(-1, a.shape[-1]))


def autograd_sq_norms(loss: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
    """Per-example squared gradient norms over `params` by a batched (vmapped) backward.

    The fallback for any parameter outside the Linear fast path. Row i of the Jacobian of the
    loss vector is ∂loss_i/∂θ, the per-example gradient (examples independent). Chunked so that
    at most ~_FALLBACK_CHUNK_FLOATS gradient entries exist at once; if an op has no batching
    rule, one backward per example (slow but always correct). Keeps the graph.
    """
    b = loss.shape[0]
    numel = max(1, sum(p.numel() for p in params))
    chunk = max(1, min(b, _FALLBACK_CHUNK_FLOATS // numel))
    eye = torch.eye(b, dtype=loss.dtype, device=loss.device)
    out = torch.zeros(b, dtype=loss.dtype, device=loss.device)
    for s in range(0, b, chunk):
        rows = eye[s:s + chunk]
        try:
            grads = torch.autograd.grad(loss, params, grad_outputs=rows, is_grads_batched=True,
                                        retain_graph=True, allow_unused=True)
            for gr in grads:
                if gr is not None:
                    out[s:s + chunk] += gr.reshape(rows.shape[0], -1).pow(2).sum(1)
        except RuntimeError:
            for i in range(s, min(b, s + chunk)):
                grads = torch.autograd.grad(loss[i], params, retain_graph=True, allow_unused=True)
                out[i] = sum(gr.pow(2).sum() for gr in grads if gr is not None)
    return out
