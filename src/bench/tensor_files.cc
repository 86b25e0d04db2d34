#include "bench/tensor_files.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "onnx.pb.h"
#include "ort/tensor_proto.h"

namespace ortgpu::bench {
namespace {

struct NpyType {
  const char* code;  // descr without the byte-order character
  DataType type;
};

constexpr NpyType kNpyTypes[] = {
    {"f4", DataType::kFloat},    {"f8", DataType::kDouble},   {"f2", DataType::kFloat16},
    {"u1", DataType::kUint8},    {"i1", DataType::kInt8},     {"u2", DataType::kUint16},
    {"i2", DataType::kInt16},    {"i4", DataType::kInt32},    {"u4", DataType::kUint32},
    {"i8", DataType::kInt64},    {"u8", DataType::kUint64},   {"b1", DataType::kBool},
    {"c8", DataType::kComplex64}, {"c16", DataType::kComplex128},
};

// The value of `key` in a Python dict literal: the text after "'key':" up to
// the next top-level comma.
Expected<std::string> DictValue(std::string_view header, std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  auto pos = header.find(quoted);
  if (pos == std::string_view::npos) return InvalidArgument("the .npy header has no '" + std::string(key) + "' entry");
  pos = header.find(':', pos + quoted.size());
  if (pos == std::string_view::npos) return InvalidArgument("the .npy header is malformed near '" + std::string(key) + "'");
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  size_t end = pos;
  int depth = 0;
  while (end < header.size()) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' || c == '}') && depth == 0) break;
    ++end;
  }
  return std::string(header.substr(pos, end - pos));
}

Expected<std::vector<int64_t>> ParseNpyShape(const std::string& text) {
  // "(2, 3)", "(5,)", "()"
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    return InvalidArgument("the .npy shape '" + text + "' is not a tuple");
  }
  std::vector<int64_t> dims;
  std::stringstream ss(text.substr(1, text.size() - 2));
  std::string part;
  while (std::getline(ss, part, ',')) {
    const auto b = part.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    part = part.substr(b, part.find_last_not_of(' ') - b + 1);
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (end == part.c_str() || *end != '\0' || v < 0) return InvalidArgument("the .npy shape '" + text + "' has a bad dimension");
    dims.push_back(v);
  }
  return dims;
}

}  // namespace

Expected<Tensor> ParseNpy(std::string_view bytes, const std::string& name) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kMagic, 6)) {
    return InvalidArgument("'" + name + "' is not an .npy file (no \\x93NUMPY magic); save it with numpy.save");
  }
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0;
  size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidArgument("the .npy file for '" + name + "' is truncated");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return InvalidArgument("the .npy file for '" + name + "' has format version " + std::to_string(major) +
                           "; ortgpu reads versions 1 to 3");
  }
  if (offset + header_len > bytes.size()) return InvalidArgument("the .npy file for '" + name + "' is truncated");
  const std::string_view header = bytes.substr(offset, header_len);
  ORTGPU_ASSIGN_OR_RETURN(std::string descr, DictValue(header, "descr"));
  ORTGPU_ASSIGN_OR_RETURN(std::string fortran, DictValue(header, "fortran_order"));
  ORTGPU_ASSIGN_OR_RETURN(std::string shape_text, DictValue(header, "shape"));
  ORTGPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ParseNpyShape(shape_text));
  if (descr.size() < 4 || descr.front() != '\'' || descr.back() != '\'') {
    return InvalidArgument("the .npy dtype " + descr + " of '" + name + "' is not a simple dtype; save a plain numeric array");
  }
  descr = descr.substr(1, descr.size() - 2);
  const char order = descr[0];
  if (order == '>') {
    return InvalidArgument("the .npy file for '" + name + "' is big-endian (" + descr +
                           "); convert it with array.astype(array.dtype.newbyteorder('<'))");
  }
  if (order != '<' && order != '|' && order != '=') {
    return InvalidArgument("the .npy dtype '" + descr + "' of '" + name + "' is not supported");
  }
  const std::string code = descr.substr(1);
  DataType type = DataType::kUndefined;
  for (const auto& t : kNpyTypes) {
    if (code == t.code) type = t.type;
  }
  if (type == DataType::kUndefined) {
    return InvalidArgument("the .npy dtype '" + descr + "' of '" + name +
                           "' is not an ONNX tensor type ortgpu reads (numeric or bool; strings and objects are not)");
  }
  if (fortran == "True" && shape.size() > 1) {
    return InvalidArgument("the .npy file for '" + name + "' is in Fortran order; save it with numpy.ascontiguousarray");
  }
  Tensor t;
  t.name = name;
  t.dtype = type;
  t.shape = shape;
  const auto count = ElementCount(shape);
  if (!count) return InvalidArgument("the .npy shape of '" + name + "' is too large");
  const size_t want = static_cast<size_t>(*count) * ElementSize(type);
  const std::string_view body = bytes.substr(offset + header_len);
  if (body.size() != want) {
    return InvalidArgument("the .npy file for '" + name + "' holds " + std::to_string(body.size()) + " data bytes but " +
                           descr + " " + ShapeToString(shape) + " needs " + std::to_string(want));
  }
  t.data.assign(body.begin(), body.end());
  return t;
}

Expected<std::string> SerializeNpy(const Tensor& t) {
  const char* code = nullptr;
  for (const auto& nt : kNpyTypes) {
    if (nt.type == t.dtype) code = nt.code;
  }
  if (code == nullptr) return InvalidArgument("tensor '" + t.name + "' of type " + std::string(ShortName(t.dtype)) + " has no .npy dtype");
  const char order = ElementSize(t.dtype) == 1 ? '|' : '<';
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 ? "," : i + 1 < t.shape.size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + order + code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending with '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

Expected<Tensor> ParseTensorProto(std::string_view bytes, const std::string& name) {
  ::onnx::TensorProto p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgument("'" + name + "' is not a serialized onnx.TensorProto; write it with onnx.numpy_helper.from_array");
  }
  return TensorFromProto(p, name);
}

std::string SerializeTensorProto(const Tensor& t) {
  ::onnx::TensorProto p;
  p.set_name(t.name);
  p.set_data_type(static_cast<int>(t.dtype));
  for (int64_t d : t.shape) p.add_dims(d);
  if (t.dtype == DataType::kString) {
    for (const auto& s : t.strings) p.add_string_data(s);
  } else {
    p.set_raw_data(t.data.data(), t.data.size());
  }
  return p.SerializeAsString();
}

Expected<Tensor> ReadTensorFile(const std::string& path, const std::string& name) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open input file " + path + " for input '" + name + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  auto ends_with = [&path](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  Expected<Tensor> t = Status(Code::kInvalidArgument, "unset");
  if (ends_with(".npy")) {
    t = ParseNpy(bytes, name);
  } else if (ends_with(".pb")) {
    t = ParseTensorProto(bytes, name);
  } else {
    return InvalidArgument("input file " + path + " has an unknown extension; give a NumPy .npy or an ONNX TensorProto .pb file");
  }
  if (!t.ok()) return t.status().WithContext(path);
  t->name = name;
  return t;
}

}  // namespace ortgpu::bench
