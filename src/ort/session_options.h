// SessionOptions: everything that decides how ortgpu builds an ONNX Runtime
// session, defined once and shared by `doctor`, `bench`, `serve` (its
// config.pbtxt) and the tests. Plain value type; defaults are ORT's defaults
// unless a field says otherwise.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"

namespace ortgpu {

class SharedInitializers;

enum class Provider { kCpu, kCuda, kTensorRt };
std::string_view ProviderName(Provider p);              // "cpu", "cuda", "tensorrt"
std::string_view OrtProviderName(Provider p);           // "CPUExecutionProvider", ...
Expected<Provider> ParseProvider(std::string_view name);  // accepts both spellings

enum class OptimizationLevel { kDisable, kBasic, kExtended, kAll };
std::string_view OptimizationLevelName(OptimizationLevel l);  // "disable", "basic", ...
Expected<OptimizationLevel> ParseOptimizationLevel(std::string_view name);

enum class ExecutionMode { kSequential, kParallel };

struct SessionOptions {
  Provider provider = Provider::kCpu;
  // CUDA EP options by ORT's own key names (device_id, cudnn_conv_algo_search,
  // prefer_nhwc, enable_cuda_graph, ...). Checked by ValidateCudaOptions.
  std::map<std::string, std::string> cuda_options;
  OptimizationLevel optimization = OptimizationLevel::kAll;
  int intra_op_threads = 0;  // 0: ORT's default (one per physical core)
  int inter_op_threads = 0;
  ExecutionMode execution_mode = ExecutionMode::kSequential;
  // Fail session creation instead of silently placing nodes on the CPU when
  // the requested provider cannot take them (session.disable_cpu_ep_fallback).
  bool disable_cpu_ep_fallback = false;
  // When non-empty, ORT writes a JSON profile whose name starts with this.
  std::string profile_prefix;
  // When non-empty, the optimised graph is saved here.
  std::string optimized_model_path;
  // Values for symbolic dimensions ("batch" -> 8) as free dimension overrides.
  std::map<std::string, int64_t> free_dimensions;
  // Extra session config entries (key -> value), as AddConfigEntry.
  std::map<std::string, std::string> config_entries;
  // ORT's log severity for this session: 0 verbose, 1 info, 2 warning, 3
  // error; -1 keeps the process default (warning).
  int log_severity = -1;
  // Tag carried by this session's log records (see ort/runtime.h).
  std::string log_id;
  // Weights shared with other sessions of the same model on the same device
  // (ort/shared_initializers.h): every value it offers is added with
  // AddInitializer, and on the CPU its prepacked-weights container is used.
  // The session keeps it alive. null: the session loads its own weights.
  std::shared_ptr<const SharedInitializers> shared_initializers;
};

// Whether a session built with `options` captures CUDA graphs (the CUDA
// option enable_cuda_graph=1).
bool CapturesCudaGraphs(const SessionOptions& options);

// The CUDA graph annotation ("gpu_graph_id" run option) of a run that must
// neither capture nor replay a graph: ORT's -1 on a session that captures
// CUDA graphs, nullopt on any other. Such a session's runs on host tensors
// (Session::Run, InputStaging) pass it: without it a run takes the default
// annotation 0, the first such run captures graph 0 and every later one
// replays it, and a replay writes only outputs bound to fixed addresses, so
// a run with unbound outputs got back values without a tensor (issue 25).
std::optional<int> PlainRunGraphAnnotation(const SessionOptions& options);

// The CUDA EP options a session of `options` is created with: its
// cuda_options, plus ortgpu's defaults for keys it leaves unset. One default:
// arena_extend_strategy=kSameAsRequested. ORT's own (kNextPowerOfTwo) grows
// the arena in doubling regions, so what a session reserves jumps in powers
// of two (127 MiB, 255 MiB, 1,023 MiB, 2 GiB: H200 run m1) and is neither what
// it needs nor a line the memory plan can predict; grown by what is asked,
// the arena holds what the largest run needed, at the same speed once warm
// (docs/MEMORY.md). Only for Provider::kCuda; empty otherwise.
std::map<std::string, std::string> EffectiveCudaOptions(const SessionOptions& options);

// The CUDA EP option keys ORT 1.29 accepts, with a one-line description each.
const std::vector<std::pair<std::string, std::string>>& CudaOptionKeys();
// Rejects unknown keys with a message that lists the valid ones.
Status ValidateCudaOptions(const std::map<std::string, std::string>& options);
// Parses "key=value"; the message for a malformed pair names it.
Status ParseKeyValue(std::string_view text, std::map<std::string, std::string>& out);

}  // namespace ortgpu
