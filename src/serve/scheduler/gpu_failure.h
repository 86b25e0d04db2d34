// Which failures of a batch mean its GPU is lost to this process (issue #30
// item 1: a GPU that fails while serving makes its instances unavailable
// while the others serve). CUDA's "sticky" errors corrupt the context: every
// later call on that device fails the same way until the process restarts,
// so the instances there must stop taking batches. Out of memory, a bad
// input or a kernel that is not implemented are not sticky: the next batch
// may run. Pure; thread-safe.
#pragma once

#include <string_view>

namespace ortgpu::serve {

// True when `message` (ORT's text of a failed run) names a sticky CUDA
// error: an illegal address or instruction, a misaligned address, a launch
// failure or timeout, a device-side assert, a hardware stack or ECC error,
// a GPU fallen off the bus, or CUDA's "unknown error" (999), by the
// runtime's enum name, the driver's, or its description.
bool IsStickyGpuError(std::string_view message);

}  // namespace ortgpu::serve
