// A scripted model of what the H200 measured for ResNet-50 (2026-12-04,
// runs l1-l3), for the search's tests: tf32 NCHW takes 5.66 ms at batch 32;
// NHWC, fp16, cuDNN's conv+bias fusion and CUDA graphs each make it faster;
// the fusion fails on fp16 NCHW with cuDNN's own message; the algorithm
// search changes nothing; fp32 is 2.5 times slower. Served goodput follows
// the in-process stream of the batch: two batches in flight reach more of
// it than one, more overlap further, unpadded batching pays for its
// shape changes, 64 connections cannot fill batches above 64, without a
// queue delay the connections split over every worker (run n1), and a batch
// whose own latency takes more than a third of the budget cannot meet it
// under load.
#pragma once

#include <algorithm>
#include <cstdint>

#include "status/expected.h"
#include "tune/search.h"

namespace ortgpu::tune::testing {

inline double H200LatencyMs(const EngineChoice& e, int64_t batch) {
  double ms = 0.95 + 0.147 * static_cast<double>(batch);  // tf32 NCHW: 5.66 ms at 32
  switch (e.precision) {
    case Precision::kFp32:
      ms *= 2.5;
      break;
    case Precision::kFp16:
      ms *= 0.55;
      break;
    case Precision::kMixed:
      ms *= 0.6;
      break;
    case Precision::kTf32:
      break;
  }
  if (e.prefer_nhwc) ms *= 0.84;
  if (e.fuse_conv_bias) ms *= 0.72;
  if (e.cuda_graphs) ms *= 0.93;
  return ms;
}

inline Expected<Measurement> H200InProcess(const EngineChoice& e, int64_t batch) {
  if (e.fuse_conv_bias && e.precision == Precision::kFp16 && !e.prefer_nhwc) {
    return Internal("Failed to initialize CUDNN Frontend: CUDNN_FE failure 8: HEURISTIC_QUERY_FAILED");
  }
  const double ms = H200LatencyMs(e, batch);
  Measurement m;
  m.latency_ms = ms;
  m.items_per_s = static_cast<double>(batch) * 1000.0 / ms;
  m.rel_noise = 0.005;
  return m;
}

inline Expected<Measurement> H200Served(const ServedCandidate& c, double budget_ms) {
  const double ms = H200LatencyMs(c.engine, c.batch);
  Measurement m;
  m.concurrency = 32;
  m.latency_ms = std::min(budget_ms, 3 * ms);
  if (3 * ms > budget_ms) return m;  // the budget breaks under load: no goodput
  // Without a queue delay every idle worker takes what is queued, so 64
  // connections split over all the workers (run n1: 17-row batches on 2
  // instances x 2 workers); with one, batches fill.
  const int slots = c.instances * c.workers_per_instance;
  const double rows = c.max_queue_delay_us > 0 ? static_cast<double>(c.batch)
                                               : std::min(static_cast<double>(c.batch), 64.0 / slots);
  // Batches in flight overlap each other's time off the GPU: one alone
  // leaves it idle a third of the time. With CUDA graphs the batches take
  // GPU turns: two in flight hide each other's time off the GPU, and more
  // only wait for their turn (run q2, fp16 + fusion + graphs, [16]: 1 x 1
  // 6,727, 1 x 2 11,660, 2 x 1 11,558, 2 x 2 10,793 items/s).
  const int in_flight = c.max_queue_delay_us > 0 ? std::min(slots, static_cast<int>((63 + c.batch) / c.batch)) : slots;
  double share = in_flight == 1 ? 0.7 : (in_flight == 2 ? 0.85 : 0.95);
  if (c.engine.cuda_graphs) share = in_flight == 1 ? 0.55 : (in_flight == 2 ? 0.92 : 0.86);
  if (c.max_queue_delay_us > 0) share *= 0.98;
  // 64 connections of one row cannot fill a larger batch.
  if (c.batch > 64) share *= 64.0 / static_cast<double>(c.batch);
  double stream = static_cast<double>(c.batch) * 1000.0 / ms * rows / static_cast<double>(c.batch);  // padding wasted
  if (!c.pad_to_preferred) {
    const auto run = static_cast<int64_t>(std::max(1.0, rows));
    stream = static_cast<double>(run) * 1000.0 / H200LatencyMs(c.engine, run) * 0.5;  // shape changes
  }
  m.items_per_s = stream * share;
  return m;
}

}  // namespace ortgpu::tune::testing
