#include "ort/session_options.h"

namespace ortgpu {

std::string_view ProviderName(Provider p) {
  switch (p) {
    case Provider::kCpu: return "cpu";
    case Provider::kCuda: return "cuda";
    case Provider::kTensorRt: return "tensorrt";
  }
  return "cpu";
}

std::string_view OrtProviderName(Provider p) {
  switch (p) {
    case Provider::kCpu: return "CPUExecutionProvider";
    case Provider::kCuda: return "CUDAExecutionProvider";
    case Provider::kTensorRt: return "TensorrtExecutionProvider";
  }
  return "CPUExecutionProvider";
}

Expected<Provider> ParseProvider(std::string_view name) {
  for (Provider p : {Provider::kCpu, Provider::kCuda, Provider::kTensorRt}) {
    if (name == ProviderName(p) || name == OrtProviderName(p)) return p;
  }
  if (name == "trt") return Provider::kTensorRt;
  return InvalidArgument("unknown execution provider '" + std::string(name) +
                         "'; valid: cpu, cuda, tensorrt");
}

std::string_view OptimizationLevelName(OptimizationLevel l) {
  switch (l) {
    case OptimizationLevel::kDisable: return "disable";
    case OptimizationLevel::kBasic: return "basic";
    case OptimizationLevel::kExtended: return "extended";
    case OptimizationLevel::kAll: return "all";
  }
  return "all";
}

Expected<OptimizationLevel> ParseOptimizationLevel(std::string_view name) {
  for (auto l : {OptimizationLevel::kDisable, OptimizationLevel::kBasic, OptimizationLevel::kExtended,
                 OptimizationLevel::kAll}) {
    if (name == OptimizationLevelName(l)) return l;
  }
  return InvalidArgument("unknown graph optimization level '" + std::string(name) +
                         "'; valid: disable, basic, extended, all");
}

const std::vector<std::pair<std::string, std::string>>& CudaOptionKeys() {
  // From ORT's CUDA EP documentation and cuda_execution_provider_info.cc (1.29).
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"device_id", "GPU index (default 0)"},
      {"gpu_mem_limit", "arena size limit in bytes"},
      {"arena_extend_strategy", "kNextPowerOfTwo | kSameAsRequested"},
      {"cudnn_conv_algo_search", "EXHAUSTIVE | HEURISTIC | DEFAULT"},
      {"do_copy_in_default_stream", "0 | 1"},
      {"cudnn_conv_use_max_workspace", "0 | 1"},
      {"cudnn_conv1d_pad_to_nc1d", "0 | 1"},
      {"enable_cuda_graph", "0 | 1: capture and replay the graph"},
      {"enable_skip_layer_norm_strict_mode", "0 | 1"},
      {"use_tf32", "0 | 1"},
      {"prefer_nhwc", "0 | 1: NHWC convolution layouts"},
      {"use_ep_level_unified_stream", "0 | 1"},
      {"tunable_op_enable", "0 | 1"},
      {"tunable_op_tuning_enable", "0 | 1"},
      {"tunable_op_max_tuning_duration_ms", "milliseconds"},
      {"fuse_conv_bias", "0 | 1"},
      {"sdpa_kernel", "attention kernel selection bitmask"},
      {"has_user_compute_stream", "0 | 1"},
      {"gpu_external_alloc", "address"},
      {"gpu_external_free", "address"},
      {"gpu_external_empty_cache", "address"},
  };
  return keys;
}

std::map<std::string, std::string> EffectiveCudaOptions(const SessionOptions& options) {
  if (options.provider != Provider::kCuda) return {};
  std::map<std::string, std::string> out = options.cuda_options;
  out.try_emplace("arena_extend_strategy", "kSameAsRequested");
  return out;
}

bool CapturesCudaGraphs(const SessionOptions& options) {
  if (options.provider == Provider::kCpu) return false;
  auto it = options.cuda_options.find("enable_cuda_graph");
  return it != options.cuda_options.end() && it->second == "1";
}

std::optional<int> PlainRunGraphAnnotation(const SessionOptions& options) {
  if (!CapturesCudaGraphs(options)) return std::nullopt;
  return -1;
}

Status ValidateCudaOptions(const std::map<std::string, std::string>& options) {
  for (const auto& [key, value] : options) {
    bool known = false;
    for (const auto& [k, d] : CudaOptionKeys()) known = known || k == key;
    if (!known) {
      std::string valid;
      for (const auto& [k, d] : CudaOptionKeys()) valid += (valid.empty() ? "" : ", ") + k;
      return InvalidArgument("unknown CUDA execution provider option '" + key + "'; valid: " + valid);
    }
  }
  return Status::Ok();
}

Status ParseKeyValue(std::string_view text, std::map<std::string, std::string>& out) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument("'" + std::string(text) + "' is not key=value");
  }
  out[std::string(text.substr(0, eq))] = std::string(text.substr(eq + 1));
  return Status::Ok();
}

}  // namespace ortgpu
