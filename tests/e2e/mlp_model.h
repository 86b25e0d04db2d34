// The small float32 model the precision end-to-end tests (convert, serve)
// convert: x [batch, 8] -> MatMul -> Add -> Relu -> y [batch, 4]; with
// `overflow`, a second output z = x * 1e5, which float16 cannot hold.
#pragma once

#include <string>

#include "onnx/model_builder.h"

namespace ortgpu::e2e {

inline std::string MlpModel(bool overflow = false) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddFloatInitializer("w", {8, 4}, 0.5f, 1);
  b.AddFloatInitializer("b", {4}, 0.1f, 2);
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("Add", {"h", "b"}, {"hb"});
  b.AddNode("Relu", {"hb"}, {"y"});
  if (overflow) {
    b.AddOutput("z", DataType::kFloat, {-1, 8}, {"batch"});
    b.AddFloatValues("k", {}, {1e5f});
    b.AddNode("Mul", {"x", "k"}, {"z"});
  }
  return b.Serialize();
}

}  // namespace ortgpu::e2e
