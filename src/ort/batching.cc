#include "ort/batching.h"

#include <algorithm>
#include <cstring>

namespace ortgpu {

std::string BatchKey(const std::vector<Tensor>& inputs) {
  std::vector<const Tensor*> sorted;
  for (const auto& t : inputs) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const Tensor* a, const Tensor* b) { return a->name < b->name; });
  std::string key;
  for (const Tensor* t : sorted) {
    key += t->name + ":" + std::to_string(static_cast<int>(t->dtype)) + ":";
    for (size_t d = 1; d < t->shape.size(); ++d) key += std::to_string(t->shape[d]) + ",";
    key += ";";
  }
  return key;
}

Expected<std::vector<Tensor>> ConcatBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                          int64_t padding_rows) {
  if (requests.empty()) return InvalidArgument("an empty batch has nothing to concatenate");
  for (const auto* req : requests) {
    for (const Tensor& t : *req) ORTGPU_RETURN_IF_ERROR(RequireHostBytes(t, "joining a batch in host memory"));
  }
  std::vector<Tensor> out;
  for (const Tensor& first : *requests.front()) {
    Tensor joined;
    joined.name = first.name;
    joined.dtype = first.dtype;
    joined.shape = first.shape;
    joined.shape[0] = 0;
    // Sized once: the copy below moves each byte once, padding included.
    size_t bytes = 0;
    for (const auto* req : requests) {
      auto it = std::find_if(req->begin(), req->end(), [&](const Tensor& t) { return t.name == first.name; });
      if (it != req->end()) bytes += it->data.size();
    }
    const int64_t row_elements =
        ElementCount(std::vector<int64_t>(first.shape.begin() + (first.shape.empty() ? 0 : 1), first.shape.end()))
            .value_or(0);
    const size_t padding_bytes =
        first.dtype == DataType::kString ? 0 : static_cast<size_t>(padding_rows * row_elements) * ElementSize(first.dtype);
    joined.data.reserve(bytes + padding_bytes);
    for (const auto* req : requests) {
      auto it = std::find_if(req->begin(), req->end(), [&](const Tensor& t) { return t.name == first.name; });
      if (it == req->end() || it->shape.empty()) {
        return InvalidArgument("input '" + first.name + "' is missing from a request of the batch");
      }
      joined.shape[0] += it->shape[0];
      if (first.dtype == DataType::kString) {
        joined.strings.insert(joined.strings.end(), it->strings.begin(), it->strings.end());
      } else {
        joined.data.insert(joined.data.end(), it->data.begin(), it->data.end());
      }
    }
    if (padding_rows > 0) {
      joined.shape[0] += padding_rows;
      if (first.dtype == DataType::kString) {
        joined.strings.resize(joined.strings.size() + static_cast<size_t>(padding_rows * row_elements));
      } else {
        joined.data.resize(joined.data.size() + padding_bytes, 0);
      }
    }
    out.push_back(std::move(joined));
  }
  return out;
}

Expected<std::vector<std::vector<Tensor>>> SplitBatch(std::vector<Tensor>& outputs, const std::vector<int64_t>& rows,
                                                      int64_t padding_rows) {
  int64_t total = padding_rows;
  for (int64_t r : rows) total += r;
  std::vector<std::vector<Tensor>> out(rows.size());
  for (Tensor& t : outputs) {
    if (t.shape.empty() || t.shape[0] != total) {
      return InvalidArgument("output '" + t.name + "' has shape " + ShapeToString(t.shape) + " but the batch had " +
                             std::to_string(total) + " rows" +
                             (padding_rows > 0 ? " (" + std::to_string(padding_rows) + " of them padding)" : "") + "; the model does not batch along its first dimension, "
                             "so set max_batch_size: 0 in its config.pbtxt");
    }
    const int64_t per_row = total == 0 ? 0 : t.element_count() / total;
    // Every request's piece is a view of the batch's buffer (one buffer per
    // output and batch, freed when the last response using it is sent).
    if (t.dtype != DataType::kString && !t.on_device()) t.data.Share();
    const size_t elem = ElementSize(t.dtype);
    int64_t row = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      Tensor piece;
      piece.name = t.name;
      piece.dtype = t.dtype;
      piece.shape = t.shape;
      piece.shape[0] = rows[i];
      const int64_t begin = row * per_row, end = (row + rows[i]) * per_row;
      if (t.on_device()) {
        piece.device = t.device;  // written into each request's region already: no bytes to cut
      } else if (t.dtype == DataType::kString) {
        piece.strings.assign(t.strings.begin() + begin, t.strings.begin() + end);
      } else {
        piece.data = t.data.Slice(static_cast<size_t>(begin) * elem, static_cast<size_t>(end - begin) * elem);
      }
      row += rows[i];
      out[i].push_back(std::move(piece));
    }
  }
  return out;
}

}  // namespace ortgpu
