#include "precision/model_file.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "onnx.pb.h"

namespace ortgpu::precision {
namespace {

namespace fs = std::filesystem;

void ForEachTensor(::onnx::GraphProto& g, const std::function<void(::onnx::TensorProto&)>& f) {
  for (auto& t : *g.mutable_initializer()) f(t);
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) f(*a.mutable_t());
      if (a.has_g()) ForEachTensor(*a.mutable_g(), f);
      for (auto& sg : *a.mutable_graphs()) ForEachTensor(sg, f);
    }
  }
}

Status ReadExternal(::onnx::TensorProto& t, const fs::path& folder, const std::string& model_path) {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = std::numeric_limits<uint64_t>::max();
  for (const auto& e : t.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::stoull(e.value());
      if (e.key() == "length") length = std::stoull(e.value());
    } catch (const std::exception&) {
      return FailedPrecondition(fmt::format("{}: tensor '{}' has external data {}='{}', not a number", model_path,
                                         t.name(), e.key(), e.value()));
    }
  }
  const fs::path file = (folder / location).lexically_normal();
  const auto rel = file.lexically_relative(folder);
  if (location.empty() || rel.empty() || *rel.begin() == "..") {
    return FailedPrecondition(fmt::format("{}: tensor '{}' names external data '{}', which is not a file inside the "
                                       "model's folder {}; ONNX reads external data only from there",
                                       model_path, t.name(), location, folder.string()));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return NotFound(fmt::format("{}: tensor '{}' has its data in '{}', which cannot be opened; copy the data file "
                                "next to the model",
                                model_path, t.name(), file.string()));
  }
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  if (length == std::numeric_limits<uint64_t>::max()) length = size >= offset ? size - offset : 0;
  if (offset > size || length > size - offset) {
    return FailedPrecondition(fmt::format("{}: tensor '{}' wants bytes {}..{} of '{}', which has {}; the data file does "
                                       "not belong to this model or is truncated",
                                       model_path, t.name(), offset, offset + length, file.string(), size));
  }
  std::string bytes(length, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  t.set_raw_data(std::move(bytes));
  t.clear_external_data();
  t.set_data_location(::onnx::TensorProto::DEFAULT);
  return Status::Ok();
}

// Float and int64 values held in the typed fields go to raw_data (little-
// endian, as ONNX stores it), the only form external data takes.
void MoveToRawData(::onnx::TensorProto& t) {
  if (t.float_data_size() > 0 && t.data_type() == ::onnx::TensorProto::FLOAT) {
    t.set_raw_data(std::string(reinterpret_cast<const char*>(t.float_data().data()), t.float_data_size() * sizeof(float)));
    t.clear_float_data();
  } else if (t.int64_data_size() > 0 && t.data_type() == ::onnx::TensorProto::INT64) {
    t.set_raw_data(std::string(reinterpret_cast<const char*>(t.int64_data().data()), t.int64_data_size() * sizeof(int64_t)));
    t.clear_int64_data();
  }
}

}  // namespace

Expected<::onnx::ModelProto> ReadModelFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot open the model file", path));
  in.seekg(0, std::ios::end);
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return FailedPrecondition(fmt::format("{}: not an ONNX model (the protobuf does not parse)", path));
  }
  const fs::path folder = fs::absolute(fs::path(path)).parent_path().lexically_normal();
  Status status = Status::Ok();
  ForEachTensor(*model.mutable_graph(), [&](::onnx::TensorProto& t) {
    if (status.ok() && t.data_location() == ::onnx::TensorProto::EXTERNAL) status = ReadExternal(t, folder, path);
  });
  ORTGPU_RETURN_IF_ERROR(status);
  return model;
}

Expected<bool> WriteModelFile(::onnx::ModelProto& model, const std::string& path, const WriteOptions& options) {
  bool external = model.ByteSizeLong() > options.inline_limit;
  if (external) {
    const fs::path data_path = fs::path(path).string() + ".data";
    const std::string location = data_path.filename().string();
    std::ofstream data(data_path, std::ios::binary | std::ios::trunc);
    if (!data) return Unavailable(fmt::format("cannot write the external data file {}", data_path.string()));
    uint64_t offset = 0;
    ForEachTensor(*model.mutable_graph(), [&](::onnx::TensorProto& t) {
      MoveToRawData(t);
      if (t.raw_data().size() < options.min_external_bytes) return;
      const uint64_t aligned = (offset + 4095) / 4096 * 4096;  // page-aligned, so ORT can map it
      if (aligned > offset) data.write(std::string(aligned - offset, '\0').data(), static_cast<std::streamsize>(aligned - offset));
      data.write(t.raw_data().data(), static_cast<std::streamsize>(t.raw_data().size()));
      auto add = [&t](const std::string& k, const std::string& v) {
        auto* e = t.add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", location);
      add("offset", std::to_string(aligned));
      add("length", std::to_string(t.raw_data().size()));
      offset = aligned + t.raw_data().size();
      t.clear_raw_data();
      t.set_data_location(::onnx::TensorProto::EXTERNAL);
    });
    if (!data) return Unavailable(fmt::format("writing {} failed (disk full?)", data_path.string()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !model.SerializeToOstream(&out)) {
    return Unavailable(fmt::format("cannot write the model to {}; check the folder exists and is writable", path));
  }
  return external;
}

}  // namespace ortgpu::precision
