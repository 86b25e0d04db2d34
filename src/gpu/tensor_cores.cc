#include "gpu/tensor_cores.h"

#include <algorithm>

namespace ortgpu::gpu {
namespace {

struct Row {
  int first_cc;  // the row covers [first_cc, next row's first_cc)
  const char* generation;
  std::vector<std::string> dense;
  const char* note;
};

// Dense tensor-core precisions per generation. Hopper dropped Turing's and
// Ampere's int4; Blackwell (10.x datacenter, 12.x workstation and GeForce)
// adds fp4 (and fp6) to Hopper's set.
const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      {0, "pre-Volta", {},
       "no tensor cores: float16 runs on the CUDA cores, so it saves memory and bandwidth but gives little "
       "speed (on 6.1 boards float16 arithmetic is far slower than float32)"},
      {70, "Volta", {"fp16"}, "the first tensor cores: fp16 products with fp32 accumulation"},
      {75, "Turing", {"fp16", "int8", "int4"}, "fp16 plus integer tensor cores; no TF32 or bf16"},
      {80, "Ampere", {"fp16", "bf16", "tf32", "int8", "int4"},
       "TF32 and bf16 arrive: float32 MatMul and Conv run on tensor cores as TF32"},
      {89, "Ada Lovelace", {"fp16", "bf16", "tf32", "fp8", "int8", "int4"}, "fp8 arrives"},
      {90, "Hopper", {"fp16", "bf16", "tf32", "fp8", "int8"}, "fp8 with the Transformer Engine; no int4"},
      {100, "Blackwell", {"fp16", "bf16", "tf32", "fp8", "fp4", "int8"}, "fp4 (and fp6) arrive"},
  };
  return rows;
}

}  // namespace

bool TensorCores::has(const std::string& precision) const {
  return std::find(dense.begin(), dense.end(), precision) != dense.end();
}

TensorCores TensorCoresFor(int cc) {
  const Row* pick = &Rows().front();
  for (const auto& row : Rows()) {
    if (cc >= row.first_cc) pick = &row;
  }
  return TensorCores{pick->generation, pick->dense, pick->note};
}

}  // namespace ortgpu::gpu
