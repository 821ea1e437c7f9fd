"""The model of one training step: a small hybrid conv-stem vision transformer
(forward, backward groups, optimizer) as operator trees, cached per image size,
and the DDP all-reduce trees."""

from __future__ import annotations

from .format import (API_CU_LAUNCH, API_LAUNCH_EXC, C_OP, C_RT, COMM_STREAM, COMPUTE_STREAM, api_template,
                     op_template)
from .ops import BF16, GEMM_FLOP_PER_NS, HBM_BYTES_PER_NS, L, NONE, S, T, TF32_FLOP_PER_NS, Builder, Launch, Op


def step_model(b, pid, main, bwd, device, batch, img, nblocks, gelu_triton_every=2):
    """Return (forward ops, backward groups, optimizer ops) for one step shape."""
    D, FF, H, HD, NCLS = 768, 3072, 12, 64, 1000
    p = img // 16
    seq = p * p
    n = batch * seq
    F32, BF, HALF = "float", BF16, "c10::Half"
    fwd = []

    # ---- conv stem: conv(3->64, k3 s2 p1) + relu, conv(64->768, k8 s8)
    def conv(cin, cout, hw, k, s, pad, out_hw):
        x = T([batch, cin, hw, hw], F32)
        w = T([cout, cin, k, k], F32)
        bias = T([cout], F32)
        st, pd, dl = L([s, s]), L([pad, pad]), L([1, 1])
        flops = 2.0 * batch * cout * out_hw * out_hw * cin * k * k
        in_b = batch * cin * hw * hw * 4
        out_b = batch * cout * out_hw * out_hw * 4
        ls = [b.kern(main, "n2n", in_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, in_b // 4096), 1, 1], [256, 1, 1], 32, 4224),
              b.kern(main, "fprop", max(flops / TF32_FLOP_PER_NS, (in_b + out_b) / HBM_BYTES_PER_NS) + 4000,
                     [max(1, batch * out_hw * out_hw // 128), max(1, cout // 128), 1], [256, 1, 1], 168, 81920,
                     api_ns=6500),
              b.kern(main, "nhwc2nchw", out_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, out_b // 4096), 1, 1],
                     [256, 1, 1], 32, 4224)]
        cud = b.op(main, "aten::cudnn_convolution", [x, w, pd, st, dl, S(1), S("False"), S("False"), S("True")],
                   launches=ls, pre=22000, post=6000, mem=out_b)
        add = b.op(main, "aten::add_", [T([batch, cout, out_hw, out_hw], F32), T([1, cout, 1, 1], F32, [cout, 1, 1, 1]),
                                        S(1)], launches=[b.ew(main, "add_f32", out_b // 4, 12)], pre=5000, post=2000)
        _c = b.op(main, "aten::_convolution", [x, w, bias, st, pd, dl, S("False"), L([0, 0]), S(1), S("False"),
                                                S("False"), S("True"), S("True")],
                  children=[cud, b.view(main, "aten::reshape", [cout], F32, [L([1, -1, 1, 1])]), add], pre=3000, post=1500)
        c = b.op(main, "aten::convolution", [x, w, bias, st, pd, dl, S("False"), L([0, 0]), S(1)], children=[_c],
                 pre=2500, post=1000)
        return b.op(main, "aten::conv2d", [x, w, bias, st, pd, dl, S(1)], children=[c], pre=3000, post=1200, seq=True)

    h1 = img // 2
    fwd.append(("nn.Module: Conv2d_0", [conv(3, 64, img, 3, 2, 1, h1)]))
    relu = b.op(main, "aten::relu", [T([batch, 64, h1, h1], F32)], children=[
        b.op(main, "aten::clamp_min", [T([batch, 64, h1, h1], F32), S(0)],
             launches=[b.ew(main, "relu", batch * 64 * h1 * h1, 8)], pre=6000, post=2000,
             mem=batch * 64 * h1 * h1 * 4)], pre=3000, post=1000, seq=True)
    fwd.append(("nn.Module: ReLU_0", [relu]))
    fwd.append(("nn.Module: Conv2d_1", [conv(64, D, h1, 8, 8, 0, p)]))
    to_bf16 = b.op(main, "aten::to", [T([batch, seq, D], F32, [seq * D, 1, seq]), S(15), S("False"), S("False"), NONE],
                   children=[b.op(main, "aten::_to_copy", [T([batch, seq, D], F32, [seq * D, 1, seq]), S(15), NONE, NONE,
                                                           NONE, S("False"), NONE], children=[
                       b.op(main, "aten::empty_strided", [L([batch, seq, D]), L([seq * D, D, 1]), S(15), NONE, NONE, NONE],
                            pre=2500, post=1000),
                       b.op(main, "aten::copy_", [T([batch, seq, D], BF), T([batch, seq, D], F32, [seq * D, 1, seq]),
                                                  S("False")], launches=[b.ew(main, "to_bf16", n * D, 6, regs=28)],
                            pre=5000, post=2000)], pre=3000, post=1500, mem=n * D * 2)], pre=2500, post=1000, seq=True)
    fwd.append((None, [b.view(main, "aten::flatten", [batch, D, p, p], F32, [S(2), S(-1)]),
                       b.view(main, "aten::transpose", [batch, D, seq], F32, [S(1), S(2)]), to_bf16]))

    bwd_groups = []
    xdims = [batch, seq, D]
    for i in range(nblocks):
        ops = []
        ops.append(b.layer_norm(main, xdims, D))
        ops.append(b.linear(main, n, D, 3 * D, xdims))
        ops.append(b.view(main, "aten::view", [batch, seq, 3 * D], BF, [L([batch, seq, 3, H, HD])]))
        ops.append(b.view(main, "aten::permute", [batch, seq, 3, H, HD], BF, [L([2, 0, 3, 1, 4])]))
        qkv = T([batch, H, seq, HD], BF, [seq * 3 * D, HD, 3 * D, 1])
        attn_flops = 4.0 * batch * H * seq * seq * HD
        fa = b.op(main, "aten::_flash_attention_forward",
                  [qkv, qkv, qkv, NONE, NONE, S(seq), S(seq), S("0."), S("False"), S("False"), NONE],
                  children=[b.op(main, "aten::empty", [L([batch, seq, H, HD]), S(15), NONE, NONE, NONE, NONE],
                                 pre=2000, post=800),
                            b.op(main, "aten::empty", [L([batch, H, seq]), S(6), NONE, NONE, NONE, NONE],
                                 pre=1500, post=700)],
                  launches=[b.kern(main, "flash_fwd", attn_flops / (0.7 * GEMM_FLOP_PER_NS) + 4000,
                                   [max(1, (seq + 127) // 128), batch, H], [128, 1, 1], 255, 49152)],
                  pre=8000, post=3000, mem=n * D * 2)
        sd = b.op(main, "aten::_scaled_dot_product_flash_attention",
                  [qkv, qkv, qkv, S("0."), S("False"), S("False"), S("0.125")],
                  children=[b.view(main, "aten::transpose", [batch, H, seq, HD], BF, [S(1), S(2)]), fa],
                  pre=5000, post=2000)
        ops.append(b.op(main, "aten::scaled_dot_product_attention",
                        [qkv, qkv, qkv, NONE, S("0."), S("False"), NONE, S("False")], children=[sd],
                        pre=4000, post=1500, seq=True))
        ops.append(b.view(main, "aten::reshape", [batch, seq, H, HD], BF, [L([batch, seq, D])]))
        ops.append(b.linear(main, n, D, D, xdims, kname="gemm_mid", splitk=(seq <= 144)))
        ops.append(b.op(main, "aten::add", [T(xdims, BF), T(xdims, BF), S(1)],
                        launches=[b.ew(main, "add_bf16", n * D, 6)], pre=7000, post=2500, seq=True, mem=n * D * 2))
        ops.append(b.layer_norm(main, xdims, D))
        ops.append(b.linear(main, n, D, FF, xdims))
        ffdims = [batch, seq, FF]
        if gelu_triton_every and (i + img // 32) % gelu_triton_every == 1:
            kn = "triton_poi_fused_gelu_%d" % (3 + i)
            ops.append(b.op(main, kn, [T(ffdims, BF), T(ffdims, BF), S(n * FF)], launches=[
                b.kern(main, kn, n * FF * 4 / HBM_BYTES_PER_NS + 2500, [(n * FF + 1023) // 1024, 1, 1], [256, 1, 1],
                       18, 0, api=API_CU_LAUNCH, api_ns=7000)], pre=12000, post=3000, mem=n * FF * 2,
                extra_args=', "kernel_backend": "triton", "kernel_hash": "c%s", "grid": "grid(%d,)", "stream": 0'
                % ("qaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggf"[:44], (n * FF + 1023) // 1024)))
        else:
            ops.append(b.op(main, "aten::gelu", [T(ffdims, BF), NONE],
                            launches=[b.ew(main, "gelu", n * FF, 4, regs=30)], pre=8000, post=2500, seq=True,
                            mem=n * FF * 2))
        ops.append(b.linear(main, n, FF, D, ffdims, kname="gemm_mid"))
        ops.append(b.op(main, "aten::add", [T(xdims, BF), T(xdims, BF), S(1)],
                        launches=[b.ew(main, "add_bf16", n * D, 6)], pre=7000, post=2500, seq=True, mem=n * D * 2))
        fwd.append(("nn.Module: Block_%d" % i, ops))

        # ---- backward of this block (executed in reverse block order)
        def lin_bwd(nn_, k, m, name_nt="gemm_nt", splitk=False):
            return [
                b.op(bwd, "aten::t", [T([k, m], BF, [1, k])], pre=2500, post=1000),
                b.op(bwd, "aten::mm", [T([nn_, m], BF), T([m, k], BF)],
                     launches=b.gemm(bwd, nn_, m, k, "gemm_nn"), pre=8000, post=2500),
                b.op(bwd, "aten::t", [T([nn_, m], BF)], pre=2500, post=1000),
                b.op(bwd, "aten::mm", [T([m, nn_], BF, [1, m]), T([nn_, k], BF)],
                     launches=b.gemm(bwd, m, nn_, k, name_nt, splitk=splitk), pre=8000, post=2500),
                b.op(bwd, "aten::sum", [T([nn_, m], BF), L([0]), S("True"), NONE],
                     launches=[b.ew(bwd, "sum_bf16", nn_ * m, 2, grid_div=4096, regs=32)], pre=9000, post=2500),
                b.op(bwd, "aten::view", [T([1, m], BF), L([m])], pre=1500, post=800),
            ]

        def node(name, inner, kids, mem_free=True):
            return (name, inner, kids, mem_free)

        def layer_norm_bwd():
            return node("NativeLayerNormBackward0", None, [
                b.op(bwd, "aten::native_layer_norm_backward",
                     [T(xdims, BF), T(xdims, BF), L([D]), T([batch, seq, 1], F32), T([batch, seq, 1], F32),
                      T([D], BF), T([D], BF), L(["True", "True", "True"])],
                     launches=[b.ew(bwd, "ln_bwd_in", n * D, 6, grid_div=D, regs=48),
                               b.kern(bwd, "ln_bwd_gb", n * D * 2 / HBM_BYTES_PER_NS + 3000, [(D + 31) // 32, 1, 1],
                                      [32, 32, 1], 64, 8320)], pre=10000, post=3000)])

        bg = []
        bg.append(node("AddBackward0", None, []))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, FF, D, "gemm_nt_small", splitk=(seq <= 144))))
        if gelu_triton_every and (i + img // 32) % gelu_triton_every == 1:
            kn = "triton_poi_fused_gelu_gelu_backward_%d" % (7 + i)
            bg.append(node("CompiledFunctionBackward", None, [
                b.op(bwd, kn, [T(ffdims, BF), T(ffdims, BF), T(ffdims, BF), S(n * FF)], launches=[
                    b.kern(bwd, kn, n * FF * 6 / HBM_BYTES_PER_NS + 2500, [(n * FF + 1023) // 1024, 1, 1],
                           [256, 1, 1], 22, 0, api=API_CU_LAUNCH, api_ns=7000)], pre=12000, post=3000,
                     extra_args=', "kernel_backend": "triton", "grid": "grid(%d,)", "stream": 0'
                     % ((n * FF + 1023) // 1024))]))
        else:
            bg.append(node("GeluBackward0", "aten::gelu_backward", [
                b.op(bwd, "aten::gelu_backward", [T(ffdims, BF), T(ffdims, BF), NONE],
                     launches=[b.ew(bwd, "gelu_bwd", n * FF, 6, regs=30)], pre=8000, post=2500)]))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, D, FF)))
        bg.append(layer_norm_bwd())
        bg.append(node("AddBackward0", None, []))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, D, D, "gemm_nt_small", splitk=(seq <= 144))))
        bg.append(node("ScaledDotProductFlashAttentionBackward0", None, [
            b.op(bwd, "aten::_scaled_dot_product_flash_attention_backward",
                 [qkv, qkv, qkv, qkv, qkv, T([batch, H, seq], F32), NONE, NONE, S(seq), S(seq), S("0."), S("False"),
                  T([2], "long"), T([], "long"), S("0.125")],
                 children=[b.op(bwd, "aten::_flash_attention_backward",
                                [qkv, qkv, qkv, qkv, qkv, T([batch, H, seq], F32), NONE, NONE, S(seq), S(seq),
                                 S("0."), S("False"), T([2], "long"), T([], "long"), S("0.125")],
                                children=[b.op(bwd, "aten::empty_like", [qkv, NONE, NONE, NONE, NONE, NONE],
                                               pre=2500, post=1000),
                                          b.op(bwd, "aten::zeros", [L([batch, H, seq, HD]), S(6), NONE, NONE, NONE],
                                               launches=[b.memset(bwd, n * D * 4)], pre=6000, post=2000)],
                                launches=[b.ew(bwd, "flash_bwd_dot", n * D, 4, grid_div=HD * 128, regs=40),
                                          b.kern(bwd, "flash_bwd", 2.5 * attn_flops / (0.6 * GEMM_FLOP_PER_NS) + 6000,
                                                 [max(1, (seq + 127) // 128), batch, H], [256, 1, 1], 255, 98304),
                                          b.ew(bwd, "flash_bwd_cvt", n * D, 6, grid_div=HD * 128, regs=32)],
                                pre=9000, post=3000)], pre=5000, post=2000)]))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, D, 3 * D)))
        bg.append(layer_norm_bwd())
        bwd_groups.append(bg)

    # ---- head + loss
    head = [
        b.op(main, "aten::mean", [T(xdims, BF), L([1]), S("False"), NONE],
             launches=[b.ew(main, "mean_bf16", n * D, 2, grid_div=4096, regs=32)], pre=9000, post=2500, seq=True),
        b.op(main, "aten::to", [T([batch, D], BF), S(5), S("False"), S("False"), NONE],
             children=[b.op(main, "aten::_to_copy", [T([batch, D], BF), S(5), NONE, NONE, NONE, S("False"), NONE],
                            children=[b.op(main, "aten::copy_", [T([batch, D], HALF), T([batch, D], BF), S("False")],
                                           launches=[b.ew(main, "to_bf16", batch * D, 4)], pre=4000, post=1500)],
                            pre=3000, post=1200)], pre=2500, post=1000, seq=True),
        b.linear(main, batch, D, NCLS, [batch, D], dtype=HALF, kname="gemm_head", splitk=True),
    ]
    logits = T([batch, NCLS], F32)
    head.append(b.op(main, "aten::cross_entropy_loss", [logits, T([batch], "long"), NONE, S(1), S(-100), S("0.")],
                     children=[
                         b.op(main, "aten::log_softmax", [logits, S(1), NONE], children=[
                             b.op(main, "aten::_log_softmax", [logits, S(1), S("False")],
                                  launches=[b.kern(main, "logsoftmax", 3500, [batch, 1, 1], [1024, 1, 1], 38, 0)],
                                  pre=7000, post=2000)], pre=3000, post=1000),
                         b.op(main, "aten::nll_loss_nd", [logits, T([batch], "long"), NONE, S(1), S(-100)], children=[
                             b.op(main, "aten::nll_loss", [logits, T([batch], "long"), NONE, S(1), S(-100)], children=[
                                 b.op(main, "aten::nll_loss_forward", [logits, T([batch], "long"), NONE, S(1), S(-100)],
                                      launches=[b.kern(main, "nll", 2600, [1, 1, 1], [32, 1, 1], 28, 0)],
                                      pre=6000, post=2000)], pre=2500, post=1000)], pre=2500, post=1000)],
                     pre=4000, post=1500, seq=True))
    fwd.append(("nn.Module: Linear_head", head))

    head_bwd = [
        ("NllLossBackward0", None, [b.op(bwd, "aten::nll_loss_backward",
                                         [T([], F32), logits, T([batch], "long"), NONE, S(1), S(-100), T([], F32)],
                                         children=[b.op(bwd, "aten::zero_", [logits], launches=[
                                             b.ew(bwd, "fill_f32", batch * NCLS, 4)], pre=5000, post=1500)],
                                         launches=[b.kern(bwd, "nll_bwd", 2400, [1, 1, 1], [32, 1, 1], 26, 0)],
                                         pre=7000, post=2000)], True),
        ("LogSoftmaxBackward0", None, [b.op(bwd, "aten::_log_softmax_backward_data",
                                            [logits, logits, S(1), S(6)],
                                            launches=[b.kern(bwd, "logsoftmax_bwd", 3200, [batch, 1, 1], [1024, 1, 1],
                                                             40, 0)], pre=7000, post=2000)], True),
        ("AddmmBackward0", None, [
            b.op(bwd, "aten::mm", [T([batch, NCLS], HALF), T([NCLS, D], HALF)],
                 launches=b.gemm(bwd, batch, NCLS, D, "gemm_head_nn", splitk=True, dtype_half=True),
                 pre=8000, post=2500),
            b.op(bwd, "aten::sum", [T([batch, NCLS], HALF), L([0]), S("True"), NONE],
                 launches=[b.ew(bwd, "sum_bf16", batch * NCLS, 2, grid_div=4096, regs=32)], pre=9000, post=2500)],
         True),
        ("MeanBackward1", None, [b.op(bwd, "aten::expand", [T([batch, 1, D], BF), L([batch, seq, D]), S("False")],
                                      pre=2500, post=1000),
                                 b.op(bwd, "aten::div", [T([batch, seq, D], BF, [D, 0, 1]), S(seq)],
                                      launches=[b.ew(bwd, "add_bf16", n * D, 4)], pre=7000, post=2000)], True),
    ]

    stem_bwd = [
        ("ToCopyBackward0", None, [b.op(bwd, "aten::to", [T(xdims, BF), S(6), S("False"), S("False"), NONE],
                                        children=[b.op(bwd, "aten::copy_", [T(xdims, F32), T(xdims, BF), S("False")],
                                                       launches=[b.ew(bwd, "to_bf16", n * D, 6)],
                                                       pre=5000, post=2000)], pre=3000, post=1200)], True),
    ]

    def conv_bwd(cin, cout, hw, k, s, pad, out_hw, need_input_grad):
        flops = 2.0 * batch * cout * out_hw * out_hw * cin * k * k
        in_b = batch * cin * hw * hw * 4
        out_b = batch * cout * out_hw * out_hw * 4
        ls = [b.kern(bwd, "n2n", out_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, out_b // 4096), 1, 1], [256, 1, 1],
                     32, 4224)]
        if need_input_grad:
            ls.append(b.kern(bwd, "dgrad", max(flops / TF32_FLOP_PER_NS, (in_b + out_b) / HBM_BYTES_PER_NS) + 5000,
                             [max(1, batch * hw * hw // 128), max(1, cin // 128), 1], [256, 1, 1], 168, 81920))
            ls.append(b.kern(bwd, "nhwc2nchw", in_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, in_b // 4096), 1, 1],
                             [256, 1, 1], 32, 4224))
        ls.append(b.kern(bwd, "wgrad", max(flops / TF32_FLOP_PER_NS, (in_b + out_b) / HBM_BYTES_PER_NS) + 6000,
                         [max(1, cout // 128), max(1, cin * k * k // 128), 4], [256, 1, 1], 168, 81920))
        ls.append(b.ew(bwd, "sum_f32", out_b // 4, 4, grid_div=4096, regs=32))
        x = T([batch, cin, hw, hw], F32)
        return ("ConvolutionBackward0", None, [
            b.op(bwd, "aten::convolution_backward",
                 [T([batch, cout, out_hw, out_hw], F32), x, T([cout, cin, k, k], F32), L([cout]), L([s, s]),
                  L([pad, pad]), L([1, 1]), S("False"), L([0, 0]), S(1), L([str(need_input_grad), "True", "True"])],
                 launches=ls, pre=30000, post=8000)], True)

    stem_bwd.append(conv_bwd(64, D, h1, 8, 8, 0, p, True))
    stem_bwd.append(("ReluBackward0", None, [
        b.op(bwd, "aten::threshold_backward", [T([batch, 64, h1, h1], F32), T([batch, 64, h1, h1], F32), S(0)],
             launches=[b.ew(bwd, "relu_bwd", batch * 64 * h1 * h1, 12)], pre=7000, post=2000)], True))
    stem_bwd.append(conv_bwd(3, 64, img, 3, 2, 1, h1, False))

    # ---- optimizer (fused AdamW over all parameters, with grad clipping)
    nparams = 4 + nblocks * 12 + 2
    plist = T([nparams], F32)
    opt = [
        b.op(main, "aten::_foreach_norm", [plist, S(2), NONE],
             launches=[b.kern(main, "foreach_norm", 9000 + nblocks * 3000, [320, 1, 1], [512, 1, 1], 40, 0)],
             pre=40000, post=6000),
        b.op(main, "aten::stack", [plist, S(0)], launches=[b.ew(main, "add_f32", nparams, 8)], pre=15000, post=3000),
        b.op(main, "aten::linalg_vector_norm", [T([nparams], F32), S(2), NONE, S("False"), NONE],
             launches=[b.ew(main, "sum_f32", nparams, 4)], pre=9000, post=2500),
        b.op(main, "aten::_foreach_mul_", [plist, T([], F32)],
             launches=[b.kern(main, "foreach_mul", 7000 + nblocks * 2500, [320, 1, 1], [512, 1, 1], 32, 0)],
             pre=30000, post=5000),
    ]
    adam_launches = [b.kern(main, "adamw", 30000 + nblocks * 14000, [640, 1, 1], [512, 1, 1], 64, 0,
                            api=API_LAUNCH_EXC, api_ns=8000) for _ in range(3)]
    adamw = b.op(main, "Optimizer.step#AdamW.step", None, children=[
        b.op(main, "aten::_fused_adamw_", [plist, plist, plist, plist, plist, plist, S("0.0001"), S("0.9"), S("0.999"),
                                           S("0.05"), S("1e-08"), S("False"), S("False"), NONE, NONE],
             launches=adam_launches, pre=60000, post=9000)], pre=20000, post=8000, cat="user_annotation")
    zero = b.op(main, "Optimizer.zero_grad#AdamW.zero_grad", None, children=[
        b.op(main, "aten::zero_", [T([64, 3, 3, 3], F32)], children=[
            b.op(main, "aten::fill_", [T([64, 3, 3, 3], F32), S(0)], launches=[b.memset(main, 64 * 27 * 4)],
                 pre=4000, post=1500)], pre=2500, post=1000)], pre=15000, post=5000, cat="user_annotation")
    return fwd, bwd_groups, head_bwd, stem_bwd, opt, adamw, zero, n, D


class Model:
    """Caches built op trees per step shape."""

    def __init__(self, pid, main, bwd, device, nblocks, world_size):
        self.b = Builder(pid, device)
        self.pid, self.main, self.bwd, self.device = pid, main, bwd, device
        self.nblocks = nblocks
        self.world_size = world_size
        self._cache = {}
        b = self.b
        self.h2d = {}
        self.item = b.op(main, "aten::item", [T([], "float")], children=[
            b.op(main, "aten::_local_scalar_dense", [T([], "float")],
                 launches=[b.memcpy(main, "DtoH", 4),
                           Launch(api_template(("cudaStreamSynchronize", C_RT, 131), pid, main, flow=False), C_RT,
                                  2000, None, None, 0, COMPUTE_STREAM, sync=True)],
                 pre=5000, post=1500)], pre=3000, post=1000)

    def shape(self, img):
        m = self._cache.get(img)
        if m is None:
            m = self._cache[img] = step_model(self.b, self.pid, self.main, self.bwd, self.device, 8, img,
                                               self.nblocks)
        return m

    def comm(self, nelems, seq=None):
        """record_param_comms tree for one gradient bucket (built per call: cheap, few per step);
        seq: the collective's sequence number in its process group ("Seq"), written in job mode."""
        b = self.b
        ws = self.world_size
        ranks = "[" + ", ".join(str(i) for i in range(ws)) + "]"
        meta = (', "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "%s", '
                '"Group size": %d, "Global rank start": 0, "Global rank stride": 1, "In msg nelems": %d, '
                '"Out msg nelems": %d, "In split size": "[]", "Out split size": "[]", "dtype": "Float", '
                '"Collective name": "allreduce"' % (ranks, ws, nelems, nelems))
        seq_arg = "" if seq is None else ', "Seq": %d' % seq
        meta += seq_arg
        nbytes = nelems * 4
        # ring all-reduce: 2(n-1)/n of the data over ~80 GB/s NVLink-ish bus bandwidth
        dur = 9000 + (2.0 * max(ws - 1, 1) / max(ws, 1)) * nbytes / 80.0
        kern_extra = (', "Collective name": "allreduce", "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d, '
                      '"dtype": "Float", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0", '
                      '"Process Group Description": "default_pg", "Process Group Ranks": "%s"'
                      % (nelems, nelems, ws, ranks)) + seq_arg
        kl = b.kern(self.bwd, "nccl", dur, [8, 1, 1], [544, 1, 1], 96, 87568, stream=COMM_STREAM,
                    api=API_LAUNCH_EXC, api_ns=11000, extra=kern_extra)
        rpc = Op(op_template("cpu_op", "record_param_comms", self.pid, self.bwd, meta), C_OP, 4000, 3000,
                 (), (), False, 0)
        ar = Op(op_template("cpu_op", "c10d::allreduce_", self.pid, self.bwd, ""), C_OP, 3000, 2000,
                (), (), False, 0)
        return ar, rpc, kl, dur
