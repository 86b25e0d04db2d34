#include "bench/sweep.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace ortgpu::bench {

const std::vector<SweepAxis>& SweepAxes() {
  // Ordered as the table's columns. The first value is ORT's default.
  static const std::vector<SweepAxis> axes = {
      {"io", {"host", "bound", "resident", "cuda-graph", "served", "served-graph"},
       "tensor placement: copies each run, outputs on device, all on device, CUDA graph replay; served and served-graph "
       "as `ortgpu serve` runs a batch (the only ones recommended)", false, true},
      {"opt", {"all", "extended", "basic", "disable"}, "graph optimisation level", false, true, false},
      {"prefer_nhwc", {"0", "1"}, "NHWC convolution layouts (CUDA EP)", true, true},
      {"cudnn_conv_algo_search", {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}, "how cuDNN picks convolution algorithms", true, true},
      // ResNet-50 float16 with NHWC on the H200: 10,300 -> 14,660 images/s at
      // batch 32 (run l1, docs/BENCHMARKS.md); ORT refuses it for NCHW
      // float16 convolutions (the variant fails and says so).
      {"fuse_conv_bias", {"0", "1"}, "cuDNN's fused convolution + bias (CUDA EP, through the cuDNN frontend)", true, true},
      {"use_tf32", {"1", "0"}, "TF32 matrix products", true, false, false},
      {"cudnn_conv_use_max_workspace", {"1", "0"}, "largest cuDNN workspace", true, false, false},
      {"arena_extend_strategy", {"kNextPowerOfTwo", "kSameAsRequested"}, "how the memory arena grows", true, false, false},
      // Off by default: fp16 and mixed convert the model first (seconds to
      // minutes), and are judged against fp32 by --budget.
      {"precision", {"tf32", "fp32", "fp16", "mixed"},
       "numeric precision: tf32 (the CUDA default), fp32 (TF32 off), fp16 and mixed (converted in-process, judged "
       "against fp32 by --budget; on the CPU tf32 is fp32)", false, false, false},
  };
  return axes;
}

