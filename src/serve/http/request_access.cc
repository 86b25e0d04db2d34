#include "serve/http/request_access.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>

namespace ortgpu::serve {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& s) { return s == "*" || Lower(s) == value; });
}

// "Example.com:8000" -> "example.com"; "[::1]:8000" -> "::1"; "localhost." -> "localhost".
std::string HostName(std::string_view host) {
  std::string_view name = host;
  if (!name.empty() && name.front() == '[') {
    const auto close = name.find(']');
    name = close == std::string_view::npos ? name.substr(1) : name.substr(1, close - 1);
  } else if (const auto colon = name.rfind(':'); colon != std::string_view::npos && name.find(':') == colon) {
    name = name.substr(0, colon);
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return Lower(name);
}

bool IsIpAddress(const std::string& name) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  return !ec;
}

// Repository control, the run-time settings (log level, traces) and the
// shared-memory registrations (which map server memory).
bool NeedsToken(protocol::Endpoint e) {
  using protocol::Endpoint;
  return e == Endpoint::kRepositoryIndex || e == Endpoint::kRepositoryLoad || e == Endpoint::kRepositoryUnload ||
         e == Endpoint::kLogging || e == Endpoint::kTraceSetting || e == Endpoint::kSystemShmRegister ||
         e == Endpoint::kSystemShmUnregister || e == Endpoint::kCudaShmRegister || e == Endpoint::kCudaShmUnregister;
}

// Compares without stopping at the first difference, so the time taken
// does not tell an attacker how much of a guess was right.
bool SameSecret(std::string_view given, std::string_view secret) {
  size_t diff = given.size() ^ secret.size();
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^ (i < secret.size() ? static_cast<unsigned char>(secret[i]) : 0u);
  }
  return diff == 0;
}

}  // namespace

bool IsSameOrigin(std::string_view origin, std::string_view host) {
  const std::string o = Lower(origin);
  const std::string h = Lower(host);
  return !h.empty() && (o == "http://" + h || o == "https://" + h);
}

std::optional<AccessDenied> CheckAccess(const AccessOptions& options, const AccessHeaders& headers,
                                        protocol::Endpoint endpoint) {
  if (!headers.host.empty()) {
    const std::string name = HostName(headers.host);
    if (!IsIpAddress(name) && name != "localhost" && !Contains(options.allowed_hosts, name)) {
      return AccessDenied{HttpRefusal::kForbidden, fmt::format("Host '{}' is not an address of this server; if clients reach it by that "
                                           "name, start it with --allow-host {}",
                                           headers.host, name)};
    }
  }
  if (!headers.origin.empty()) {
    const std::string origin = Lower(headers.origin);
    if (!IsSameOrigin(origin, headers.host) && !Contains(options.allowed_origins, origin)) {
      return AccessDenied{HttpRefusal::kForbidden, fmt::format("cross-origin request from Origin '{}' refused (a web page may not use "
                                           "this server); to allow that page, start the server with --allow-origin {}",
                                           headers.origin, headers.origin)};
    }
  }
  if (!options.auth_token.empty() && NeedsToken(endpoint) && !headers.preflight) {
    const std::string_view auth = headers.authorization;
    if (!BearerTokenMatches(auth, options.auth_token)) {
      return AccessDenied{HttpRefusal::kUnauthorized, fmt::format("{} needs 'Authorization: Bearer <token>' with the token of the server's "
                                           "--auth-token-file{}",
                                           protocol::EndpointName(endpoint), auth.empty() ? "" : "; the token sent is wrong")};
    }
  }
  return std::nullopt;
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kBearer = "bearer ";
  const bool bearer =
      authorization.size() > kBearer.size() && Lower(authorization.substr(0, kBearer.size())) == kBearer;
  return bearer && SameSecret(authorization.substr(kBearer.size()), token);
}

Expected<std::string> ReadAuthTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument(fmt::format("--auth-token-file {}: cannot be read", path));
  std::string line;
  std::getline(in, line);
  const auto first = line.find_first_not_of(" \t\r\n");
  const auto last = line.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return InvalidArgument(fmt::format("--auth-token-file {}: the first line is empty; write the token there", path));
  }
  return line.substr(first, last - first + 1);
}

}  // namespace ortgpu::serve
