// Tensor: a tensor as ortgpu moves it between the network, files and ONNX
// Runtime: an element type, a shape, and the bytes in row-major order in
// host memory (or, for STRING/BYTES tensors, one std::string per element),
// or a view of them in device memory (DeviceView: CUDA shared memory).
//
// DataType uses ONNX's TensorProto.DataType numbering, so it converts to and
// from ORT's ONNXTensorElementDataType with a cast. A Tensor owns its data,
// or shares a read-only buffer it was decoded from (TensorBytes); it is a
// value type with no internal synchronisation.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"

namespace ortgpu {

enum class DataType : int {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
};

// Bytes per element; 0 for kString and kUndefined.
size_t ElementSize(DataType t);
// ONNX's spelling as ORT prints it: "tensor(float)".
std::string OnnxTypeName(DataType t);
// KServe v2 / Triton datatype: "FP32", "INT64", "BYTES", "BF16"; "" if none.
std::string_view KServeName(DataType t);
// Parses a KServe datatype name ("FP32").
std::optional<DataType> DataTypeFromKServe(std::string_view name);
// Triton config.pbtxt data_type: "TYPE_FP32", "TYPE_STRING".
std::string_view TritonConfigName(DataType t);
std::optional<DataType> DataTypeFromTritonConfig(std::string_view name);
// Short lower-case name used on the command line and in reports: "float32".
std::string_view ShortName(DataType t);

// Number of elements of a fully known shape (every dim >= 0); 1 for a scalar.
// Returns nullopt on a negative dim or overflow.
std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape);
// "1x3x224x224"; symbolic dims (-1) print as "?".
std::string ShapeToString(const std::vector<int64_t>& shape);
// Parses "1x3x224x224" (also "1,3,224,224"); "" or "scalar" is a scalar.
Expected<std::vector<int64_t>> ParseShape(std::string_view text);
// Parses a --shape flag value "NAME:DIMS" ("input_ids:1x128") into `out`.
Status ParseShapeFlag(const std::string& text, std::map<std::string, std::vector<int64_t>>& out);

// The bytes of a non-string Tensor: owned, or borrowed from a buffer that
// an owner keeps alive (the request body a binary tensor was decoded from),
// so a tensor that arrived over the network is not copied out of the body
// it arrived in. Reading borrowed bytes is free; any mutable access first
// copies them into owned storage (copy on write), so code written for a
// std::vector<uint8_t> keeps working. Copying a TensorBytes that borrows
// shares the buffer. A value type with no internal synchronisation.
class TensorBytes {
 public:
  using value_type = uint8_t;
  using size_type = size_t;
  using iterator = uint8_t*;
  using const_iterator = const uint8_t*;

  TensorBytes() = default;
  TensorBytes(std::initializer_list<uint8_t> bytes) : owned_(bytes) {}
  TensorBytes(std::vector<uint8_t> bytes) : owned_(std::move(bytes)) {}  // NOLINT: a vector converts

  // Borrows `size` bytes at `data`, which `owner` keeps alive.
  void Borrow(std::shared_ptr<const void> owner, const uint8_t* data, size_t size) {
    owned_.clear();
    owner_ = std::move(owner);
    view_ = data;
    view_size_ = size;
  }
  bool borrowed() const { return owner_ != nullptr; }
  // Moves owned bytes into a shared buffer this object then borrows, so
  // Slice() can hand out views without copying. No-op when borrowing.
  void Share() {
    if (owner_) return;
    auto shared = std::make_shared<std::vector<uint8_t>>(std::move(owned_));
    owned_.clear();
    Borrow(shared, shared->data(), shared->size());
  }
  // `size` bytes from `offset`: a view sharing this object's owner when it
  // borrows, else a copy. REQUIRES: offset + size <= size().
  TensorBytes Slice(size_t offset, size_t size) const {
    TensorBytes out;
    if (owner_) {
      out.Borrow(owner_, view_ + offset, size);
    } else {
      out.owned_.assign(owned_.begin() + offset, owned_.begin() + offset + size);
    }
    return out;
  }
  // The buffer keeping borrowed bytes alive (null when owned).
  const std::shared_ptr<const void>& owner() const { return owner_; }

  const uint8_t* data() const { return owner_ ? view_ : owned_.data(); }
  uint8_t* data() { Own(); return owned_.data(); }
  size_t size() const { return owner_ ? view_size_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size(); }
  uint8_t* begin() { return data(); }
  uint8_t* end() { return data() + size(); }
  uint8_t& operator[](size_t i) { return data()[i]; }
  const uint8_t& operator[](size_t i) const { return data()[i]; }

