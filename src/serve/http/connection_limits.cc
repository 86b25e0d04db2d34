#include "serve/http/connection_limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

namespace ortgpu::serve {

int64_t DefaultMaxConnections() {
  constexpr int64_t kUnlimited = 1'000'000;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnlimited;
  const int64_t soft = static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, kUnlimited));
  return std::max<int64_t>(1, soft - kReservedDescriptors);
}

bool IsResourceExhaustion(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  const int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

}  // namespace ortgpu::serve
