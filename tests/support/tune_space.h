// The small candidate space and ResNet-like model the tune tests search with
// the fake measurer (tests/tune/search_test.cc, report_test.cc), and the
// in-process latency they script: one definition, so the search's tests and
// the report's describe the same search. Header-only.
#pragma once

#include <cstdint>

#include "tune/candidates.h"

namespace ortgpu::testing {

// tf32 only, NHWC on/off, graphs on/off, batches 1, 8, 32 (the latency
// curve's too); one or two instances; padding on/off; no queue delay;
// serve's workers.
inline tune::SpaceOptions SmallSpace() {
  tune::SpaceOptions s;
  s.precisions = {tune::Precision::kTf32};
  s.conv_searches = {tune::ConvAlgoSearch::kExhaustive};
  s.fuse_conv_bias = {false};
  s.batches = {1, 8, 32};
  s.curve_batches = {1, 8, 32};
  s.instances = {1, 2};
  s.queue_delays_us = {0};
  s.workers = {2};
  return s;
}

// A model that batches up to `max_batch` (no memory figures).
inline tune::ModelTraits Resnet(int64_t max_batch = 32) {
  tune::ModelTraits t;
  t.max_batch_size = max_batch;
  return t;
}

// In-process: graphs and NHWC each make a batch faster.
inline double LatencyMs(const tune::EngineChoice& e, int64_t batch) {
  return (1.0 + 0.25 * static_cast<double>(batch)) / (e.cuda_graphs ? 1.3 : 1.0) / (e.prefer_nhwc ? 1.1 : 1.0);
}

}  // namespace ortgpu::testing
