#include "ort/gpu_turn.h"

#include <string>

#include "sys/switch_word.h"

namespace ortgpu {

GpuTurn::Held GpuTurn::Take() {
  MutexLock lock(&mu_);
  const uint64_t ticket = next_ticket_++;
  while (serving_ != ticket) cv_.Wait(&mu_);
  return Held(this);
}

void GpuTurn::Release() {
  std::function<void()> listener;
  {
    MutexLock lock(&mu_);
    ++serving_;
    listener = listener_;
  }
  cv_.SignalAll();
  if (listener) listener();
}

bool GpuTurn::busy() const {
  MutexLock lock(&mu_);
  return next_ticket_ > serving_;
}

void GpuTurn::SetReleaseListener(std::function<void()> listener) {
  MutexLock lock(&mu_);
  listener_ = std::move(listener);
}

uint64_t GpuTurn::granted() const {
  MutexLock lock(&mu_);
  return serving_;
}

uint64_t GpuTurn::asked() const {
  MutexLock lock(&mu_);
  return next_ticket_;
}

Expected<GpuTurnMode> ParseGpuTurnMode(std::string_view text) {
  if (auto s = ParseSwitch<GpuTurnMode>(text)) return *s;
  return InvalidArgument("parameter gpu_turns is '" + std::string(text) +
                         "'; valid: auto (turns for CUDA-graph runs), on (every batch run on the GPU takes a turn), off "
                         "(batches share the GPU)");
}

}  // namespace ortgpu
