#include "doctor/checks_precision.h"

#include <algorithm>

#include <fmt/format.h>

#include "gpu/compatibility.h"
#include "gpu/tensor_cores.h"

namespace ortgpu::doctor {
namespace {

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(separator)) + s;
  return out;
}

// "1 island", "3 islands".
std::string Counted(size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// ResNet-50, batch 32, on the H200 (docs/BENCHMARKS.md, issue 26).
constexpr const char* kTf32Cost =
    "ResNet-50 at batch 32 on the H200 ran 2,333/s in true float32 against 7,232/s with TF32 "
    "(docs/BENCHMARKS.md): about 3x slower";

// What ortgpu can run on these tensor cores today.
std::string OrtgpuUses(const gpu::TensorCores& tc) {
  std::vector<std::string> uses;
  if (tc.has("tf32")) {
    uses.push_back("float32 models as TF32 (ORT's use_tf32=1 default; host.tf32)");
  } else {
    uses.push_back("float32 models in true float32 (no TF32 before compute capability 8.0)");
  }
  uses.push_back(std::string("fp16 and mixed: `ortgpu convert --to fp16|mixed`, then bench or serve the model it "
                             "writes (docs/PRECISION.md)") +
                 (tc.has("fp16") ? "" : ", though without tensor cores it saves memory more than time"));
  std::vector<std::string> not_yet;
  for (const auto& p : tc.dense) {
    if (p != "fp16" && p != "tf32") not_yet.push_back(p);
  }
  std::string s = "ortgpu uses: " + Join(uses, "; ");
  if (!not_yet.empty()) s += "; not targets of ortgpu yet: " + Join(not_yet, ", ");
  return s;
}

std::string DescribeIsland(const PrecisionIsland& island) {
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [op, n] : island.ops) ops.emplace_back(-n, op);
  std::sort(ops.begin(), ops.end());
  std::vector<std::string> op_list;
  for (const auto& [n, op] : ops) op_list.push_back(fmt::format("{} {}", -n, op));
  constexpr size_t kNamesShown = 6;
  std::vector<std::string> names(island.nodes.begin(),
                                 island.nodes.begin() + std::min(island.nodes.size(), kNamesShown));
  std::string s = fmt::format("{} ({}): {}", Counted(island.nodes.size(), "node"), Join(op_list, ", "), Join(names, ", "));
  if (island.nodes.size() > kNamesShown) s += fmt::format(" and {} more", island.nodes.size() - kNamesShown);
  return s + fmt::format("; {} at its borders", Counted(island.border_casts, "Cast"));
}

void AddCensusFinding(const ModelPrecisionInputs& in, const std::string& prefix, const gpu::TensorCores& tc,
                      Report& report) {
  const PrecisionCensus& c = *in.census;
  const int half = c.fp16_nodes + c.bf16_nodes;
  std::string title;
  switch (c.precision) {
    case ModelPrecision::kFloat32:
      title = "float32 model: " + Counted(c.fp32_nodes, "node") + " compute in float32";
      break;
    case ModelPrecision::kFloat16:
      title = fmt::format("float16 model: {} nodes compute in {}, none in float32", half,
                          c.bf16_nodes == 0 ? "float16" : c.fp16_nodes == 0 ? "bfloat16" : "float16 or bfloat16");
      break;
    case ModelPrecision::kMixed:
      title = fmt::format("mixed-precision model: {} nodes in float16, {} in float32 ({})", half, c.fp32_nodes,
                          Counted(c.fp32_islands.size(), "island"));
      break;
    case ModelPrecision::kOther:
      title = "no float16 or float32 compute (an integer or float64 model)";
      break;
  }
  Finding f = MakeFinding(prefix + ".precision", Layer::kModel, Verdict::kInfo, title);
  f.seen = fmt::format("{} nodes: {} float16, {} bfloat16, {} float32, {} shape arithmetic, {} other (integer, "
                       "float64, unknown types), {} Casts; weights: {} float16 and {} float32 values",
                       c.nodes, c.fp16_nodes, c.bf16_nodes, c.fp32_nodes, c.shape_nodes, c.other_nodes, c.casts,
                       c.weights.fp16_elements, c.weights.fp32_elements);
  f.facts = {{"precision", std::string(ModelPrecisionName(c.precision))},
             {"nodes", std::to_string(c.nodes)},
             {"fp16_nodes", std::to_string(c.fp16_nodes)},
             {"bf16_nodes", std::to_string(c.bf16_nodes)},
             {"fp32_nodes", std::to_string(c.fp32_nodes)},
             {"shape_nodes", std::to_string(c.shape_nodes)},
             {"other_nodes", std::to_string(c.other_nodes)},
             {"cast_nodes", std::to_string(c.casts)},
             {"fp32_islands", std::to_string(c.fp32_islands.size())},
             {"cancelling_cast_pairs", std::to_string(c.cancelling_casts.size())},
             {"useless_casts", std::to_string(c.useless_casts.size())},
             {"fp16_weight_values", std::to_string(c.weights.fp16_elements)},
             {"fp32_weight_values", std::to_string(c.weights.fp32_elements)}};
  const std::string gpu = in.device_cc > 0 ? fmt::format("this GPU ({}, compute capability {})", tc.generation,
                                                         gpu::FormatComputeCapability(in.device_cc))
                                           : "";
  if (c.precision == ModelPrecision::kFloat32 && tc.has("fp16")) {
    f.why = gpu + (tc.has("tf32") ? " has float16 tensor cores at about twice TF32's rate, with half the memory "
                                    "traffic; a float32 model uses its tensor cores only as TF32"
                                  : " has float16 tensor cores; a float32 model runs without any (no TF32 before "
                                    "8.0)");
    f.fix = fmt::format("ortgpu convert {0} --to fp16 --output model.fp16.onnx (or --to mixed, which keeps in "
                        "float32 the nodes accuracy needs), then compare: ortgpu bench {0} --precision tf32,fp16",
                        in.path);
  } else if (half > 0 && in.device_cc > 0 && !tc.has("fp16")) {
    f.why = gpu + " has no float16 tensor cores: float16 saves memory here but little time";
  } else if (c.bf16_nodes > 0 && in.device_cc > 0 && !tc.has("bf16")) {
    f.verdict = Verdict::kWarn;
    f.why = gpu + " has no bfloat16 tensor cores (they came with 8.0): bfloat16 runs slowly, if at all";
    f.fix = "convert the float32 model to float16 instead: ortgpu convert MODEL --to fp16";
  }
  report.Add(std::move(f));
}

