#include "serve/repository/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "onnx.pb.h"
#include "ort/runtime.h"
#include "ort/session_options.h"
#include "ort/tensor.h"
#include "precision/model_cache.h"
#include "serve/repository/model_loader.h"
#include "serve/repository/model_memory.h"

namespace ortgpu::serve {
namespace {

std::string MiB(uint64_t bytes) { return FormatMiB(static_cast<double>(bytes)); }

}  // namespace

Expected<double> ParseMarginPercent(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !(v >= 0 && v <= 90)) {
    return InvalidArgument("--gpu-memory-margin '" + text +
                           "' is not a share of the GPU's memory between 0 and 90 percent; e.g. 10 or 10%");
  }
  return v;
}

std::vector<int64_t> SessionRowsFor(const std::vector<int64_t>& sizes, bool per_size_sessions, bool graphs,
                                    int workers, bool own_sessions) {
  std::vector<int64_t> one;
  if (sizes.empty()) {
    one.push_back(1);
  } else if (!per_size_sessions) {
    one.push_back(*std::max_element(sizes.begin(), sizes.end()));
  } else if (graphs) {
    one.push_back(1);  // the main session: unpadded runs only
    one.insert(one.end(), sizes.begin(), sizes.end());
  } else {
    const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    one.push_back(largest);
    for (int64_t s : sizes) {
      if (s != largest) one.push_back(s);
    }
  }
  std::vector<int64_t> out;
  for (int w = 0; w < (own_sessions ? std::max(workers, 1) : 1); ++w) out.insert(out.end(), one.begin(), one.end());
  return out;
}

Expected<uint64_t> InitializerBytes(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  if (!in) return NotFound("cannot read the model file " + model_path);
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return InvalidArgument(model_path + " is not an ONNX model");
  uint64_t total = 0;
  for (const auto& t : model.graph().initializer()) {
    const auto type = static_cast<DataType>(t.data_type());
    if (type == DataType::kString) continue;
    uint64_t n = 1;
    for (int64_t d : t.dims()) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
    total += n * ElementSize(type);
  }
  return total;
}

PlanVerdict JudgePlan(const PlanRequest& r, const GpuMemoryState& gpu, double margin_percent) {
  PlanVerdict v;
  auto need_with = [&](int instances, uint64_t per_instance) {
    return r.fixed + static_cast<uint64_t>(std::max(instances, 0)) * per_instance;
  };
  v.need = need_with(r.instances, r.per_instance);
  const auto margin = static_cast<uint64_t>(std::llround(static_cast<double>(gpu.total) * margin_percent / 100.0));
  v.available = gpu.free > margin ? gpu.free - margin : 0;
  v.fits = v.need <= v.available;
  if (v.fits) return v;
  std::vector<std::string> would_fit;
  const int before = r.what.empty() ? 0 : 1;  // instance 0 already loaded when checking the rest
  for (int k = r.instances - 1; k >= 1; --k) {
    if (need_with(k, r.per_instance) <= v.available) {
      would_fit.push_back(fmt::format("instance_group count {} ({})", before + k, MiB(need_with(k, r.per_instance))));
      break;
    }
  }
  if (r.per_instance_at && r.max_batch_size > 1) {
    for (int64_t b = r.max_batch_size / 2; b >= 1; b /= 2) {
      const uint64_t need = need_with(r.instances, r.per_instance_at(b));
      if (need <= v.available) {
        would_fit.push_back(fmt::format("max_batch_size {} ({})", b, MiB(need)));
        break;
      }
    }
  }
  if (r.suggest_fp16) {
    would_fit.push_back("parameters { key: \"precision\" value { string_value: \"fp16\" } } (float16 halves the bytes "
                        "of every weight and activation it converts; its own profile is measured at its first load)");
  }
  std::string fits_text;
  for (size_t i = 0; i < would_fit.size(); ++i) fits_text += (i == 0 ? "" : i + 1 == would_fit.size() ? " or " : ", ") + would_fit[i];
  if (would_fit.empty()) fits_text = "nothing smaller of this model; free memory on the GPU (unload a model) or lower --gpu-memory-margin";
  const std::string who = r.what.empty() ? "it needs" : r.what + " need";
  const std::string split = r.fixed > 0 ? fmt::format("{} once + {} x {}", MiB(r.fixed), r.instances, MiB(r.per_instance))
                                        : fmt::format("{} x {}", r.instances, MiB(r.per_instance));
  v.message = fmt::format(
      "model '{}' version {} does not fit in GPU {}'s memory: {} {} ({}; from {}); the {} has {} free of {} and the "
      "plan keeps {} of it free (--gpu-memory-margin {:g}%), leaving {}{}. What would fit: {}. {}; the models "
      "already loaded keep serving",
      r.model, r.version, r.gpu, who, MiB(v.need), split, r.basis, gpu.mig ? "MIG instance" : "GPU", MiB(gpu.free),
      MiB(gpu.total), MiB(margin),
      margin_percent, MiB(v.available),
      r.ready_models > 0 ? fmt::format(" (the models already READY there hold {})", MiB(r.ready_models)) : "",
      fits_text,
      r.what.empty() ? "The load was refused before it allocated on the GPU"
                     : "The load stopped before making them, and instance 0 was released");
  return v;
}

