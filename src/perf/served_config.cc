#include "perf/served_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace ortgpu::perf {
namespace {

using nlohmann::json;

std::string Lower(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v;
}

// serve's ParameterIsTrue: "true", "1" or "yes", any case.
bool IsTrue(const std::string& v) {
  const std::string l = Lower(v);
  return l == "true" || l == "1" || l == "yes";
}

const json* Find(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string Text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  return "";
}

}  // namespace

Expected<ServedSetup> ParseServedSetup(const std::string& config_json) {
  const json cfg = json::parse(config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) {
    return InvalidArgument("the served model's configuration is not a JSON object: " + config_json.substr(0, 200));
  }
  ServedSetup s;
  if (const json* m = Find(cfg, {"max_batch_size"}); m != nullptr && m->is_number_integer()) s.max_batch_size = m->get<int64_t>();
  const json* db = Find(cfg, {"dynamic_batching"});
  s.dynamic_batching = s.max_batch_size > 0 && db != nullptr && db->is_object();
  if (const json* p = db != nullptr ? Find(*db, {"preferred_batch_size"}) : nullptr; p != nullptr && p->is_array()) {
    for (const auto& b : *p) {
      if (b.is_number_integer() && b.get<int64_t>() > 0) s.preferred_batch_sizes.push_back(b.get<int64_t>());
    }
    std::sort(s.preferred_batch_sizes.begin(), s.preferred_batch_sizes.end());
  }
  std::map<std::string, std::string> params;
  if (const json* p = Find(cfg, {"parameters"}); p != nullptr && p->is_object()) {
    for (const auto& [k, v] : p->items()) params[k] = v.is_object() ? Text(v.value("string_value", json(""))) : Text(v);
  }
  if (const json* groups = Find(cfg, {"instance_group"}); groups != nullptr && groups->is_array() && !groups->empty()) {
    const std::string kind = groups->front().value("kind", "");
    if (kind == "KIND_GPU") s.instance_kind = "gpu";
    if (kind == "KIND_CPU") s.instance_kind = "cpu";
  }
  if (const json* level = Find(cfg, {"optimization", "graph", "level"}); level != nullptr && level->is_number_integer()) {
    switch (level->get<int>()) {
      case 0: s.optimization = OptimizationLevel::kAll; break;
      case -1: s.optimization = OptimizationLevel::kBasic; break;
      case 1: s.optimization = OptimizationLevel::kExtended; break;
      case 2: s.optimization = OptimizationLevel::kDisable; break;
      default: return InvalidArgument(fmt::format("the served configuration's graph level {} is not one serve knows", level->get<int>()));
    }
  }
  bool graph_requested = false;
  if (const json* accs = Find(cfg, {"optimization", "execution_accelerators", "gpu_execution_accelerator"});
      accs != nullptr && accs->is_array()) {
    for (const auto& a : *accs) {
      if (a.value("name", "") != "cuda") continue;
      if (const json* p = Find(a, {"parameters"}); p != nullptr && p->is_object()) {
        for (const auto& [k, v] : p->items()) s.cuda_options[k] = Text(v);
      }
    }
  }
  if (auto it = s.cuda_options.find("enable_cuda_graph"); it != s.cuda_options.end()) {
    graph_requested = IsTrue(it->second);
    s.cuda_options.erase(it);
  }
  if (const json* g = Find(cfg, {"optimization", "cuda", "graphs"}); g != nullptr && g->is_boolean() && g->get<bool>()) {
    graph_requested = true;
  }
  if (auto it = params.find("enable_cuda_graph"); it != params.end() && IsTrue(it->second)) graph_requested = true;
  const bool gpu = s.instance_kind != "cpu";
  auto pad = params.find("pad_to_preferred_batch_size");
  s.pads = s.dynamic_batching && (pad == params.end() ? gpu : IsTrue(pad->second));
  auto per_size = params.find("session_per_batch_size");
  const bool per_size_sessions = gpu && s.pads && (per_size == params.end() || IsTrue(per_size->second));
  s.cuda_graphs = graph_requested && per_size_sessions;
  if (graph_requested && !s.cuda_graphs) {
    s.cuda_graph_note = "enable_cuda_graph is requested but serve does not use CUDA graphs for this configuration (they "
                        "need GPU instances with dynamic batching padded to the preferred sizes)";
  }
  if (s.cuda_graphs) s.cuda_options["enable_cuda_graph"] = "1";
  if (const json* inputs = Find(cfg, {"input"}); inputs != nullptr && inputs->is_array()) {
    for (const auto& in : *inputs) {
      const json* shape = Find(in, {"reshape", "shape"});
      if (shape == nullptr || !shape->is_array()) continue;
      std::vector<int64_t> dims;
      for (const auto& d : *shape) dims.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
      s.reshapes[in.value("name", "")] = std::move(dims);
    }
  }
  if (auto it = params.find("precision"); it != params.end() && !it->second.empty()) {
    std::string v = Lower(it->second);
    if (v == "float32") v = "fp32";
    if (v == "float16") v = "fp16";
    auto p = bench::ParsePrecision(v);
    if (!p.ok()) return p.status().WithContext("the served configuration's parameter precision");
    s.precision = *p;
  }
  std::vector<std::string> unrepeated;
  for (const char* key : {"precision_op_block_list", "precision_node_block_list", "precision_budget"}) {
    if (params.count(key) > 0) unrepeated.push_back(key);
  }
  if (auto it = params.find("precision_io"); it != params.end() && Lower(it->second) == "fp16") {
    unrepeated.push_back("precision_io fp16 (in process keeps the float32 interface)");
  }
  if (!unrepeated.empty() && s.precision) {
    s.precision_note = fmt::format("the in-process run converts to {} with bench's defaults, not the served "
                                   "configuration's {}", bench::PrecisionName(*s.precision), fmt::join(unrepeated, ", "));
  }
  return s;
}

