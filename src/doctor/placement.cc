#include "doctor/placement.h"

#include "sys/file_system.h"

#include <unistd.h>

#include <fmt/format.h>

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

bool OutputsSmall(const NodeEvent& e) {
  return std::all_of(e.outputs.begin(), e.outputs.end(),
                     [](const TensorTypeShape& t) { return Elements(t) <= kMaxShapeElements; });
}

// What the graph says about a CPU node, for the report.
std::string DescribeDerivation(const NodeEvent& e, const onnx::NodeDerivation& d) {
  if (d.reads_data) {
    return "reads '" + d.data_input + "', computed from the values of input '" + d.data_source + "'";
  }
  if (!OutputsSmall(e)) {
    return fmt::format("computed from shapes and constants only, but writes more than {} elements: a constant the "
                       "CPU recomputes and copies to the GPU on every run",
                       kMaxShapeElements);
  }
  return "computed from shapes and constants only";
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

// ORT's profile names element types as DataTypeImpl::ToString does
// ("MLFloat16", "BFloat16"); the ONNX spellings are accepted too.
bool HasHalfPrecisionTensor(const NodeEvent& e) {
  for (const auto* list : {&e.inputs, &e.outputs}) {
    for (const auto& t : *list) {
      if (t.type == "MLFloat16" || t.type == "float16" || t.type == "BFloat16" || t.type == "bfloat16") return true;
    }
  }
  return false;
}

// "CUDA kernel not found in registries for Op type: X node name: Y", and
// (at info level) "Force fallback to CPU execution for node: Y because the
// CPU execution path is deemed faster ...": ORT's own CPU preference for a
// node that reads only small CPU tensors, initializers and graph inputs.
std::map<std::string, std::string> ReasonsFromLog(const std::vector<OrtLogRecord>& logs) {
  std::map<std::string, std::string> reasons;
  const std::string kNotFound = "kernel not found in registries for Op type: ";
  const std::string kNodeName = " node name: ";
  const std::string kPreferred = "Force fallback to CPU execution for node: ";
  for (const auto& r : logs) {
    if (auto p = r.message.find(kPreferred); p != std::string::npos) {
      const auto start = p + kPreferred.size();
      const auto end = r.message.find(" because", start);
      reasons[r.message.substr(start, end == std::string::npos ? std::string::npos : end - start)] =
          "ORT placed it on the CPU on purpose: it reads only small CPU tensors, initializers or graph inputs, "
          "and ORT judged the CPU faster than copying them";
      continue;
    }
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

bool IsShapeComputation(const NodeEvent& e, const onnx::NodeDerivation* derivation) {
  if (derivation != nullptr) return !derivation->reads_data && OutputsSmall(e);
  static const std::set<std::string> kShapeOps = {"Shape", "Size", "ConstantOfShape", "Range", "NonZero"};
  if (kShapeOps.count(e.op_type)) return true;
  // Shape arithmetic: every tensor integer (or bool) and tiny.
  if (e.inputs.empty() && e.outputs.empty()) return false;
  for (const auto* list : {&e.inputs, &e.outputs}) {
    for (const auto& t : *list) {
      if (!IsIntegerType(t.type) || Elements(t) > kMaxShapeElements) return false;
    }
  }
  return true;
}

PlacementSummary SummarizePlacement(const std::vector<NodeEvent>& events, std::string_view target_provider,
                                    const std::vector<OrtLogRecord>& ort_logs, const onnx::GraphDerivation* graph) {
  PlacementSummary s;
  s.by_derivation = graph != nullptr;
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
    n.half_precision = HasHalfPrecisionTensor(e);
    const onnx::NodeDerivation* derivation = nullptr;
    if (graph != nullptr) {
      if (auto it = graph->nodes.find(e.node_name); it != graph->nodes.end()) derivation = &it->second;
    }
    if (derivation != nullptr) n.derivation = DescribeDerivation(e, *derivation);
    if (IsShapeComputation(e, derivation)) {
      n.kind = CpuNodeKind::kShapeComputation;
      n.reason = derivation != nullptr
                     ? "shape arithmetic (no input's values reach it); ORT keeps it on the CPU on purpose"
                     : "shape arithmetic on small integer tensors; ORT keeps it on the CPU on purpose";
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

SavedGraph::SavedGraph(const std::string& dir) {
  static std::atomic<int> counter{0};
  const std::string stem = "ortgpu_graph_" + std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1));
  path_ = JoinPath(dir, stem + ".onnx");
  weights_name_ = stem + ".weights";
}

SavedGraph::~SavedGraph() {
  std::remove(path_.c_str());
  std::remove(weights_path().c_str());
}

std::string SavedGraph::weights_path() const { return JoinPath(DirName(path_), weights_name_); }

void SavedGraph::Request(SessionOptions& options) const {
  options.optimized_model_path = path_;
  // The weights' file name is taken relative to the graph's folder.
  options.config_entries["session.optimized_model_external_initializers_file_name"] = weights_name_;
  options.config_entries["session.optimized_model_external_initializers_min_size_in_bytes"] = "1024";
}

Expected<PlacementSummary> ProfilePlacement(const Session& session, const std::vector<Tensor>& inputs,
                                            const std::string& profile_dir,
                                            const std::vector<OrtLogRecord>& ort_logs,
                                            const onnx::GraphDerivation* graph) {
  static std::atomic<int> counter{0};
  const std::string prefix = JoinPath(profile_dir, "ortgpu_placement_" + std::to_string(::getpid()) + "_" +
                                                       std::to_string(counter.fetch_add(1)));
  std::string graph_note;
  Expected<onnx::GraphDerivation> read = NotFound("");
  if (graph == nullptr) {
    const std::string& saved = session.options().optimized_model_path;
    if (saved.empty()) {
      graph_note = "the session did not save the graph ORT optimised";
    } else {
      read = onnx::ReadGraphDerivation(saved);
      if (read.ok()) {
        graph = &*read;
      } else {
        graph_note = "the graph ORT optimised could not be read: " + read.status().message();
      }
    }
  }
  ORTGPU_ASSIGN_OR_RETURN(const std::string file, session.RunProfiled(inputs, prefix));
  auto events = ReadProfile(file);
  std::remove(file.c_str());
  if (!events.ok()) return events.status().WithContext("reading the placement profile " + file);
  PlacementSummary s = SummarizePlacement(*events, OrtProviderName(session.options().provider), ort_logs, graph);
  if (graph == nullptr) s.graph_note = graph_note;
  return s;
}

}  // namespace ortgpu::doctor
