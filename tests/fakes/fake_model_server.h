// FakeModelServer: a ModelServer for front-end tests (serve/http/). It knows
// two models: "echo" (READY, version 1; Infer returns each input as an
// output of the same name, or only the requested outputs) and "broken"
// (UNAVAILABLE, version 1; Infer fails with Unavailable). Anything else is
// NotFound.
//
// Infer can be held: with HoldInfers(true) requests are parked until
// ReleaseAll() (or the destructor) completes them, so tests drive drain and
// timeouts deterministically, without sleeps. WaitForParked(n) blocks until n
// requests are parked. BlockInferCalls(true) instead blocks the thread that
// calls Infer, to show which thread that is. Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "serve/model_server.h"

namespace ortgpu::serve {

class FakeModelServer : public ModelServer {
 public:
  ~FakeModelServer() override { ReleaseAll(); }

  bool IsLive() const override { return true; }
  bool IsReady() const override {
    std::lock_guard lock(mu_);
    return ready_;
  }
  void SetReady(bool ready) {
    std::lock_guard lock(mu_);
    ready_ = ready;
  }

  Expected<ModelMetadata> Metadata(const std::string& model, const std::string& version) const override {
    ThrowIfAsked();
    ORTGPU_RETURN_IF_ERROR(Check(model, version));
    ModelMetadata md;
    md.name = model;
    md.versions = {"1"};
    md.inputs = {{"x", "FP32", {-1, 2}}};
    md.outputs = {{"x", "FP32", {-1, 2}}};
    return md;
  }
  Expected<bool> IsModelReady(const std::string& model, const std::string& version) const override {
    ORTGPU_RETURN_IF_ERROR(Check(model, version));
    return model == "echo";
  }
  Expected<inference::ModelConfig> ModelConfig(const std::string& model, const std::string& version) const override {
    ORTGPU_RETURN_IF_ERROR(Check(model, version));
    inference::ModelConfig config;
    config.set_name(model);
    config.set_platform("onnxruntime_onnx");
    config.set_max_batch_size(8);
    return config;
  }
  Expected<std::vector<StatsSnapshot>> Statistics(const std::string& model, const std::string& version) const override {
    std::vector<StatsSnapshot> stats;
    for (std::string m : {"broken", "echo"}) {
      if (!model.empty() && model != m) continue;
      StatsSnapshot s;
      s.name = m;
      s.version = "1";
      stats.push_back(s);
    }
    if (!model.empty()) ORTGPU_RETURN_IF_ERROR(Check(model, version));
    return stats;
  }
  std::vector<ModelVersionStatus> RepositoryIndex(bool ready_only) const override {
    std::vector<ModelVersionStatus> out;
    std::lock_guard lock(mu_);
    if (!ready_only) out.push_back({"broken", "1", ModelState::kUnavailable, broken_reason_});
    out.push_back({"echo", "1", ModelState::kReady, ""});
    return out;
  }
  using ModelServer::LoadModel;
  Status LoadModel(const std::string& model, const ModelLoadParameters& parameters) override {
    ThrowIfAsked();
    {
      std::lock_guard lock(mu_);
      last_load_parameters_ = parameters;
    }
    if (model == "echo" || model == "broken") return Status::Ok();
    return NotFound("model '" + model + "' is not in the repository");
  }
  Status UnloadModel(const std::string& model) override { return LoadModel(model); }

  void Infer(InferRequest request, InferCallback done) override {
    // Inputs in (fake) CUDA shared memory: the fakes' device memory is host
    // memory, so they are read at once, as a GPU instance's batch would,
    // and no region stays held by a parked or remembered request.
    for (Tensor& t : request.inputs) {
      if (!t.on_device()) continue;
      const auto* at = reinterpret_cast<const uint8_t*>(t.device->address);
      t.data.assign(at, at + t.device->size);
      t.device.reset();
    }
    request.device_outputs.clear();  // the echo writes its outputs from the host
    ThrowIfAsked();
    Status st = Check(request.model_name, request.model_version);
    if (st.ok() && request.model_name == "broken") st = Unavailable("model 'broken' is UNAVAILABLE");
    if (!st.ok()) {
      done(st);
      return;
    }
    {
      std::unique_lock lock(mu_);
      if (throw_bad_alloc_) throw std::bad_alloc();
      if (block_) {
        // Holds the calling thread itself (BlockInferCalls).
        ++blocked_;
        cv_.notify_all();
        cv_.wait(lock, [&] { return !block_; });
        --blocked_;
      }
      last_request_ = request;
      if (hold_) {
        parked_.emplace_back(std::move(request), std::move(done));
        cv_.notify_all();
        return;
      }
    }
    done(Echo(std::move(request)));
  }

