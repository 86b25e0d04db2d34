// Node placement: where each node of a model really ran, from ORT's profile,
// and whether what stayed on the CPU matters.
//
// The CUDA EP leaves shape computation (Shape, Gather, Unsqueeze, Concat ...
// on small int64 tensors) on the CPU on purpose: cheap and benign. A compute
// node on float tensors that lands on the CPU is a silent fallback that eats
// the GPU's speed-up. Telling the two apart is the point of this file.
// Pure functions over values; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ort/profile.h"
#include "ort/runtime.h"
#include "ort/session.h"
#include "status/expected.h"

namespace ortgpu::doctor {

struct ProviderShare {
  std::string provider;   // "CUDAExecutionProvider"
  int nodes = 0;          // distinct nodes
  int64_t kernel_us = 0;  // summed kernel time over all profiled runs
  double time_share = 0;  // kernel_us / total
};

enum class CpuNodeKind { kShapeComputation, kComputeFallback };

struct CpuNode {
  std::string node_name;
  std::string op_type;
  CpuNodeKind kind = CpuNodeKind::kComputeFallback;
  std::string types;   // "float[1,128,768] int64[1,128] -> float[...]"
  std::string reason;  // from ORT's log when it said why; else a general one
};

struct PlacementSummary {
  int total_nodes = 0;
  std::vector<ProviderShare> providers;   // most nodes first
  int memcpy_nodes = 0;                    // MemcpyToHost / MemcpyFromHost
  std::vector<CpuNode> shape_nodes;        // benign
  std::vector<CpuNode> compute_fallbacks;  // a real problem when the target is a GPU
};

// `target_provider` is the EP the session asked for; nodes on any other EP
// are classified. `ort_logs` supply ORT's reasons ("CUDA kernel not found in
// registries for Op type: X node name: Y").
PlacementSummary SummarizePlacement(const std::vector<NodeEvent>& events, std::string_view target_provider,
                                    const std::vector<OrtLogRecord>& ort_logs = {});

// Runs `session` once with ORT's run-level profiling (Session::RunProfiled,
// the profile written under `profile_dir` and deleted after reading) and
// summarises where each node ran against the session's own provider.
// `ort_logs` are ORT's records from the session's creation, for reasons.
Expected<PlacementSummary> ProfilePlacement(const Session& session, const std::vector<Tensor>& inputs,
                                            const std::string& profile_dir,
                                            const std::vector<OrtLogRecord>& ort_logs = {});

// True when a node with these input/output types is shape computation.
bool IsShapeComputation(const NodeEvent& e);

}  // namespace ortgpu::doctor
