#include "serve/scheduler/dynamic_batcher.h"

#include <algorithm>
#include <chrono>

#include "serve/scheduler/batching.h"

namespace ortgpu::serve {
namespace {

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
      resp.output_binary.push_back(want.binary_data || req.binary_data_output);
    }
  }
  return resp;
}

}  // namespace

DynamicBatcher::DynamicBatcher(BatcherOptions options, std::vector<std::unique_ptr<InstanceRunner>> runners,
                               const Clock& clock, ModelStats& stats, SchedulerObserver* observer)
    : options_(std::move(options)), clock_(clock), stats_(stats), observer_(observer), runners_(std::move(runners)) {
  for (auto& r : runners_) workers_.emplace_back([this, runner = r.get()] { WorkerLoop(runner); });
}

DynamicBatcher::~DynamicBatcher() { Stop(); }

void DynamicBatcher::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
}

size_t DynamicBatcher::queue_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

Status DynamicBatcher::Enqueue(QueuedRequest& item) {
  Pending p;
  p.key = BatchKey(item.request.inputs);
  if (options_.max_batch_size > 0 && !item.request.inputs.empty()) p.rows = item.request.inputs[0].shape[0];
  p.enqueue_ns = clock_.NowNanos();
  p.enqueued = std::chrono::steady_clock::now();
  size_t depth = 0;
  Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      refused = Unavailable("model '" + options_.model_name + "' version " + options_.model_version +
                            " is unloading; retry, or ask for another version");
    } else if (options_.max_queue_size > 0 && queue_.size() >= options_.max_queue_size) {
      refused = ResourceExhausted("the queue of model '" + options_.model_name + "' is full (" +
                                  std::to_string(queue_.size()) + " requests waiting, max_queue_size " +
                                  std::to_string(options_.max_queue_size) +
                                  "); retry later, add instances, or raise "
                                  "dynamic_batching.default_queue_policy.max_queue_size");
    } else {
      p.item = std::move(item);
      queue_.push_back(std::move(p));
      depth = queue_.size();
    }
  }
  if (!refused.ok()) {
    if (observer_) observer_->OnRejected(options_.model_name, options_.model_version, refused.code());
    return refused;
  }
  cv_.notify_one();
  if (observer_) observer_->OnQueued(options_.model_name, options_.model_version, depth);
  return Status::Ok();
}

int64_t DynamicBatcher::BatchLimit() const {
  if (options_.max_batch_size <= 0) return 1;
  if (!options_.preferred_batch_sizes.empty()) {
    const int p = *std::max_element(options_.preferred_batch_sizes.begin(), options_.preferred_batch_sizes.end());
    return std::min<int64_t>(p, options_.max_batch_size);
  }
  return options_.max_batch_size;
}

int64_t DynamicBatcher::JoinableRows() const {
  if (queue_.empty()) return 0;
  int64_t rows = 0;
  for (const auto& p : queue_) {
    if (p.key == queue_.front().key) rows += p.rows;
  }
  return rows;
}

void DynamicBatcher::WorkerLoop(InstanceRunner* runner) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    const int64_t limit = BatchLimit();
    if (options_.max_batch_size > 0 && options_.max_queue_delay_ns > 0 && !stopping_) {
      const auto deadline = queue_.front().enqueued + std::chrono::nanoseconds(options_.max_queue_delay_ns);
      cv_.wait_until(lock, deadline, [&] { return stopping_ || queue_.empty() || JoinableRows() >= limit; });
      if (queue_.empty()) continue;
    }
    // Take the front request and, in order, those that can join it.
    std::vector<Pending> batch;
    int64_t rows = 0;
    const std::string key = queue_.front().key;
    for (auto it = queue_.begin(); it != queue_.end();) {
      const bool first = batch.empty();
      if (!first && (options_.max_batch_size <= 0 || it->key != key || rows + it->rows > limit)) {
        ++it;
        continue;
      }
      rows += it->rows;
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
      if (rows >= limit) break;
    }
    if (!queue_.empty()) cv_.notify_one();
    lock.unlock();
    Execute(*runner, std::move(batch));
    lock.lock();
  }
}

void DynamicBatcher::Execute(InstanceRunner& runner, std::vector<Pending> batch) {
  const int64_t start = clock_.NowNanos();
  ExecutionTimes t;
  std::vector<int64_t> rows;
  int64_t total_rows = 0;
  for (const auto& p : batch) {
    rows.push_back(p.rows);
    total_rows += p.rows;
  }
  Expected<std::vector<std::vector<Tensor>>> per_request = Status(Internal("not run"));
  if (batch.size() == 1) {
    const int64_t infer_start = clock_.NowNanos();
    t.compute_input_ns = infer_start - start;
    auto out = runner.Run(batch[0].item.request.inputs);
    t.compute_infer_ns = clock_.NowNanos() - infer_start;
    if (out.ok()) {
      per_request = std::vector<std::vector<Tensor>>{std::move(out).value()};
    } else {
      per_request = out.status();
    }
  } else {
    std::vector<const std::vector<Tensor>*> inputs;
    for (const auto& p : batch) inputs.push_back(&p.item.request.inputs);
    auto joined = ConcatBatch(inputs);
    const int64_t infer_start = clock_.NowNanos();
    t.compute_input_ns = infer_start - start;
    if (!joined.ok()) {
      per_request = joined.status();
    } else {
      auto out = runner.Run(*joined);
      const int64_t infer_end = clock_.NowNanos();
      t.compute_infer_ns = infer_end - infer_start;
      per_request = out.ok() ? SplitBatch(*out, rows) : Expected<std::vector<std::vector<Tensor>>>(out.status());
      t.compute_output_ns = clock_.NowNanos() - infer_end;
    }
  }
  const int64_t end = clock_.NowNanos();
  const int64_t now_ms = WallMillis();
  if (per_request.ok()) {
    stats_.RecordExecution(total_rows, t);
    if (observer_) observer_->OnBatch(options_.model_name, options_.model_version, total_rows, t);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    const int64_t request_ns = end - p.enqueue_ns;
    if (per_request.ok()) {
      stats_.RecordSuccess(request_ns, start - p.enqueue_ns, t, now_ms);
      if (observer_) {
        observer_->OnSuccess(options_.model_name, options_.model_version, p.rows, request_ns, start - p.enqueue_ns, t);
      }
      p.item.done(BuildResponse(p.item.request, std::move((*per_request)[i])));
    } else {
      stats_.RecordFailure(request_ns, now_ms);
      if (observer_) observer_->OnFailure(options_.model_name, options_.model_version, per_request.status().code());
      p.item.done(per_request.status());
    }
  }
}

}  // namespace ortgpu::serve
