#include "prefetch/tf/tf_glob.hpp"

#include <algorithm>
#include <cstdint>

namespace clairfs::prefetch {

namespace {

// Length of the UTF-8 sequence starting at s[i] (1 for invalid bytes).
size_t CharLen(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
  if (i + len > s.size()) return 1;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 1;
  }
  return len;
}

uint32_t CodePoint(std::string_view s, size_t i, size_t len) {
  auto c = static_cast<unsigned char>(s[i]);
  if (len == 1) return c;
  uint32_t v = c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  return v;
}

// Matches a bracket expression at pattern[p] ('[') against code point c.
// Returns false in `valid` when the bracket is not closed (then '[' is literal).
bool MatchBracket(std::string_view pat, size_t& p, uint32_t c, bool& valid) {
  size_t i = p + 1;
  bool negate = false;
  if (i < pat.size() && (pat[i] == '!' || pat[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  while (i < pat.size() && (pat[i] != ']' || first)) {
    first = false;
    if (pat[i] == '\\' && i + 1 < pat.size()) ++i;
    size_t len = CharLen(pat, i);
    uint32_t lo = CodePoint(pat, i, len);
    i += len;
    uint32_t hi = lo;
    if (i + 1 < pat.size() && pat[i] == '-' && pat[i + 1] != ']') {
      ++i;
      if (pat[i] == '\\' && i + 1 < pat.size()) ++i;
      size_t l2 = CharLen(pat, i);
      hi = CodePoint(pat, i, l2);
      i += l2;
    }
    if (c >= lo && c <= hi) matched = true;
  }
  if (i >= pat.size()) {
    valid = false;
    return false;
  }
  valid = true;
  p = i + 1;
  return matched != negate;
}

bool Match(std::string_view pat, size_t p, std::string_view s, size_t i) {
  while (p < pat.size()) {
    char pc = pat[p];
    if (pc == '*') {
      while (p < pat.size() && pat[p] == '*') ++p;
      if (p == pat.size()) return true;
      for (size_t j = i; j <= s.size(); j += (j < s.size() ? CharLen(s, j) : 1)) {
        if (Match(pat, p, s, j)) return true;
        if (j == s.size()) break;
      }
      return false;
    }
    if (i >= s.size()) return false;
    size_t len = CharLen(s, i);
    if (pc == '?') {
      ++p;
      i += len;
      continue;
    }
    if (pc == '[') {
      size_t q = p;
      bool valid = true;
      bool ok = MatchBracket(pat, q, CodePoint(s, i, len), valid);
      if (valid) {
        if (!ok) return false;
        p = q;
        i += len;
        continue;
      }
    }
    if (pc == '\\' && p + 1 < pat.size()) pc = pat[++p];
    if (pc != s[i]) return false;
    ++p;
    ++i;
  }
  return i == s.size();
}

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

}  // namespace

bool TfGlobMatchComponent(std::string_view pattern, std::string_view name) {
  return Match(pattern, 0, name, 0);
}

Result<std::vector<std::string>> TfMatchingFiles(const Listing& listing, std::string_view pattern) {
  if (pattern.empty() || pattern.front() == '/') {
    return Status::InvalidArgument("--glob: '" + std::string(pattern) +
                                   "' must be a non-empty pattern relative to the root");
  }
  std::vector<std::string_view> pat = Split(pattern);
  std::vector<std::string> out;
  auto consider = [&](const std::string& path) {
    std::vector<std::string_view> parts = Split(path);
    if (parts.size() != pat.size()) return;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (!TfGlobMatchComponent(pat[k], parts[k])) return;
    }
    out.push_back(path);
  };
  std::vector<std::string> dirs = listing.directories;
  for (const std::string& f : listing.files) {
    consider(f);
    for (size_t slash = f.find('/'); slash != std::string::npos; slash = f.find('/', slash + 1)) {
      dirs.push_back(f.substr(0, slash));  // every parent a file implies
    }
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const std::string& d : dirs) consider(d);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) {
    return Status::NotFound("no files matched pattern '" + std::string(pattern) +
                            "' (list_files would raise)");
  }
  return out;
}

}  // namespace clairfs::prefetch
