#include "doctor/placement.h"

#include "sys/file_system.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>

namespace ortgpu::doctor {
namespace {

bool IsIntegerType(const std::string& t) {
  return t == "int64" || t == "int32" || t == "int16" || t == "int8" || t == "uint64" || t == "uint32" ||
         t == "uint16" || t == "uint8" || t == "bool";
}

int64_t Elements(const TensorTypeShape& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= std::max<int64_t>(d, 0);
  return n;
}

std::string Describe(const std::vector<TensorTypeShape>& ts) {
  std::string s;
  for (const auto& t : ts) {
    if (!s.empty()) s += ", ";
    s += t.type + "[";
    for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
    s += "]";
  }
  return s;
}

// "CUDA kernel not found in registries for Op type: X node name: Y"
std::map<std::string, std::string> ReasonsFromLog(const std::vector<OrtLogRecord>& logs) {
  std::map<std::string, std::string> reasons;
  const std::string kNotFound = "kernel not found in registries for Op type: ";
  const std::string kNodeName = " node name: ";
  for (const auto& r : logs) {
    auto p = r.message.find(kNotFound);
    if (p == std::string::npos) continue;
    auto n = r.message.find(kNodeName, p);
    if (n == std::string::npos) continue;
    const std::string node = r.message.substr(n + kNodeName.size());
    const std::string op = r.message.substr(p + kNotFound.size(), n - p - kNotFound.size());
    reasons[node] = "the CUDA EP has no kernel for " + op + " with these types";
  }
  return reasons;
}

}  // namespace

bool IsShapeComputation(const NodeEvent& e) {
  static const std::set<std::string> kShapeOps = {"Shape", "Size", "ConstantOfShape", "Range", "NonZero"};
  if (kShapeOps.count(e.op_type)) return true;
  // Shape arithmetic: every tensor integer (or bool) and tiny. Shape vectors
  // have a handful of elements; 1,024 leaves room for batched index math.
  constexpr int64_t kMaxShapeElements = 1024;
  if (e.inputs.empty() && e.outputs.empty()) return false;
  for (const auto* list : {&e.inputs, &e.outputs}) {
    for (const auto& t : *list) {
      if (!IsIntegerType(t.type) || Elements(t) > kMaxShapeElements) return false;
    }
  }
  return true;
}

PlacementSummary SummarizePlacement(const std::vector<NodeEvent>& events, std::string_view target_provider,
                                    const std::vector<OrtLogRecord>& ort_logs) {
  PlacementSummary s;
  const auto reasons = ReasonsFromLog(ort_logs);
  std::map<std::string, ProviderShare> by_provider;
  std::set<std::string> seen_nodes;
  std::set<std::string> classified;
  int64_t total_us = 0;
  for (const auto& e : events) {
    auto& share = by_provider[e.provider];
    share.provider = e.provider;
    share.kernel_us += e.duration_us;
    total_us += e.duration_us;
    if (!seen_nodes.insert(e.node_name).second) continue;  // later runs of the same node
    ++share.nodes;
    ++s.total_nodes;
    if (e.op_type.rfind("Memcpy", 0) == 0) {
      ++s.memcpy_nodes;
      continue;
    }
    if (e.provider == target_provider || e.provider.empty()) continue;
    CpuNode n;
    n.node_name = e.node_name;
    n.op_type = e.op_type;
    n.types = Describe(e.inputs) + " -> " + Describe(e.outputs);
    if (IsShapeComputation(e)) {
      n.kind = CpuNodeKind::kShapeComputation;
      n.reason = "shape arithmetic on small integer tensors; ORT keeps it on the CPU on purpose";
      s.shape_nodes.push_back(std::move(n));
    } else {
      n.kind = CpuNodeKind::kComputeFallback;
      auto it = reasons.find(e.node_name);
      n.reason = it != reasons.end() ? it->second
                                     : "not taken by " + std::string(target_provider) +
                                           " (no kernel for these types, or assigned to the CPU by ORT)";
      s.compute_fallbacks.push_back(std::move(n));
    }
  }
  for (auto& [name, share] : by_provider) {
    share.time_share = total_us > 0 ? static_cast<double>(share.kernel_us) / static_cast<double>(total_us) : 0.0;
    s.providers.push_back(share);
  }
  std::sort(s.providers.begin(), s.providers.end(),
            [](const ProviderShare& a, const ProviderShare& b) { return a.nodes > b.nodes; });
  return s;
}

Expected<PlacementSummary> ProfilePlacement(const Session& session, const std::vector<Tensor>& inputs,
                                            const std::string& profile_dir,
                                            const std::vector<OrtLogRecord>& ort_logs) {
  static std::atomic<int> counter{0};
  const std::string prefix = JoinPath(profile_dir, "ortgpu_placement_" + std::to_string(::getpid()) + "_" +
                                                       std::to_string(counter.fetch_add(1)));
  ORTGPU_ASSIGN_OR_RETURN(const std::string file, session.RunProfiled(inputs, prefix));
  auto events = ReadProfile(file);
  std::remove(file.c_str());
  if (!events.ok()) return events.status().WithContext("reading the placement profile " + file);
  return SummarizePlacement(*events, OrtProviderName(session.options().provider), ort_logs);
}

}  // namespace ortgpu::doctor
