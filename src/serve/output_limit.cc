#include "serve/output_limit.h"

#include <algorithm>

#include <fmt/format.h>

namespace ortgpu::serve {
namespace {

Status TooLarge(const std::string& model, long double bytes, uint64_t limit, bool before) {
  return InvalidArgument(fmt::format(
      "the outputs of model '{}' {} {:.0f} bytes, above the server's limit of {} bytes (--max-output-bytes); "
      "send fewer rows or smaller inputs, or raise the limit",
      model, before ? "would hold" : "hold", static_cast<double>(bytes), limit));
}

}  // namespace

Status CheckOutputSizeBeforeRun(const inference::ModelConfig& config, const InferRequest& request, uint64_t limit) {
  if (limit == 0) return Status::Ok();
  long double rows = 1;
  if (config.max_batch_size() > 0) {
    if (request.inputs.empty() || request.inputs[0].shape.empty()) return Status::Ok();
    rows = static_cast<long double>(request.inputs[0].shape[0]);
  }
  long double total = 0;
  for (const auto& out : config.output()) {
    const bool wanted = request.outputs.empty() ||
                        std::any_of(request.outputs.begin(), request.outputs.end(),
                                    [&](const RequestedOutput& o) { return o.name == out.name(); });
    if (!wanted) continue;
    const DataType dtype = FromConfigType(out.data_type());
    const size_t element = ElementSize(dtype);
    if (dtype == DataType::kString || element == 0) return Status::Ok();  // known after the run only
    long double bytes = rows * static_cast<long double>(element);
    for (int64_t d : out.dims()) {
      if (d < 0) return Status::Ok();  // known after the run only
      bytes *= static_cast<long double>(d);
    }
    total += bytes;
  }
  if (total > static_cast<long double>(limit)) return TooLarge(config.name(), total, limit, true);
  return Status::Ok();
}

Status CheckOutputSizeAfterRun(const InferResponse& response, uint64_t limit) {
  if (limit == 0) return Status::Ok();
  long double total = 0;
  for (const Tensor& t : response.outputs) {
    if (t.dtype == DataType::kString) {
      for (const auto& s : t.strings) total += static_cast<long double>(s.size() + 4);  // 4-byte length prefix
    } else {
      total += static_cast<long double>(t.data.size());
    }
  }
  if (total > static_cast<long double>(limit)) return TooLarge(response.model_name, total, limit, false);
  return Status::Ok();
}

InferCallback WithOutputSizeLimit(InferCallback done, uint64_t limit) {
  if (limit == 0) return done;
  return [done = std::move(done), limit](Expected<InferResponse> result) {
    if (result.ok()) {
      if (Status st = CheckOutputSizeAfterRun(*result, limit); !st.ok()) return done(st);
    }
    done(std::move(result));
  };
}

}  // namespace ortgpu::serve
