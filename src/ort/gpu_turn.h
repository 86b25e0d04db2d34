// GpuTurn: one batch at a time on a GPU, in the order the runners asked.
//
// The runners (instances and their workers) of one model on one GPU share
// one. Each joins its batch and copies it to the device on its own thread,
// then waits for its turn for the run itself, so batch N+1 is assembled and
// copied while batch N runs, and two batches never share the GPU. Run
// together, two ResNet-50 batches of 32 on an H200 took 8.7 ms each instead
// of 4.1 ms and finished together, and the GPU stood idle while both were
// refilled (docs/BENCHMARKS.md); in turns the second starts the moment the
// first ends.
//
// Turns are granted first come, first served (a ticket lock), so no runner
// waits behind a faster one twice. Thread-safe; Take blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "status/expected.h"
#include "sys/mutex.h"

namespace ortgpu {

class GpuTurn {
 public:
  // Holds the turn until destroyed (movable, not copyable).
  class Held {
   public:
    Held(Held&& other) noexcept : turn_(other.turn_) { other.turn_ = nullptr; }
    Held& operator=(Held&&) = delete;
    Held(const Held&) = delete;
    ~Held() {
      if (turn_ != nullptr) turn_->Release();
    }

   private:
    friend class GpuTurn;
    explicit Held(GpuTurn* turn) : turn_(turn) {}
    GpuTurn* turn_;
  };

  // Waits until every earlier Take has been released, then holds the GPU.
  Held Take();
  // Turns taken and released so far, and Takes begun (granted or waiting):
  // what tests wait on instead of sleeping.
  uint64_t granted() const;
  uint64_t asked() const;
  // Whether some runner holds the turn now.
  bool busy() const;
  // Called (with no lock of the turn's held) after every release: the
  // dynamic batcher wakes its workers with it, as a batch it held back
  // while the GPU was busy may go now. One listener; empty clears it.
  void SetReleaseListener(std::function<void()> listener);

 private:
  void Release();
  mutable Mutex mu_;
  std::function<void()> listener_ GUARDED_BY(mu_);
  CondVar cv_;                          // serving_ moved on
  uint64_t next_ticket_ GUARDED_BY(mu_) = 0;
  uint64_t serving_ GUARDED_BY(mu_) = 0;
};

// config.pbtxt's `parameters { key: "gpu_turns" ... }`: whether the runners
// of a GPU model take turns.
enum class GpuTurnMode {
  kAuto,  // turns for CUDA-graph runs (their copies happen outside the turn), not otherwise
  kOn,    // every batch run takes a turn (ORT's own copies then happen inside it)
  kOff,   // batches run concurrently, as ORT schedules them
};
// "auto" (also empty), "on"/"1"/"true", "off"/"0"/"false"; InvalidArgument otherwise.
Expected<GpuTurnMode> ParseGpuTurnMode(std::string_view text);

}  // namespace ortgpu
