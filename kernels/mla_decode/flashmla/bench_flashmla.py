#!/usr/bin/env python3
"""bench_flashmla.py: FlashMLA's sparse FP8 decode (DeepSeek V3.2 layout) measured the way
mla_decode_bench measures ours, so that one abtrack plan can compare the two.

Inputs follow FlashMLA's tests/lib.py (generate_testcase_for_decode): q = randn clamped to
[-1, 1], KV = randn/10 clamped, every pool token no index points to set to NaN, quantized with
FlashMLA's own tests/quant.py (imported from FLASHMLA_DIR/tests). The pool is ours: --pool tokens
in pages of 64, each row of the indices --topk distinct random positions in it (no -1, no block
table: an index is the token's position in the pool). The output is checked with FlashMLA's own
test (tests/kernelkit/compare.py, its tolerances) and with ours (rel_err, corruption_pct,
cos_diff and lse_failed against an fp64 reference on the dequantized KV, as check.cpp computes
them for mla_decode_bench), on the first call
and on the last timed one. Each timed sample: L2 flushed (an L2-sized fill), then CUDA events
around one flash_mla_with_kvcache call (the split kernel and the combine kernel; the schedule
metadata is made by the first call and reused, as in serving). Prints one JSON line, last.

  FLASHMLA_DIR=build/flashmla/FlashMLA python3 bench_flashmla.py --batch 64 --heads 128
  python3 bench_flashmla.py --flashmla build/flashmla/FlashMLA --batch 64 --heads 128
Exit status: 0 ran (the JSON says whether the output was correct), 1 runtime error, 2 usage.
"""
import argparse
import contextlib
import importlib.util
import json
import math
import os
import statistics
import sys

D_QK, D_V, PAGE, TOKEN_BYTES = 576, 512, 64, 656
SPIN_CYCLES = 2_000_000  # ~1 ms of GPU spin before each timed call: hides Python's launch cost


def die(msg, code=1):
    print(f"bench_flashmla: error: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flashmla", metavar="PATH", default=os.environ.get("FLASHMLA_DIR"),
                    help="the unpacked, built FlashMLA folder (default: $FLASHMLA_DIR)")
    ap.add_argument("--batch", type=int, default=64, help="batch rows, one query token each (default 64)")
    ap.add_argument("--heads", type=int, default=64, choices=[64, 128], help="query heads (FlashMLA: 64 or 128)")
    ap.add_argument("--topk", type=int, default=2048, help="gathered tokens per row, a multiple of 64 (default 2048)")
    ap.add_argument("--pool", type=int, default=1 << 20, help="KV pool tokens, a multiple of 64 (default 1048576 = 688 MB)")
    ap.add_argument("--samples", type=int, default=10, help="timed samples (default 10)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls before the samples (default 3)")
    ap.add_argument("--seed", type=int, default=1, help="input seed (default 1)")
    ap.add_argument("--scale", default="default", help="softmax scale: X, default (1/sqrt(576)) or model (0.1352)")
    a = ap.parse_args()
    if a.batch < 1 or a.samples < 1 or a.warmup < 0:
        ap.error("--batch and --samples must be >= 1, --warmup >= 0")
    if a.topk < 64 or a.topk % 64:
        ap.error(f"--topk must be a positive multiple of 64 (FlashMLA's block of indices), got {a.topk}")
    if a.pool % PAGE or a.pool < a.topk:
        ap.error(f"--pool must be a multiple of {PAGE} and at least --topk, got {a.pool}")
    if a.scale == "default":
        a.scale = 1.0 / math.sqrt(D_QK)
    elif a.scale == "model":
        mscale = 0.1 * math.log(40.0) + 1.0
        a.scale = 192.0 ** -0.5 * mscale * mscale
    else:
        try:
            a.scale = float(a.scale)
        except ValueError:
            ap.error(f"--scale expects a number, default or model, got '{a.scale}'")
        if not (a.scale > 0 and math.isfinite(a.scale)):
            ap.error("--scale must be positive")
    return a


def import_flashmla(root):
    """flash_mla, FlashMLA's tests/quant.py and tests/kernelkit/compare.py, from `root`."""
    if not root:
        die("no FlashMLA folder: give --flashmla PATH or set FLASHMLA_DIR to the unpacked FlashMLA "
            "folder (after `python3 setup.py build_ext --inplace` there)", 2)
    root = os.path.abspath(root)
    if not os.path.isfile(os.path.join(root, "flash_mla", "__init__.py")):
        die(f"FlashMLA folder {root} holds no flash_mla/ package", 2)
    sys.path[:0] = [root, os.path.join(root, "tests")]
    try:
        import torch
        import flash_mla
        import quant  # FlashMLA's tests/quant.py: the V3.2 FP8 quantizer its test uses
    except ImportError as e:
        die(f"cannot import from {root}: {e} (is the extension built? "
            "kernels/mla_decode/flashmla/run_h200.sh builds it)")
    # kernelkit/__init__.py imports triton (for its profiler); compare.py needs only torch.
    path = os.path.join(root, "tests", "kernelkit", "compare.py")
    spec = importlib.util.spec_from_file_location("flashmla_kernelkit_compare", path)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    return torch, flash_mla, quant, compare


