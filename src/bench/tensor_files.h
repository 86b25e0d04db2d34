// Tensor files: reading bench's real input data from NumPy .npy files and
// ONNX TensorProto .pb files (the format of ONNX's test_data_set_N folders),
// and writing .npy. Pure functions over bytes plus thin file wrappers;
// thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::bench {

// Parses an .npy file's bytes (format versions 1-3): little-endian or
// byte-order-free dtypes of every numeric type, bool, C order (Fortran order
// only for rank <= 1). `name` becomes the tensor's name. Errors say what in
// the header is wrong (big-endian, object dtype, size mismatch).
Expected<Tensor> ParseNpy(std::string_view bytes, const std::string& name);
// The .npy (version 1.0) bytes of `t`. REQUIRES: t is numeric or bool.
Expected<std::string> SerializeNpy(const Tensor& t);

// Parses a serialized onnx.TensorProto: raw_data or the typed fields
// (float_data, int32_data, int64_data, double_data, uint64_data,
// string_data). The proto's own name is used when set, else `name`.
// External data is refused with a message saying so.
Expected<Tensor> ParseTensorProto(std::string_view bytes, const std::string& name);
// The serialized TensorProto of `t` (raw_data, or string_data for strings).
std::string SerializeTensorProto(const Tensor& t);

// Reads `path` and parses it by extension: ".npy" as NumPy, ".pb" as a
// TensorProto; any other extension is an InvalidArgument naming both.
Expected<Tensor> ReadTensorFile(const std::string& path, const std::string& name);

}  // namespace ortgpu::bench
