// SegmentsBody: a Boost.Beast Body type for responses written
// scatter-gather. Its value is a string (the JSON part of a reply, built on
// the connection's strand) and a list of borrowed byte ranges (binary output
// tensors, still in the buffer the batch's outputs were fetched into); the
// writer hands all of them to the serializer as one buffer sequence, so the
// socket write is one writev and nothing is concatenated.
//
// Ownership: the value keeps every range alive (TensorBytes share their
// owners) until the response is destroyed after the write. Thread-safety:
// none; a response belongs to its connection's strand.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include "ort/tensor.h"

namespace ortgpu::serve {

struct SegmentsBody {
  struct value_type {
    std::string head;
    std::vector<TensorBytes> tail;
  };

  static std::uint64_t size(const value_type& v) {
    std::uint64_t n = v.head.size();
    for (const auto& t : v.tail) n += t.size();
    return n;
  }

  class writer {
   public:
    using const_buffers_type = std::vector<boost::asio::const_buffer>;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& v) : value_(v) {}

    void init(boost::beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      ec = {};
      if (done_) return boost::none;
      done_ = true;
      const_buffers_type buffers;
      buffers.reserve(1 + value_.tail.size());
      if (!value_.head.empty()) buffers.emplace_back(value_.head.data(), value_.head.size());
      for (const auto& t : value_.tail) {
        if (!t.empty()) buffers.emplace_back(t.data(), t.size());
      }
      return std::make_pair(std::move(buffers), false);
    }

   private:
    const value_type& value_;
    bool done_ = false;
  };
};

}  // namespace ortgpu::serve