int64_t ServedBatch(const ServedSetup& s, int64_t request_rows, double average_batch) {
  if (!s.dynamic_batching) return request_rows;
  const auto& preferred = s.preferred_batch_sizes;
  if (average_batch <= 0) return preferred.empty() ? s.max_batch_size : preferred.back();
  const int64_t rows = std::clamp<int64_t>(std::llround(average_batch), 1, s.max_batch_size);
  if (!s.pads) return rows;
  auto it = std::lower_bound(preferred.begin(), preferred.end(), rows);
  return it != preferred.end() ? *it : s.max_batch_size;
}

Expected<InProcessRun> InProcessRunFor(const ServedSetup& s, const std::string& model_path, Provider provider,
                                       const std::vector<Tensor>& request, const bench::InputSpec& spec, int64_t batch) {
  InProcessRun run;
  run.batch = batch;
  bench::BenchOptions& bo = run.options;
  bo.model_path = model_path;
  bo.session.provider = s.instance_kind == "cpu" ? Provider::kCpu : s.instance_kind == "gpu" ? Provider::kCuda : provider;
  if (bo.session.provider != Provider::kCpu) bo.session.cuda_options = s.cuda_options;
  bo.session.optimization = s.optimization;
  const bool graphs = bo.session.provider != Provider::kCpu && s.cuda_graphs;
  bo.io = graphs ? IoMode::kServedGraph : IoMode::kServed;
  run.io = std::string(IoModeName(bo.io));
  run.cuda_options = bo.session.cuda_options;
  bo.batches = {batch};
  bo.inputs = spec;
  bo.inputs.shapes.clear();
  const bool batched = s.max_batch_size > 0;
  for (const Tensor& t : request) {
    if (spec.files.count(t.name) > 0) continue;  // the file's shape, as perf sent it
    std::vector<int64_t> shape = t.shape;
    if (batched) {
      if (shape.empty()) {
        return InvalidArgument("request input '" + t.name + "' has no batch dimension, but the served model batches");
      }
      auto reshape = s.reshapes.find(t.name);
      if (reshape != s.reshapes.end()) {
        shape.assign(reshape->second.begin(), reshape->second.end());
        shape.insert(shape.begin(), batch);
      } else {
        shape[0] = batch;
      }
    }
    run.shapes[t.name] = shape;
    bo.inputs.shapes[t.name] = shape;
  }
  // Mixed precision is searched by the accuracy check; any other is only
  // measured, as serve already judged it at load.
  bo.check_accuracy = s.precision == bench::Precision::kMixed;
  if (s.precision) bo.precisions = {*s.precision};
  run.command = fmt::format("ortgpu bench {} --provider {} --io {} --batch {}", model_path,
                            ProviderName(bo.session.provider), run.io, batch);
  for (const auto& [name, shape] : run.shapes) run.command += fmt::format(" --shape {}:{}", name, ShapeToString(shape));
  for (const auto& [k, v] : run.cuda_options) run.command += fmt::format(" --cuda-option {}={}", k, v);
  for (const auto& [name, r] : spec.int_ranges) run.command += fmt::format(" --int-range {}:{}:{}", name, r.lo, r.hi);
  for (const auto& [name, file] : spec.files) run.command += fmt::format(" --input {}={}", name, file);
  if (s.precision) run.command += fmt::format(" --precision {}", bench::PrecisionName(*s.precision));
  if (spec.seed != 1) run.command += fmt::format(" --seed {}", spec.seed);
  if (bo.session.optimization != OptimizationLevel::kAll) {
    run.command += fmt::format(" --opt {}", OptimizationLevelName(bo.session.optimization));
  }
  return run;
}

}  // namespace ortgpu::perf
