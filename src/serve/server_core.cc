#include "serve/server_core.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <new>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "serve/output_limit.h"
#include "serve/scheduler/request_validation.h"
#include "sys/host_allocator.h"

namespace ortgpu::serve {
namespace {

bool ParseVersion(const std::string& text, int64_t& out) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  out = std::stoll(text);
  return true;
}

// A version's statistics with the memory it was measured to hold.
StatsSnapshot SnapshotOf(const LoadedModel& m, const std::string& name) {
  StatsSnapshot s = m.stats->Snapshot(name, std::to_string(m.version));
  s.memory_usage = m.memory.Usage();
  return s;
}

// The metrics' figures of a version's GPU memory, summed over its GPUs;
// nullopt when it holds none (a CPU-only version).
std::optional<MemoryFigures> GpuMemoryFigures(const ModelMemory& memory) {
  std::optional<MemoryFigures> f;
  for (const auto& d : memory.devices) {
    if (!d.gpu) continue;
    if (!f) f = MemoryFigures{};
    f->weights += d.split.weights;
    f->arena_in_use += d.split.arena_in_use;
    f->arena_reserved += d.split.arena_reserved;
    if (d.split.other) f->other = f->other.value_or(0) + *d.split.other;
    f->total += d.split.total();
  }
  return f;
}

}  // namespace

std::string_view ModelControlModeName(ModelControlMode m) {
  switch (m) {
    case ModelControlMode::kNone: return "none";
    case ModelControlMode::kPoll: return "poll";
    case ModelControlMode::kExplicit: return "explicit";
  }
  return "none";
}

Expected<ModelControlMode> ParseModelControlMode(std::string_view name) {
  if (name == "none") return ModelControlMode::kNone;
  if (name == "poll") return ModelControlMode::kPoll;
  if (name == "explicit") return ModelControlMode::kExplicit;
  return InvalidArgument("--model-control '" + std::string(name) + "' is not a mode; use none, poll or explicit");
}

ServerCore::ServerCore(ServerOptions options, ServerDeps deps, ModelRepository repository)
    : options_(std::move(options)), deps_(std::move(deps)), repository_(std::move(repository)) {
  if (deps_.placement == nullptr) owned_placement_ = std::make_unique<ProfilePlacementChecker>();
  nvml_ = deps_.nvml_factory ? deps_.nvml_factory() : gpu::NewNvml();
  if (nvml_ != nullptr) {
    Status loaded = nvml_->Load();
    if (!loaded.ok()) {
      spdlog::debug("memory plan: NVML not available ({}); GPU loads are not planned", loaded.message());
      nvml_.reset();
    }
  }
  planner_ = std::make_unique<MemoryPlanner>(
      options_.memory_plan, nvml_.get(),
      options_.loader.visible_gpus ? options_.loader.visible_gpus->uuids : std::vector<std::string>{});
  planner_->ready_models = [this](int gpu) { return ReadyModelsMemory(gpu); };
}

uint64_t ServerCore::ReadyModelsMemory(int gpu) const {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const auto& [name, rec] : models_) {
    for (const auto& [v, slot] : rec.versions) {
      if (slot.model()) total += slot.model()->memory.GpuTotal(gpu);
    }
  }
  return total;
}

Expected<std::unique_ptr<ServerCore>> ServerCore::Create(ServerOptions options, ServerDeps deps) {
  ModelRepository repo = options.model_file.empty() ? ModelRepository::FromDirectory(options.repository)
                                                     : ModelRepository::FromModelFile(options.model_file, RealFileSystem(),
                                                                                      options.model_config_file);
  ORTGPU_ASSIGN_OR_RETURN(auto names, repo.ListModels());
  std::unique_ptr<ServerCore> core(new ServerCore(std::move(options), std::move(deps), std::move(repo)));
  if (core->options_.model_control == ModelControlMode::kExplicit && core->options_.model_file.empty()) {
    const auto& wanted = core->options_.startup_models;
    const bool all = std::find(wanted.begin(), wanted.end(), "*") != wanted.end();
    MutexLock control(&core->control_mu_);
    for (const auto& name : names) {
      if (core->shutting_down_) break;
      if (all || std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
        core->SyncModel(name, /*force=*/true).IgnoreError();  // failures live in the model's state
      }
    }
  } else {
    core->Rescan().IgnoreError();
  }
  if (core->options_.model_control == ModelControlMode::kPoll) {
    core->poll_thread_ = std::thread([c = core.get()] { c->PollLoop(); });
  }
  return core;
}

