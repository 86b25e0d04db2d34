// Reading and writing ONNX model files with their external data: tensors
// whose bytes live in files beside the model (data_location EXTERNAL, the
// form of models over protobuf's 2 GB limit). Reading brings every such
// tensor in (paths relative to the model's folder, as ONNX specifies);
// writing keeps a model inline while it fits in one protobuf and otherwise
// moves large tensors to one data file next to the output. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "status/expected.h"

namespace onnx {
class ModelProto;
}

namespace ortgpu::precision {

// Reads `path` and the external data its tensors name (in the main graph
// and in subgraphs). Errors name the file: missing, unreadable, not ONNX,
// external data out of its file's bounds or outside the model's folder.
Expected<::onnx::ModelProto> ReadModelFile(const std::string& path);

struct WriteOptions {
  // Above this serialized size the model is written with external data
  // (protobuf cannot write 2 GiB); tests lower it.
  uint64_t inline_limit = (uint64_t{2} << 30) - (uint64_t{64} << 20);
  // With external data, tensors of at least this many bytes go to the file.
  uint64_t min_external_bytes = 1024;
};

// Writes `model` to `path`; with external data, to "<file name>.data" in the
// same folder (overwritten). `model` is changed only on that path (its
// large tensors then point at the data file).
// Returns true when external data was written.
Expected<bool> WriteModelFile(::onnx::ModelProto& model, const std::string& path, const WriteOptions& options = {});

}  // namespace ortgpu::precision