MemoryPlanner::MemoryPlanner(MemoryPlanOptions options, gpu::Nvml* nvml, std::vector<std::string> cuda_uuids,
                             const Environment& env)
    : options_(std::move(options)), nvml_(nvml), cuda_uuids_(std::move(cuda_uuids)), env_(env) {}

Expected<gpu::NvmlPlace> MemoryPlanner::Place(int gpu) const {
  if (nvml_ == nullptr) return Unavailable("NVML is not available");
  const bool known = gpu >= 0 && static_cast<size_t>(gpu) < cuda_uuids_.size();
  return NvmlPlaceOf(*nvml_, gpu, known ? cuda_uuids_[static_cast<size_t>(gpu)] : "", env_);
}

Expected<GpuMemoryState> MemoryPlanner::State(int gpu) const {
  ORTGPU_ASSIGN_OR_RETURN(const gpu::NvmlPlace place, Place(gpu));
  // A MIG instance has only its own slice: the parent GPU's memory would
  // let a plan on a 1g.18gb instance believe it has the whole GPU's.
  ORTGPU_ASSIGN_OR_RETURN(const gpu::NvmlMemory m, gpu::MemoryAt(*nvml_, place));
  return GpuMemoryState{m.total, m.free, place.mig.has_value()};
}

std::optional<MemoryProfile> MemoryPlanner::FindProfile(const std::string& key) const {
  if (options_.profile_dir.empty()) return std::nullopt;
  const std::string path = options_.profile_dir + "/" + key + ".json";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  auto profile = MemoryProfileFromJson(j.is_object() && j.contains("profile") ? j["profile"] : j);
  if (!profile.ok()) {
    spdlog::warn("memory profile {} is not used: {}", path, profile.status().message());
    return std::nullopt;
  }
  return *profile;
}

void MemoryPlanner::StoreProfile(const std::string& key, const MemoryProfile& profile) const {
  if (options_.profile_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(options_.profile_dir, ec);
  const std::string path = options_.profile_dir + "/" + key + ".json";
  const std::string staging = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(staging, std::ios::trunc);
    out << nlohmann::json{{"profile", MemoryProfileToJson(profile)}}.dump(2) << "\n";
    if (!out) {
      spdlog::warn("the memory profile could not be written to {} (the next load of the model estimates its memory "
                   "from its weights instead)",
                   options_.profile_dir);
      std::filesystem::remove(staging, ec);
      return;
    }
  }
  std::filesystem::rename(staging, path, ec);
  if (ec) {
    spdlog::warn("the memory profile could not be stored as {}: {}", path, ec.message());
    std::filesystem::remove(staging, ec);
  }
}

std::vector<int64_t> LoadLayout::SessionRows(int64_t max_batch_size) const {
  BatchPolicy p = policy;
  if (max_batch_size > 0) {
    p.max_batch_size = static_cast<int>(max_batch_size);
    std::vector<int> kept;
    for (int s : p.preferred_batch_sizes) {
      if (s <= max_batch_size) kept.push_back(s);
    }
    p.preferred_batch_sizes = kept;
  }
  return SessionRowsFor(WarmupBatchSizes(p.Normalized()).sizes, per_size_sessions, graphs, workers, own_sessions);
}

std::set<int> LoadLayout::gpus() const {
  std::set<int> out;
  for (const auto& [gpu, n] : gpu_instances) out.insert(gpu);
  return out;
}

