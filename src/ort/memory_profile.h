// The arithmetic of the GPU memory plan (docs/MEMORY.md): what a model costs
// in device memory, split the way serve reports it (MemorySplit), the line
// through a session's measured sizes (FitMemory) and the peak it predicts
// for any batch size and instance count (MemoryProfile, PredictPeak).
//
// The model: a session's arena, which holds its own weights and the
// activations of the largest batch it ran, grows about linearly with the
// batch (a constant plus a per-row term); every instance repeats its
// sessions; a copy of the weights shared by the sessions of a device
// (share_weights) is counted once, as is "other" (the process's device
// memory NVML sees beyond the arenas and the shared weights: the CUDA
// context, cuDNN and cuBLAS handles and workspaces, CUDA graph pools). The
// line is drawn through the smallest and the largest measured size and
// checked against every other one. A measured size the line misses by more
// than kKnotError becomes a knot: the line then bends there (straight
// between knots, the end segments extended), and the sizes left are
// checked against that; the worst of them is reported with its error.
//
// Pure functions over value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "status/expected.h"

namespace ortgpu {

// "412.5 MiB": how every memory figure of the plan is printed.
std::string FormatMiB(double bytes);

// One measurement: a session's device memory after a warm run of `batch` rows.
struct MemoryPoint {
  int64_t batch = 0;
  double bytes = 0;
};

// How far a straight line may miss a measured size before it bends there
// (the memory plan's tolerance, issue 27: within 10%).
inline constexpr double kKnotError = 0.10;

// bytes(batch) = fixed_bytes + per_row_bytes * batch, or, with knots,
// straight between the knots.
struct MemoryFit {
  // The line through the smallest and the largest measured size.
  double fixed_bytes = 0;
  double per_row_bytes = 0;
  // The measured sizes the prediction passes through: the smallest and the
  // largest (one when only one size was measured: per_row_bytes is then 0),
  // and the knots between them.
  std::vector<int64_t> through;
  // Three or more points (ascending batch) when the line missed a measured
  // size by more than kKnotError: the prediction is straight between them,
  // the first and last segments extended; empty otherwise.
  std::vector<MemoryPoint> knots;
  // With knots: the size the straight line missed most, and by how much.
  std::optional<int64_t> line_miss_batch;
  double line_miss_error = 0;
  // The measured size the prediction misses most among those it does not
  // pass through, and by how much: (predicted - measured) / measured.
  std::optional<int64_t> check_batch;
  double check_error = 0;

  // Never below zero.
  double Predict(int64_t batch) const;
  // What `rows` more rows add to a session's arena: its activations (the
  // prediction above its value at no rows); never below zero.
  double RowBytes(int64_t rows) const;
  // "412.5 MiB + 23.5 MiB per row (through batch 1 and 64; batch 8 off by
  // +3.1%)", or with knots "straight between batch 1 (412.5 MiB), 8 (...)
  // and 64 (...) (one line through 1 and 64 missed batch 8 by +29.9%;
  // batch 32 off by +4.2%)".
  std::string Describe() const;
};

// The line through `points` (see the header comment), with knots where it
// misses a measured size by more than kKnotError. When the bytes fall as
// the batch grows (an arena that did not grow), the line (or a segment) is
// flat at its largest measurement. Several points at one batch keep the
// largest.
// InvalidArgument for no point or a batch below 1.
Expected<MemoryFit> FitMemory(std::vector<MemoryPoint> points);

// What one model version holds in device memory, summed over its sessions
// on its devices.
struct MemorySplit {
  // Its weights: the shared copy plus each session's own (the arena's bytes
  // in use right after the session was created, before any run).
  uint64_t weights = 0;
  // The arenas' bytes in use now and taken from the device, weights excluded.
  uint64_t arena_in_use = 0;
  uint64_t arena_reserved = 0;
  // The process's device memory growth over the load (NVML) less weights and
  // arenas; nullopt when NVML could not attribute memory to this process.
  std::optional<uint64_t> other;
  // weights + arena_reserved + other.
  uint64_t total() const { return weights + arena_reserved + other.value_or(0); }
  // "1.20 GiB: weights 97.5 MiB, arena 1.00 GiB reserved (12.0 MiB in use),
  // other 150.0 MiB" ("other not measured" without it).
  std::string Describe() const;
};

// What a load runs: per instance, the largest rows each of its sessions runs
// (one entry per session; with CUDA graphs each worker's sessions too), and
// how many runs a session may hold at once (the workers that share it: each
// concurrent run takes its own activations from the session's arena, which
// keeps them).
struct MemoryShape {
  std::vector<int64_t> session_rows;
  int instances = 1;
  int runs_per_session = 1;
};

// A model's memory as measured at one load, from which other loads of the
// same model file and settings are predicted.
struct MemoryProfile {
  // One session: its arena's reserved bytes (its own weights included) by
  // the largest batch it ran.
  MemoryFit session;
  uint64_t shared_weights = 0;  // the one copy the sessions of a device share; 0 when none
  uint64_t other = 0;           // once per load
  // What it was measured with: the shape, and the measured total.
  MemoryShape measured_shape;
  uint64_t measured_total = 0;
};

// What one instance's sessions need: the sum of session.Predict over
// `session_rows`, plus, for each further run a session may hold at once
// (`runs_per_session` - 1), another set of its activations
// (session.RowBytes of its rows: the session's own weights and constant
// part are not repeated). The worst case of a long-running server: sooner or later every
// session runs on all of its workers at once.
double PredictInstanceBytes(const MemoryProfile& profile, const std::vector<int64_t>& session_rows,
                            int runs_per_session = 1);

// The peak `shape` needs: shared_weights + other + instances x
// PredictInstanceBytes(session_rows, runs_per_session).
uint64_t PredictPeak(const MemoryProfile& profile, const MemoryShape& shape);

nlohmann::json MemoryProfileToJson(const MemoryProfile& profile);
// InvalidArgument naming the field when `j` is not a profile this version wrote.
Expected<MemoryProfile> MemoryProfileFromJson(const nlohmann::json& j);

}  // namespace ortgpu
