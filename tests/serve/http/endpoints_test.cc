// DispatchEndpoint is the one call the HTTP front end makes per request
// (issue 29: the front end parses, calls, writes). These tests call it as
// the connection does, without a socket: where an infer is decoded, and
// that a request whose endpoint throws is still answered, exactly once.
#include "serve/http/endpoints.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "fakes/fake_model_server.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Answer {
  HttpReply reply;
  std::thread::id thread;
  int calls = 0;
};

class DispatchEndpointTest : public ::testing::Test {
 protected:
  EndpointRequest InferRequestWithBody(std::string body) {
    EndpointRequest er;
    er.route = protocol::MatchRoute("/v2/models/echo/infer").value();
    er.body = RequestBody::Copy(body);
    return er;
  }

  static std::string JsonInfer(int elements) {
    std::string data;
    for (int i = 0; i < elements; ++i) data += (i ? ",1.5" : "1.5");
    return R"({"inputs":[{"name":"x","shape":[1,)" + std::to_string(elements) +
           R"(],"datatype":"FP32","data":[)" + data + "]}]}";
  }

  // Dispatches and waits for the reply, as the connection's strand would
  // receive it (the deferred encode run there).
  Answer Dispatch(EndpointRequest er, size_t decode_elsewhere_bytes = kDecodeElsewhereBytes) {
    auto answer = std::make_shared<Answer>();
    std::promise<void> answered;
    auto done = answered.get_future();
    DispatchEndpoint(server_, std::move(er), {blocking_, decode_, decode_elsewhere_bytes},
                     [answer, &answered](HttpReply r) {
                       answer->thread = std::this_thread::get_id();
                       answer->reply = r.finish ? r.finish() : std::move(r);
                       if (++answer->calls == 1) answered.set_value();
                     });
    done.wait();
    blocking_.join();
    decode_.join();
    return *answer;
  }

  FakeModelServer server_;
  boost::asio::thread_pool blocking_{1};
  boost::asio::thread_pool decode_{1};
};

TEST_F(DispatchEndpointTest, ASmallInferIsDecodedAndAnsweredOnTheCallingThread) {
  Answer a = Dispatch(InferRequestWithBody(JsonInfer(4)));
  EXPECT_EQ(a.reply.status, 200u) << a.reply.body;
  EXPECT_THAT(a.reply.body, HasSubstr(R"("name":"x")"));
  EXPECT_EQ(a.thread, std::this_thread::get_id());
  EXPECT_EQ(a.calls, 1);
}

// A large all-JSON body takes tens of ms per MiB to decode: it goes to the
// decode pool, so the network thread that read it keeps answering others.
TEST_F(DispatchEndpointTest, AnAllJsonBodyOverTheLimitIsDecodedOnTheDecodePool) {
  const std::string body = JsonInfer(64);
  Answer a = Dispatch(InferRequestWithBody(body), body.size() - 1);
  EXPECT_EQ(a.reply.status, 200u) << a.reply.body;
  EXPECT_NE(a.thread, std::this_thread::get_id());
  EXPECT_EQ(a.calls, 1);
}

TEST_F(DispatchEndpointTest, AnInferThatRunsOutOfMemoryIsAnsweredOnceWith503) {
  server_.ThrowBadAllocOnInfer(true);
  Answer a = Dispatch(InferRequestWithBody(JsonInfer(4)));
  EXPECT_EQ(a.reply.status, 503u);
  EXPECT_THAT(a.reply.body, HasSubstr("ran out of memory"));
  EXPECT_EQ(a.calls, 1);
}

// The same on the decode pool: a throw there does not end the pool's thread
// or leave the request unanswered; the error names no server path.
TEST_F(DispatchEndpointTest, AnEndpointThatThrowsOnTheDecodePoolIsAnsweredWith500AndNoPath) {
  server_.ThrowRuntimeErrors(true, "/srv/models/echo/1/model.onnx");
  const std::string body = JsonInfer(64);
  Answer a = Dispatch(InferRequestWithBody(body), body.size() - 1);
  EXPECT_EQ(a.reply.status, 500u);
  EXPECT_THAT(a.reply.body, HasSubstr("unexpected error"));
  EXPECT_THAT(a.reply.body, Not(HasSubstr("/srv/models")));
  EXPECT_EQ(a.calls, 1);
}

}  // namespace
}  // namespace ortgpu::serve