namespace {

const SweepAxis* FindAxis(const std::string& key) {
  for (const auto& a : SweepAxes()) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

std::string BaseValue(const SweepAxis& axis, const Variant& base) {
  if (axis.key == "io") return std::string(IoModeName(base.io));
  if (axis.key == "opt") return std::string(OptimizationLevelName(base.optimization));
  if (axis.key == "precision") return std::string(PrecisionName(base.precision));
  auto it = base.cuda_options.find(axis.key);
  return it != base.cuda_options.end() ? it->second : axis.values.front();
}

Status Apply(Provider provider, const std::string& key, const std::string& value, Variant& v) {
  if (key == "io") {
    ORTGPU_ASSIGN_OR_RETURN(v.io, ParseIoMode(value));
    if (NeedsCudaGraphOption(v.io)) {
      v.cuda_options["enable_cuda_graph"] = "1";
    } else {
      v.cuda_options.erase("enable_cuda_graph");
    }
  } else if (key == "opt") {
    ORTGPU_ASSIGN_OR_RETURN(v.optimization, ParseOptimizationLevel(value));
  } else if (key == "precision") {
    ORTGPU_ASSIGN_OR_RETURN(v.precision, ParsePrecision(value));
    // True fp32 is TF32 off; the other precisions keep the base's setting.
    if (provider == Provider::kCuda && v.precision == Precision::kFp32) {
      v.cuda_options["use_tf32"] = "0";
    } else if (auto it = v.cuda_options.find("use_tf32"); it != v.cuda_options.end() && it->second == "0") {
      v.cuda_options.erase(it);
    }
  } else {
    v.cuda_options[key] = value;
  }
  return Status::Ok();
}

}  // namespace

Expected<std::vector<Variant>> ExpandSweep(Provider provider, const std::vector<std::string>& selection, const Variant& base,
                                           const std::vector<std::string>& extra) {
  struct Chosen {
    const SweepAxis* axis;
    std::vector<std::string> values;
  };
  std::vector<Chosen> chosen;
  auto valid_axes = [provider] {
    std::string s;
    for (const auto& a : SweepAxes()) {
      if (!a.cuda_only || provider != Provider::kCpu) s += (s.empty() ? "" : ", ") + a.key;
    }
    return s;
  };
  if (selection.empty()) {
    for (const auto& a : SweepAxes()) {
      const bool cpu = provider == Provider::kCpu;
      if (cpu ? !a.default_on_cpu || a.cuda_only : !a.default_on_cuda) continue;
      std::vector<std::string> values = a.values;
      if (a.key == "io" && provider == Provider::kCpu) values = {"host", "bound", "resident", "served"};
      chosen.push_back({&a, values});
    }
  }
  std::vector<std::string> items = selection;
  items.insert(items.end(), extra.begin(), extra.end());
  for (const auto& item : items) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const SweepAxis* axis = FindAxis(key);
    if (axis == nullptr) return InvalidArgument("--sweep-axes: unknown axis '" + key + "'; valid: " + valid_axes());
    if (axis->cuda_only && provider == Provider::kCpu) {
      return InvalidArgument("--sweep-axes: '" + key + "' is a CUDA execution provider option; it needs --provider cuda");
    }
    std::vector<std::string> values = axis->values;
    if (eq != std::string::npos) {
      values.clear();
      std::stringstream ss(item.substr(eq + 1));
      std::string v;
      while (std::getline(ss, v, '|')) {
        if (std::find(axis->values.begin(), axis->values.end(), v) == axis->values.end()) {
          std::string list;
          for (const auto& x : axis->values) list += (list.empty() ? "" : ", ") + x;
          return InvalidArgument("--sweep-axes: '" + v + "' is not a value of " + key + "; valid: " + list);
        }
        values.push_back(v);
      }
      if (values.empty()) return InvalidArgument("--sweep-axes: '" + item + "' lists no values; write " + key + "=v1|v2");
    }
    if (key == "precision") {
      // The CPU has no TF32: tf32 and fp32 are one variant there, fp32.
      std::vector<std::string> effective;
      for (const auto& v : values) {
        const std::string e(PrecisionName(EffectivePrecision(provider, *ParsePrecision(v))));
        if (std::find(effective.begin(), effective.end(), e) == effective.end()) effective.push_back(e);
      }
      values = effective;
    }
    for (const auto& c : chosen) {
      if (c.axis->key == key) return InvalidArgument("--sweep-axes: '" + key + "' is given twice; list its values once");
    }
    chosen.push_back({axis, values});
  }
  auto chose = [&chosen](const std::string& key) {
    return std::any_of(chosen.begin(), chosen.end(), [&](const Chosen& c) { return c.axis->key == key; });
  };
  if (chose("precision") && chose("use_tf32")) {
    return InvalidArgument("--sweep-axes: precision and use_tf32 both set TF32 (precision fp32 is use_tf32=0, tf32 "
                           "is use_tf32=1); sweep one of them");
  }
  std::vector<Variant> out;
  std::vector<size_t> idx(chosen.size(), 0);
  while (true) {
    Variant v = base;
    std::string name;
    bool is_default = true;
    for (size_t a = 0; a < chosen.size(); ++a) {
      const std::string& value = chosen[a].values[idx[a]];
      ORTGPU_RETURN_IF_ERROR(Apply(provider, chosen[a].axis->key, value, v));
      if (value != BaseValue(*chosen[a].axis, base)) {
        is_default = false;
        name += (name.empty() ? "" : " ") + chosen[a].axis->key + "=" + value;
      }
    }
    v.is_default = is_default;
    v.name = is_default ? "default" : name;
    if (is_default) {
      out.insert(out.begin(), v);
    } else {
      out.push_back(v);
    }
    size_t a = 0;
    while (a < chosen.size() && ++idx[a] == chosen[a].values.size()) idx[a++] = 0;
    if (a == chosen.size()) break;
  }
  if (out.empty() || !out.front().is_default) {
    Variant d = base;
    d.is_default = true;
    d.name = "default";
    out.insert(out.begin(), d);
  }
  return out;
}

