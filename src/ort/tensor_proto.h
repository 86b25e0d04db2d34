// Decoding an ONNX TensorProto's inline data (raw_data or the typed fields
// float_data, int32_data, int64_data, double_data, uint64_data,
// string_data) into a host Tensor. Shared by bench's .pb input files and the
// shared initializers of serve (ort/shared_initializers.h). Pure functions;
// thread-safe.
#pragma once

#include <string>

#include "ort/tensor.h"
#include "status/expected.h"

namespace onnx {
class TensorProto;
}

namespace ortgpu {

// The tensor `p` holds inline. The proto's own name is used when set, else
// `name`. Unimplemented for data kept in an external file (the caller reads
// it: only it knows the model's folder) and InvalidArgument for a type
// ortgpu does not read or a value count that does not match the shape.
Expected<Tensor> TensorFromProto(const ::onnx::TensorProto& p, const std::string& name);

}  // namespace ortgpu