def make_inputs(torch, quant, a):
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(a.seed)
    q = torch.randn(a.batch, 1, a.heads, D_QK, generator=g, device=dev, dtype=torch.bfloat16).clamp_(-1, 1)
    kv = (torch.randn(a.pool, D_QK, generator=g, device=dev, dtype=torch.bfloat16) / 10).clamp_(-1, 1)
    indices = torch.stack([torch.randperm(a.pool, generator=g, device=dev)[: a.topk] for _ in range(a.batch)])
    indices = indices.to(torch.int32).view(a.batch, 1, a.topk)
    used = torch.zeros(a.pool, dtype=torch.bool, device=dev)
    used[indices.flatten().long()] = True
    kv[~used] = float("nan")  # a wrong gather shows up as NaN
    layout = quant.FP8KVCacheLayout.V32_FP8Sparse
    # quantize_k_cache pads each page by one token; .contiguous() makes the pool ours: pool x 656 B.
    kv_fp8 = quant.quantize_k_cache(kv.view(-1, PAGE, 1, D_QK), layout).contiguous()
    kv_deq = quant.dequantize_k_cache(kv_fp8, layout).view(a.pool, D_QK)
    del kv, used
    return q, kv_fp8, indices, kv_deq


def reference(torch, q, kv_deq, indices, scale):
    """fp64 on the GPU: out [B, 1, H, 512], lse [B, H, 1] (natural log), as tests/ref.py."""
    b, _, h, _ = q.shape
    idx = indices.view(b, -1).long()
    k = kv_deq.index_select(0, idx.flatten()).view(b, -1, D_QK).double()
    s = torch.bmm(q.view(b, h, D_QK).double(), k.transpose(1, 2)) * scale
    lse = torch.logsumexp(s, dim=-1)
    out = torch.bmm(torch.exp(s - lse.unsqueeze(-1)), k[..., :D_V])
    return out.view(b, 1, h, D_V), lse.view(b, h, 1)


def check(torch, compare, out, lse, ref_out, ref_lse):
    """FlashMLA's test (check_is_allclose, its tolerances) plus our rel_err and corruption_pct."""
    with contextlib.redirect_stdout(sys.stderr):  # its messages must not precede our JSON on stdout
        out_ok = compare.check_is_allclose("out", out, ref_out.to(torch.bfloat16), abs_tol=1e-3,
                                           rel_tol=2.01 / 128, cos_diff_tol=5e-6)
        lse_ok = compare.check_is_allclose("lse", lse, ref_lse.float(), abs_tol=1e-6, rel_tol=8.01 / 65536)
    a, r = out.double(), ref_out
    finite = torch.isfinite(a)
    diff = torch.where(finite, a - r, torch.zeros_like(a))
    abs_err = diff.abs()
    rel = torch.where(r != 0, abs_err / r.abs(), torch.where(abs_err == 0, 0.0, math.inf))
    bad = ~finite | ~((abs_err < 1e-3) | (rel < 2.01 / 128))
    ref2 = float((r * r).sum())
    rel_err = math.sqrt(float((diff * diff).sum()) / ref2) if ref2 > 0 else math.sqrt(float((diff * diff).sum()))
    if not bool(finite.all()):
        rel_err = 1e30  # as mla_decode_bench: capped so that a gate can read it and fail
    aa = torch.where(finite, a, torch.zeros_like(a))
    denom = float((aa * aa + r * r).sum())
    # lse as check.cpp: abs 1e-6 or rel 8.01/65536 where both are finite, else the same non-finite value.
    la, lr = lse.double(), ref_lse
    lerr = (la - lr).abs()
    lse_each = torch.where(torch.isfinite(la) & torch.isfinite(lr), (lerr < 1e-6) | (lerr < 8.01 / 65536 * lr.abs()),
                           (la == lr) | (torch.isnan(la) & torch.isnan(lr)))
    return {
        "rel_err": rel_err,
        "max_abs_err": float(abs_err.max()),
        "corruption_pct": 100.0 * float(bad.sum()) / bad.numel(),
        "cos_diff": 1.0 - 2.0 * float((aa * r).sum()) / denom if denom > 0 else 0.0,
        "lse_failed": int((~lse_each).sum()),
        "check_passed": bool(out_ok and lse_ok),
        "flashmla_out_check": bool(out_ok),
        "flashmla_lse_check": bool(lse_ok),
    }


