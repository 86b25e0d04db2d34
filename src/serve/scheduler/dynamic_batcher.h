// DynamicBatcher: the request queue of one model version and its worker
// threads, one per model instance (InstanceRunner), as Triton's
// dynamic_batch_scheduler. There is no separate batcher thread: a worker that
// is free takes its next batch from the queue itself.
//
// With dynamic batching a free worker decides with PlanBatch
// (batch_policy.h, Triton's preferred batch size rule; while its GPU's turn
// is held by another batch, the batch keeps growing): it runs at once the
// largest prefix of the requests that can join the oldest one (same
// BatchKey) whose rows are a preferred batch size; otherwise it waits until
// the oldest request has waited max_queue_delay, and then runs what it can
// gather within max_batch_size. With pad_to_preferred_batch_size the joined
// inputs get zero rows up to the next preferred size, which are cut off the
// outputs before they are split back, when padding pays (ExecutedBatchSize,
// issue 25): the runner's measured cost table (InstanceRunner::batch_costs)
// says the padded size costs about the same. Otherwise the batch runs at its
// light size (a lone request as batch 1, three rows as 4).
// Only warmed sizes ever run. Without dynamic batching (or with
// max_batch_size 0) every request runs alone.
//
// Across GPUs (runners whose InstanceRunner::device() differ) a batch goes
// to the least-loaded GPU: a free worker whose GPU runs more batches than
// the GPU of another free worker leaves the batch to that worker (it wakes
// the others and waits for the next change), so work spreads over the GPUs
// before it doubles up on one. With one device this never happens and the
// first free worker takes the batch, as before.
//
// The queue delay is measured on the injected Clock and waited for with
// Clock::WaitUntil, so a test moves a FakeClock instead of sleeping.
//
// Statistics (ModelStats, the observer's OnBatch) file an execution under the
// rows it ran, padding included, as Triton's batch_stats do; inference_count
// counts the requests' own rows.
//
// A GPU lost while serving (a batch fails with a sticky CUDA error,
// gpu_failure.h: the device's context is corrupt for this process) is taken
// out: every worker on that GPU stops taking batches, the error is logged
// once naming the GPU, and the other GPUs' workers serve the queue. When
// every worker's GPU is lost, queued requests and new ones get Unavailable
// naming the GPUs and why.
//
// The queue is always bounded (BatcherOptions::max_queue_size). A request
// whose InferRequest::deadline_ns passes while it waits is answered
// DeadlineExceeded and never runs. An exception thrown while a batch executes
// (std::bad_alloc joining inputs, a runner that throws) fails that batch's
// unanswered requests (ResourceExhausted for bad_alloc, otherwise Internal);
// the worker keeps serving.
//
// A request that finds the queue empty and an idle instance whose runner
// can run on any thread (InstanceRunner::RunsInline: CPU instances) and
// whose last batch took at most BatcherOptions::inline_max_run_ns (scaled
// by the request's rows against that batch's), and that
// batching would run at once anyway (PlanBatch runs it alone now), is run
// on the calling thread with that instance's runner, which its worker lends
// for the run: no hand-over to the worker and back, each a thread wake-up
// of tens of microseconds on a virtual machine (issue 29, item 4). The
// worker takes no batch while its runner is lent; requests that arrive
// meanwhile queue for the other workers, or for it once the run is done.
//
// Threads: Enqueue from any thread; the queue is guarded by mu_ and owned by
// the batcher; runners are owned one each by the worker threads, and a
// runner lent to an Enqueue caller is used by that caller alone until it
// gives it back. Callbacks run on worker threads (or on the caller of
// Enqueue, for a request run there) with no lock held. The observer's OnQueued runs under
// mu_ (so it precedes the request's OnSuccess/OnFailure); its other methods
// run with no lock held. The destructor (or Stop) finishes every queued
// request, then joins the workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/inference.h"
#include "serve/scheduler/batch_policy.h"
#include "serve/scheduler/instance_runner.h"
#include "serve/scheduler/model_stats.h"
#include "serve/scheduler/scheduler_observer.h"
#include "sys/clock.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

// The queue bound when the model's config gives none (Triton's
// max_queue_size 0, or no dynamic_batching at all): an overloaded model
// refuses requests with ResourceExhausted rather than queueing without limit.
inline constexpr size_t kDefaultMaxQueueSize = 1024;

// BatcherOptions::inline_max_run_ns by default (serve --inline-max-us).
inline constexpr int64_t kDefaultInlineMaxRunNs = 200'000;

