#include "base/clock.hpp"

namespace clairfs {

SteadyClock& SteadyClock::Instance() {
  static SteadyClock clock;
  return clock;
}

}  // namespace clairfs