namespace {

// Measured, and its outputs agree with the CPU's running the same model.
bool Measured(const ConfigResult& r) { return r.error.ok() && (!r.accuracy.checked || r.accuracy.passed) && r.stats.count > 0; }

// ... and its precision may be recommended (within the budget).
bool Usable(const ConfigResult& r) {
  return Measured(r) && Recommendable(r.config.variant.precision, r.precision_accuracy);
}

const ConfigResult* DefaultAt(const BenchReport& report, const Configuration& c) {
  for (const auto& r : report.results) {
    if (r.config.variant.is_default && r.config.batch == c.batch && r.config.concurrency == c.concurrency &&
        r.config.concurrency_mode == c.concurrency_mode && Measured(r)) {
      return &r;
    }
  }
  return nullptr;
}

// The best usable result for one goal (`better`) among those serve runs
// (ServedByServe), among the stable ones when any is usable; otherwise the
// best unstable one, marked so. `eligible` narrows the candidates (the
// latency goal's smallest batch and concurrency). A reference mode that
// measured better than the pick is named in faster_not_served.
template <typename Eligible, typename Better>
std::optional<Pick> BestPick(const BenchReport& report, Eligible eligible, Better better) {
  std::optional<size_t> best_stable, best_any, best_reference, best_outside_budget;
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    if (!eligible(r)) continue;
    if (Measured(r) && !Usable(r) && ServedByServe(r.config.variant.io)) {
      if (!best_outside_budget || better(r, report.results[*best_outside_budget])) best_outside_budget = i;
      continue;
    }
    if (!Usable(r)) continue;
    if (!ServedByServe(r.config.variant.io)) {
      if (!best_reference || better(r, report.results[*best_reference])) best_reference = i;
      continue;
    }
    if (!best_any || better(r, report.results[*best_any])) best_any = i;
    if (r.stats.stable && (!best_stable || better(r, report.results[*best_stable]))) best_stable = i;
  }
  if (!best_any) return std::nullopt;
  Pick p;
  p.index = best_stable ? *best_stable : *best_any;
  p.unstable = !best_stable;
  if (best_stable && *best_any != *best_stable) p.faster_unstable = *best_any;
  if (best_reference && better(report.results[*best_reference], report.results[p.index])) p.faster_not_served = best_reference;
  if (best_outside_budget && better(report.results[*best_outside_budget], report.results[p.index])) {
    p.faster_outside_budget = best_outside_budget;
  }
  return p;
}

// The result measured with the settings of `r` but at `precision` (the
// TF32 option aside, which precision sets), at the same batch and
// concurrency; null when there is none usable.
const ConfigResult* AtPrecision(const BenchReport& report, const ConfigResult& r, Precision precision) {
  auto without_tf32 = [](std::map<std::string, std::string> options) {
    options.erase("use_tf32");
    return options;
  };
  const Configuration& c = r.config;
  for (const auto& x : report.results) {
    const Configuration& o = x.config;
    if (o.variant.precision == precision && o.variant.io == c.variant.io && o.variant.optimization == c.variant.optimization &&
        without_tf32(o.variant.cuda_options) == without_tf32(c.variant.cuda_options) && o.batch == c.batch &&
        o.concurrency == c.concurrency && o.concurrency_mode == c.concurrency_mode && Measured(x)) {
      return &x;
    }
  }
  return nullptr;
}

// "fp16: 1.43x the tf32 throughput, min cosine 0.99991, top-1 100%" when the
// pick's precision is not the default variant's; "" otherwise.
std::string Traded(const BenchReport& report, const Pick& pick, bool latency) {
  const ConfigResult& r = report.results[pick.index];
  const auto base = std::find_if(report.results.begin(), report.results.end(),
                                 [](const ConfigResult& x) { return x.config.variant.is_default; });
  if (base == report.results.end() || base->config.variant.precision == r.config.variant.precision) return "";
  const Precision from = base->config.variant.precision;
  std::string speed = fmt::format("no {} measurement with the same settings", PrecisionName(from));
  if (const ConfigResult* same = AtPrecision(report, r, from); same != nullptr) {
    speed = latency ? fmt::format("{:.2f}x the {} speed at p50 ({:.4g} ms against {:.4g})", same->stats.p50_ms / r.stats.p50_ms,
                                  PrecisionName(from), r.stats.p50_ms, same->stats.p50_ms)
                    : fmt::format("{:.2f}x the {} throughput", r.stats.items_per_s / same->stats.items_per_s, PrecisionName(from));
  }
  return fmt::format("{}: {}, {}", PrecisionName(r.config.variant.precision), speed, DescribeAccuracy(r.precision_accuracy));
}

}  // namespace

