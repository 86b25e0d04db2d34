// MeasureBatchCosts: the cost table behind padding only when it pays
// (ExecutedBatchSize, batch_policy.h). After an instance's warm-up the
// loader times a few runs of each batch size it may execute, on the
// instance's own path (RunBatch: joining the rows into its staging, the
// copies, the run or graph replay, the outputs), and keeps the medians.
//
// Runs on the thread that owns `runner` (the loader's, or the worker's in
// PrepareOnWorker when CUDA graphs are captured per thread).
#pragma once

#include <cstdint>
#include <vector>

#include "ort/tensor.h"
#include "serve/scheduler/batch_policy.h"
#include "serve/scheduler/instance_runner.h"
#include "status/expected.h"
#include "sys/clock.h"

namespace ortgpu::serve {

// Timed runs per size; the median is kept, so one slow run (another
// process on the machine, a page fault) does not move the table.
inline constexpr int kBatchCostRuns = 5;

// Runs a batch of `row` (one row of each input) repeated n times, `runs`
// times for each n of `sizes` (ascending), timing each run on `clock`.
// REQUIRES: `runner` was warmed at every size (the first run of a size
// would time its cold start), runs >= 1. An error of a run is returned
// naming the size.
Expected<BatchCosts> MeasureBatchCosts(InstanceRunner& runner, const std::vector<Tensor>& row,
                                       const std::vector<int64_t>& sizes, const Clock& clock,
                                       int runs = kBatchCostRuns);

}  // namespace ortgpu::serve
