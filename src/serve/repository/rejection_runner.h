// RejectionExplainingRunner: an InstanceRunner around another that turns
// ONNX Runtime's run-time rejection of a request (a kernel that cannot take
// the shapes or values it was given although they fit the declared dims,
// e.g. an OCR detector at 100x150 whose graph needs multiples of 32) into
// the 400 a client can act on: it names each input with the shape it had
// and the shape the model declares. Other failures pass unchanged.
//
// The loader puts one around every instance's runner, so warm-up and
// requests alike are explained. Owned and called like the runner it wraps
// (one worker thread); the cost is one virtual call per batch.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/model_server.h"
#include "serve/scheduler/instance_runner.h"

namespace ortgpu::serve {

class RejectionExplainingRunner : public InstanceRunner {
 public:
  // `declared`: the model's inputs as clients see them (LoadedModel::inputs).
  RejectionExplainingRunner(std::unique_ptr<InstanceRunner> inner, std::vector<TensorMetadata> declared);

  Status PrepareOnWorker() override { return inner_->PrepareOnWorker(); }
  GpuTurn* gpu_turn() const override { return inner_->gpu_turn(); }
  int device() const override { return inner_->device(); }
  const BatchCosts* batch_costs() const override { return inner_->batch_costs(); }
  bool RunsInline() const override { return inner_->RunsInline(); }
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;
  Expected<std::vector<Tensor>> RunBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                         int64_t padding_rows, const Clock& clock, int64_t& inputs_ready_ns,
                                         const std::vector<std::string>& outputs = {},
                                         const std::vector<const OutputDestinations*>& destinations = {}) override;

 private:
  std::unique_ptr<InstanceRunner> inner_;
  std::vector<TensorMetadata> declared_;
};

// `failure` with the inputs named when it is a run-time rejection (its
// reason is Reason::kInputsRejectedWhileRunning, set by ort/ort_status.cc;
// the message's words decide nothing): "inputs 'x' 1x1x100x150 (the model
// declares ?x1x?x?) fit the declared shapes but the model's graph cannot run
// them: ...". The result keeps the code and the reason. `rows` is the
// batch's row count (0 when the inputs are the request's own).
//
// The advice ExplainRejection ends the message with.
inline constexpr std::string_view kRejectionAdvice =
    ". Send shapes (and values) the model was built for, e.g. sizes its strides divide, or the shape it was "
    "exported with";

Status ExplainRejection(const Status& failure, const std::vector<Tensor>& inputs,
                        const std::vector<TensorMetadata>& declared, int64_t rows);

}  // namespace ortgpu::serve
