// Weight sharing in the loader (config parameter share_weights): the
// parameter, the factory seam that makes a model's SharedInitializers for
// one device, and DeviceWeights, the loader's record of one device's copy
// and of what ORT did with it. Used by one loading thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "ort/session.h"
#include "ort/shared_initializers.h"
#include "status/expected.h"

namespace ortgpu::serve {

// Reads a model's weights into one device's memory, to be shared by the
// model's sessions there; the real one is SharedInitializers::Load.
using WeightsFactory = std::function<Expected<std::shared_ptr<SharedInitializers>>(const std::string& model_path,
                                                                                  const WeightsDevice& device)>;
WeightsFactory RealWeightsFactory();

// config.pbtxt's `parameters { key: "share_weights" ... }`: whether the
// sessions of a model on one device share one copy of its weights. kAuto
// (the default) shares where it can and loads per-session weights, with a
// warning, where the shared copy cannot be made; on a GPU it makes the copy
// at the device's second session (the first keeps its own), so a model with
// one session per GPU pays nothing for it. kOn shares from the first session
// on every device and makes a copy that cannot be made a load error; kOff
// gives every session its own.
enum class ShareWeights { kAuto, kOn, kOff };
// "auto" (or empty), "on"/"true"/"1", "off"/"false"/"0".
Expected<ShareWeights> ParseShareWeights(std::string_view text);

// The shared weights of one model on one device, and what ORT did with
// them in the sessions made there.
struct DeviceWeights {
  WeightsDevice device;
  std::shared_ptr<SharedInitializers> store;  // null: not shared on this device
  std::string not_shared;                     // why not, when store is null
  Code failure = Code::kOk;                   // of the last attempt to make the store
  bool retried = false;                       // made a second attempt (after the first session)
  bool deferred = false;                      // auto on a GPU: first made at the device's second session
  int sessions_without = 0;                   // sessions made before there was a store
  int sessions = 0;                           // sessions made with the store
  size_t offered = 0;       // initializers offered to the first session
  int64_t used_bytes = 0;   // bytes of the shared values the sessions use, summed over sessions
  bool use_known = true;    // every session's log said what it used
  std::set<std::string> copied;  // planned by ORT in other memory
  std::string copied_reason;     // ORT's words for one of them

  // Called after each session made with the store. The first one shows
  // which values the optimised graph still has on this device; the rest
  // are dropped from the store (their memory freed), since the model's
  // other sessions, optimised alike, would not use them either.
  void Record(const Session& session);
  // The READY line's "weights: ..." part; "" when there is nothing to say
  // (one session, or a model without weights).
  std::string Describe() const;
};

}  // namespace ortgpu::serve
