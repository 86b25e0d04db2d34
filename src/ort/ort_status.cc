#include "ort/ort_status.h"

#include <onnxruntime_cxx_api.h>

namespace ortgpu {

std::string HintForOrtMessage(const std::string& m) {
  auto has = [&m](const char* s) { return m.find(s) != std::string::npos; };
  if (has("libonnxruntime_providers_cuda.so") || has("cannot open shared object file") ||
      has("Failed to load shared library")) {
    return "a library the execution provider needs could not be loaded; run `ortgpu doctor` to see "
           "which one, where copies exist, and the LD_LIBRARY_PATH or package that fixes it";
  }
  if (has("out of memory") || has("Failed to allocate") || has("CUDA failure 2")) {
    // gpu_mem_limit only helps when the GPU's arena ran out, not the host's.
    if (has("CUDA") || has("Cuda") || has("cuda") || has("GPU")) {
      return "the device ran out of memory; lower the batch size or the instance count, or set gpu_mem_limit";
    }
    return "the host ran out of memory; lower the batch size, the input shapes or the concurrency, or give the "
           "process more memory";
  }
  if (has("Protobuf parsing failed") || has("INVALID_PROTOBUF")) {
    return "the file is not a valid ONNX model (truncated or corrupt?); re-export it";
  }
  if (has("Could not find an implementation")) {
    return "an operator in the model has no kernel for this type or opset; check the model's opset and op types";
  }
  if (has("CUDA driver version is insufficient") || has("cudaErrorInsufficientDriver")) {
    return "the NVIDIA driver is older than the CUDA runtime needs; run `ortgpu doctor` for the minimum version";
  }
  if (has("no CUDA-capable device") || has("cudaErrorNoDevice")) {
    return "no GPU is visible to this process; check CUDA_VISIBLE_DEVICES and the container's GPU access";
  }
  return "";
}

Status StatusFromOrt(const Ort::Exception& e, const std::string& what) {
  Code code = Code::kInternal;
  switch (e.GetOrtErrorCode()) {
    case ORT_NO_SUCHFILE: code = Code::kNotFound; break;
    case ORT_INVALID_ARGUMENT:
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
    case ORT_NO_MODEL: code = Code::kInvalidArgument; break;
    case ORT_NOT_IMPLEMENTED: code = Code::kUnimplemented; break;
    case ORT_EP_FAIL: code = Code::kUnavailable; break;
    case ORT_MODEL_LOADED:
    case ORT_NOT_FOUND: code = Code::kNotFound; break;
    default: code = Code::kInternal; break;
  }
  std::string msg = e.what();
  if (msg.find("out of memory") != std::string::npos || msg.find("Failed to allocate") != std::string::npos) {
    code = Code::kResourceExhausted;
  }
  if (msg.find("Failed to load library") != std::string::npos ||
      msg.find("Failed to load shared library") != std::string::npos ||
      msg.find("cannot open shared object file") != std::string::npos) {
    code = Code::kUnavailable;
  }
  std::string text = what + ": " + msg;
  const std::string hint = HintForOrtMessage(msg);
  if (!hint.empty()) text += " (" + hint + ")";
  return Status(code, std::move(text));
}

}  // namespace ortgpu