Recommendation Recommend(const BenchReport& report) {
  Recommendation rec;
  const std::optional<BatchAndConcurrency> smallest = SmallestBatchAndConcurrency(report, Usable);
  if (!smallest) return rec;
  rec.latency = BestPick(
      report,
      [&](const ConfigResult& r) { return r.config.batch == smallest->batch && r.config.concurrency == smallest->concurrency; },
      [](const ConfigResult& a, const ConfigResult& b) { return a.stats.p50_ms < b.stats.p50_ms; });
  rec.throughput = BestPick(
      report, [](const ConfigResult&) { return true; },
      [](const ConfigResult& a, const ConfigResult& b) { return a.stats.items_per_s > b.stats.items_per_s; });
  if (rec.latency) {
    rec.latency->traded = Traded(report, *rec.latency, true);
    const auto& best = report.results[rec.latency->index];
    if (const ConfigResult* d = DefaultAt(report, best.config); d != nullptr && best.stats.p50_ms > 0) {
      rec.latency->gain = d->stats.p50_ms / best.stats.p50_ms;
      rec.latency->has_baseline = true;
    }
  }
  if (rec.throughput) {
    rec.throughput->traded = Traded(report, *rec.throughput, false);
    const auto& best = report.results[rec.throughput->index];
    if (const ConfigResult* d = DefaultAt(report, best.config); d != nullptr && d->stats.items_per_s > 0) {
      rec.throughput->gain = best.stats.items_per_s / d->stats.items_per_s;
      rec.throughput->has_baseline = true;
    }
    rec.config_pbtxt = StabilityNote(report, *rec.throughput) + NotServedNote(report, *rec.throughput) +
                       BudgetNote(report, *rec.throughput) + ConfigPbtxtFragment(report, rec.throughput->index);
    if (!rec.throughput->traded.empty()) rec.config_pbtxt = "# precision " + rec.throughput->traded + "\n" + rec.config_pbtxt;
  }
  return rec;
}

std::string NotServedNote(const BenchReport& report, const Pick& pick) {
  if (!pick.faster_not_served) return "";
  const ConfigResult& f = report.results.at(*pick.faster_not_served);
  return fmt::format("# {} (batch {}, concurrency {}) measured {:.1f} items/s but is not what `ortgpu serve` runs ({}), "
                     "so the fastest configuration serve runs is recommended\n",
                     f.config.variant.name, f.config.batch, f.config.concurrency, f.stats.items_per_s,
                     NotServedReason(f.config.variant.io));
}

std::string BudgetNote(const BenchReport& report, const Pick& pick) {
  if (!pick.faster_outside_budget) return "";
  const ConfigResult& f = report.results.at(*pick.faster_outside_budget);
  const PrecisionAccuracy& a = f.precision_accuracy;
  return fmt::format("# {} (batch {}, concurrency {}) measured {:.1f} items/s but is not recommended: {}\n",
                     f.config.variant.name, f.config.batch, f.config.concurrency, f.stats.items_per_s,
                     a.checked ? "outside the accuracy budget (" + a.violations.front() + ")"
                               : "its accuracy against fp32 was not judged (" + a.note + ")");
}

std::string StabilityNote(const BenchReport& report, const Pick& pick) {
  const ConfigResult& r = report.results.at(pick.index);
  if (pick.unstable) {
    return fmt::format("# UNSTABLE: the timing windows of {} (batch {}, concurrency {}) disagreed ({}) and no stable "
                       "configuration was measured; re-run with a longer --duration before relying on this choice\n",
                       r.config.variant.name, r.config.batch, r.config.concurrency,
                       r.stats.stability_note.empty() ? "unstable" : r.stats.stability_note);
  }
  if (pick.faster_unstable) {
    const ConfigResult& f = report.results.at(*pick.faster_unstable);
    return fmt::format("# {} (batch {}, concurrency {}) measured faster but its timing windows disagreed, so the "
                       "fastest stable configuration is recommended\n",
                       f.config.variant.name, f.config.batch, f.config.concurrency);
  }
  return "";
}

