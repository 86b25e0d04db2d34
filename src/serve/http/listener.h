// Opening a listening TCP socket for one of the server's ports (HTTP,
// metrics), with the error a user can act on: which address, which flag to
// change. Called once at start-up, on the starting thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "status/expected.h"

namespace ortgpu::serve {

struct ListenerSpec {
  std::string host;        // an IP address: "127.0.0.1", "0.0.0.0", "::1"
  uint16_t port = 0;       // 0: any free port
  std::string_view what;   // "HTTP", "metrics": names the address in messages
  std::string_view remedy; // what to do when the port is taken
};

// Opens, binds and listens `acceptor`. Returns the bound port (the real one
// when spec.port is 0). InvalidArgument for a host that is not an IP address,
// Unavailable when the address cannot be bound.
Expected<uint16_t> OpenListener(boost::asio::ip::tcp::acceptor& acceptor, const ListenerSpec& spec);

}  // namespace ortgpu::serve
