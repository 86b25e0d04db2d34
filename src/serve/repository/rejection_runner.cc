#include "serve/repository/rejection_runner.h"


namespace ortgpu::serve {

RejectionExplainingRunner::RejectionExplainingRunner(std::unique_ptr<InstanceRunner> inner,
                                                     std::vector<TensorMetadata> declared)
    : inner_(std::move(inner)), declared_(std::move(declared)) {}

Expected<std::vector<Tensor>> RejectionExplainingRunner::Run(const std::vector<Tensor>& inputs) {
  auto out = inner_->Run(inputs);
  if (out.ok()) return out;
  return ExplainRejection(out.status(), inputs, declared_, 0);
}

Expected<std::vector<Tensor>> RejectionExplainingRunner::RunBatch(
    const std::vector<const std::vector<Tensor>*>& requests, int64_t padding_rows, const Clock& clock,
    int64_t& inputs_ready_ns, const std::vector<std::string>& outputs,
    const std::vector<const OutputDestinations*>& destinations) {
  auto out = inner_->RunBatch(requests, padding_rows, clock, inputs_ready_ns, outputs, destinations);
  if (out.ok() || requests.empty()) return out;
  int64_t rows = padding_rows;
  for (const auto* r : requests) rows += r->empty() || r->front().shape.empty() ? 1 : r->front().shape[0];
  return ExplainRejection(out.status(), *requests.front(), declared_, requests.size() > 1 || padding_rows ? rows : 0);
}

Status ExplainRejection(const Status& failure, const std::vector<Tensor>& inputs,
                        const std::vector<TensorMetadata>& declared, int64_t rows) {
  if (failure.reason() != Reason::kInputsRejectedWhileRunning) return failure;
  std::string named;
  for (const Tensor& t : inputs) {
    std::string shape = ShapeToString(t.shape);
    for (const TensorMetadata& d : declared) {
      if (d.name == t.name) shape += " (the model declares " + ShapeToString(d.shape) + ")";
    }
    named += (named.empty() ? "" : ", ") + ("'" + t.name + "' " + shape);
  }
  const std::string batch =
      rows > 0 ? " in a batch of " + std::to_string(rows) + " rows" : "";
  return Status(Code::kInvalidArgument,
                (inputs.size() == 1 ? "input " : "inputs ") + named + batch +
                    std::string(inputs.size() == 1 ? " fits" : " fit") +
                    " the declared shapes but the model's graph cannot run them: " + failure.message() +
                    std::string(kRejectionAdvice),
                Reason::kInputsRejectedWhileRunning);
}

}  // namespace ortgpu::serve
