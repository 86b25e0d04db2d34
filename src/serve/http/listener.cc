#include "serve/http/listener.h"

#include <fmt/format.h>

namespace ortgpu::serve {

namespace asio = boost::asio;

Expected<uint16_t> OpenListener(asio::ip::tcp::acceptor& acceptor, const ListenerSpec& spec) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(spec.host, ec);
  if (ec) {
    return InvalidArgument(fmt::format("{} host '{}' is not an IP address ({}); use e.g. 127.0.0.1 or 0.0.0.0",
                                       spec.what, spec.host, ec.message()));
  }
  const asio::ip::tcp::endpoint endpoint(address, spec.port);
  auto fail = [&](std::string_view step) -> Status {
    return Unavailable(fmt::format("cannot {} {} address {}:{}: {}; {}", step, spec.what, spec.host, spec.port,
                                   ec.message(), spec.remedy));
  };
  if (acceptor.open(endpoint.protocol(), ec); ec) return fail("open");
  if (acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) return fail("configure");
  if (acceptor.bind(endpoint, ec); ec) return fail("bind");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) return fail("listen on");
  const auto local = acceptor.local_endpoint(ec);
  if (ec) return fail("read the port of");
  return local.port();
}

}  // namespace ortgpu::serve