ServerCore::~ServerCore() { Shutdown(); }

void ServerCore::Shutdown() {
  // A second caller blocks here until the first one's ShutdownOnce returned,
  // so "Shutdown() returned" always means "everything is unloaded".
  std::call_once(shutdown_once_, [this] { ShutdownOnce(); });
}

void ServerCore::ShutdownOnce() {
  shutting_down_ = true;
  {
    MutexLock lock(&poll_mu_);
    poll_stop_ = true;
  }
  poll_cv_.SignalAll();
  if (poll_thread_.joinable()) poll_thread_.join();
  MutexLock control(&control_mu_);
  std::vector<std::string> names;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, rec] : models_) names.push_back(name);
  }
  for (const auto& name : names) UnloadAll(name, "the server is shutting down");
  // The private folders of file: parameters go with the versions they served.
  std::vector<std::shared_ptr<const LoadOverride>> retired;
  MutexLock lock(&mu_);
  for (auto& [name, rec] : models_) retired.push_back(std::move(rec.load_override));
}

void ServerCore::PollLoop() {
  MutexLock lock(&poll_mu_);
  while (!poll_stop_) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.poll_interval_ms);
    while (!poll_stop_ && poll_cv_.WaitUntil(&poll_mu_, next)) {
    }
    if (poll_stop_) return;
    lock.Unlock();
    Status st = Rescan();
    if (!st.ok() && !shutting_down_) spdlog::warn("model repository poll: {}", st.message());
    lock.Lock();
  }
}

void ServerCore::Warn(const std::string& message) {
  spdlog::warn("{}", message);
  MutexLock lock(&mu_);
  warnings_.push_back(message);
}

std::vector<std::string> ServerCore::Warnings() const {
  MutexLock lock(&mu_);
  return warnings_;
}

Status ServerCore::Rescan() {
  if (shutting_down_) return Unavailable("the server is shutting down");
  MutexLock control(&control_mu_);
  // Shutdown may have unloaded everything while this call waited for the lock.
  if (shutting_down_) return Unavailable("the server is shutting down");
  ORTGPU_ASSIGN_OR_RETURN(auto names, repository_.ListModels());
  std::set<std::string> all(names.begin(), names.end());
  {
    MutexLock lock(&mu_);
    for (const auto& [name, rec] : models_) all.insert(name);
  }
  for (const auto& name : all) {
    if (shutting_down_) return Unavailable("the server is shutting down");
    {
      // In explicit mode a rescan never loads what the user did not ask for.
      MutexLock lock(&mu_);
      auto it = models_.find(name);
      if (options_.model_control == ModelControlMode::kExplicit && (it == models_.end() || !it->second.loaded)) {
        continue;
      }
    }
    std::shared_ptr<const LoadOverride> load_override;
    {
      MutexLock lock(&mu_);
      if (auto it = models_.find(name); it != models_.end()) load_override = it->second.load_override;
    }
    SyncModel(name, /*force=*/false, std::move(load_override)).IgnoreError();
  }
  return Status::Ok();
}