struct BatcherOptions {
  std::string model_name;
  std::string model_version;
  // max_batch_size (0: requests have no batch dimension), dynamic batching,
  // preferred sizes, queue delay, padding. Normalized by the batcher.
  BatchPolicy batching;
  // Requests waiting at most (not counting those executing); a request beyond
  // it gets ResourceExhausted. 0, what config.pbtxt gives when it sets no
  // dynamic_batching.default_queue_policy.max_queue_size, means
  // kDefaultMaxQueueSize: the queue is never unbounded.
  size_t max_queue_size = kDefaultMaxQueueSize;
  // How long a worker that finds the queue empty keeps checking it before it
  // sleeps on the condition variable (steady time, not the injected clock:
  // it only trades CPU for wake-up latency). A sleeping thread takes tens of
  // microseconds to wake on a virtual machine; a request that arrives within
  // the window starts at once. 0: sleep at once. Not for the workers of
  // an instance that runs lone requests inline (RunsInline, with
  // inline_max_run_ns > 0).
  int64_t busy_poll_ns = 0;
  // A lone request is run on the thread that queues it (see the header
  // comment) when the instance's last batch took at most this long (scaled
  // up by the request's rows against that batch's, on the batcher's clock);
  // 0: never. The bound keeps a front end's network thread from
  // being held by a model that takes long (a run that is slow to start is
  // never run there: the first batch of every instance goes to its worker).
  int64_t inline_max_run_ns = kDefaultInlineMaxRunNs;
};

struct QueuedRequest {
  InferRequest request;
  InferCallback done;
};

