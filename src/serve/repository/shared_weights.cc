#include "serve/repository/shared_weights.h"

#include <algorithm>

#include <fmt/format.h>

#include "sys/switch_word.h"

namespace ortgpu::serve {
namespace {

// "97.5 MB", "12.3 kB", "64 bytes".
std::string Megabytes(int64_t bytes) {
  if (bytes >= 1'000'000) return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
  if (bytes >= 1'000) return fmt::format("{:.1f} kB", static_cast<double>(bytes) / 1e3);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

Expected<ShareWeights> ParseShareWeights(std::string_view text) {
  if (auto s = ParseSwitch<ShareWeights>(text)) return *s;
  return InvalidArgument("parameter share_weights is '" + std::string(text) +
                         "'; valid: auto (the default: one copy of the weights per device where it can be made), "
                         "on (a load error where it cannot), off (every session loads its own)");
}

WeightsFactory RealWeightsFactory() {
  return [](const std::string& path, const WeightsDevice& device) { return SharedInitializers::Load(path, device); };
}

void DeviceWeights::Record(const Session& session) {
  const SharedInitializerUse& use = session.shared_initializer_use();
  if (sessions++ == 0) {
    offered = store->count();
    if (use.known) store->Retain(std::set<std::string>(use.used.begin(), use.used.end()));
  }
  use_known = use_known && use.known;
  used_bytes += store->BytesOf(use.used);
  copied.insert(use.copied.begin(), use.copied.end());
  if (copied_reason.empty()) copied_reason = use.copied_reason;
}

std::string DeviceWeights::Describe() const {
  // Deferred and never attempted: the device had one session.
  if (store == nullptr && deferred && !retried) return "";
  if (store == nullptr) return "weights: not shared on " + device.Describe() + ": " + not_shared;
  // Nothing to say for one session, or a model without weights.
  if (sessions < 2 || offered == 0) return "";
  std::string out = fmt::format("weights: {} initializer{}, {}, one copy on {} shared by {} session{}", store->count(),
                                store->count() == 1 ? "" : "s", Megabytes(store->bytes()), device.Describe(), sessions,
                                sessions == 1 ? "" : "s");
  if (sessions_without > 0 && deferred) {
    out += fmt::format(" and {} with a copy of its own (the device's first: auto shares from the second)",
                       sessions_without);
  } else if (sessions_without > 0) {
    out += fmt::format(" and {} made before it existed with a copy of their own (the CUDA runtime loaded with them)",
                       sessions_without);
  }
  out += use_known ? " (saved " + Megabytes(std::max<int64_t>(0, used_bytes - store->bytes())) + ")"
                   : " (ORT's log did not say which it used)";
  const size_t dropped = offered > store->count() ? offered - store->count() : 0;
  if (dropped > copied.size()) {
    out += fmt::format("; {} more were replaced by ORT's graph optimisations (layout or fusion), each session has "
                       "its own of those", dropped - copied.size());
  }
  if (!copied.empty()) {
    out += fmt::format("; {} are placed by ORT in other memory (e.g. shape inputs on the CPU) and copied per "
                       "session (ORT: {})", copied.size(), copied_reason);
  }
  if (!store->skipped().empty()) {
    out += fmt::format("; {} left to each session ({}{})", store->skipped().size(), store->skipped().front(),
                       store->skipped().size() > 1 ? ", ..." : "");
  }
  return out;
}

}  // namespace ortgpu::serve