void AddIslandsFinding(const PrecisionCensus& c, const std::string& prefix, Report& report) {
  int island_nodes = 0;
  int borders = 0;
  for (const auto& i : c.fp32_islands) {
    island_nodes += static_cast<int>(i.nodes.size());
    borders += i.border_casts;
  }
  Finding f = MakeFinding(prefix + ".fp32_islands", Layer::kModel, Verdict::kInfo,
                          fmt::format("{} in the float16 model: {}, {} at their borders",
                                      Counted(c.fp32_islands.size(), "float32 island"), Counted(island_nodes, "node"),
                                      Counted(borders, "Cast")));
  constexpr size_t kShown = 3;
  std::vector<std::string> shown;
  for (size_t i = 0; i < c.fp32_islands.size() && i < kShown; ++i) {
    shown.push_back(fmt::format("#{}: {}", i + 1, DescribeIsland(c.fp32_islands[i])));
  }
  f.seen = "biggest first: " + Join(shown, "; ");
  if (c.fp32_islands.size() > kShown) f.seen += fmt::format("; and {} smaller", c.fp32_islands.size() - kShown);
  f.why = "an island computes without float16 tensor cores and pays a Cast kernel at each border; ops that have no "
          "float16 kernel or lose accuracy in it (Resize, TopK, NonMaxSuppression, CumSum ...: ortgpu convert's op "
          "block list) belong in one, others only cost time";
  f.fix = "from the float32 model: ortgpu convert MODEL --to mixed keeps in float32 only the nodes the accuracy "
          "budget needs (and the op block list); a node kept on purpose can stay";
  f.facts = {{"islands", std::to_string(c.fp32_islands.size())},
             {"island_nodes", std::to_string(island_nodes)},
             {"border_casts", std::to_string(borders)},
             {"largest_island_nodes", std::to_string(c.fp32_islands.front().nodes.size())}};
  report.Add(std::move(f));
}

void AddCastsFinding(const PrecisionCensus& c, const std::string& prefix, Report& report) {
  const bool waste = !c.cancelling_casts.empty() || !c.useless_casts.empty();
  Finding f = MakeFinding(prefix + ".casts", Layer::kModel, waste ? Verdict::kWarn : Verdict::kPass,
                          waste ? fmt::format("wasted Casts: {} that cancel, {} to the type read (of {})",
                                              Counted(c.cancelling_casts.size(), "pair"),
                                              Counted(c.useless_casts.size(), "Cast"), Counted(c.casts, "Cast"))
                                : Counted(c.casts, "Cast") + ", none wasted");
  std::vector<std::string> items;
  for (const auto& p : c.cancelling_casts) items.push_back(fmt::format("{} -> {} ({})", p.first, p.second, p.types));
  for (const auto& u : c.useless_casts) items.push_back(u);
  constexpr size_t kShown = 8;
  std::vector<std::string> shown(items.begin(), items.begin() + std::min(items.size(), kShown));
  f.seen = waste ? Join(shown, "; ") : "no Cast pair cancels and no Cast reads its own target type";
  if (items.size() > kShown) f.seen += fmt::format("; and {} more", items.size() - kShown);
  if (waste) {
    f.why = "each runs a kernel and copies the whole tensor for nothing: a float16 -> float32 -> float16 round trip "
            "gives back exactly what it read";
    f.fix = "re-convert the float32 model with ortgpu convert MODEL --to fp16 (it never leaves a Cast pair that "
            "cancels, nor a Cast to the type it reads), or remove them from the graph";
  }
  f.facts = {{"cast_nodes", std::to_string(c.casts)},
             {"cancelling_cast_pairs", std::to_string(c.cancelling_casts.size())},
             {"useless_casts", std::to_string(c.useless_casts.size())}};
  report.Add(std::move(f));
}

