#include "base/clock.hpp"

namespace clairfs::prefetch {

SteadyClock& SteadyClock::Instance() {
  static SteadyClock clock;
  return clock;
}

}  // namespace clairfs::prefetch