LoadLayout LayoutOf(const inference::ModelConfig& config, bool sets_max_batch_size,
                    const std::map<int, int>& gpu_instances, ShareWeights share, bool graphs_requested,
                    bool suggest_fp16) {
  LoadLayout l;
  l.gpu_instances = gpu_instances;
  const bool gpu = !l.gpu_instances.empty();
  l.sizes_known = config.max_batch_size() > 0 || sets_max_batch_size;
  l.policy = BatchPolicyFor(config, gpu);
  const auto params = ConfigParameters(config);
  const auto per_size = params.find("session_per_batch_size");
  l.per_size_sessions = gpu && l.policy.pad_to_preferred_batch_size &&
                        (per_size == params.end() || ParameterIsTrue(per_size->second));
  l.graphs = graphs_requested && l.per_size_sessions && !WarmupBatchSizes(l.policy).sizes.empty();
  l.workers = gpu && l.policy.dynamic_batching ? 2 : 1;
  if (auto w = params.find("workers_per_instance"); w != params.end()) {
    l.workers = std::clamp(std::atoi(w->second.c_str()), 1, 8);
  }
  const auto worker_sessions = params.find("worker_sessions");
  l.own_sessions = l.graphs || (worker_sessions != params.end() && worker_sessions->second == "own");
  l.share = share;
  l.suggest_fp16 = suggest_fp16;
  return l;
}

std::string PlanSettings(const SessionOptions& base, const LoadLayout& layout, const MemoryPlanner& planner,
                         const std::string& precision, bool fp16_io) {
  std::string gpu_name;
  if (!layout.gpu_instances.empty() && planner.nvml() != nullptr) {
    auto place = planner.Place(layout.gpu_instances.begin()->first);
    if (place.ok()) {
      auto d = planner.nvml()->Device(place->index);
      if (d.ok()) gpu_name = d->name;
    }
  }
  std::string text = fmt::format("ort {}; gpu {}; optimization {}; share {}; graphs {}; precision {}; io {};",
                                 Runtime::Get().Version(), gpu_name, OptimizationLevelName(base.optimization),
                                 static_cast<int>(layout.share), layout.graphs, precision, fp16_io ? "fp16" : "fp32");
  // The options the sessions are made with: ortgpu's defaults change the
  // arena's growth, so a profile measured before a default changed is not reused.
  std::map<std::string, std::string> options = EffectiveCudaOptions(base);
  options.insert(base.cuda_options.begin(), base.cuda_options.end());
  for (const auto& [k, v] : options) text += " " + k + "=" + v;
  return text;
}

uint64_t ArenaLimitFor(const MemoryProfile& profile, int64_t rows, double margin_percent, int runs) {
  const double bytes = PredictInstanceBytes(profile, {rows}, runs) * (1 + margin_percent / 100.0);
  constexpr double kMiB = 1024.0 * 1024.0;
  return static_cast<uint64_t>(std::ceil(bytes / kMiB) * kMiB);
}

namespace {

uint64_t PredictInstance(const MemoryProfile& profile, const std::vector<int64_t>& rows, int runs_per_session) {
  return static_cast<uint64_t>(std::llround(PredictInstanceBytes(profile, rows, runs_per_session)));
}

// ", its 2 workers sharing them (each session's activations counted 2
// times)" or "".
std::string SharingClause(const LoadLayout& layout) {
  const int runs = layout.RunsPerSession();
  if (runs < 2) return "";
  return fmt::format(", its {} workers sharing them (each session's activations counted {} times: each worker's run "
                     "takes its own)",
                     runs, runs);
}

uint64_t ReadyModelsOn(const MemoryPlanner& planner, int gpu) {
  return planner.ready_models ? planner.ready_models(gpu) : 0;
}

}  // namespace

