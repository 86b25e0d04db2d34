// The words a config parameter with an automatic default takes: auto (or
// nothing), on / true / 1, off / false / 0. Each such parameter
// (share_weights, gpu_turns, arena_shrinkage) has its own enum and writes
// its own error naming what each word does.
#pragma once

#include <optional>
#include <string_view>

namespace ortgpu {

// The word as `E` (an enum with kAuto, kOn and kOff); nullopt for any other word.
template <typename E>
std::optional<E> ParseSwitch(std::string_view text) {
  if (text.empty() || text == "auto") return E::kAuto;
  if (text == "on" || text == "true" || text == "1") return E::kOn;
  if (text == "off" || text == "false" || text == "0") return E::kOff;
  return std::nullopt;
}

}  // namespace ortgpu