void AddCpuFinding(const PlacementSummary& p, const std::string& prefix, Report& report) {
  std::vector<const CpuNode*> nodes;
  for (const auto& n : p.compute_fallbacks) {
    if (n.half_precision) nodes.push_back(&n);
  }
  Finding f = MakeFinding(prefix + ".fp16_cpu", Layer::kModel, nodes.empty() ? Verdict::kPass : Verdict::kWarn,
                          nodes.empty() ? "no float16 compute node fell back to the CPU"
                                        : Counted(nodes.size(), "float16 compute node") + " fell back to the CPU",
                          /*gpu=*/true);
  if (nodes.empty()) {
    f.seen = fmt::format("{} nodes profiled on the CUDA run", p.total_nodes);
  } else {
    constexpr size_t kShown = 8;
    std::vector<std::string> shown;
    std::vector<std::string> names;
    for (const auto* n : nodes) {
      if (shown.size() < kShown) shown.push_back(fmt::format("{} '{}' [{}]: {}", n->op_type, n->node_name, n->types, n->reason));
      names.push_back(n->node_name);
    }
    f.seen = Join(shown, "; ");
    if (nodes.size() > kShown) f.seen += fmt::format("; and {} more", nodes.size() - kShown);
    f.why = "the CUDA EP has no float16 kernel for these nodes: ORT copies their tensors to the host and back, and "
            "the CPU computes float16 slowly (often through Casts of its own)";
    f.fix = fmt::format("keep them float32: re-convert the float32 model with ortgpu convert MODEL --to fp16 "
                        "--provider cuda (its placement pass does this) or --node-block-list {}",
                        Join(names, ","));
  }
  f.facts = {{"fp16_nodes_on_cpu", std::to_string(nodes.size())}};
  report.Add(std::move(f));
}

}  // namespace

void CheckGpuPrecision(const gpu::DriverInfo& info, Report& report) {
  for (const auto& d : info.devices) {
    if (d.index < 0) continue;
    const int cc = d.ComputeCapability();
    const gpu::TensorCores tc = gpu::TensorCoresFor(cc);
    const std::string id = std::to_string(d.index);
    const std::string where = fmt::format("{}, compute capability {}", d.name, gpu::FormatComputeCapability(cc));
    Finding f = MakeFinding("driver.precision." + id, Layer::kDriver, Verdict::kInfo,
                            tc.any() ? fmt::format("GPU {}: {} tensor cores compute {}", id, tc.generation,
                                                   Join(tc.dense, ", "))
                                     : fmt::format("GPU {}: no tensor cores ({})", id, where),
                            /*gpu=*/true);
    f.seen = fmt::format("{} ({}): dense tensor-core precisions {}; {}. {}", where, tc.generation,
                         tc.any() ? Join(tc.dense, ", ") : "none", tc.note, OrtgpuUses(tc));
    if (tc.has("fp16")) f.seen += "; sparse (2:4) tensor-core modes are not used by ORT's CUDA EP";
    f.facts["compute_capability"] = gpu::FormatComputeCapability(cc);
    f.facts["generation"] = tc.generation;
    f.facts["tensor_core_precisions"] = Join(tc.dense, ",");
    f.facts["ortgpu_precisions"] = tc.has("tf32") ? "tf32,fp16,mixed" : "fp32,fp16,mixed";
    report.Add(std::move(f));
  }
}

