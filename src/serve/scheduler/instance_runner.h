// InstanceRunner: one instance of a model, the thing a scheduler worker
// thread executes batches on. SessionRunner is the real one: ort's
// BatchRunner (its ORT session(s) on its device, the config's reshapes),
// which bench measures too; tests substitute fakes that block or fail on
// cue.
//
// A runner is owned by exactly one worker thread and is never called
// concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ort/batch_runner.h"
#include "ort/session.h"
#include "serve/scheduler/batch_policy.h"
#include "status/expected.h"
#include "sys/clock.h"

namespace ortgpu::serve {

class InstanceRunner {
 public:
  virtual ~InstanceRunner() = default;
  // Called once, on the worker thread that will run this runner, before its
  // first batch. Runners with per-thread state warm up here: ORT's CUDA EP
  // keeps a captured CUDA graph in per-thread context, so a graph captured
  // on the loader's thread would be captured again, under traffic, on the
  // worker's. An error keeps the model from becoming READY.
  virtual Status PrepareOnWorker() { return Status::Ok(); }
  // The turn this runner's batches take on their GPU (GpuTurn), or null
  // when they take none. The batcher holds back a batch that could still
  // grow while the turn is busy.
  virtual GpuTurn* gpu_turn() const { return nullptr; }
  // The GPU (CUDA ordinal) this runner's batches run on; -1 on the CPU or
  // when not known. The batcher balances batches across GPUs by it, and
  // files each execution under it.
  virtual int device() const { return -1; }
  // What each batch size costs on this runner (measured at warm-up,
  // MeasureBatchCosts), or null when not measured: the batcher then pads
  // every batch (ExecutedBatchSize). Set before the runner's first batch,
  // on the thread that runs it, and not changed after.
  virtual const BatchCosts* batch_costs() const { return nullptr; }
  // Whether a batch may run on a thread other than the worker's (the
  // batcher's caller, while the worker lends it: DynamicBatcher's inline
  // runs). False by default: a runner with per-thread state (a GPU bound
  // to the worker's thread, CUDA graphs captured there) runs on its worker
  // only.
  virtual bool RunsInline() const { return false; }
  // Runs one (possibly batched) request; returns every output, named.
  virtual Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) = 0;
  // Runs the inputs of `requests` joined along dimension 0, followed by
  // `padding_rows` rows of zeros, as one batch; returns every output with
  // all the batch's rows (padding included: the caller cuts it off).
  // Sets `inputs_ready_ns` (on `clock`) once the batch's inputs are joined
  // and the run itself starts, so the scheduler can tell joining from
  // running (compute_input and compute_infer). The default runs a single
  // request unpadded on its own tensors, and otherwise joins the requests
  // with ConcatBatch; either way it calls Run. `outputs` names the outputs
  // some request of the batch asked for (empty: all); a runner may return
  // only those, and the default returns all. `destinations` (empty, or
  // one per request, each possibly empty): a runner may write an output
  // that every request has a destination for straight into them, device to
  // device, and return it as a placeholder (Tensor::device set, no bytes);
  // the default ignores them.
  // REQUIRES: requests non-empty, all of one BatchKey, every input rank >= 1.
  virtual Expected<std::vector<Tensor>> RunBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                                 int64_t padding_rows, const Clock& clock, int64_t& inputs_ready_ns,
                                                 const std::vector<std::string>& outputs = {},
                                                 const std::vector<const OutputDestinations*>& destinations = {});
};

// The real runner: ort's BatchRunner (the ORT execution bench measures too)
// as a scheduler worker's instance, with what only serve has: the worker's
// warm-up and the batch costs the loader measured.
class SessionRunner : public InstanceRunner {
 public:
  SessionRunner(std::unique_ptr<Session> session, ReshapeRules rules) : batch_(std::move(session), std::move(rules)) {}
  SessionRunner(InstanceSessions sessions, ReshapeRules rules) : batch_(std::move(sessions), std::move(rules)) {}
  SessionRunner(std::shared_ptr<const InstanceSessions> sessions, ReshapeRules rules)
      : batch_(std::move(sessions), std::move(rules)) {}

  // The execution: its sessions, staging, GPU turn, device memory, arena.
  BatchRunner& batch_runner() { return batch_; }
  const BatchRunner& batch_runner() const { return batch_; }

  // What PrepareOnWorker runs (the loader's warm-up of the CUDA-graph batch
  // sizes); none by default.
  void SetWorkerWarmup(std::function<Status(InstanceRunner&)> warmup) { worker_warmup_ = std::move(warmup); }
  // Binds the worker thread to the runner's GPU (BatchRunner::BindDevice),
  // then runs the worker warm-up.
  Status PrepareOnWorker() override;
  int device() const override { return batch_.device(); }
  // CPU instances run inline (BatchRunner::RunsOnAnyThread); GPU instances
  // on their worker (an inline GPU run measured no faster, docs/BENCHMARKS.md).
  bool RunsInline() const override { return batch_.RunsOnAnyThread(); }
  GpuTurn* gpu_turn() const override { return batch_.gpu_turn(); }
  // The cost table the loader measured for this runner (batch_costs()).
  // REQUIRES: called before the runner's first batch, on the thread that
  // will run it (or before that thread starts).
  void SetBatchCosts(BatchCosts costs) { costs_ = std::move(costs); }
  const BatchCosts* batch_costs() const override { return costs_.empty() ? nullptr : &costs_; }

  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override { return batch_.Run(inputs); }
  Expected<std::vector<Tensor>> RunBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                         int64_t padding_rows, const Clock& clock, int64_t& inputs_ready_ns,
                                         const std::vector<std::string>& outputs = {},
                                         const std::vector<const OutputDestinations*>& destinations = {}) override {
    return batch_.RunBatch(requests, padding_rows, clock, inputs_ready_ns, outputs, destinations);
  }

 private:
  BatchRunner batch_;
  std::function<Status(InstanceRunner&)> worker_warmup_;
  BatchCosts costs_;  // empty: not measured
};

}  // namespace ortgpu::serve
