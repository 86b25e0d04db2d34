#!/usr/bin/python3
"""Rewrite an ortgpu-fused float16 BERT so each MultiHeadAttention takes its Q/K/V projection
biases itself, to measure on the GPU what folding them gains before ortgpu's fusion does it.

  bias    MatMul(x, Wq) + bq, ... -> MHA(q, k, v, bias=[bq|bk|bv]): the three Adds go
  packed  one MatMul(x, W) with each head's Q, K and V columns side by side -> Reshape
          [batch, seq, N, 3, H] -> MHA(qkv, -, -, bias=[bq|bk|bv]) (the packed QKV form)

  unfold  the reverse of bias: MHA(qm, km, vm, bias) -> MHA(qm + bq, km + bk, vm + bv), three Adds
          (the graph ortgpu's fusion wrote before it folded the biases)

  unpack  the reverse of ortgpu's packed fusion: MHA(Reshape(MatMul(x, Wqkv)), -, -, bias) ->
          MHA(x Wq + bq, x Wk + bk, x Wv + bv): three MatMuls and three Adds (the graph ortgpu's
          fusion wrote before it packed the projections)

Usage: mha_bias_probe.py IN.onnx bias|packed|unfold|unpack OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def copy(n):
    c = onnx.NodeProto()
    c.CopyFrom(n)
    return c


def unfold(g):
    inits = {t.name: t for t in g.initializer}
    changed = 0
    for n in [x for x in g.node if x.op_type == "MultiHeadAttention"]:
        if len(n.input) < 4 or n.input[3] not in inits:
            continue
        bias = numpy_helper.to_array(inits[n.input[3]])
        parts = np.split(bias, 3)
        ins = list(n.input)
        for i, (side, b) in enumerate(zip("qkv", parts)):
            bname, out = f"{n.name}/b{side}", f"{n.name}/{side}_biased"
            g.initializer.append(numpy_helper.from_array(b, bname))
            g.node.append(helper.make_node("Add", [ins[i], bname], [out], name=f"{n.name}/Add_{side}"))
            ins[i] = out
        ins[3] = ""
        del n.input[:]
        n.input.extend(ins)
        changed += 1
    return changed


def unpack(g):
    inits = {t.name: t for t in g.initializer}
    prod = {o: n for n in g.node for o in n.output}
    drop, changed = set(), 0
    for n in [x for x in g.node if x.op_type == "MultiHeadAttention"]:
        r = prod.get(n.input[0])
        mm = prod.get(r.input[0]) if r is not None and r.op_type == "Reshape" else None
        if mm is None or mm.op_type != "MatMul" or len(n.input) < 4 or n.input[3] not in inits:
            continue
        heads = next(a.i for a in n.attribute if a.name == "num_heads")
        w = numpy_helper.to_array(inits[mm.input[1]])
        bias = numpy_helper.to_array(inits[n.input[3]])
        hidden_in, hidden = w.shape[0], w.shape[1] // 3
        w4 = w.reshape(hidden_in, heads, 3, hidden // heads)
        ins = list(n.input)
        for t, side in enumerate("qkv"):
            wn, bn = f"{n.name}/unpacked_W{side}", f"{n.name}/unpacked_b{side}"
            g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(w4[:, :, t, :].reshape(hidden_in, hidden)), wn))
            g.initializer.append(numpy_helper.from_array(bias[t * hidden:(t + 1) * hidden], bn))
            g.node.append(helper.make_node("MatMul", [mm.input[0], wn], [f"{n.name}/{side}_mm"], name=f"{n.name}/MatMul_{side}"))
            g.node.append(helper.make_node("Add", [f"{n.name}/{side}_mm", bn], [f"{n.name}/{side}_biased"], name=f"{n.name}/Add_{side}"))
            ins[t] = f"{n.name}/{side}_biased"
        ins[3] = ""
        del n.input[:]
        n.input.extend(ins)
        drop.update([mm.output[0], r.output[0]])
        changed += 1
    keep = [copy(x) for x in g.node if x.output[0] not in drop]
    del g.node[:]
    g.node.extend(keep)
    return changed


def main(src, variant, dst):
    m = onnx.load(src)
    g = m.graph
    unfolded = unfold(g) if variant == "unfold" else unpack(g) if variant == "unpack" else 0
    prod = {o: n for n in g.node for o in n.output}
    inits = {t.name: t for t in g.initializer}
    drop, new_inits, changed = set(), [], unfolded
    for n in g.node if variant not in ("unfold", "unpack") else []:
        if n.op_type != "MultiHeadAttention" or len(n.input) < 3:
            continue
        parts = []
        for v in n.input[:3]:
            add = prod.get(v)
            if add is None or add.op_type != "Add":
                break
            mm = next((prod.get(i) for i in add.input if prod.get(i) is not None and prod[i].op_type == "MatMul"), None)
            b = next((i for i in add.input if i in inits), None)
            if mm is None or b is None or mm.input[1] not in inits:
                break
            parts.append((add, mm, b))
        if len(parts) != 3 or len({p[1].input[0] for p in parts}) != 1:
            continue
        bias = np.concatenate([numpy_helper.to_array(inits[p[2]]) for p in parts])
        bname = n.name + "/qkv_bias"
        new_inits.append(numpy_helper.from_array(bias, bname))
        for add, mm, _ in parts:
            drop.add(add.output[0])
        ins = list(n.input)
        if variant == "packed":
            heads = next(a.i for a in n.attribute if a.name == "num_heads")
            ws = [numpy_helper.to_array(inits[p[1].input[1]]) for p in parts]
            hidden_in, hidden = ws[0].shape
            size = hidden // heads
            # Per head: its Q, K and V columns, so MatMul -> Reshape gives [batch, seq, N, 3, H].
            w = np.stack([x.reshape(hidden_in, heads, size) for x in ws], axis=2).reshape(hidden_in, 3 * hidden)
            wname = n.name + "/qkv_weight"
            new_inits.append(numpy_helper.from_array(w, wname))
            for _, mm, _ in parts:
                drop.add(mm.output[0])
            x = parts[0][1].input[0]
            shape = n.name + "/qkv_shape"
            new_inits.append(numpy_helper.from_array(np.array([0, 0, heads, 3, size], dtype=np.int64), shape))
            g.node.append(helper.make_node("MatMul", [x, wname], [n.name + "/qkv_mm"], name=n.name + "/QkvMatMul"))
            g.node.append(helper.make_node("Reshape", [n.name + "/qkv_mm", shape], [n.name + "/qkv"], name=n.name + "/QkvReshape"))
            ins[:3] = [n.name + "/qkv", "", ""]
        else:
            ins[:3] = [p[1].output[0] for p in parts]
        while len(ins) < 4:
            ins.append("")
        ins[3] = bname
        del n.input[:]
        n.input.extend(ins)
        changed += 1
    keep = [copy(n) for n in g.node if n.output[0] not in drop]
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(new_inits)
    # Topological order (the packed nodes were appended at the end).
    ready = {i.name for i in g.input} | {t.name for t in g.initializer} | {""}
    order, pending = [], list(g.node)
    while pending:
        rest = []
        for n in pending:
            if all(i in ready for i in n.input):
                order.append(copy(n))
                ready.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise SystemExit("cycle or missing input")
        pending = rest
    del g.node[:]
    g.node.extend(order)
    onnx.save(m, dst)
    print(f"{variant}: {changed} MultiHeadAttention nodes rewritten -> {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[2] not in ("bias", "packed", "unfold", "unpack"):
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