  // Every following Infer, Metadata and LoadModel throws a
  // std::runtime_error whose message names `path` (a bug of the server's).
  void ThrowRuntimeErrors(bool on, std::string path = "/srv/models/echo/1/model.onnx") {
    std::lock_guard lock(mu_);
    throw_runtime_error_ = on;
    throw_path_ = std::move(path);
  }
  // The reason RepositoryIndex gives for "broken"; the roots ClientText
  // makes paths relative to.
  void SetBrokenReason(std::string reason) {
    std::lock_guard lock(mu_);
    broken_reason_ = std::move(reason);
  }
  void SetClientTextRoots(std::vector<std::string> roots) {
    std::lock_guard lock(mu_);
    roots_ = std::move(roots);
  }
  std::vector<std::string> ClientTextRoots() const override {
    std::lock_guard lock(mu_);
    return roots_;
  }

  // Every following Infer throws std::bad_alloc (a request too large to hold).
  void ThrowBadAllocOnInfer(bool on) {
    std::lock_guard lock(mu_);
    throw_bad_alloc_ = on;
  }

  // With `block` every following Infer blocks the thread that calls it
  // until BlockInferCalls(false); WaitForBlocked(n) waits until n do.
  void BlockInferCalls(bool block) {
    std::lock_guard lock(mu_);
    block_ = block;
    cv_.notify_all();
  }
  void WaitForBlocked(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return blocked_ >= n; });
  }

  // Parks every following Infer until ReleaseAll().
  void HoldInfers(bool hold) {
    std::lock_guard lock(mu_);
    hold_ = hold;
  }
  void WaitForParked(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return parked_.size() >= n; });
  }
  // Completes every parked request (on the calling thread).
  void ReleaseAll() {
    std::vector<std::pair<InferRequest, InferCallback>> parked;
    {
      std::lock_guard lock(mu_);
      parked.swap(parked_);
      hold_ = false;
    }
    for (auto& [request, done] : parked) done(Echo(std::move(request)));
  }
  // Per parked request: whether the front end cancelled it
  // (InferRequest::cancelled).
  std::vector<bool> ParkedCancelled() const {
    std::lock_guard lock(mu_);
    std::vector<bool> out;
    for (const auto& [request, done] : parked_) out.push_back(request.is_cancelled());
    return out;
  }
  // The parameters of the last LoadModel call, as the front end decoded them.
  ModelLoadParameters last_load_parameters() const {
    std::lock_guard lock(mu_);
    return last_load_parameters_;
  }
  InferRequest last_request() const {
    std::lock_guard lock(mu_);
    return last_request_;
  }

  static Expected<InferResponse> Echo(InferRequest request) {
    InferResponse r;
    r.model_name = request.model_name;
    r.model_version = "1";
    r.id = request.id;
    for (Tensor& t : request.inputs) {
      bool wanted = request.outputs.empty();
      for (const RequestedOutput& o : request.outputs) wanted = wanted || o.name == t.name;
      if (wanted) r.outputs.push_back(std::move(t));
    }
    return r;
  }

 private:
  void ThrowIfAsked() const {
    std::lock_guard lock(mu_);
    if (throw_runtime_error_) throw std::runtime_error("inconsistent state reading " + throw_path_);
  }
  static Status Check(const std::string& model, const std::string& version) {
    if (model != "echo" && model != "broken") return NotFound("model '" + model + "' is not in the repository");
    if (!version.empty() && version != "1") {
      return NotFound("model '" + model + "' has no version " + version);
    }
    return Status::Ok();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = true;
  bool hold_ = false;
  bool block_ = false;
  bool throw_bad_alloc_ = false;
  bool throw_runtime_error_ = false;
  std::string throw_path_;
  std::string broken_reason_ = "failed to load";
  std::vector<std::string> roots_;
  int blocked_ = 0;
  std::vector<std::pair<InferRequest, InferCallback>> parked_;
  InferRequest last_request_;
  ModelLoadParameters last_load_parameters_;
};

}  // namespace ortgpu::serve
