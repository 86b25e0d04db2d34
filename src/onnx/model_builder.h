// ModelBuilder: writes small ONNX models in memory (ModelProto bytes), for
// doctor's built-in check model and for tests that need a graph with known
// behaviour. Not thread-safe; build one model per builder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ort/tensor.h"

namespace ortgpu::onnx {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17);

  // Graph input/output; a negative dim is symbolic and named `dim_names[i]`
  // ("batch") when given.
  void AddInput(const std::string& name, DataType type, const std::vector<int64_t>& shape,
                const std::vector<std::string>& dim_names = {});
  void AddOutput(const std::string& name, DataType type, const std::vector<int64_t>& shape,
                 const std::vector<std::string>& dim_names = {});
  // A float initializer filled with deterministic pseudo-random values in
  // [-scale, scale] (seeded by `seed`), or from `values` when given.
  void AddFloatInitializer(const std::string& name, const std::vector<int64_t>& shape, float scale, uint32_t seed);
  // Float initializers with the given values: float32, and float16 given
  // as IEEE half bit patterns (ort/tensor.h's FloatToHalf).
  void AddFloatValues(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values);
  void AddFloat16Bits(const std::string& name, const std::vector<int64_t>& shape, const std::vector<uint16_t>& bits);
  // A Constant node whose float32 `value` has these values.
  void AddFloatConstant(const std::string& output, const std::vector<int64_t>& shape, const std::vector<float>& values);
  void AddInt64Initializer(const std::string& name, const std::vector<int64_t>& shape,
                           const std::vector<int64_t>& values);
  // A node; `int_attrs` / `ints_attrs` are INT and INTS attributes.
  void AddNode(const std::string& op_type, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs,
               const std::vector<std::pair<std::string, int64_t>>& int_attrs = {},
               const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints_attrs = {});

  // A value_info entry (the declared type of an intermediate value).
  void AddValueInfo(const std::string& name, DataType type, const std::vector<int64_t>& shape);

  // The serialized ModelProto.
  std::string Serialize() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The model `ortgpu doctor` runs on every provider: two 3x3 convolutions,
// global pooling and two matrix products over input "image" [batch,3,64,64]
// float32 -> "logits" [batch,10]. Heavy enough that a GPU must beat the CPU
// at batch 16, small enough to build and run in milliseconds.
std::string BuiltinCheckModel();

}  // namespace ortgpu::onnx