void CheckTf32(const Tf32Inputs& in, Report& report) {
  const auto env = in.env.Get("NVIDIA_TF32_OVERRIDE");
  const auto option_it = in.cuda_options.find("use_tf32");
  const std::optional<std::string> option =
      option_it == in.cuda_options.end() ? std::nullopt : std::optional<std::string>(option_it->second);
  if (in.device_ccs.empty() && !env && !option) return;
  const bool has_tf32 = std::any_of(in.device_ccs.begin(), in.device_ccs.end(),
                                    [](int cc) { return gpu::TensorCoresFor(cc).has("tf32"); });
  const bool env_off = env && *env == "0";
  const bool option_off = option && *option == "0";

  Finding f = MakeFinding("host.tf32", Layer::kHost, Verdict::kInfo, "", /*gpu=*/false);
  f.facts["nvidia_tf32_override"] = env.value_or("");
  f.facts["use_tf32"] = option.value_or("");
  std::vector<std::string> seen;
  seen.push_back(option ? "--cuda-option use_tf32=" + *option : "use_tf32 not given (ORT's default: 1)");
  seen.push_back(env ? "NVIDIA_TF32_OVERRIDE=\"" + *env + "\"" : "NVIDIA_TF32_OVERRIDE unset");

  if (!in.device_ccs.empty() && !has_tf32) {
    int newest = *std::max_element(in.device_ccs.begin(), in.device_ccs.end());
    f.title = fmt::format("no TF32 on this GPU ({}, compute capability {})", gpu::ArchName(newest),
                          gpu::FormatComputeCapability(newest));
    seen.push_back("TF32 tensor cores came with compute capability 8.0: float32 runs in true float32 here, "
                   "whatever use_tf32 or NVIDIA_TF32_OVERRIDE say");
    f.facts["tf32"] = "unsupported";
    f.facts["source"] = "gpu";
  } else if (option_off) {
    f.title = "TF32 off: --cuda-option use_tf32=0";
    seen.push_back("the CUDA EP asks cuBLAS and cuDNN for true float32");
    if (env_off) seen.push_back("NVIDIA_TF32_OVERRIDE=0 would turn it off as well");
    f.why = std::string("float32 MatMul and Conv run without tensor cores: ") + kTf32Cost;
    f.fix = "keep it when bit-exact float32 matters; otherwise drop use_tf32=0";
    f.facts["tf32"] = "off";
    f.facts["source"] = "provider_option";
  } else if (env_off) {
    f.verdict = has_tf32 ? Verdict::kWarn : Verdict::kInfo;
    f.title = "TF32 off: NVIDIA_TF32_OVERRIDE=0 overrides ORT's use_tf32=" + option.value_or("1");
    seen.push_back("the variable makes cuBLAS and cuDNN ignore every TF32 request in this process, ORT's "
                   "use_tf32=1 included");
    f.why = std::string("float32 models run in true float32, silently: ") + kTf32Cost;
    f.fix = "unset NVIDIA_TF32_OVERRIDE (look in the image's ENV, the pod spec and shell profiles); to keep true "
            "float32 on purpose say so where it shows: --cuda-option use_tf32=0";
    f.facts["tf32"] = "off";
    f.facts["source"] = "NVIDIA_TF32_OVERRIDE";
  } else {
    f.title = option ? "TF32 on for float32 MatMul and Conv (--cuda-option use_tf32=" + *option + ")"
                     : "TF32 on for float32 MatMul and Conv (ORT's use_tf32=1 default)";
    seen.push_back("cuBLAS and cuDNN use TF32 tensor cores: a 10-bit mantissa, so float32 outputs differ from the "
                   "CPU's by about 1e-3 relative");
    if (env) seen.push_back("NVIDIA_TF32_OVERRIDE only turns TF32 off (0); \"" + *env + "\" changes nothing");
    f.why = "accuracy-sensitive float32 models may need true float32";
    f.fix = "for true float32: --cuda-option use_tf32=0 (bench, serve, doctor), or export NVIDIA_TF32_OVERRIDE=0 "
            "for the whole process";
    f.facts["tf32"] = "on";
    f.facts["source"] = option ? "provider_option" : "ort_default";
  }
  f.seen = Join(seen, "; ");
  report.Add(std::move(f));
}

void CheckModelPrecision(const ModelPrecisionInputs& in, int index, Report& report) {
  const std::string prefix = "model." + std::to_string(index);
  if (in.census == nullptr) {
    Finding f = MakeFinding(prefix + ".precision", Layer::kModel, Verdict::kSkip,
                            "no precision census of " + in.path);
    f.seen = in.census_error;
    f.why = "doctor counts float16 and float32 nodes in the model's graph, which it could not read";
    report.Add(std::move(f));
    return;
  }
  const PrecisionCensus& c = *in.census;
  const gpu::TensorCores tc = gpu::TensorCoresFor(in.device_cc);
  AddCensusFinding(in, prefix, in.device_cc > 0 ? tc : gpu::TensorCores{}, report);
  if (!c.fp32_islands.empty()) AddIslandsFinding(c, prefix, report);
  const bool half = c.fp16_nodes + c.bf16_nodes > 0;
  if (c.casts > 0 && (half || !c.cancelling_casts.empty() || !c.useless_casts.empty())) {
    AddCastsFinding(c, prefix, report);
  }
  if (half && in.placement != nullptr) AddCpuFinding(*in.placement, prefix, report);
}

}  // namespace ortgpu::doctor