// Drops the last references to versions whose batchers stopped (their
// sessions and buffers go with them), then hands the host memory they freed
// back to the kernel: the process keeps freed memory for reuse by requests
// (sys/host_allocator.h), which would otherwise hold a session's worth of it
// per load and unload. Not while shutting down: the process is ending, and
// a trim per model would only slow the exit of a large repository.
void ServerCore::ReleaseUnloaded(std::vector<std::shared_ptr<LoadedModel>>& leaving) {
  if (leaving.empty()) return;
  // The GPUs the leaving versions held memory on, and what each held before.
  struct Leaving {
    std::string name, version;
    std::vector<int> gpus;
    uint64_t held = 0;
  };
  std::vector<Leaving> gone;
  std::map<int, GpuUse> before;
  for (const auto& m : leaving) {
    Leaving l{m->name, std::to_string(m->version), {}, 0};
    for (const auto& d : m->memory.devices) {
      if (!d.gpu) continue;
      l.gpus.push_back(d.device);
      l.held += d.split.total();
      if (nvml_ != nullptr && !before.count(d.device)) {
        const auto& visible = options_.loader.visible_gpus;
        before[d.device] = ReadGpuUse(nvml_.get(), d.device, visible ? visible->Uuid(d.device) : "");
      }
    }
    if (!l.gpus.empty()) gone.push_back(std::move(l));
  }
  leaving.clear();
  if (!shutting_down_) ReleaseFreeHostMemory();
  for (const auto& l : gone) {
    for (int gpu : l.gpus) {
      const auto& visible = options_.loader.visible_gpus;
      const auto after = ReadGpuUse(nvml_.get(), gpu, visible ? visible->Uuid(gpu) : "").Best();
      const auto was = before.count(gpu) ? before[gpu].Best() : std::nullopt;
      if (!after || !was) continue;
      UnloadMemory u{gpu, *after, *was > *after ? *was - *after : 0};
      spdlog::info("model '{}' version {} unloaded: GPU {} holds {} (NVML), {} less than before; the version was "
                   "measured at {} there",
                   l.name, l.version, gpu, FormatMiB(static_cast<double>(u.after)),
                   FormatMiB(static_cast<double>(u.released)), FormatMiB(static_cast<double>(l.held)));
      if (deps_.observer) deps_.observer->OnUnloadMemory(l.name, l.version, u);
    }
  }
}

