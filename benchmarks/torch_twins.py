"""PyTorch twins of the benchmark models, for the "torch" rows of test_bench_backends.py: the
traced graph replayed op by op with torch functions and the graph's own weights (so both
compute the same thing), or, for the recurrent rows, torch's own layer loaded with the
OneModel layer's state_dict (the parameter names are torch's). A graph with an op this table
lacks has no twin; the benchmark says which op."""
from __future__ import annotations

from onemodel.core.symbolic import evaluate


def _shape(shape, env):
    return [evaluate(d, env) if not isinstance(d, int) else d for d in shape]


def _ops(torch):
    F = torch.nn.functional
    return {
        "linear": lambda p, x, w, b=None: F.linear(x, w, b),
        "relu": lambda p, x: torch.relu(x),
        "gelu": lambda p, x: F.gelu(x, approximate=p.get("approximate", "none")),
        "erf": lambda p, x: torch.erf(x),
        "sqrt": lambda p, x: torch.sqrt(x),
        "add": lambda p, a, b: a + b,
        "sub": lambda p, a, b: a - b,
        "mul": lambda p, a, b: a * b,
        "div": lambda p, a, b: a / b,
        "matmul": lambda p, a, b: a @ b,
        "softmax": lambda p, x: torch.softmax(x, dim=p["axis"]),
        "mean": lambda p, x: x.mean(dim=p["axis"], keepdim=bool(p.get("keepdims"))),
        "transpose": lambda p, x: x.transpose(p["axis0"], p["axis1"]),
        "layer_norm": lambda p, x, w=None, b=None: F.layer_norm(x, tuple(p["normalized_shape"]),
                                                                w, b, p["eps"]),
        "scaled_dot_product_attention": lambda p, q, k, v, m=None: F.scaled_dot_product_attention(
            q, k, v, attn_mask=m),
        "conv2d": lambda p, x, w, b=None: F.conv2d(x, w, b, stride=p["stride"],
                                                   padding=p["padding"], dilation=p["dilation"],
                                                   groups=p["groups"]),
        "max_pool2d": lambda p, x: F.max_pool2d(x, p["kernel_size"], p["stride"], p["padding"],
                                                p["dilation"], p["ceil_mode"]),
    }


def graph_twin(torch, graph, env):
    """``run(x) -> torch.Tensor`` replaying ``graph`` (one input, one output) with symbolic
    axes at ``env``; raises LookupError naming the first op without a torch equivalent."""
    table = _ops(torch)
    for node in graph.nodes:
        if node.op not in table and node.op != "reshape":
            raise LookupError(f"no torch equivalent of {node.op!r} in benchmarks/torch_twins.py")
    consts = {k: torch.from_numpy(v.copy()) for k, v in graph.initializers.items()}
    steps = [(node.op, dict(node.params), node.inputs, node.outputs[0]) for node in graph.nodes]
    shapes = {i: _shape(p["shape"], env) for i, (op, p, _, _) in enumerate(steps)
              if op == "reshape"}
    (in_name,), ((_, out_name),) = [v.name for v in graph.inputs], graph.outputs

    def run(x):
        vals = dict(consts)
        vals[in_name] = x
        for i, (op, p, ins, out) in enumerate(steps):
            args = [vals[n] if n is not None else None for n in ins]
            vals[out] = args[0].reshape(shapes[i]) if op == "reshape" else table[op](p, *args)
        return vals[out_name]

    return run


def layer_twin(torch, layer):
    """torch's layer of the same class name, built with the same sizes and loaded with the
    OneModel layer's parameters (an RNN: input/hidden size, layers, batch_first, bias)."""
    cls = getattr(torch.nn, type(layer).__name__)
    twin = cls(layer.input_size, layer.hidden_size, num_layers=layer.num_layers,
               bias=layer.bias, batch_first=layer.batch_first,
               bidirectional=layer.bidirectional)
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                          for k, v in layer.state_dict().items()})
    twin.eval()
    return lambda x: twin(x)[0]
