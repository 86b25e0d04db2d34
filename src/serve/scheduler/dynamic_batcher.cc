#include "serve/scheduler/dynamic_batcher.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <iterator>
#include <new>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "ort/batching.h"
#include "serve/scheduler/gpu_failure.h"

namespace ortgpu::serve {
namespace {

// A pause in a spin loop: lets the sibling hyperthread run.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The outputs the request asked for (all when it named none), with the
// binary flag the protocol layer uses.
InferResponse BuildResponse(const InferRequest& req, std::vector<Tensor> outputs) {
  InferResponse resp;
  resp.model_name = req.model_name;
  resp.model_version = req.model_version;
  resp.id = req.id;
  if (req.outputs.empty()) {
    for (auto& t : outputs) {
      resp.outputs.push_back(std::move(t));
      resp.output_binary.push_back(req.binary_data_output);
    }
    return resp;
  }
  for (const auto& want : req.outputs) {
    for (auto& t : outputs) {
      if (t.name != want.name) continue;
      resp.outputs.push_back(t);
      resp.output_binary.push_back(want.binary_data);  // a named output says for itself
    }
  }
  return resp;
}

// The outputs any request of `batch` asked for; empty when one asked for
// all (or named none).
template <typename PendingT>
std::vector<std::string> WantedOutputs(const std::vector<PendingT>& batch) {
  std::vector<std::string> names;
  for (const auto& p : batch) {
    const auto& asked = p.item.request.outputs;
    if (asked.empty()) return {};
    for (const auto& o : asked) {
      if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
    }
  }
  return names;
}

}  // namespace

DynamicBatcher::DynamicBatcher(BatcherOptions options, std::vector<std::unique_ptr<InstanceRunner>> runners,
                               const Clock& clock, ModelStats& stats, SchedulerObserver* observer)
    : options_(std::move(options)),
      policy_(options_.batching.Normalized()),
      clock_(clock),
      stats_(stats),
      observer_(observer),
      runners_(std::move(runners)) {
  // A batch held back while its GPU was busy (PlanMode::kGpuBusy) is planned
  // again when the GPU is released. Taking mu_ orders the notification after
  // a worker's check of the turn, so the wake-up is never lost.
  for (auto& r : runners_) {
    if (GpuTurn* turn = r->gpu_turn()) {
      turn->SetReleaseListener([this] {
        { MutexLock lock(&mu_); }
        cv_.SignalAll();
      });
    }
  }
  for (auto& r : runners_) {
    devices_.push_back(r->device());
    balance_ = balance_ || devices_.back() != devices_.front();
  }
  free_.assign(runners_.size(), false);
  idle_.assign(runners_.size(), false);
  lent_.assign(runners_.size(), false);
  last_run_.assign(runners_.size(), RunCost{});
  for (auto& r : runners_) runs_inline_.push_back(r->RunsInline());
  for (size_t i = 0; i < runners_.size(); ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

DynamicBatcher::~DynamicBatcher() { Stop(); }

void DynamicBatcher::Stop() {
  MutexLock stop_lock(&stop_mu_);
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  {
    // A runner lent to a caller comes back before the runners can go.
    MutexLock lock(&mu_);
    while (lent_count_ > 0) cv_.Wait(&mu_);
  }
  for (auto& r : runners_) {
    if (GpuTurn* turn = r->gpu_turn()) turn->SetReleaseListener(nullptr);
  }
}

size_t DynamicBatcher::queue_size() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

size_t DynamicBatcher::QueueLimit() const {
  return options_.max_queue_size > 0 ? options_.max_queue_size : kDefaultMaxQueueSize;
}

std::optional<size_t> DynamicBatcher::InlineWorker(const Pending& p) const {
  if (options_.inline_max_run_ns <= 0 || !queue_.empty() || stopping_ || balance_ || !lost_gpus_.empty()) {
    return std::nullopt;
  }
  if (p.item.request.is_cancelled()) return std::nullopt;
  for (size_t w = 0; w < runners_.size(); ++w) {
    if (!runs_inline_[w] || !idle_[w] || lent_[w]) continue;
    // What this request should take: the last batch's time, scaled up when
    // it has more rows (a CPU run grows about linearly with them).
    const RunCost& last = last_run_[w];
    if (last.ns < 0) continue;
    const double estimate = static_cast<double>(last.ns) *
                            std::max(1.0, static_cast<double>(p.rows) / static_cast<double>(std::max<int64_t>(last.rows, 1)));
    if (estimate > static_cast<double>(options_.inline_max_run_ns)) continue;
    // Only what a worker would run at once, alone: not a request that
    // batching would hold for others to join.
    const GpuTurn* turn = runners_[w]->gpu_turn();
    const PlanMode mode = turn != nullptr && turn->busy() ? PlanMode::kGpuBusy : PlanMode::kServing;
    if (PlanBatch(policy_, {p.rows}, p.enqueue_ns, p.enqueue_ns, mode).requests != 1) return std::nullopt;
    return w;
  }
  return std::nullopt;
}

void DynamicBatcher::RunLent(size_t worker, Pending p) {
  std::vector<Pending> batch;
  batch.push_back(std::move(p));
  const RunCost took = ExecuteGuarded(*runners_[worker], batch);
  bool wake = false;
  {
    MutexLock lock(&mu_);
    lent_[worker] = false;
    --lent_count_;
    idle_[worker] = true;
    --executing_;
    if (took.ns >= 0) last_run_[worker] = took;
    ++inline_runs_;
    // The lending worker has work only if requests queued meanwhile; Stop
    // waits for the runner. Otherwise no one is woken: a worker woken for
    // nothing costs a thread wake-up per request.
    wake = !queue_.empty() || stopping_;
  }
  if (wake) cv_.SignalAll();
}

void DynamicBatcher::WakeForQueued() {
  if (lent_count_ > 0) {
    cv_.SignalAll();
  } else {
    cv_.Signal();
  }
}

int64_t DynamicBatcher::inline_runs() const {
  MutexLock lock(&mu_);
  return inline_runs_;
}

bool DynamicBatcher::idle() const {
  MutexLock lock(&mu_);
  return queue_.empty() && std::all_of(idle_.begin(), idle_.end(), [](bool b) { return b; });
}

Status DynamicBatcher::Enqueue(QueuedRequest& item) {
  Pending p;
  p.key = BatchKey(item.request.inputs);
  if (policy_.max_batch_size > 0 && !item.request.inputs.empty()) p.rows = item.request.inputs[0].shape[0];
  p.enqueue_ns = clock_.NowNanos();
  Status refused;
  std::optional<size_t> lent;
  {
    MutexLock lock(&mu_);
    if (stopping_) {
      refused = Unavailable("model '" + options_.model_name + "' version " + options_.model_version +
                            " is unloading; retry, or ask for another version");
    } else if (item.request.deadline_ns > 0 && p.enqueue_ns >= item.request.deadline_ns) {
      refused = DeadlineExceeded("request for model '" + options_.model_name + "' reached the scheduler " +
                                 std::to_string((p.enqueue_ns - item.request.deadline_ns) / 1'000'000) +
                                 " ms after its deadline and was not run; the server is overloaded: retry "
                                 "later or raise the request timeout");
    } else if (AllGpusLost()) {
      refused = NoGpuLeft();
    } else if (queue_.size() >= QueueLimit()) {
      refused = ResourceExhausted("the queue of model '" + options_.model_name + "' is full (" +
                                  std::to_string(queue_.size()) + " requests waiting, max_queue_size " +
                                  std::to_string(QueueLimit()) +
                                  (options_.max_queue_size > 0 ? "" : " (the default)") +
                                  "); retry later, add instances, or raise "
                                  "dynamic_batching.default_queue_policy.max_queue_size");
    } else if (std::optional<size_t> w = InlineWorker(p)) {
      // Run here, with worker *w's runner (see the header comment).
      lent = w;
      lent_[*w] = true;
      ++lent_count_;
      idle_[*w] = false;
      ++executing_;
      p.item = std::move(item);
      if (observer_) observer_->OnQueued(options_.model_name, options_.model_version, 0);
    } else {
      p.item = std::move(item);
      queue_.push_back(std::move(p));
      ++dispatch_changes_;
      enqueued_count_.fetch_add(1, std::memory_order_release);
      // Under mu_, before any worker can take the request: a worker's
      // OnSuccess/OnFailure for it cannot come first (the pending gauge
      // would otherwise drift).
      if (observer_) observer_->OnQueued(options_.model_name, options_.model_version, queue_.size());
      WakeForQueued();
    }
  }
  if (!refused.ok()) {
    if (observer_) observer_->OnRejected(options_.model_name, options_.model_version, refused.code());
    return refused;
  }
  if (lent) RunLent(*lent, std::move(p));
  return Status::Ok();
}

BatchPlan DynamicBatcher::Plan(std::vector<size_t>& joinable, const GpuTurn* turn) const {
  joinable.clear();
  std::vector<int64_t> rows;
  const Pending& front = queue_.front();
  int64_t sum = 0;
  for (size_t i = 0; i < queue_.size(); ++i) {
    const Pending& p = queue_[i];
    if (i > 0 && p.key != front.key) continue;
    joinable.push_back(i);
    rows.push_back(p.rows);
    sum += p.rows;
    // One request past max_batch_size is all PlanBatch needs to see.
    if (!policy_.dynamic_batching || policy_.max_batch_size <= 0 || sum > policy_.max_batch_size) break;
  }
  const PlanMode mode = stopping_                         ? PlanMode::kDraining
                        : turn != nullptr && turn->busy() ? PlanMode::kGpuBusy
                                                          : PlanMode::kServing;
  return PlanBatch(policy_, rows, front.enqueue_ns, clock_.NowNanos(), mode);
}

int64_t DynamicBatcher::EarliestDeadline() const {
  int64_t earliest = 0;
  for (const auto& p : queue_) {
    const int64_t d = p.item.request.deadline_ns;
    if (d > 0 && (earliest == 0 || d < earliest)) earliest = d;
  }
  return earliest;
}

std::vector<DynamicBatcher::Pending> DynamicBatcher::TakeExpired() {
  std::vector<Pending> expired;
  const int64_t now = clock_.NowNanos();
  for (auto it = queue_.begin(); it != queue_.end();) {
    const int64_t deadline = it->item.request.deadline_ns;
    if ((deadline > 0 && now >= deadline) || it->item.request.is_cancelled()) {
      expired.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return expired;
}

void DynamicBatcher::AnswerExpired(std::vector<Pending> expired) {
  const int64_t now = clock_.NowNanos();
  const int64_t now_ms = WallMillis();
  for (Pending& p : expired) {
    const int64_t waited_ms = (now - p.enqueue_ns) / 1'000'000;
    if (p.item.request.is_cancelled()) {
      Answer(p,
             Cancelled("request for model '" + options_.model_name + "' was cancelled after " +
                       std::to_string(waited_ms) + " ms in the queue (its client left, or the server drained) and was "
                       "not run"),
             now - p.enqueue_ns, now - p.enqueue_ns, {}, now_ms);
      continue;
    }
    Status st = DeadlineExceeded("request for model '" + options_.model_name + "' version " +
                                 options_.model_version + " waited " + std::to_string(waited_ms) +
                                 " ms in the queue and passed its deadline, so it was not run; the model is "
                                 "overloaded: retry later, add instances, or raise the request timeout");
    Answer(p, st, now - p.enqueue_ns, now - p.enqueue_ns, {}, now_ms);
  }
}

Status DynamicBatcher::WaitUntilPrepared() {
  MutexLock lock(&mu_);
  while (prepared_ != runners_.size()) prepared_cv_.Wait(&mu_);
  return prepare_error_;
}

int DynamicBatcher::BatchesRunningOn(int device) const {
  auto it = running_on_.find(device);
  return it == running_on_.end() ? 0 : it->second;
}

void DynamicBatcher::MarkGpuLost(int device, const std::string& reason) {
  if (!lost_gpus_.emplace(device, reason).second) return;
  size_t instances = 0;
  std::string left;
  for (size_t w = 0; w < devices_.size(); ++w) {
    if (devices_[w] == device) ++instances;
  }
  for (int d : std::set<int>(devices_.begin(), devices_.end())) {
    if (!lost_gpus_.count(d)) left += (left.empty() ? "" : ", ") + std::to_string(d);
  }
  spdlog::error("model '{}' version {}: GPU {} is lost to this process ({}); its {} instance(s) stop taking "
                "batches{}",
                options_.model_name, options_.model_version, device, reason, instances,
                left.empty() ? "; no GPU is left: requests get UNAVAILABLE until the model is reloaded or the "
                               "server restarted"
                             : "; the model serves on GPU(s) " + left);
  if (AllGpusLost()) no_gpu_left_.store(true, std::memory_order_release);
  ++dispatch_changes_;
  cv_.SignalAll();
}

bool DynamicBatcher::AllGpusLost() const {
  if (lost_gpus_.empty()) return false;
  for (int d : devices_) {
    if (!lost_gpus_.count(d)) return false;
  }
  return true;
}

Status DynamicBatcher::NoGpuLeft() const {
  std::string why;
  for (const auto& [gpu, reason] : lost_gpus_) {
    why += (why.empty() ? "" : "; ") + ("GPU " + std::to_string(gpu) + ": " + reason);
  }
  return Unavailable("model '" + options_.model_name + "' version " + options_.model_version +
                     " has no GPU left to run on (" + why + "); reload the model or restart the server");
}

std::map<int, std::string> DynamicBatcher::LostGpus() const {
  MutexLock lock(&mu_);
  return lost_gpus_;
}

Status DynamicBatcher::CanServe() const {
  // Every request's route asks this: a flag read while a GPU is left, the
  // lock only to name the lost GPUs once none is.
  if (!no_gpu_left_.load(std::memory_order_acquire)) return Status::Ok();
  MutexLock lock(&mu_);
  return NoGpuLeft();
}

bool DynamicBatcher::LeavesBatchToLessLoadedGpu(size_t worker) const {
  if (!balance_ || stopping_) return false;
  const int mine = BatchesRunningOn(devices_[worker]);
  for (size_t other = 0; other < runners_.size(); ++other) {
    if (!free_[other] || devices_[other] == devices_[worker] || lost_gpus_.count(devices_[other]) ||
        BatchesRunningOn(devices_[other]) >= mine) {
      continue;
    }
    const GpuTurn* turn = runners_[other]->gpu_turn();
    if (turn == nullptr || !turn->busy()) return true;
  }
  return false;
}

void DynamicBatcher::WorkerLoop(size_t worker) {
  InstanceRunner* runner = runners_[worker].get();
  Status prepared = runner->PrepareOnWorker();
  {
    MutexLock guard(&mu_);
    if (!prepared.ok() && prepare_error_.ok()) prepare_error_ = prepared;
    ++prepared_;
    free_[worker] = true;
    idle_[worker] = true;
    ++dispatch_changes_;
  }
  prepared_cv_.SignalAll();
  MutexLock lock(&mu_);
  std::vector<size_t> joinable;
  while (true) {
    if (lent_[worker]) {
      // The runner runs a request on its caller's thread: nothing to take
      // until it is back (RunLent wakes the workers then if requests queued
      // meanwhile; otherwise the next request's wake-up finds it back).
      cv_.Wait(&mu_);
      continue;
    }
    if (lost_gpus_.count(devices_[worker])) {
      // This worker's GPU is lost: it leaves; the last one out answers what
      // is queued when no GPU is left.
      free_[worker] = false;
      ++dispatch_changes_;
      cv_.SignalAll();
      if (!AllGpusLost() || queue_.empty()) return;
      std::vector<Pending> orphans(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      const Status none = NoGpuLeft();
      lock.Unlock();
      const int64_t now = clock_.NowNanos();
      const int64_t now_ms = WallMillis();
      for (Pending& p : orphans) Answer(p, none, now - p.enqueue_ns, 0, {}, now_ms);
      lock.Lock();
      return;
    }
    if (queue_.empty() && !stopping_ && options_.busy_poll_ns > 0 &&
        !(runs_inline_[worker] && options_.inline_max_run_ns > 0)) {
      // Busy-poll for a request before sleeping (BatcherOptions::busy_poll_ns);
      // not on an instance that runs lone requests inline: its worker gets
      // requests only while they overlap, when a polling thread takes the CPU
      // the others need (docs/BENCHMARKS.md, default busy polling).
      const uint64_t seen = enqueued_count_.load(std::memory_order_acquire);
      lock.Unlock();
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(options_.busy_poll_ns);
      while (enqueued_count_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) {
        CpuRelax();
      }
      lock.Lock();
    }
    while (!stopping_ && queue_.empty() && !lost_gpus_.count(devices_[worker]) && !lent_[worker]) cv_.Wait(&mu_);
    if (lent_[worker] || lost_gpus_.count(devices_[worker])) continue;  // waits, or leaves, at the top
    if (queue_.empty()) return;  // stopping and drained
    if (auto expired = TakeExpired(); !expired.empty()) {
      lock.Unlock();
      AnswerExpired(std::move(expired));
      lock.Lock();
      continue;
    }
    // Planned afresh every time round: while this worker waited another may
    // have taken the front it woke for, and the new front is owed its own
    // full delay.
    const BatchPlan plan = Plan(joinable, runner->gpu_turn());
    if (plan.requests == 0) {
      // Woken by a new request, by Stop, by the GPU's release (kGpuBusy), or
      // when the delay (or the earliest request deadline, so that request is
      // answered on time) passes.
      int64_t wake = plan.wait_until_ns;
      const int64_t deadline = EarliestDeadline();
      if (deadline > 0) wake = std::min(wake, deadline);
      cv_.WaitUntil(&mu_, clock_, wake);
      continue;
    }
    if (LeavesBatchToLessLoadedGpu(worker)) {
      // The worker on the less-loaded GPU takes it (every free worker is
      // woken, so it is too); this one plans again after the next change.
      const uint64_t seen = dispatch_changes_;
      cv_.SignalAll();
      while (!stopping_ && dispatch_changes_ == seen) cv_.Wait(&mu_);
      continue;
    }
    // Take the planned requests, in queue order.
    std::vector<Pending> batch;
    batch.reserve(plan.requests);
    for (size_t k = plan.requests; k-- > 0;) {
      auto it = queue_.begin() + static_cast<std::ptrdiff_t>(joinable[k]);
      batch.push_back(std::move(*it));
      queue_.erase(it);
    }
    std::reverse(batch.begin(), batch.end());
    // Requests wait behind this batch: another worker may take them.
    if (!queue_.empty()) WakeForQueued();
    ++executing_;
    idle_[worker] = false;
    if (balance_) {
      free_[worker] = false;
      ++running_on_[devices_[worker]];
      ++dispatch_changes_;
    }
    lock.Unlock();
    const RunCost took = ExecuteGuarded(*runner, batch);
    lock.Lock();
    --executing_;
    idle_[worker] = true;
    if (took.ns >= 0) last_run_[worker] = took;
    if (balance_) {
      free_[worker] = true;
      --running_on_[devices_[worker]];
      ++dispatch_changes_;
      cv_.SignalAll();  // a worker that left a batch to this GPU's may now take one
    }
  }
}

void DynamicBatcher::Answer(Pending& p, Expected<InferResponse> result, int64_t request_ns, int64_t queue_ns,
                            const ExecutionTimes& t, int64_t now_ms) {
  // Cleared first: a request is answered at most once, whatever throws later.
  InferCallback done = std::exchange(p.item.done, nullptr);
  if (!done) return;
  if (result.ok()) {
    stats_.RecordSuccess(request_ns, queue_ns, t, now_ms);
    if (observer_) observer_->OnSuccess(options_.model_name, options_.model_version, p.rows, request_ns, queue_ns, t);
  } else {
    stats_.RecordFailure(request_ns, now_ms);
    if (observer_) observer_->OnFailure(options_.model_name, options_.model_version, result.status().code());
  }
  try {
    done(std::move(result));
  } catch (const std::exception& e) {  // the caller's callback threw: it has its answer, nothing more to tell it
    spdlog::error("model '{}': a response callback threw: {}", options_.model_name, e.what());
  } catch (...) {
    spdlog::error("model '{}': a response callback threw a non-standard exception", options_.model_name);
  }
}

DynamicBatcher::RunCost DynamicBatcher::ExecuteGuarded(InstanceRunner& runner, std::vector<Pending>& batch) {
  const char* phase = "preparing the batch";
  RunCost cost;
  Status failure;
  try {
    Execute(runner, batch, phase, cost);
    return cost;
  } catch (const std::bad_alloc& e) {
    failure = ResourceExhausted("model '" + options_.model_name + "' version " + options_.model_version +
                                " ran out of host memory while " + phase + " for a batch of " +
                                std::to_string(batch.size()) + " requests (" + e.what() +
                                "); send smaller requests, lower max_batch_size, or give the server more memory");
  } catch (const std::exception& e) {
    failure = Internal("model '" + options_.model_name + "' version " + options_.model_version +
                       " threw an exception while " + phase + " for a batch of " + std::to_string(batch.size()) +
                       " requests: " + e.what() + "; the server keeps serving: retry, and report this with the model");
  } catch (...) {
    failure = Internal("model '" + options_.model_name + "' version " + options_.model_version +
                       " threw a non-standard exception while " + phase + " for a batch of " +
                       std::to_string(batch.size()) +
                       " requests; the server keeps serving: retry, and report this with the model");
  }
  spdlog::error("{}", failure.message());
  const int64_t now = clock_.NowNanos();
  const int64_t now_ms = WallMillis();
  for (Pending& p : batch) Answer(p, failure, now - p.enqueue_ns, 0, {}, now_ms);
  return cost;
}

void DynamicBatcher::Execute(InstanceRunner& runner, std::vector<Pending>& batch, const char*& phase,
                             RunCost& cost) {
  const int64_t start = clock_.NowNanos();
  ExecutionTimes t;
  std::vector<int64_t> rows;
  int64_t total_rows = 0;
  for (const auto& p : batch) {
    rows.push_back(p.rows);
    total_rows += p.rows;
  }
  const int64_t executed_rows = ExecutedBatchSize(policy_, total_rows, runner.batch_costs());
  const int64_t padding_rows = executed_rows - total_rows;
  phase = "running the model";  // the runner joins the inputs as part of its run
  std::vector<const std::vector<Tensor>*> inputs;
  for (const auto& p : batch) inputs.push_back(&p.item.request.inputs);
  // The runner joins the inputs (into its reused staging buffers) and says
  // when they were ready, so compute_input stays the joining time.
  int64_t infer_start = 0;
  // Where requests want outputs in device memory (CUDA shared memory).
  std::vector<const OutputDestinations*> destinations;
  for (const auto& p : batch) {
    if (!p.item.request.device_outputs.empty()) destinations.push_back(&p.item.request.device_outputs);
  }
  if (!destinations.empty()) {
    destinations.clear();
    for (const auto& p : batch) destinations.push_back(&p.item.request.device_outputs);
  }
  auto out = runner.RunBatch(inputs, padding_rows, clock_, infer_start, WantedOutputs(batch), destinations);
  const int64_t infer_end = clock_.NowNanos();
  cost = RunCost{infer_end - start, executed_rows};
  if (!out.ok() && runner.device() >= 0 && IsStickyGpuError(out.status().message())) {
    // Before the batch is answered: a client that sees this error and
    // retries finds the GPU already taken out.
    MutexLock lock(&mu_);
    MarkGpuLost(runner.device(), out.status().message());
  }
  if (infer_start == 0) infer_start = infer_end;  // failed before the inputs were ready
  t.compute_input_ns = infer_start - start;
  t.compute_infer_ns = infer_end - infer_start;
  phase = "splitting the outputs";
  Expected<std::vector<std::vector<Tensor>>> per_request = [&]() -> Expected<std::vector<std::vector<Tensor>>> {
    if (!out.ok()) return out.status();
    if (batch.size() == 1 && padding_rows == 0) {
      return std::vector<std::vector<Tensor>>{std::move(out).value()};  // nothing to split
    }
    return SplitBatch(*out, rows, padding_rows);
  }();
  t.compute_output_ns = clock_.NowNanos() - infer_end;
  const int64_t end = clock_.NowNanos();
  const int64_t now_ms = WallMillis();
  if (per_request.ok()) {
    stats_.RecordExecution(executed_rows, total_rows, t);
    if (observer_) observer_->OnBatch(options_.model_name, options_.model_version, executed_rows, t, runner.device());
  }
  phase = "building the responses";
  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    const int64_t request_ns = end - p.enqueue_ns;
    Expected<InferResponse> result = per_request.ok()
                                         ? Expected<InferResponse>(
                                               BuildResponse(p.item.request, std::move((*per_request)[i])))
                                         : Expected<InferResponse>(per_request.status());
    Answer(p, std::move(result), request_ns, start - p.enqueue_ns, t, now_ms);
  }
}

}  // namespace ortgpu::serve
