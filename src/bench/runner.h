// Runner: the measurement loop. Drives one or more BoundRunners (one per
// worker thread) through warm-up and a timed phase, and keeps every latency
// sample. It computes no statistics (statistics.h does, from the samples),
// so its own cost per run is two clock reads and a vector append, which is
// what lets bench's p50 match a bare Session::Run loop.
//
// Measure() blocks; it starts concurrency-1 extra threads and joins them
// before returning. The progress callback is called from the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ort/io_binding.h"
#include "status/expected.h"
#include "sys/clock.h"

namespace ortgpu::bench {

struct LoadOptions {
  int warmup = 10;           // untimed runs per worker before measuring
  int64_t iterations = 200;  // measured runs in total (all workers together)
  // When > 0 the timed phase lasts this long instead (iterations ignored).
  double duration_s = 0;
};

struct Measurement {
  // Latency of each measured run, ordered by completion time.
  std::vector<double> samples_ms;
  double wall_s = 0;        // from the start of the timed phase to its end
  double first_run_ms = 0;  // worker 0's first (warm-up) run: allocation, tuning, graph capture
  double cpu_s = 0;         // process CPU time used during the timed phase
};

// Called with the fraction of the timed phase done (0..1), at most ~10
// times a second.
using ProgressFn = std::function<void(double fraction)>;

// Runs `workers` concurrently, one thread each (worker 0 on the calling
// thread). REQUIRES: workers non-empty and distinct; iterations >= 1 or
// duration_s > 0. The first failing run stops all workers and is returned.
Expected<Measurement> Measure(const std::vector<BoundRunner*>& workers, const LoadOptions& load, const Clock& clock,
                              const ProgressFn& progress = nullptr);

}  // namespace ortgpu::bench
