"""PyTorch eager fp16 beside ortgpu on the H200 (issue 26): ResNet-50 (channels_last,
cudnn.benchmark) and BERT-base seq 128 (transformers' BertModel, with no mask and with a mask of
ones, as ortgpu's generated inputs run it), random weights, batch 32 and 128.

usage: python3 scripts/torch_fp16_baseline.py [resnet50] [bert] [compile]     (default: both, eager)
"compile" adds torch.compile (default mode) of ResNet-50 beside eager.
"""
import sys
import time

import torch
import torchvision
import transformers


def per_call(f, x, n=50):
    for _ in range(10):
        f(x)
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(n):
        f(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - s) / n


def main():
    wanted = sys.argv[1:] or ["resnet50", "bert"]
    torch.backends.cudnn.benchmark = True
    with torch.no_grad():
        if "resnet50" in wanted:
            m = torchvision.models.resnet50().eval().cuda().half().to(memory_format=torch.channels_last)
            for b in (32, 128):
                x = torch.randn(b, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
                d = per_call(m, x)
                print(f"torch eager fp16 resnet50 b{b}: {d * 1e3:.2f} ms {b / d:.0f}/s")
            if "compile" in wanted:
                mc = torch.compile(m)
                for b in (32, 128):
                    x = torch.randn(b, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
                    d = per_call(mc, x)
                    print(f"torch.compile fp16 resnet50 b{b}: {d * 1e3:.2f} ms {b / d:.0f}/s", flush=True)
        if "bert" in wanted:
            mb = transformers.BertModel(transformers.BertConfig()).eval().cuda().half()
            for b in (32, 128):
                ids = torch.randint(0, 30000, (b, 128), device="cuda")
                d = per_call(lambda z: mb(input_ids=z), ids)
                print(f"torch eager fp16 bert b{b} (no mask): {d * 1e3:.2f} ms {b / d:.0f}/s")
                d = per_call(lambda z: mb(input_ids=z, attention_mask=torch.ones_like(z)), ids)
                print(f"torch eager fp16 bert b{b} (mask of ones): {d * 1e3:.2f} ms {b / d:.0f}/s")


if __name__ == "__main__":
    main()
