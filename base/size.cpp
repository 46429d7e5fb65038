#include "base/size.hpp"

#include <charconv>
#include <system_error>

namespace clairfs {

bool ParseSize(std::string_view t, uint64_t* out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end == t.data()) return false;
  std::string_view suffix(end, static_cast<size_t>(t.data() + t.size() - end));
  if (suffix.size() >= 2 && (suffix.substr(1) == "iB" || suffix.substr(1) == "B")) {
    suffix = suffix.substr(0, 1);
  }
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "k") {
    shift = 10;
  } else if (suffix == "M" || suffix == "m") {
    shift = 20;
  } else if (suffix == "G" || suffix == "g") {
    shift = 30;
  } else if (suffix == "T" || suffix == "t") {
    shift = 40;
  } else {
    return false;
  }
  if (shift > 0 && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

}  // namespace clairfs
