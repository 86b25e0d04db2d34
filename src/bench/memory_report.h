// bench --memory: the device memory of each configuration, the line
// through a session's arena (ort/memory_profile.h's FitMemory: through the
// smallest and the largest batch, checked against the others) and the peak
// it predicts, next to the measured one (docs/MEMORY.md).
//
// Per variant, from the results RunBenchmark recorded (ConfigResult::arena,
// gpu_memory_mb): the fit over session 0's arena at the smallest
// concurrency; "other" is the measured memory less every arena at the
// largest of those batches (the CUDA context, cuDNN and cuBLAS, CUDA graph
// pools); a configuration is predicted as other + sessions x fit(batch),
// sessions being the sessions that ran it (the concurrency with
// --concurrency-mode per-worker, else 1: runs in flight on one session
// share its arena, which the line does not model, and a note says so). On
// the CPU provider device memory is not measured: the table is the host
// arena, labelled so, never zeros.
//
// Pure functions of the report; thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/result.h"

namespace ortgpu::bench {

// One table per variant that has arena figures (none without --memory).
std::vector<MemoryTable> BuildMemoryTables(const BenchReport& report);

// The tables as text: per variant a header saying what was measured, one
// line per configuration (batch, concurrency, sessions, measured, arenas,
// predicted, error), then the fit and the formula.
std::string RenderMemoryText(const std::vector<MemoryTable>& tables);

// {"variant", "source", "device", "fit": {...} | null, "weights_bytes",
// "other_bytes", "rows": [...], "notes", "profile"} per table.
nlohmann::json MemoryJson(const std::vector<MemoryTable>& tables);

}  // namespace ortgpu::bench
