#include "serve/http/raw_binary_request.h"

#include <fmt/format.h>

namespace ortgpu::serve {
namespace {

constexpr std::string_view kSendAHeader =
    "send a JSON header with the shape (Inference-Header-Content-Length: <its length>, the input's parameters "
    "{\"binary_data_size\": <body bytes>})";

}  // namespace

Expected<std::vector<int64_t>> RawInputShape(const TensorMetadata& input, bool batched, size_t body_bytes) {
  const std::optional<DataType> dtype = DataTypeFromKServe(input.datatype);
  if (!dtype) return Internal(fmt::format("input '{}' has datatype {}", input.name, input.datatype));
  // The input's own dims, after the batch dim.
  const std::vector<int64_t> dims(input.shape.begin() + (batched && !input.shape.empty() ? 1 : 0), input.shape.end());
  int variable = 0;
  int64_t known = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      ++variable;
    } else {
      known *= d;
    }
  }
  std::vector<int64_t> shape;
  if (batched) shape.push_back(1);
  shape.insert(shape.end(), dims.begin(), dims.end());
  if (*dtype == DataType::kString) {
    // The phrase Triton's QA tests look for, then what to do.
    if (variable > 0 || known != 1) {
      return InvalidArgument(fmt::format("For BYTE datatype raw input '{}', the model must have input shape [1]; "
                                         "its shape is [{}], and a raw binary body is one BYTES element: {}",
                                         input.name, ShapeToString(dims), kSendAHeader));
    }
    return shape;
  }
  if (variable > 1) {
    return InvalidArgument(fmt::format("The shape of the raw input '{}' can not be deduced because there are more than "
                                       "one variable-sized dimension ([{}]); {}",
                                       input.name, ShapeToString(dims), kSendAHeader));
  }
  const size_t element_size = ElementSize(*dtype);
  const int64_t elements = static_cast<int64_t>(body_bytes / element_size);
  // The one dim that takes what the body leaves: the variable dim, else the
  // batch dim (rows of the fixed shape); none when neither exists.
  int64_t* free_dim = nullptr;
  for (size_t i = batched ? 1 : 0; i < shape.size(); ++i) {
    if (shape[i] < 0) free_dim = &shape[i];
  }
  if (free_dim == nullptr && batched) free_dim = &shape[0];
  bool fits = body_bytes % element_size == 0;
  if (fits && free_dim == nullptr) {
    fits = elements == known;
  } else if (fits) {
    fits = known > 0 && elements % known == 0 && (free_dim != &shape[0] || elements > 0);
    if (fits) *free_dim = elements / known;
  }
  if (!fits) {
    return InvalidArgument(fmt::format("a raw binary body of {} bytes does not fit input '{}' ({} [{}]); {}",
                                       body_bytes, input.name, input.datatype, ShapeToString(input.shape),
                                       kSendAHeader));
  }
  return shape;
}

Expected<InferRequest> RawBinaryRequest(const ModelServer& server, const protocol::Route& route,
                                        const RequestBody& body) {
  ORTGPU_ASSIGN_OR_RETURN(ModelMetadata md, server.Metadata(route.model, route.version));
  if (md.inputs.size() != 1) {
    return InvalidArgument(fmt::format("a raw binary body (Inference-Header-Content-Length: 0) is taken as the "
                                       "model's one input, but '{}' has {} inputs; send a JSON header naming them",
                                       route.model, md.inputs.size()));
  }
  ORTGPU_ASSIGN_OR_RETURN(inference::ModelConfig config, server.ModelConfig(route.model, route.version));
  const TensorMetadata& in = md.inputs[0];
  Tensor t;
  t.name = in.name;
  ORTGPU_ASSIGN_OR_RETURN(t.shape, RawInputShape(in, config.max_batch_size() > 0, body.size()));
  t.dtype = *DataTypeFromKServe(in.datatype);  // RawInputShape checked it
  if (t.dtype == DataType::kString) {
    t.strings.emplace_back(body.view());
  } else {
    t.data.Borrow(body.owner(), reinterpret_cast<const uint8_t*>(body.view().data()), body.size());
  }
  InferRequest r;
  r.model_name = route.model;
  r.model_version = route.version;
  r.inputs.push_back(std::move(t));
  // No JSON could ask for JSON outputs: every output is binary (Triton's rule).
  r.binary_data_output = true;
  return r;
}

}  // namespace ortgpu::serve