class DynamicBatcher {
 public:
  // Starts one worker per runner. REQUIRES: runners non-empty; `clock`,
  // `stats` and `observer` (nullable) outlive the batcher.
  DynamicBatcher(BatcherOptions options, std::vector<std::unique_ptr<InstanceRunner>> runners, const Clock& clock,
                 ModelStats& stats, SchedulerObserver* observer);
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Queues a validated request. On failure (queue full: ResourceExhausted;
  // stopping: Unavailable; request.deadline_ns already passed on the clock:
  // DeadlineExceeded) `item.done` is NOT called and the request is handed
  // back through `item`; the caller answers it.
  // REQUIRES: with max_batch_size > 0 every input has rank >= 1 and the same
  // first dimension, at most max_batch_size.
  Status Enqueue(QueuedRequest& item);

  // Refuses new requests, runs the queued ones, joins the workers. Idempotent.
  void Stop();

  // Blocks until every worker has run its runner's PrepareOnWorker, and
  // returns the first error (the loader then fails the load).
  Status WaitUntilPrepared();
  size_t queue_size() const;
  // The GPUs taken out while serving, each with the error that did it.
  std::map<int, std::string> LostGpus() const;
  // OK while a runner can take batches; Unavailable naming every lost GPU
  // and why once all the GPUs it ran on are lost (the server then reads the
  // version as UNAVAILABLE). Takes no lock while a GPU is left.
  Status CanServe() const;
  // Requests run on the thread that queued them so far (see above).
  int64_t inline_runs() const;
  // Every worker waits for work (prepared, no batch in hand, runner not
  // lent) and the queue is empty.
  bool idle() const;

 private:
  struct Pending {
    QueuedRequest item;
    std::string key;   // BatchKey of the inputs
    int64_t rows = 1;  // first dimension when batching
    int64_t enqueue_ns = 0;  // on clock_
  };

  void WorkerLoop(size_t worker);
  // The worker whose runner may run `p` on the calling thread now, or
  // nullopt (see the header comment). REQUIRES: mu_ held.
  std::optional<size_t> InlineWorker(const Pending& p) const REQUIRES(mu_);
  // Runs `p` with worker `worker`'s lent runner on the calling thread, then
  // gives the runner back. REQUIRES: mu_ not held; lent_[worker] set.
  void RunLent(size_t worker, Pending p) EXCLUDES(mu_);
  // Wakes a worker for a queued request: one, or all while a runner is lent
  // (a woken worker whose runner is lent would take nothing and let the
  // wake-up go to waste). REQUIRES: mu_ held.
  void WakeForQueued() REQUIRES(mu_);
  // Whether free worker `worker` should leave the batch it planned to a
  // free worker on a GPU that runs fewer batches now (whose turn, if any,
  // is free). REQUIRES: mu_ held.
  bool LeavesBatchToLessLoadedGpu(size_t worker) const REQUIRES(mu_);
  // How many batches run on GPU `device` now. REQUIRES: mu_ held.
  int BatchesRunningOn(int device) const REQUIRES(mu_);
  // Takes GPU `device` out (once; logged) and wakes every worker so those on
  // it leave. REQUIRES: mu_ held.
  void MarkGpuLost(int device, const std::string& reason) REQUIRES(mu_);
  // True when every worker's GPU is lost. REQUIRES: mu_ held.
  bool AllGpusLost() const REQUIRES(mu_);
  // Unavailable naming the lost GPUs and why. REQUIRES: mu_ held.
  Status NoGpuLeft() const REQUIRES(mu_);
  // The plan for the front request and those that can join it, with their
  // queue positions in `joinable`; kGpuBusy while `turn` (the planning
  // runner's, nullable) is held. REQUIRES: mu_ held, queue_ non-empty.
  BatchPlan Plan(std::vector<size_t>& joinable, const GpuTurn* turn) const REQUIRES(mu_);
  // The earliest deadline_ns of a queued request, 0 when none has one.
  // REQUIRES: mu_ held.
  int64_t EarliestDeadline() const REQUIRES(mu_);
  size_t QueueLimit() const;
  // Removes the queued requests whose deadline has passed. REQUIRES: mu_ held.
  std::vector<Pending> TakeExpired() REQUIRES(mu_);
  // Answers each of `expired` DeadlineExceeded. REQUIRES: mu_ not held.
  void AnswerExpired(std::vector<Pending> expired) EXCLUDES(mu_);
  // What a batch took, from its start to the end of its runner's RunBatch
  // (on clock_; answering not included), and the rows it executed; ns -1:
  // not known.
  struct RunCost {
    int64_t ns = -1;
    int64_t rows = 0;
  };
  // Runs `batch` and answers every request of it, exceptions included.
  // Returns its RunCost (ns -1 when RunBatch did not return).
  RunCost ExecuteGuarded(InstanceRunner& runner, std::vector<Pending>& batch);
  // Runs `batch`; answers each request (and clears its `done`) as it goes.
  // May throw; `phase` then says what it was doing. Sets `cost`.
  void Execute(InstanceRunner& runner, std::vector<Pending>& batch, const char*& phase, RunCost& cost);
  // Answers `p` with `result` (unless answered already) and records it; a
  // callback that throws is logged, not propagated.
  void Answer(Pending& p, Expected<InferResponse> result, int64_t request_ns, int64_t queue_ns,
              const ExecutionTimes& t, int64_t now_ms);

  // Bumped by every queued request, read by busy-polling workers without mu_.
  std::atomic<uint64_t> enqueued_count_{0};
  // Set (never cleared) by MarkGpuLost once every worker's GPU is lost;
  // read by CanServe without mu_, so routing takes no lock.
  std::atomic<bool> no_gpu_left_{false};
  const BatcherOptions options_;
  const BatchPolicy policy_;  // options_.batching, normalized
  const Clock& clock_;
  ModelStats& stats_;
  SchedulerObserver* observer_;
  std::vector<std::unique_ptr<InstanceRunner>> runners_;  // runners_[i] used by workers_[i] only
  std::vector<int> devices_;  // devices_[i] = runners_[i]->device(), read at construction
  bool balance_ = false;      // the runners span two devices or more
  std::vector<std::thread> workers_;

  mutable Mutex mu_;
  CondVar cv_;  // a request queued, Stop, or the GPU released
  size_t prepared_ GUARDED_BY(mu_) = 0;  // workers done with PrepareOnWorker
  Status prepare_error_ GUARDED_BY(mu_);  // the first failure
  CondVar prepared_cv_;                   // prepared_ grew
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  size_t executing_ GUARDED_BY(mu_) = 0;  // batches taken and not yet answered
  // With balance_: which workers wait for work (prepared, not executing),
  // the batches each device runs now, and a count bumped by every change
  // of either or of the queue, which a worker that left a batch waits on.
  std::vector<bool> free_ GUARDED_BY(mu_);
  std::map<int, int> running_on_ GUARDED_BY(mu_);
  uint64_t dispatch_changes_ GUARDED_BY(mu_) = 0;
  std::map<int, std::string> lost_gpus_ GUARDED_BY(mu_);  // GPU -> the sticky error
  // Per worker: waiting for work (prepared, no batch in hand, runner not
  // lent); its runner lent to an Enqueue caller; what its last batch cost
  // (ns -1 before its first). runs_inline_ is fixed at construction
  // (InstanceRunner::RunsInline).
  std::vector<bool> idle_ GUARDED_BY(mu_);
  std::vector<bool> lent_ GUARDED_BY(mu_);
  std::vector<RunCost> last_run_ GUARDED_BY(mu_);
  std::vector<bool> runs_inline_;
  size_t lent_count_ GUARDED_BY(mu_) = 0;
  int64_t inline_runs_ GUARDED_BY(mu_) = 0;
  Mutex stop_mu_;                         // serialises Stop
};

}  // namespace ortgpu::serve