def worse(x, y):
    if x["check_passed"] != y["check_passed"]:
        return y if x["check_passed"] else x
    return x if (x["corruption_pct"], x["rel_err"]) >= (y["corruption_pct"], y["rel_err"]) else y


def main():
    a = parse_args()
    torch, flash_mla, quant, compare = import_flashmla(a.flashmla)
    if not torch.cuda.is_available():
        die("no CUDA device (torch.cuda.is_available() is False)")
    prop = torch.cuda.get_device_properties(0)
    if (prop.major, prop.minor) != (9, 0):
        die(f"{prop.name} is sm_{prop.major}{prop.minor}: this driver measures FlashMLA's sm90 kernel (H100/H200)")
    torch.cuda.set_device(0)

    with torch.inference_mode():
        q, kv_fp8, indices, kv_deq = make_inputs(torch, quant, a)
        sched, _ = flash_mla.get_mla_metadata()

        def run():
            return flash_mla.flash_mla_with_kvcache(q, kv_fp8, None, None, D_V, sched, None, softmax_scale=a.scale,
                                                    causal=False, is_fp8_kvcache=True, indices=indices)

        # The first call (it also makes the schedule metadata), kept for the check; before the
        # reference is allocated, as FlashMLA's test does, so its output cannot land on a right answer.
        out_first, lse_first = run()
        torch.cuda.synchronize()

        flush = torch.empty(getattr(prop, "L2_cache_size", 0) or (128 << 20), dtype=torch.uint8, device="cuda")
        spin = getattr(torch.cuda, "_sleep", None)
        if spin is None:
            print("bench_flashmla: warning: torch.cuda._sleep is missing: samples include Python's launch cost",
                  file=sys.stderr)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        out = lse = None
        us = []
        for i in range(a.warmup + a.samples):
            if out is not None:  # poison the last output: the allocator hands its memory to the next call
                out.fill_(float("nan"))
                lse.fill_(float("nan"))
            out = lse = None
            flush.fill_(i & 0xFF)  # the L2 holds the flush's dirty lines, as mla_decode_bench's memset leaves it
            if spin is not None:
                spin(SPIN_CYCLES)
            start.record()
            out, lse = run()
            stop.record()
            stop.synchronize()
            if i >= a.warmup:
                us.append(start.elapsed_time(stop) * 1e3)
        del flush

        ref_out, ref_lse = reference(torch, q, kv_deq, indices, a.scale)
        c = worse(check(torch, compare, out_first, lse_first, ref_out, ref_lse),
                  check(torch, compare, out, lse, ref_out, ref_lse))

    b, h, k = a.batch, a.heads, a.topk
    bytes_moved = b * k * TOKEN_BYTES + b * h * D_QK * 2 + b * h * D_V * 2 + b * k * 4 + b * h * 4  # as bench_main.cpp
    flops = 2.0 * b * h * k * (D_QK + D_V)
    med = statistics.median(us)
    print(f"bench_flashmla: FlashMLA sparse fp8 decode on {prop.name}, B={b} h={h} topk={k} pool={a.pool}, "
          f"{sched.tile_scheduler_metadata.shape[0]} SM parts\n"
          f"  median {med:.2f} us over {len(us)} samples; rel_err {c['rel_err']:.3e}, "
          f"corruption {c['corruption_pct']:.4f}%, cos_diff {c['cos_diff']:.2e}, "
          f"FlashMLA's check {'passed' if c['check_passed'] else 'FAILED'}")
    if not c["check_passed"]:
        print("bench_flashmla: warning: FlashMLA's own check failed (its messages above)", file=sys.stderr)
    line = {
        "samples_us": us, "median_us": med, **c,
        "gbps": bytes_moved / (med * 1e-6) / 1e9, "tflops": flops / (med * 1e-6) / 1e12,
        "batch": b, "heads": h, "topk": k, "pool": a.pool, "seed": a.seed, "scale": a.scale,
        "sm_parts": int(sched.tile_scheduler_metadata.shape[0]), "impl": "flashmla",
        "device": prop.name, "torch": torch.__version__, "cuda": torch.version.cuda,
        "flashmla_dir": os.path.abspath(a.flashmla),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:  # a clear message, not a trace (set BENCH_FLASHMLA_TRACE=1 for one)
        if os.environ.get("BENCH_FLASHMLA_TRACE"):
            raise
        die(f"{type(e).__name__}: {e}")
