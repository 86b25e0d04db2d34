// One model version's place in the server core (ServerCore's records): its
// lifecycle state (Triton's model_lifecycle.h: LOADING, READY,
// UNAVAILABLE, UNLOADING), why, the load that serves it, and what the last
// load attempt said. The state and its reason change only through the
// transitions below, one per event of a version's life, so every state a
// client can see has one writer:
//
//   BeginLoad   LOADING, unless a load already serves (it keeps serving,
//               READY, while its successor loads);
//   Loaded      READY with the new load (the one it replaces is returned,
//               to be stopped outside the core's lock);
//   LoadFailed  UNAVAILABLE with why, or READY when an earlier load keeps
//               serving (its reason says the reload failed);
//   Unload      UNLOADING, the load returned to be stopped.
//
// Standing() is what clients are told: READY is read together with the
// batcher's word on its GPUs (a version whose every GPU is lost reads
// UNAVAILABLE, issue 30), which the slot does not store.
//
// Not thread-safe: the core reads and writes slots under its mu_.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "serve/model_server.h"

namespace ortgpu::serve {

struct LoadedModel;

class VersionSlot {
 public:
  ModelState state() const { return state_; }
  const std::string& reason() const { return reason_; }
  // Set while READY (also while a reload of it is LOADING or has failed).
  const std::shared_ptr<LoadedModel>& model() const { return model_; }
  // The last load attempt's failure, "" after a success. Non-empty with
  // model() set: a reload failed and the previous load keeps serving; the
  // reload is retried on every rescan.
  const std::string& failed_load() const { return failed_load_; }

  // READY from an unchanged folder with nothing to retry: reloaded only on
  // force or a config edit. `fingerprint_now` is the folder's
  // ModelSource::fingerprints entry now (nullopt: not known, unchanged).
  bool Settled(const std::optional<std::string>& fingerprint_now) const;

  // The transitions (see the header comment).
  void BeginLoad();
  // `fingerprint`: the folder's, kept to notice a file replaced in place
  // (nullopt: keep the one before). `warning`: READY's reason (a warm-up
  // that did not run says so in the index too).
  std::shared_ptr<LoadedModel> Loaded(std::shared_ptr<LoadedModel> model, std::optional<std::string> fingerprint,
                                      std::string warning);
  // Returns whether the failure repeats the last attempt's (logged already).
  bool LoadFailed(const std::string& why);
  std::shared_ptr<LoadedModel> Unload();

  // The state and reason a client is told.
  std::pair<ModelState, std::string> Standing() const;
  bool ServesNow() const { return model_ != nullptr && Standing().first == ModelState::kReady; }

 private:
  ModelState state_ = ModelState::kLoading;
  std::string reason_;
  std::shared_ptr<LoadedModel> model_;
  std::string failed_load_;
  std::string fingerprint_;
};

}  // namespace ortgpu::serve