void ServerCore::UnloadAll(const std::string& name, const std::string& reason) {
  std::vector<std::shared_ptr<LoadedModel>> leaving;
  {
    MutexLock lock(&mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return;
    for (auto& [v, slot] : it->second.versions) {
      if (auto m = slot.Unload()) leaving.push_back(std::move(m));
    }
  }
  // Drain outside the lock: queued requests finish, new ones are refused.
  for (auto& m : leaving) {
    m->batcher->Stop();
    if (deps_.observer) deps_.observer->OnVersionUnloaded(name, std::to_string(m->version));
  }
  ReleaseUnloaded(leaving);
  MutexLock lock(&mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return;
  it->second.versions.clear();
  it->second.error = reason;
}

Status ServerCore::SyncModel(const std::string& name, bool force, std::shared_ptr<const LoadOverride> load_override) {
  auto source = ReadSource(name, load_override.get());
  if (!source.ok()) return source.status();
  inference::ModelConfig config;
  std::string config_error = ParseConfigOf(name, *source, config);
  std::set<int64_t> settled;  // READY with nothing to retry: reloaded only on force or a config edit
  const bool config_changed = RecordSource(name, *source, config_error, settled);
  if (load_override) config_error = load_override->ClientPaths(config_error);
  if (!config_error.empty()) {
    spdlog::error("model '{}' is unavailable: {}", name, config_error);
    // Versions already serving keep serving until a valid config arrives.
    return InvalidArgument(config_error);
  }
  const auto wanted = SelectVersions(config.version_policy(), source->versions);
  Status first_error;
  // The override the serving versions came from before, once one loaded
  // from this sync's source replaced it: released (its folder removed) after
  // the versions it served have stopped.
  std::shared_ptr<const LoadOverride> retired_override;
  for (int64_t v : wanted) {
    // A version that failed (say its folder was caught half-copied) is retried
    // on every rescan; nothing else would ever bring it back.
    if (!force && !config_changed && settled.count(v) > 0) continue;
    Status loaded = LoadOne(name, *source, config, v, load_override, retired_override);
    if (!loaded.ok() && first_error.ok()) first_error = loaded;
  }
  RetireUnwanted(name, wanted);
  retired_override.reset();
  return first_error;
}

Expected<ModelSource> ServerCore::ReadSource(const std::string& name, const LoadOverride* load_override) {
  auto source = load_override ? load_override->Source(repository_, name) : repository_.ReadModel(name);
  if (source.ok()) return source;
  // A load whose parameters name a model the repository lacks changes
  // nothing; nor does a plain load of a model that came from file:
  // parameters (it is in no repository): what serves keeps serving.
  if (load_override) return source.status();
  {
    MutexLock lock(&mu_);
    auto it = models_.find(name);
    if (it != models_.end() && it->second.load_override && it->second.load_override->has_files()) {
      return Status(source.status().code(), source.status().message() +
                                                "; it serves what its file: parameters loaded: send them again "
                                                "to reload it");
    }
  }
  UnloadAll(name, "removed from the repository");
  MutexLock lock(&mu_);
  models_.erase(name);
  return source.status();
}

std::string ServerCore::ParseConfigOf(const std::string& name, const ModelSource& source,
                                      inference::ModelConfig& config) {
  std::string config_error;
  if (source.has_config) {
    auto parsed = ParseModelConfig(source.config_text, source.config_path);
    if (parsed.ok()) {
      config = std::move(parsed->config);
      bool seen = false;
      {
        MutexLock lock(&mu_);
        auto it = models_.find(name);
        seen = it != models_.end() && it->second.config_text == source.config_text && !it->second.versions.empty();
      }
      if (!seen) {
        for (const auto& w : parsed->warnings) Warn(w);
      }
    } else {
      config_error = parsed.status().message();
    }
  }
  if (!config.name().empty() && config.name() != name) {
    config_error = source.config_path + " names the model '" + config.name() + "' but its folder is '" + name +
                   "'; make them equal";
  }
  if (config_error.empty() && source.versions.empty()) {
    config_error = "model '" + name + "' has no version folders; put the model at " + source.dir + "/1/model.onnx";
  }
  return config_error;
}

bool ServerCore::RecordSource(const std::string& name, const ModelSource& source, const std::string& config_error,
                              std::set<int64_t>& settled) {
  MutexLock lock(&mu_);
  auto& rec = models_[name];
  const bool config_changed = rec.config_text != source.config_text || rec.has_config != source.has_config;
  rec.loaded = true;
  rec.config_text = source.config_text;
  rec.has_config = source.has_config;
  rec.error = config_error;
  for (const auto& [v, slot] : rec.versions) {
    auto now = source.fingerprints.find(v);
    if (slot.Settled(now != source.fingerprints.end() ? std::optional<std::string>(now->second) : std::nullopt)) {
      settled.insert(v);
    }
  }
  return config_changed;
}

namespace {

// The READY line of a version: its warm-up, sessions, workers, graphs,
// turns, weights, precision and memory.
std::string DescribeLoad(const LoadedModel& m) {
  std::string sessions;
  for (int64_t rows : m.session_per_batch_size) {
    sessions += (sessions.empty() ? "; one session per batch size on each GPU instance: " : ", ") + std::to_string(rows);
  }
  if (m.workers_per_instance > 1) {
    sessions += "; " + std::to_string(m.workers_per_instance) + " workers per instance" +
                (m.own_worker_sessions ? ", each with sessions of its own" : " sharing its sessions");
  }
  if (m.cuda_graphs) sessions += "; CUDA graphs captured for every executed batch size and worker";
  if (m.gpu_turns) sessions += "; batches take turns on the GPU";
  for (const std::string& line : m.weights) sessions += "; " + line;
  if (!m.precision.precision.empty()) sessions += "; precision " + m.precision.Describe();
  if (const std::string memory = m.memory.Describe(); !memory.empty()) sessions += "; memory " + memory;
  return m.warmup.Describe() + sessions;
}

}  // namespace

Status ServerCore::LoadOne(const std::string& name, const ModelSource& source, const inference::ModelConfig& config,
                           int64_t v, const std::shared_ptr<const LoadOverride>& load_override,
                           std::shared_ptr<const LoadOverride>& retired_override) {
  bool retry = false;
  {
    MutexLock lock(&mu_);
    auto& slot = models_[name].versions[v];
    retry = !slot.failed_load().empty();
    slot.BeginLoad();
  }
  if (retry) {
    spdlog::debug("retrying model '{}' version {}", name, v);
  } else {
    spdlog::info("loading model '{}' version {}", name, v);
  }
  auto loaded = LoadVersion(source, config, v);
  if (!loaded.ok() && load_override) {
    loaded = Status(loaded.status().code(), load_override->ClientPaths(loaded.status().message()));
  }
  std::shared_ptr<LoadedModel> old;
  bool kept = false;      // a failed reload left the previous load serving
  bool repeated = false;  // failed as the last attempt did: logged already
  {
    MutexLock lock(&mu_);
    auto& rec = models_[name];
    auto& slot = rec.versions[v];
    if (loaded.ok()) {
      if (rec.load_override != load_override) {
        retired_override = std::move(rec.load_override);
        rec.load_override = load_override;
      }
      auto f = source.fingerprints.find(v);
      old = slot.Loaded(*loaded, f != source.fingerprints.end() ? std::optional<std::string>(f->second) : std::nullopt,
                        (*loaded)->warmup.warning);
    } else {
      repeated = slot.LoadFailed(loaded.status().message());
      kept = slot.model() != nullptr;
    }
  }
  if (old) old->batcher->Stop();
  if (!loaded.ok()) {
    const auto level = repeated ? spdlog::level::debug : spdlog::level::err;
    if (kept) {
      spdlog::log(level, "model '{}' version {} failed to reload and keeps serving its previous load: {}", name, v,
                  loaded.status().message());
    } else {
      spdlog::log(level, "model '{}' version {} is UNAVAILABLE: {}", name, v, loaded.status().message());
    }
    return loaded.status();
  }
  const LoadedModel& m = **loaded;
  if (deps_.observer) {
    deps_.observer->OnModelPrecision(name, std::to_string(v), PrecisionFiguresOf(m.precision));
    if (auto figures = GpuMemoryFigures(m.memory)) deps_.observer->OnModelMemory(name, std::to_string(v), *figures);
  }
  spdlog::info("model '{}' version {} is READY ({})", name, v, DescribeLoad(m));
  if (const std::string by_batch = m.memory.DescribeByBatch(); !by_batch.empty()) {
    spdlog::info("model '{}' version {}: instance 0's arena by batch size (its own weights included): {}", name, v,
                 by_batch);
  }
  return Status::Ok();
}

void ServerCore::RetireUnwanted(const std::string& name, const std::vector<int64_t>& wanted) {
  // Until a wanted version is READY those still serving stay (as Triton
  // does): a new version that failed must not take the model down.
  std::vector<std::shared_ptr<LoadedModel>> leaving;
  {
    MutexLock lock(&mu_);
    auto& rec = models_[name];
    bool wanted_ready = false;
    for (int64_t v : wanted) {
      auto it = rec.versions.find(v);
      if (it != rec.versions.end() && it->second.state() == ModelState::kReady && it->second.model()) {
        wanted_ready = true;
      }
    }
    for (auto it = rec.versions.begin(); it != rec.versions.end();) {
      const bool is_wanted = std::find(wanted.begin(), wanted.end(), it->first) != wanted.end();
      if (is_wanted || (!wanted_ready && it->second.model())) {
        ++it;
        continue;
      }
      if (auto m = it->second.Unload()) leaving.push_back(std::move(m));
      it = rec.versions.erase(it);
    }
  }
  for (auto& m : leaving) {
    spdlog::info("unloading model '{}' version {}", name, m->version);
    m->batcher->Stop();
    if (deps_.observer) deps_.observer->OnVersionUnloaded(name, std::to_string(m->version));
  }
  ReleaseUnloaded(leaving);
}

Expected<std::shared_ptr<LoadedModel>> ServerCore::LoadVersion(const ModelSource& source,
                                                               const inference::ModelConfig& config,
                                                               int64_t version) const {
  LoaderDeps deps;
  deps.session_factory = deps_.session_factory;
  deps.placement = deps_.placement ? deps_.placement : owned_placement_.get();
  deps.clock = deps_.clock;
  deps.observer = deps_.observer;
  deps.weights_factory = deps_.weights_factory;
  deps.precision_engines = deps_.precision_engines;
  deps.nvml = nvml_.get();
  deps.planner = planner_.get();
  deps.device_memory = deps_.device_memory;
  deps.wrap_runner = deps_.wrap_runner;
  const std::string what = "loading model '" + source.name + "' version " + std::to_string(version);
  // This runs on the start-up or poll thread: an exception escaping it would
  // abort the whole server for one model whose config asks for absurd sizes.
  try {
    return LoadModelVersion(source, config, version, options_.loader, deps);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(what + " ran out of memory (std::bad_alloc); check the dims, max_batch_size, "
                                    "instance_group count and model_warmup of its config.pbtxt");
  } catch (const std::exception& e) {
    return Internal(what + " threw " + e.what() + "; check the dims, max_batch_size and model_warmup of its "
                                                   "config.pbtxt, and the model file");
  }
}

Expected<std::shared_ptr<LoadedModel>> ServerCore::Resolve(const std::string& model,
                                                           const std::string& version) const {
  auto it = models_.find(model);
  if (it == models_.end()) {
    std::string names;
    for (const auto& [n, r] : models_) names += (names.empty() ? "" : ", ") + n;
    // Triton's wording, which its clients and tests read; ortgpu's hint after it.
    return NotFound("Request for unknown model: '" + model + "' is not found; the server has: " +
                    (names.empty() ? "no models" : names));
  }
  const ModelRecord& rec = it->second;
  if (version.empty()) {
    for (auto v = rec.versions.rbegin(); v != rec.versions.rend(); ++v) {
      if (v->second.ServesNow()) return v->second.model();
    }
    std::string why = rec.error;
    for (const auto& [v, slot] : rec.versions) {
      const std::string reason = slot.Standing().second;
      if (!reason.empty()) why += (why.empty() ? "" : "; ") + ("version " + std::to_string(v) + ": " + reason);
    }
    return Unavailable("model '" + model + "' has no READY version" + (why.empty() ? "" : ": " + why));
  }
  int64_t v = 0;
  auto slot = ParseVersion(version, v) ? rec.versions.find(v) : rec.versions.end();
  if (slot == rec.versions.end()) {
    std::string have;
    for (const auto& [n, s] : rec.versions) have += (have.empty() ? "" : ", ") + std::to_string(n);
    return NotFound("Request for unknown model: '" + model + "' version " + version + " is not found; loaded "
                    "versions: " + (have.empty() ? "none" : have));
  }
  const auto [state, reason] = slot->second.Standing();
  if (state != ModelState::kReady || !slot->second.model()) {
    return Unavailable("model '" + model + "' version " + version + " is " + std::string(ModelStateName(state)) +
                       (reason.empty() ? "" : ": " + reason));
  }
  return slot->second.model();
}

std::shared_ptr<const LoadedModel> ServerCore::FindLoaded(const std::string& model, const std::string& version) const {
  MutexLock lock(&mu_);
  auto r = Resolve(model, version);
  return r.ok() ? *r : nullptr;
}

bool ServerCore::IsLive() const { return !shutting_down_; }

bool ServerCore::IsReady() const {
  if (shutting_down_) return false;
  MutexLock lock(&mu_);
  for (const auto& [name, rec] : models_) {
    if (!rec.loaded) continue;
    if (!rec.error.empty()) return false;
    for (const auto& [v, slot] : rec.versions) {
      if (slot.Standing().first != ModelState::kReady) return false;
    }
  }
  return true;
}

Expected<ModelMetadata> ServerCore::Metadata(const std::string& model, const std::string& version) const {
  if (shutting_down_) return Unavailable("the server is shutting down");
  MutexLock lock(&mu_);
  ORTGPU_ASSIGN_OR_RETURN(auto m, Resolve(model, version));
  ModelMetadata md;
  md.name = model;
  for (const auto& [v, slot] : models_.at(model).versions) {
    if (slot.Standing().first == ModelState::kReady) {
      md.versions.push_back(std::to_string(v));
    }
  }
  if (!m->config.platform().empty()) md.platform = m->config.platform();
  md.inputs = m->inputs;
  md.outputs = m->outputs;
  return md;
}

Expected<bool> ServerCore::IsModelReady(const std::string& model, const std::string& version) const {
  if (shutting_down_) return Unavailable("the server is shutting down");
  MutexLock lock(&mu_);
  auto r = Resolve(model, version);
  if (r.ok()) return true;
  if (r.status().code() == Code::kUnavailable) return false;
  return r.status();
}

Expected<inference::ModelConfig> ServerCore::ModelConfig(const std::string& model, const std::string& version) const {
  if (shutting_down_) return Unavailable("the server is shutting down");
  MutexLock lock(&mu_);
  ORTGPU_ASSIGN_OR_RETURN(auto m, Resolve(model, version));
  return m->config;
}

Expected<std::vector<StatsSnapshot>> ServerCore::Statistics(const std::string& model, const std::string& version) const {
  if (shutting_down_) return Unavailable("the server is shutting down");
  MutexLock lock(&mu_);
  std::vector<StatsSnapshot> stats;
  if (!model.empty()) {
    ORTGPU_ASSIGN_OR_RETURN(auto m, Resolve(model, version));
    if (!version.empty()) return std::vector<StatsSnapshot>{SnapshotOf(*m, model)};
    // Every READY version, as Triton lists them.
    for (const auto& [v, slot] : models_.at(model).versions) {
      if (slot.model()) stats.push_back(SnapshotOf(*slot.model(), model));
    }
    return stats;
  }
  for (const auto& [name, rec] : models_) {
    for (const auto& [v, slot] : rec.versions) {
      if (slot.model()) stats.push_back(SnapshotOf(*slot.model(), name));
    }
  }
  return stats;
}

Expected<std::vector<std::string>> ServerCore::OutputLabels(const std::string& model, const std::string& version,
                                                            const std::string& output) const {
  std::shared_ptr<LoadedModel> m;
  {
    MutexLock lock(&mu_);
    ORTGPU_ASSIGN_OR_RETURN(m, Resolve(model, version));
  }
  // Read at load (LoadedModel::labels); an output without a label_filename has none.
  auto it = m->labels.find(output);
  if (it == m->labels.end()) return std::vector<std::string>{};
  if (!it->second.error.empty()) return NotFound(it->second.error);
  return it->second.labels;
}

std::vector<ModelVersionStatus> ServerCore::RepositoryIndex(bool ready_only) const {
  std::vector<ModelVersionStatus> out;
  auto names = repository_.ListModels();
  MutexLock lock(&mu_);
  std::set<std::string> all;
  if (names.ok()) all.insert(names->begin(), names->end());
  for (const auto& [name, rec] : models_) all.insert(name);
  for (const auto& name : all) {
    auto it = models_.find(name);
    if (it == models_.end() || it->second.versions.empty()) {
      if (ready_only) continue;
      std::string reason = it == models_.end() ? "not loaded" : it->second.error;
      if (it != models_.end() && !it->second.loaded && reason.empty()) reason = "unloaded";
      out.push_back({name, "", ModelState::kUnavailable, reason.empty() ? "not loaded" : reason});
      continue;
    }
    for (const auto& [v, slot] : it->second.versions) {
      auto [state, reason] = slot.Standing();
      if (ready_only && state != ModelState::kReady) continue;
      out.push_back({name, std::to_string(v), state, std::move(reason)});
    }
  }
  return out;
}

Status ServerCore::LoadModel(const std::string& model, const ModelLoadParameters& parameters) {
  if (options_.model_control != ModelControlMode::kExplicit) {
    return FailedPrecondition("loading models on request needs --model-control explicit (the server runs with '" +
                              std::string(ModelControlModeName(options_.model_control)) + "')");
  }
  if (shutting_down_) return Unavailable("the server is shutting down");
  // Checked and written before taking the control lock: a bad parameter
  // changes nothing, and other loads need not wait for the files.
  std::shared_ptr<const LoadOverride> load_override;
  if (!parameters.empty()) {
    auto prepared = LoadOverride::Prepare(model, parameters, options_.load_temp_root);
    if (!prepared.ok()) return prepared.status().WithContext("failed to load model '" + model + "'");
    load_override = std::move(prepared).value();
  }
  MutexLock control(&control_mu_);
  if (shutting_down_) return Unavailable("the server is shutting down");
  Status st = SyncModel(model, /*force=*/true, std::move(load_override));
  if (!st.ok()) return st.WithContext("failed to load model '" + model + "'");
  return Status::Ok();
}

Status ServerCore::UnloadModel(const std::string& model) {
  if (options_.model_control != ModelControlMode::kExplicit) {
    return FailedPrecondition("unloading models on request needs --model-control explicit (the server runs with '" +
                              std::string(ModelControlModeName(options_.model_control)) + "')");
  }
  if (shutting_down_) return Unavailable("the server is shutting down");
  MutexLock control(&control_mu_);
  if (shutting_down_) return Unavailable("the server is shutting down");
  {
    MutexLock lock(&mu_);
    if (models_.find(model) == models_.end()) return NotFound("model '" + model + "' is not loaded");
  }
  UnloadAll(model, "unloaded");
  std::shared_ptr<const LoadOverride> retired;  // its folder is removed outside the lock
  MutexLock lock(&mu_);
  auto& rec = models_[model];
  rec.loaded = false;
  retired = std::move(rec.load_override);
  return Status::Ok();
}

void ServerCore::Infer(InferRequest request, InferCallback done) {
  // A version swapped out between lookup and enqueue refuses the request; the
  // retry then finds its successor, for an explicit version as for the
  // default one (a version really gone is NotFound from Resolve). Two
  // attempts suffice: a swap takes a load.
  done = WithOutputSizeLimit(std::move(done), options_.max_output_bytes);
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (shutting_down_) return done(Unavailable("the server is shutting down; retry on another replica"));
    std::shared_ptr<LoadedModel> model;
    {
      MutexLock lock(&mu_);
      auto r = Resolve(request.model_name, request.model_version);
      if (!r.ok()) return done(r.status());
      model = std::move(r).value();
    }
    Status st = ValidateRequest(model->config, request);
    if (st.ok()) st = CheckOutputSizeBeforeRun(model->config, request, options_.max_output_bytes);
    if (!st.ok()) {
      // Refused at the door: counted as a failure by the metrics observer.
      if (deps_.observer) deps_.observer->OnRejected(request.model_name, std::to_string(model->version), st.code());
      return done(st);
    }
    const std::string asked = request.model_version;
    request.model_version = std::to_string(model->version);
    QueuedRequest item{std::move(request), std::move(done)};
    st = model->batcher->Enqueue(item);
    if (st.ok()) return;
    request = std::move(item.request);
    done = std::move(item.done);
    request.model_version = asked;
    if (st.code() != Code::kUnavailable) return done(st);
  }
  done(Unavailable("model '" + request.model_name + "' is being reloaded; retry"));
}

std::vector<std::string> ServerCore::ClientTextRoots() const {
  std::vector<std::string> roots;
  for (const std::string& root : {repository_.root(), options_.model_config_file.empty()
                                                          ? std::string()
                                                          : DirName(options_.model_config_file)}) {
    if (root.empty()) continue;
    roots.push_back(root);
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(root, ec).lexically_normal();
    if (!ec && absolute.string() != root) roots.push_back(absolute.string());
  }
  return roots;
}

}  // namespace ortgpu::serve