Status PlanLoad(const MemoryPlanner& planner, const std::string& model, int64_t version, const std::string& model_path,
                const LoadLayout& layout, const std::optional<MemoryProfile>& profile, int* refused_gpu) {
  if (!planner.active() || layout.gpu_instances.empty()) return Status::Ok();
  std::optional<uint64_t> weights;
  for (const auto& [gpu, instances] : layout.gpu_instances) {
    auto state = planner.State(gpu);
    if (!state.ok()) {
      spdlog::warn("model '{}': no memory plan on GPU {}: {}", model, gpu, state.status().message());
      continue;
    }
    PlanRequest r;
    r.model = model;
    r.version = version;
    r.gpu = gpu;
    r.instances = instances;
    r.max_batch_size = layout.sizes_known ? layout.policy.max_batch_size : 0;
    r.suggest_fp16 = layout.suggest_fp16;
    r.ready_models = ReadyModelsOn(planner, gpu);
    if (profile) {
      const std::vector<int64_t> rows = layout.sizes_known ? layout.SessionRows() : profile->measured_shape.session_rows;
      r.fixed = profile->shared_weights + profile->other;
      const int runs = layout.RunsPerSession();
      r.per_instance = PredictInstance(*profile, rows, runs);
      r.basis = "the memory profile measured at an earlier load of this model file and settings: per session " +
                profile->session.Describe() + ", " + std::to_string(rows.size()) + " session(s) per instance" +
                SharingClause(layout);
      if (layout.sizes_known) {
        r.per_instance_at = [&layout, &profile, runs](int64_t b) {
          return PredictInstance(*profile, layout.SessionRows(b), runs);
        };
      }
    } else {
      if (!weights) {
        auto bytes = InitializerBytes(model_path);
        if (!bytes.ok()) {
          spdlog::warn("model '{}': no memory plan: {}", model, bytes.status().message());
          return Status::Ok();
        }
        weights = *bytes;
      }
      const size_t sessions = layout.sizes_known ? layout.SessionRows().size() : 1;
      const size_t total = sessions * static_cast<size_t>(instances);
      if (layout.share == ShareWeights::kOff || (layout.share == ShareWeights::kAuto && total == 1)) {
        r.per_instance = *weights * sessions;
      } else {
        // One shared copy; under auto the device's first session keeps its own too.
        r.fixed = *weights * (layout.share == ShareWeights::kAuto ? 2 : 1);
      }
      r.basis = fmt::format("its weights alone ({} in the file, as its {} session(s) will hold them); no memory "
                            "profile yet, so activations are measured on instance 0 before the other instances load",
                            MiB(*weights), total);
    }
    const PlanVerdict v = JudgePlan(r, *state, planner.options().margin_percent);
    if (!v.fits) {
      if (refused_gpu != nullptr) *refused_gpu = gpu;
      return ResourceExhausted(v.message);
    }
    spdlog::info("model '{}' version {}: memory plan on GPU {}: needs {} of the {} available ({} free less the "
                 "{:g}% margin; from {})",
                 model, version, gpu, MiB(v.need), MiB(v.available), MiB(state->free), planner.options().margin_percent,
                 profile ? "its memory profile" : "its weights alone");
  }
  return Status::Ok();
}

Status PlanRemainingInstances(const MemoryPlanner& planner, const std::string& model, int64_t version, int gpu,
                              int remaining, uint64_t per_instance, uint64_t activations, const LoadLayout& layout) {
  if (!planner.active() || remaining < 1) return Status::Ok();
  auto state = planner.State(gpu);
  if (!state.ok()) return Status::Ok();
  PlanRequest r;
  r.model = model;
  r.version = version;
  r.gpu = gpu;
  r.instances = remaining;
  const int runs = layout.RunsPerSession();
  r.per_instance = per_instance + static_cast<uint64_t>(runs - 1) * activations;
  r.suggest_fp16 = layout.suggest_fp16;
  r.ready_models = ReadyModelsOn(planner, gpu);
  r.what = fmt::format("the other {} instance{}", remaining, remaining == 1 ? "" : "s");
  r.basis = fmt::format("instance 0, loaded and warmed, holds {} in its arenas", MiB(per_instance));
  if (runs > 1) {
    r.basis += fmt::format(" ({} of them activations), and its {} workers share its sessions: {} per instance under "
                           "load",
                           MiB(activations), runs, MiB(r.per_instance));
  }
  const PlanVerdict v = JudgePlan(r, *state, planner.options().margin_percent);
  if (!v.fits) return ResourceExhausted(v.message);
  return Status::Ok();
}

Expected<std::string> MemoryProfileKey(const std::string& model_path, const std::string& settings) {
  ORTGPU_ASSIGN_OR_RETURN(std::string digest, precision::ModelFileDigest(model_path));
  precision::ContentDigest d;
  d.Add(digest);
  d.Add(settings);
  return d.Hex();
}

}  // namespace ortgpu::serve