std::string ConfigPbtxtFragment(const BenchReport& report, size_t pick) {
  const ConfigResult& r = report.results.at(pick);
  const Configuration& c = r.config;
  const bool gpu = c.provider != Provider::kCpu;
  std::string out;
  out += fmt::format("# Recommended by `ortgpu bench --sweep` for {}: {:.1f} items/s, p50 {:.3f} ms\n", report.model,
                     r.stats.items_per_s, r.stats.p50_ms);
  out += fmt::format("# settings: {}; batch {}; concurrency {} ({}); I/O mode {}: {}\n", c.variant.name, c.batch,
                     c.concurrency, ConcurrencyModeName(c.concurrency_mode), IoModeName(c.variant.io),
                     c.variant.io == IoMode::kServedGraph
                         ? "serve's CUDA-graph path (staged inputs copied into the graph, replay, outputs copied out)"
                     : ServedByServe(c.variant.io) ? "serve's own path (inputs staged in the instance's buffers, "
                                                     "pinned on CUDA; outputs copied out)"
                                                   : "a reference serve does not run");
  if (report.dynamic_batch) {
    // The model batches: keep it batching for clients as serve (and Triton)
    // would complete it, at least kServeDefaultMaxBatchSize rows, more when
    // bench measured larger batches.
    int64_t max_batch = kServeDefaultMaxBatchSize;
    for (const auto& x : report.results) max_batch = std::max(max_batch, x.config.batch);
    out += fmt::format("max_batch_size: {}\n", std::max(max_batch, c.batch));
    out += fmt::format("dynamic_batching {{ preferred_batch_size: [ {} ] }}\n", c.batch);
  } else {
    out += "max_batch_size: 0\n";
  }
  // serve captures CUDA graphs for the padded batch sizes of a dynamically
  // batched model (docs/SERVING.md); without batching there are no fixed
  // shapes to capture, so the option is left out and the fragment says so.
  std::map<std::string, std::string> serve_options = c.variant.cuda_options;
  if (serve_options.count("enable_cuda_graph") > 0 && !report.dynamic_batch) {
    serve_options.erase("enable_cuda_graph");
    out += "# enable_cuda_graph is left out: `ortgpu serve` captures CUDA graphs only for the padded batch sizes of a "
           "dynamically batched model, and this model does not batch\n";
  } else if (serve_options.count("enable_cuda_graph") > 0) {
    out += fmt::format("# enable_cuda_graph: serve captures one CUDA graph per padded batch size (here {}) and worker\n",
                       c.batch);
  }
  if (IsConverted(c.variant.precision)) {
    out += fmt::format("# precision {}: serve converts the model at load as `ortgpu convert --to {}` does; judged "
                       "against fp32: {} (budget: {})\n",
                       PrecisionName(c.variant.precision), PrecisionName(c.variant.precision),
                       DescribeAccuracy(r.precision_accuracy), report.precision_budget.empty() ? "none" : report.precision_budget);
    out += fmt::format("parameters {{ key: \"precision\" value: {{ string_value: \"{}\" }} }}\n", PrecisionName(c.variant.precision));
  } else if (gpu && c.variant.precision == Precision::kFp32) {
    out += "# precision fp32: TF32 off, the CUDA option use_tf32=0 below\n";
  }
  const int instances = c.concurrency_mode == ConcurrencyMode::kSessionPerWorker ? c.concurrency : 1;
  out += fmt::format("instance_group [ {{ count: {} kind: {} }} ]\n", instances, gpu ? "KIND_GPU" : "KIND_CPU");
  if (c.variant.optimization != OptimizationLevel::kAll || (gpu && !serve_options.empty())) {
    out += "optimization {\n";
    if (c.variant.optimization != OptimizationLevel::kAll) {
      // Triton's onnxruntime backend (and serve): -1 basic, 1 extended, 2 none.
      const int level = c.variant.optimization == OptimizationLevel::kDisable ? 2
                        : c.variant.optimization == OptimizationLevel::kBasic ? -1
                                                                               : 1;
      out += fmt::format("  graph {{ level: {} }}  # bench measured '{}'\n", level, OptimizationLevelName(c.variant.optimization));
    }
    if (gpu && !serve_options.empty()) {
      out += "  execution_accelerators {\n    gpu_execution_accelerator [\n      {\n        name: \"cuda\"\n";
      for (const auto& [k, v] : serve_options) {
        out += fmt::format("        parameters {{ key: \"{}\" value: \"{}\" }}\n", k, v);
      }
      out += "      }\n    ]\n  }\n";
    }
    out += "}\n";
  }
  return out;
}

}  // namespace ortgpu::bench
