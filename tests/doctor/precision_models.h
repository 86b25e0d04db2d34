// Small models for the precision tests of doctor (issue 26), built in
// memory: a float32 chain, and the same converted by ortgpu's converter with
// chosen nodes kept in float32. Header-only; thread-safe.
#pragma once

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "precision/convert.h"

namespace ortgpu::testing {

// x [batch,8] -> MatMul_0 -> Add_1 -> Relu_2 -> Sigmoid_3 -> Tanh_4 -> y, float32.
inline ::onnx::ModelProto Fp32Chain() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddFloatInitializer("w", {8, 8}, 0.5f, 1);
  b.AddFloatInitializer("b", {8}, 0.1f, 2);
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("Add", {"h", "b"}, {"hb"});
  b.AddNode("Relu", {"hb"}, {"r"});
  b.AddNode("Sigmoid", {"r"}, {"s"});
  b.AddNode("Tanh", {"s"}, {"y"});
  ::onnx::ModelProto m;
  m.ParseFromString(b.Serialize());
  return m;
}

// Fp32Chain converted to float16 (inputs and outputs kept float32), the
// nodes named in `keep_fp32` left in float32.
inline ::onnx::ModelProto Fp16Chain(std::map<std::string, std::string> keep_fp32 = {}) {
  ::onnx::ModelProto m = Fp32Chain();
  precision::ConvertOptions o;
  o.node_block_list = std::move(keep_fp32);
  auto r = precision::ConvertToFloat16(m, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return m;
}

}  // namespace ortgpu::testing
