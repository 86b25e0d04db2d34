// The instance runner tests' model: y = x * w + b over x [batch, 4], y
// [batch, 3], each output row depending on its input row only, so a batch's
// rows can be checked one by one. A CPU session, one intra-op thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "onnx/model_builder.h"
#include "ort/session.h"

namespace ortgpu::testing {

inline std::unique_ptr<Session> Linear() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddFloatInitializer("w", {4, 3}, 1.0f, 7);
  b.AddFloatInitializer("b", {3}, 1.0f, 8);
  b.AddNode("MatMul", {"x", "w"}, {"xw"});
  b.AddNode("Add", {"xw", "b"}, {"y"});
  b.AddOutput("y", DataType::kFloat, {-1, 3}, {"batch"});
  SessionOptions o;
  o.intra_op_threads = 1;
  auto s = Session::LoadFromBytes(b.Serialize(), o, "linear");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

}  // namespace ortgpu::testing
