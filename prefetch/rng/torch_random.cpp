#include "prefetch/rng/torch_random.hpp"

#include <charconv>
#include <numeric>
#include <utility>

namespace clairfs::prefetch {

namespace {
// Parses leading decimal digits of `text` at `pos`; false when there are none.
bool TakeNumber(std::string_view text, size_t& pos, int& out) {
  const char* begin = text.data() + pos;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, out);
  if (ec != std::errc() || ptr == begin) return false;
  pos += static_cast<size_t>(ptr - begin);
  return true;
}
}  // namespace

Result<TorchVersion> TorchVersion::Parse(std::string_view text) {
  TorchVersion v;
  size_t pos = 0;
  bool ok = TakeNumber(text, pos, v.major) && pos < text.size() && text[pos] == '.';
  if (ok) {
    ++pos;
    ok = TakeNumber(text, pos, v.minor);
  }
  // Whatever follows minor must start a patch level or a local/pre-release tag.
  if (ok && pos < text.size()) {
    char c = text[pos];
    ok = c == '.' || c == '+' || c == 'a' || c == 'b' || c == 'r' || c == 'd' || c == 'p';
  }
  if (!ok || v.major < 0 || v.minor < 0) {
    return Status::InvalidArgument("torch version '" + std::string(text) +
                                   "' is not of the form MAJOR.MINOR[.PATCH]");
  }
  return v;
}

std::string TorchVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool RandPermUsesInsideOut(uint64_t n, TorchVersion version) {
  return version >= kRandPermInsideOutSince && n >= kRandPermInsideOutMinSize;
}

uint64_t RandPermDraws(uint64_t n, TorchVersion version) {
  if (RandPermUsesInsideOut(n, version)) return 2 * n;
  return n == 0 ? 0 : n - 1;
}

std::vector<Index> RandPermSwap(uint64_t n, TorchGenerator& gen) {
  std::vector<Index> a(n);
  std::iota(a.begin(), a.end(), Index{0});
  for (uint64_t i = 0; i + 1 < n; ++i) {
    // torch reduces a 32-bit draw modulo the remaining length; the bias is
    // part of the result we must reproduce, so no rejection sampling here.
    uint64_t z = static_cast<uint64_t>(gen.Random()) % (n - i);
    std::swap(a[i], a[i + z]);
  }
  return a;
}

std::vector<Index> RandPermInsideOut(uint64_t n, TorchGenerator& gen) {
  std::vector<Index> a(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t z = gen.Random64() % (i + 1);
    a[i] = a[z];
    a[z] = i;
  }
  return a;
}

std::vector<Index> RandPerm(uint64_t n, TorchGenerator& gen, TorchVersion version) {
  return RandPermUsesInsideOut(n, version) ? RandPermInsideOut(n, gen) : RandPermSwap(n, gen);
}

}  // namespace clairfs::prefetch
