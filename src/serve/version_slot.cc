#include "serve/version_slot.h"

#include "serve/repository/model_loader.h"

namespace ortgpu::serve {

bool VersionSlot::Settled(const std::optional<std::string>& fingerprint_now) const {
  const bool changed = fingerprint_now && *fingerprint_now != fingerprint_;
  return state_ == ModelState::kReady && model_ && failed_load_.empty() && !changed;
}

void VersionSlot::BeginLoad() {
  // A version being replaced keeps serving (state READY) while its successor loads.
  if (!model_) state_ = ModelState::kLoading;
}

std::shared_ptr<LoadedModel> VersionSlot::Loaded(std::shared_ptr<LoadedModel> model,
                                                 std::optional<std::string> fingerprint, std::string warning) {
  std::shared_ptr<LoadedModel> old = std::move(model_);
  model_ = std::move(model);
  if (fingerprint) fingerprint_ = std::move(*fingerprint);
  state_ = ModelState::kReady;
  reason_ = std::move(warning);
  failed_load_.clear();
  return old;
}

bool VersionSlot::LoadFailed(const std::string& why) {
  const bool repeated = failed_load_ == why;
  failed_load_ = why;
  if (model_) {
    // The version that was serving keeps serving: a failed reload must not take it down.
    state_ = ModelState::kReady;
    reason_ = "reloading failed, the version loaded before keeps serving: " + why;
  } else {
    state_ = ModelState::kUnavailable;
    reason_ = why;
  }
  return repeated;
}

std::shared_ptr<LoadedModel> VersionSlot::Unload() {
  state_ = ModelState::kUnloading;
  return std::move(model_);
}

std::pair<ModelState, std::string> VersionSlot::Standing() const {
  if (state_ == ModelState::kReady && model_ != nullptr && model_->batcher) {
    Status serving = model_->batcher->CanServe();
    if (!serving.ok()) return {ModelState::kUnavailable, serving.message()};
  }
  return {state_, reason_};
}

}  // namespace ortgpu::serve