  void resize(size_t n) { Own(); owned_.resize(n); }
  void resize(size_t n, uint8_t v) { Own(); owned_.resize(n, v); }
  void reserve(size_t n) { Own(); owned_.reserve(n); }
  void pop_back() { Own(); owned_.pop_back(); }
  void clear() { Drop(); owned_.clear(); }
  void assign(size_t n, uint8_t v) { Drop(); owned_.assign(n, v); }
  template <typename It>
  void assign(It first, It last) {
    std::vector<uint8_t> bytes(first, last);  // `first` may point into the borrowed bytes
    Drop();
    owned_ = std::move(bytes);
  }
  // REQUIRES: `pos` is in [begin(), end()] of this object.
  template <typename It>
  void insert(const uint8_t* pos, It first, It last) {
    Own();
    owned_.insert(owned_.begin() + (pos - owned_.data()), first, last);
  }

  friend bool operator==(const TensorBytes& a, const TensorBytes& b) {
    return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
  }

 private:
  void Drop() {
    owner_.reset();
    view_ = nullptr;
    view_size_ = 0;
  }
  void Own() {
    if (!owner_) return;
    owned_.assign(view_, view_ + view_size_);
    Drop();
  }
  std::vector<uint8_t> owned_;
  std::shared_ptr<const void> owner_;  // non-null while borrowing
  const uint8_t* view_ = nullptr;
  size_t view_size_ = 0;
};

// The bytes of a tensor that live in device memory instead of `data`: a
// client's CUDA shared memory region, read by the GPU where it is (no copy
// to the host). `owner` keeps the region mapped while the view exists.
struct DeviceView {
  std::shared_ptr<const void> owner;
  uint64_t address = 0;  // device address of the first byte
  size_t size = 0;       // bytes
  int device = -1;       // the CUDA device ordinal the memory is on
  std::string where;     // what it is, for messages: "CUDA shared memory region 'in'"
  // Copies `bytes` at device `address` (this view's) into host memory at
  // `dst` (for a CUDA region: the driver call of the IPC that mapped it);
  // unset where the bytes can only be read on the device. Any thread. It
  // captures one pointer, so making a view allocates nothing for it.
  std::function<Status(void* dst, uint64_t address, size_t bytes)> to_host;
};

struct Tensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  TensorBytes data;                   // ElementCount * ElementSize bytes (non-string)
  std::vector<std::string> strings;   // ElementCount elements (kString only)
  // Set: the bytes are in device memory (then `data` is empty). A GPU
  // instance's batch path reads them where they are (device to device);
  // a path that needs host bytes first copies them with CopyToHost, and
  // refuses a tensor it cannot copy with RequireHostBytes. An output
  // with it set and a view of no bytes is a placeholder: the instance
  // wrote it into the request's CUDA shared memory region already.
  std::optional<DeviceView> device;

  int64_t element_count() const { return ElementCount(shape).value_or(0); }
  size_t byte_size() const { return device ? device->size : data.size(); }
  bool on_device() const { return device.has_value(); }

  template <typename T>
  T* data_as() { return reinterpret_cast<T*>(data.data()); }
  template <typename T>
  const T* data_as() const { return reinterpret_cast<const T*>(data.data()); }

  // A tensor of `shape` filled with zeros (empty strings for kString).
  // REQUIRES: every dim of `shape` >= 0.
  static Tensor Zeros(std::string name, DataType dtype, std::vector<int64_t> shape);
};

// Checks that `t` holds exactly the bytes (or strings) its dtype and shape
// call for; the message names the tensor, the expected and the actual size.
Status ValidateTensorSize(const Tensor& t);

// InvalidArgument when `t` is in device memory, saying where its bytes are
// and that `reader` (what wanted them: "model 'm' on the CPU") reads host
// memory only, and what to send instead; Ok for a host tensor.
Status RequireHostBytes(const Tensor& t, const std::string& reader);

// Brings a tensor in device memory to the host: `data` gets its bytes (one
// copy, DeviceView::to_host) and `device` is cleared. Ok and nothing done
// for a host tensor; RequireHostBytes's error, naming `reader`, for a view
// without to_host; the copy's error otherwise.
Status CopyToHost(Tensor& t, const std::string& reader);

// Converts one element to double, for comparisons and reports (fp16/bf16
// decoded). REQUIRES: t.dtype is numeric or bool; i < element_count().
double ElementAsDouble(const Tensor& t, int64_t i);

// IEEE half <-> float.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bfloat16ToFloat(uint16_t b);
uint16_t FloatToBfloat16(float f);

}  // namespace ortgpu
