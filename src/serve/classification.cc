#include "serve/classification.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ortgpu::serve {

Expected<int64_t> ClassCount(const Parameters& p, const std::string& where) {
  auto it = p.find("classification");
  if (it == p.end()) return int64_t{0};
  auto v = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!v.is_number_integer() || v.get<int64_t>() < 1) {
    return InvalidArgument(fmt::format("{}: classification must be a positive integer (the number of classes to "
                                       "return), got {}",
                                       where, it->second));
  }
  return v.get<int64_t>();
}

Expected<Tensor> Classify(const Tensor& output, int64_t class_count, const std::vector<std::string>& labels,
                          bool batched) {
  if (output.dtype == DataType::kString || ElementSize(output.dtype) == 0) {
    return InvalidArgument(fmt::format("output '{}' is {}: only numeric outputs can be classified", output.name,
                                       KServeName(output.dtype)));
  }
  const int64_t total = output.element_count();
  const int64_t rows = batched && !output.shape.empty() ? output.shape[0] : 1;
  const int64_t per_row = rows > 0 ? total / rows : 0;
  const int64_t k = std::min(class_count, per_row);
  Tensor out;
  out.name = output.name;
  out.dtype = DataType::kString;
  out.shape = batched ? std::vector<int64_t>{rows, k} : std::vector<int64_t>{k};
  std::vector<int64_t> order(static_cast<size_t>(per_row));
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), 0);
    const int64_t base = r * per_row;
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return ElementAsDouble(output, base + a) > ElementAsDouble(output, base + b);
    });
    for (int64_t i = 0; i < k; ++i) {
      const int64_t index = order[static_cast<size_t>(i)];
      const double value = ElementAsDouble(output, base + index);
      // Floats in their own shortest form (0.7, not 0.699999988079071).
      const bool single = output.dtype == DataType::kFloat || output.dtype == DataType::kFloat16 ||
                          output.dtype == DataType::kBfloat16;
      std::string s = single ? fmt::format("{}:{}", static_cast<float>(value), index)
                             : fmt::format("{}:{}", value, index);
      if (index < static_cast<int64_t>(labels.size())) s += ":" + labels[static_cast<size_t>(index)];
      out.strings.push_back(std::move(s));
    }
  }
  return out;
}

bool WantsClassification(const std::vector<RequestedOutput>& requested) {
  return std::any_of(requested.begin(), requested.end(),
                     [](const RequestedOutput& r) { return r.parameters.count("classification") > 0; });
}

Status ApplyClassification(const ModelServer& server, const std::vector<RequestedOutput>& requested,
                           InferResponse& response) {
  std::optional<ModelMetadata> md;
  for (const RequestedOutput& r : requested) {
    const std::string where = fmt::format("output '{}'", r.name);
    ORTGPU_ASSIGN_OR_RETURN(int64_t count, ClassCount(r.parameters, where));
    if (count == 0) continue;
    if (!md) {
      ORTGPU_ASSIGN_OR_RETURN(md, server.Metadata(response.model_name, response.model_version));
    }
    bool batched = false;
    for (const auto& o : md->outputs) {
      if (o.name == r.name) batched = !o.shape.empty() && o.shape[0] == -1;
    }
    ORTGPU_ASSIGN_OR_RETURN(auto labels, server.OutputLabels(response.model_name, response.model_version, r.name));
    for (Tensor& t : response.outputs) {
      if (t.name != r.name) continue;
      ORTGPU_ASSIGN_OR_RETURN(t, Classify(t, count, labels, batched));
    }
  }
  return Status::Ok();
}

}  // namespace ortgpu::serve
