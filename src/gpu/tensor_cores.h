// Tensor cores by compute capability: which precisions a GPU's tensor cores
// compute densely (no 2:4 sparsity), from NVIDIA's architecture whitepapers
// and the CUDA programming guide's table of warp matrix (mma) types. The
// doctor's precision finding (doctor/checks_precision.h) reads it; so can
// bench and serve when they choose a precision. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ortgpu::gpu {

struct TensorCores {
  // "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell";
  // "pre-Volta" below 7.0.
  std::string generation;
  // Precisions the tensor cores compute densely, in the order they came:
  // "fp16", "int8", "int4", "tf32", "bf16", "fp8", "fp4". Empty below 7.0.
  std::vector<std::string> dense;
  // One line on what is special about this generation ("TF32 and bf16
  // arrive"); for pre-Volta GPUs, why float16 gives little there.
  std::string note;

  bool has(const std::string& precision) const;
  bool any() const { return !dense.empty(); }
};

// `cc` as gpu::GpuDevice::ComputeCapability() gives it (90 for 9.0). A
// compute capability the table does not list takes the row of the newest
// generation at or below it (8.7 is Ampere, 12.1 and any later one Blackwell).
TensorCores TensorCoresFor(int cc);

}  // namespace ortgpu::gpu
