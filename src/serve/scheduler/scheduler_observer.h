// SchedulerObserver: how the scheduler reports what happens to requests, so
// a metrics exporter (serve/metrics/, wired by the server) can count them
// without the scheduler knowing Prometheus. Per-model statistics for the
// statistics endpoint are kept by ModelStats, not here.
//
// Implementations must be thread-safe: every method is called from request
// threads (OnQueued, OnRejected) and from worker threads (the rest). OnQueued
// runs under the batcher's queue lock, before any worker can take the
// request, so a request's OnQueued always precedes its OnSuccess/OnFailure;
// the others run with no scheduler lock held. Methods must not block and must
// not call back into the scheduler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "serve/scheduler/model_stats.h"
#include "status/status.h"

namespace ortgpu::serve {

// The precision a loaded version runs in and its accuracy against float32
// (model_precision.h's PrecisionOutcome, reduced to what metrics show).
struct PrecisionFigures {
  std::string precision;  // "fp32", "tf32", "fp16", "mixed"; "" when the config sets none
  bool checked = false;   // the figures below were measured
  double min_cosine = 1;
  double max_rel_error = 0;
  double top1 = 1;        // 1 when no output is a classifier
  bool within_budget = true;
};

// What a loaded version holds in GPU memory, summed over its GPUs
// (model_memory.h's split, reduced to what metrics show); the parts are
// nullopt where not measured.
struct MemoryFigures {
  uint64_t weights = 0;
  uint64_t arena_in_use = 0;
  uint64_t arena_reserved = 0;
  std::optional<uint64_t> other;
  uint64_t total = 0;
};

// What an unload gave back on one GPU: the process's device memory (NVML)
// after it, and how much less that is than before it.
struct UnloadMemory {
  int gpu = 0;
  uint64_t after = 0;
  uint64_t released = 0;
};

class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // A request entered the queue, which now holds `queue_depth` requests.
  virtual void OnQueued(const std::string& model, const std::string& version, size_t queue_depth) {}
  // A request was refused at the door (queue full, model unloading).
  virtual void OnRejected(const std::string& model, const std::string& version, Code code) {}
  // One execution of `batch_size` rows took `times` (input copy, run, output
  // split) on GPU `device` (InstanceRunner::device(); -1 on the CPU).
  virtual void OnBatch(const std::string& model, const std::string& version, int64_t batch_size,
                       const ExecutionTimes& times, int device) {}
  // A request of `rows` rows completed; `request_ns` from enqueue to response,
  // `queue_ns` of it waiting; `compute` the times of the execution it was part of.
  virtual void OnSuccess(const std::string& model, const std::string& version, int64_t rows, int64_t request_ns,
                         int64_t queue_ns, const ExecutionTimes& compute) {}
  // A queued request failed: its run failed, its batch threw, or its
  // deadline passed in the queue (kDeadlineExceeded).
  virtual void OnFailure(const std::string& model, const std::string& version, Code code) {}
  // A version became READY, or a reload of it replaced the load that served
  // (called by the server core on its loading thread): what it runs in now.
  virtual void OnModelPrecision(const std::string& model, const std::string& version, const PrecisionFigures& figures) {}
  // A version became READY on a GPU, or a reload replaced the load that
  // served: what it holds in GPU memory (not called for CPU-only versions).
  virtual void OnModelMemory(const std::string& model, const std::string& version, const MemoryFigures& figures) {}
  // A version that held GPU memory left, and this is what its GPUs have
  // after (called after OnVersionUnloaded, once the sessions are gone).
  virtual void OnUnloadMemory(const std::string& model, const std::string& version, const UnloadMemory& memory) {}
  // A version that was READY stopped serving and left (unloaded, removed from
  // the repository or the version policy, the server shutting down): series
  // that describe a loaded version go with it. Called by the server core
  // after the version's batcher stopped, outside its lock.
  virtual void OnVersionUnloaded(const std::string& model, const std::string& version) {}
};

}  // namespace ortgpu::serve
